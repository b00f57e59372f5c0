"""Library dispatch benchmark: the MLP's matmuls (+ bias) and the whole MLP, each compiled
ONCE with relax-dispatch-library off (generated linalg kernels) and on (relax_blas over
the default BLAS provider, see RELAX_BLAS), run at n in {1, 16, 128, 512} side by side with numpy and PyTorch eager.

    .venv/bin/python bench/bench_dispatch.py            # torch optional
    .venv/bin/python bench/bench_dispatch.py --quick

Both relax-mlir columns come from the same source and the same cpu pipeline; only
``options={"dispatch": ...}`` differs. Timings on a shared 2-core machine are noisy: the
load average is printed and a figure taken with load > 0.5 is marked with '*'.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import relax_mlir  # noqa: E402
from bench_e2e import THREADS, load, timeit  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402


def T(dims) -> str:
    static = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    enc = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{static}xf32, #relax.shape<[{enc}]>>"


def linear_module(k: int, n: int) -> str:
    """y = x @ w + b with x: (n, k) symbolic in n."""
    x, w, b, y = T(["n", k]), T([k, n]), T([n]), T(["n", n])
    return (f'func.func @main(%x: {x}, %w: {w}, %b: {b}) -> {y} attributes {{relax.function}} {{\n'
            f'  %0 = "relax.matmul"(%x, %w) : ({x}, {w}) -> {y}\n'
            f'  %1 = "relax.add"(%0, %b) : ({y}, {b}) -> {y}\n'
            f'  return %1 : {y}\n}}\n')


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="1,16,128,512")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    reps = 3 if args.quick else 10
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(0)
    try:
        import torch
        torch.set_num_threads(THREADS)
    except ImportError:
        torch = None

    cfg = models.MLPConfig()
    w1, b1, w2, b2 = models.mlp_params(cfg, rng)
    cases = [
        (f"x@W1+b1 ({cfg.d_in}->{cfg.d_hidden})", linear_module(cfg.d_in, cfg.d_hidden), [w1, b1], cfg.d_in,
         lambda x, w, b: x @ w + b, cfg.d_in * cfg.d_hidden),
        (f"h@W2+b2 ({cfg.d_hidden}->{cfg.d_out})", linear_module(cfg.d_hidden, cfg.d_out), [w2, b2], cfg.d_hidden,
         lambda x, w, b: x @ w + b, cfg.d_hidden * cfg.d_out),
        ("MLP (both + relu)", str(models.mlp_module(relax_mlir.make_context(), cfg)), [w1, b1, w2, b2], cfg.d_in,
         models.mlp_reference, cfg.d_in * cfg.d_hidden + cfg.d_hidden * cfg.d_out),
    ]
    rows = []
    for name, src, params, k, ref, kn in cases:
        t0 = time.perf_counter()
        gen = relax_mlir.compile(src, options={"dispatch": False})
        blas = relax_mlir.compile(src)
        tc = time.perf_counter() - t0
        assert any("relax_blas" in p for p in blas.libraries)
        for n in sizes:
            x = rng.standard_normal((n, k)).astype(np.float32)
            a = [x] + params
            want = ref(*a)
            err = max(float(np.max(np.abs(e(*a) - want))) for e in (gen, blas)) / (float(np.max(np.abs(want))) + 1e-6)
            l0 = load()
            t_gen = timeit(lambda: gen(*a), reps)
            t_blas = timeit(lambda: blas(*a), reps)
            t_np = timeit(lambda: ref(*a), reps)
            t_pt = None
            if torch is not None:
                ta = [torch.from_numpy(v) for v in a]
                if len(ta) == 3:
                    def tfn():
                        return ta[0] @ ta[1] + ta[2]
                else:
                    def tfn():
                        return torch.relu(ta[0] @ ta[1] + ta[2]) @ ta[3] + ta[4]
                with torch.no_grad():
                    t_pt = timeit(tfn, reps)
            busy = max(l0, load()) > 0.5
            gflops = 2.0 * n * kn / (t_blas * 1e-3) / 1e9
            rows.append((name, n, t_gen, t_blas, t_np, t_pt, gflops, err, busy, tc))

    from relax_mlir.runtime.libraries import blas_provider

    print(f"load average at end: {load():.2f}; '*' = measured with load > 0.5; BLAS: {blas_provider()} "
          f"(RELAX_BLAS=openblas|mkl), threads: {os.environ.get('RELAX_BLAS_NUM_THREADS') or 2}")
    print()
    print("| case | n | generated ms | BLAS ms | gen/BLAS | BLAS GFLOP/s | numpy ms | torch ms | BLAS/torch | rel err |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, tg, tb, tn, tp, gf, err, busy, _ in rows:
        mark = "*" if busy else ""
        pt = f"{tp:.3f}" if tp is not None else "n/a"
        rt = f"{tb / tp:.2f}x" if tp else "n/a"
        print(f"| {name} | {n} | {tg:.3f}{mark} | {tb:.3f}{mark} | {tg / tb:.1f}x | {gf:.1f} | {tn:.3f} | {pt} | {rt} | {err:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
