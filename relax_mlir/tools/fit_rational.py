"""Where relax-expand-math's rational coefficients come from (a development tool, not
imported by the compiler; needs numpy).

An odd function g (erf, tanh) on [-A, A] is approximated as ``x * P(x^2) / Q(x^2)`` with
``Q(0) = 1``, minimizing the maximum RELATIVE error of g (so the error near 0 is relative,
and absolute near the saturation at +-1). The fit is a linearized least-squares iteration
(each step solves ``P - f Q = 0`` weighted by the previous denominator, so the residual
approximates the true relative error) with Lawson's re-weighting toward the minimax
solution; the basis is Chebyshev on the scaled variable, for conditioning. The result is
printed as float32 coefficients in powers of ``u = x^2``, lowest first, with the error of
an emulated float32 evaluation (Horner with fused multiply-add, the clamp, the division).

    python -m relax_mlir.tools.fit_rational erf 3.92 6 4
    python -m relax_mlir.tools.fit_rational tanh 9.1 5 4
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numpy.polynomial import chebyshev as cheb
from numpy.polynomial import polynomial as poly

FUNCTIONS = {"erf": math.erf, "tanh": math.tanh}


def fit(g, bound: float, m: int, n: int, iters: int = 300):
    """float64 coefficients (P of degree m, Q of degree n in u = x^2, Q[0] = 1) and the
    float64 maximum relative error of ``x P(x^2) / Q(x^2)`` against ``g`` on (0, bound]."""
    gv = np.vectorize(g)
    x = np.concatenate([np.linspace(1e-4, bound, 8000), np.geomspace(1e-6, 1e-4, 50)])
    u = x * x
    f = gv(x) / x
    v = u / (bound * bound)
    vp = cheb.chebvander(2 * v - 1, m)
    vq = np.vander(v, n + 1, increasing=True)[:, 1:]
    q_prev, lw, best = np.ones_like(u), np.ones_like(u), None
    for it in range(iters):
        wt = lw / (q_prev * f)
        sol, *_ = np.linalg.lstsq(np.hstack([vp, -f[:, None] * vq]) * wt[:, None], f * wt, rcond=None)
        a, b = sol[:m + 1], sol[m + 1:]
        q = 1 + vq @ b
        if q.min() <= 0:
            break
        e = np.abs((vp @ a / q - f) / f)
        if not np.isfinite(e.max()):
            break
        if best is None or e.max() < best[0]:
            best = (e.max(), a, b)
        q_prev = q
        if it >= 5:   # Lawson: weight up where the error is large
            lw = np.maximum(lw * (e / e.max()) ** 0.3, 1e-12)
            lw /= lw.max()
    err, a, b = best
    # P: Chebyshev in s = 2 u / bound^2 - 1 -> monomials in u; Q: monomials in u / bound^2 -> in u
    pc, out, powk = cheb.cheb2poly(a), np.zeros(1), np.array([1.0])
    for c in pc:
        out = poly.polyadd(out, c * powk)
        powk = poly.polymul(powk, [-1.0, 2 / bound ** 2])
    pm = out
    qm = np.concatenate([[1.0], b / bound ** (2 * np.arange(1, n + 1))])
    return pm, qm, err


def eval_f32(pm, qm, bound: float, x: np.ndarray) -> np.ndarray:
    """``x P / Q`` as the expanded IR computes it in float32 (fused multiply-adds emulated in
    float64, one rounding each), clamped to [-bound, bound] and the result to [-1, 1]."""
    f32 = np.float32
    xc = np.clip(x.astype(f32), f32(-bound), f32(bound))
    u = (xc * xc).astype(f32)

    def horner(cs):
        p = np.full_like(u, f32(cs[-1]))
        for c in cs[-2::-1]:
            p = (p.astype(np.float64) * u + np.float64(f32(c))).astype(f32)
        return p
    r = (horner(pm).astype(np.float64) * xc).astype(f32) / horner(qm)
    return np.clip(r, f32(-1), f32(1))


def fit_tail(lo: float, hi: float, degree: int):
    """float64 coefficients of a polynomial in ``t = x - (lo + hi) / 2`` (lowest first) close to
    erfc on [lo, hi] (interpolation at Chebyshev points: near-minimax absolute error)."""
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    c = cheb.chebinterpolate(lambda s: np.vectorize(math.erfc)(mid + half * s), degree)
    out, powk = np.zeros(1), np.array([1.0])
    for ck in cheb.cheb2poly(c):
        out = poly.polyadd(out, ck * powk)
        powk = poly.polymul(powk, [0.0, 1 / half])
    return out


def main(argv: list[str]) -> None:
    if argv[0] == "erfc":
        lo, hi, degree = float(argv[1]), float(argv[2]), int(argv[3])
        cs = [np.float32(c) for c in fit_tail(lo, hi, degree)]
        x = np.linspace(lo, hi, 100001).astype(np.float32)
        t = (x - np.float32((lo + hi) / 2)).astype(np.float32)
        p = np.full_like(t, cs[-1])
        for c in cs[-2::-1]:
            p = (p.astype(np.float64) * t + np.float64(c)).astype(np.float32)
        e = np.abs(p - np.array([math.erfc(float(v)) for v in x]))
        print(f"erfc on [{lo}, {hi}], degree {degree} in x - {(lo + hi) / 2}: float32 evaluation: absolute {e.max():.2e}")
        print("T =", [float(c) for c in cs])
        return
    name, bound, m, n = argv[0], float(argv[1]), int(argv[2]), int(argv[3])
    g = FUNCTIONS[name]
    pm, qm, err = fit(g, bound, m, n)
    xs = np.concatenate([np.linspace(-bound - 1, bound + 1, 400001), np.geomspace(1e-30, 1, 2000)])
    xs = xs.astype(np.float32)
    ref = np.array([g(float(v)) for v in xs])
    e = np.abs(eval_f32(pm, qm, bound, xs) - ref)
    small = (np.abs(xs) < 0.5) & (xs != 0)
    print(f"{name} on [-{bound}, {bound}], P degree {m}, Q degree {n} (in x^2): float64 relative error "
          f"{err:.2e}; float32 evaluation: absolute {e.max():.2e}, relative below 0.5: "
          f"{(e[small] / np.abs(ref[small])).max():.2e}")
    print("P =", [float(np.float32(c)) for c in pm])
    print("Q =", [float(np.float32(c)) for c in qm])


if __name__ == "__main__":
    main(sys.argv[1:])
