"""Matmul with a fused epilogue against the same matmul without one, in one executable.

    .venv/bin/python bench/bench_matmul_epilogue.py                 # K = N = 576 and 2048
    .venv/bin/python bench/bench_matmul_epilogue.py --kn 576 --ms 1,7,128,512 --rounds 7

Three graph functions of one symbolic M: ``x @ w``, ``relu(x @ w + b)`` and ``x @ w + r``
(a residual add), each a kernel of its own (the fused ones ``matmul+elementwise``; with
the default dispatch policy some M ranges call the library variant). Per M the three run
interleaved, call batch by call batch, ``--rounds`` times; the figure is the best round's
CPU time per call (one thread: ``RELAX_MLIR_NUM_THREADS=1`` unless set), and the ratio of
each epilogue kernel over the plain matmul (the epilogue's cost: one pass of N adds, and
before the in-place epilogue an M x N temporary malloc'd and freed per call). Run from
the repository root; the 1-minute load average is printed per row.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("RELAX_MLIR_NUM_THREADS", "1")
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kn", default="576,2048")
    ap.add_argument("--ms", default="1,7,128,512")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"threads={os.environ['RELAX_MLIR_NUM_THREADS']}  CPU time per call, best of {a.rounds} interleaved rounds")
    print(f"{'K=N':>5} {'M':>4} {'mm us':>9} {'+bias+relu us':>14} {'+residual us':>13} {'relu/mm':>8} {'res/mm':>7} {'load':>5}")
    for kn in (int(v) for v in a.kn.split(",")):
        exe = relax_mlir.compile(program(kn, kn))
        w = rng.standard_normal((kn, kn), dtype=np.float32)
        b = rng.standard_normal(kn, dtype=np.float32)
        for m in (int(v) for v in a.ms.split(",")):
            x = rng.standard_normal((m, kn), dtype=np.float32)
            r = rng.standard_normal((m, kn), dtype=np.float32)
            fns = [(exe["mm"], (x, w)), (exe["mm_bias_relu"], (x, w, b)), (exe["mm_res"], (x, w, r))]
            calls = max(3, int(2e8 // (2 * m * kn * kn)))
            best = [float("inf")] * 3
            for _ in range(a.rounds):
                for i, (f, args) in enumerate(fns):
                    f(*args)
                    best[i] = min(best[i], cpu_per_call(f, args, calls))
            print(f"{kn:>5} {m:>4} {best[0] * 1e6:>9.1f} {best[1] * 1e6:>14.1f} {best[2] * 1e6:>13.1f} "
                  f"{best[1] / best[0]:>8.3f} {best[2] / best[0]:>7.3f} {os.getloadavg()[0]:>5.2f}", flush=True)


if __name__ == "__main__":
    main()
