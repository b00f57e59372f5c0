"""Matmul with a fused epilogue against the same matmul without one, in one executable.

    .venv/bin/python bench/bench_matmul_epilogue.py                 # K = N = 576 and 2048
    .venv/bin/python bench/bench_matmul_epilogue.py --kn 576 --ms 1,7,128,512 --rounds 7
    .venv/bin/python bench/bench_matmul_epilogue.py --dispatch     # library variants where the table says

Three graph functions of one symbolic M: ``x @ w``, ``relu(x @ w + b)`` and ``x @ w + r``
(a residual add), each a kernel of its own (the fused ones ``matmul+elementwise``), compiled
twice: with relax-epilogue-in-place (``new``) and with it switched off (``old``: the product
in an M x N temporary malloc'd and freed per call, the epilogue reading it into the output).
Generated kernels only unless ``--dispatch`` (then some M ranges call the library variant;
BLAS on one thread). Per M the six functions run interleaved, call batch by call batch,
``--rounds`` times; the figure is the best round's CPU time per call (one thread:
``RELAX_MLIR_NUM_THREADS=1`` unless set), with each epilogue kernel's ratio over the plain
matmul of the same executable and new over old. Run from the repository root; the 1-minute
load average is printed per row.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("RELAX_MLIR_NUM_THREADS", "1")
os.environ.setdefault("RELAX_BLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

import relax_mlir  # noqa: E402


def _t(dims) -> str:
    s = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    e = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{s}xf32, #relax.shape<[{e}]>>"


def program(k: int, n: int) -> str:
    x, w, b, y = _t(["m", k]), _t([k, n]), _t([n]), _t(["m", n])
    mm = f'%0 = "relax.matmul"(%x, %w) : ({x}, {w}) -> {y}\n'
    return (f"func.func @mm(%x: {x}, %w: {w}) -> {y} attributes {{relax.function}} {{\n  {mm}  return %0 : {y}\n}}\n"
            f"func.func @mm_bias_relu(%x: {x}, %w: {w}, %b: {b}) -> {y} attributes {{relax.function}} {{\n  {mm}"
            f'  %1 = "relax.add"(%0, %b) : ({y}, {b}) -> {y}\n  %2 = "relax.relu"(%1) : ({y}) -> {y}\n'
            f"  return %2 : {y}\n}}\n"
            f"func.func @mm_res(%x: {x}, %w: {w}, %r: {y}) -> {y} attributes {{relax.function}} {{\n  {mm}"
            f'  %1 = "relax.add"(%0, %r) : ({y}, {y}) -> {y}\n  return %1 : {y}\n}}\n')


def cpu_per_call(f, args, calls: int) -> float:
    t = time.process_time()
    for _ in range(calls):
        f(*args)
    return (time.process_time() - t) / calls


def compile_both(src: str, dispatch: bool):
    """``(old, new)`` executables: relax-epilogue-in-place switched off, then on."""
    from relax_mlir.backends.cpu import epilogue_in_place as eip
    opts = None if dispatch else {"dispatch": False}
    real = eip.in_place
    eip.in_place = lambda mm: False
    try:
        old = relax_mlir.compile(src, options=opts)
    finally:
        eip.in_place = real
    return old, relax_mlir.compile(src, options=opts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kn", default="576,2048")
    ap.add_argument("--ms", default="1,7,128,512")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dispatch", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"threads={os.environ['RELAX_MLIR_NUM_THREADS']} dispatch={a.dispatch}  "
          f"CPU time per call (us), best of {a.rounds} interleaved rounds")
    print(f"{'K=N':>5} {'M':>4} | {'old mm':>8} {'relu':>8} {'res':>8} | {'new mm':>8} {'relu':>8} {'res':>8} | "
          f"{'old relu/mm':>11} {'res/mm':>6} | {'new relu/mm':>11} {'res/mm':>6} | {'relu new/old':>12} {'res':>5} | load")
    for kn in (int(v) for v in a.kn.split(",")):
        exes = compile_both(program(kn, kn), a.dispatch)
        w = rng.standard_normal((kn, kn), dtype=np.float32)
        b = rng.standard_normal(kn, dtype=np.float32)
        for m in (int(v) for v in a.ms.split(",")):
            x = rng.standard_normal((m, kn), dtype=np.float32)
            r = rng.standard_normal((m, kn), dtype=np.float32)
            fns = [(e[f], args) for e in exes
                   for f, args in (("mm", (x, w)), ("mm_bias_relu", (x, w, b)), ("mm_res", (x, w, r)))]
            calls = max(3, int(2e8 // (2 * m * kn * kn)))
            best = [float("inf")] * len(fns)
            for _ in range(a.rounds):
                for i, (f, args) in enumerate(fns):
                    f(*args)
                    best[i] = min(best[i], cpu_per_call(f, args, calls))
            t = [v * 1e6 for v in best]
            print(f"{kn:>5} {m:>4} | {t[0]:>8.1f} {t[1]:>8.1f} {t[2]:>8.1f} | {t[3]:>8.1f} {t[4]:>8.1f} {t[5]:>8.1f} | "
                  f"{t[1] / t[0]:>11.3f} {t[2] / t[0]:>6.3f} | {t[4] / t[3]:>11.3f} {t[5] / t[3]:>6.3f} | "
                  f"{t[4] / t[1]:>12.3f} {t[5] / t[2]:>5.3f} | {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
