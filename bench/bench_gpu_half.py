"""16-bit row and elementwise kernels on a GPU target: the Rows / Elementwise rules on f16 and
bf16 data against the generic fallback those kernels took before (the rules limited to f32, as
test_gpu_half_kernels.without_half_rules does) and against the same kernels on f32 data. One
process, every executable compiled first, then the calls interleaved round by round (best of
``--rounds``); prints a markdown table and the load average.

    PYTHONPATH=. python bench/bench_gpu_half.py [--target vulkan] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
import relax_mlir  # noqa: E402
from relax_mlir.dialects import relax  # noqa: E402
from relax_mlir.frontend.builder import graph_function  # noqa: E402

from test_gpu_half_kernels import without_half_rules  # noqa: E402

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
#: name -> (rows, cols)
CASES = {
    "rms_norm 128x4096": (128, 4096),
    "softmax 128x2048": (128, 2048),
    "rms_norm 1024x4096": (1024, 4096),     # from 1024 rows: a thread per row
    "softmax 1024x2048": (1024, 2048),
    "chain exp(silu(x+y)*y) 1024x1024": (1024, 1024),
}


def module(case: str, dt: str) -> ir.Module:
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        if case.startswith("rms_norm"):
            with graph_function(m, "main", [("x", ["n", "k"], dt), ("w", ["k"], dt)]) as fn:
                fn.ret(relax.rms_norm(*fn.params, axes=[-1]))
        elif case.startswith("softmax"):
            with graph_function(m, "main", [("x", ["n", "k"], dt)]) as fn:
                fn.ret(relax.softmax(fn.params[0], axis=-1))
        else:
            with graph_function(m, "main", [("x", ["n", "k"], dt), ("y", ["n", "k"], dt)]) as fn:
                x, y = fn.params
                fn.ret(relax.exp(relax.silu(x + y) * y))
    return m


def args_for(case: str, dt: str):
    n, k = CASES[case]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, k)).astype(NP[dt])
    if case.startswith("rms_norm"):
        return x, rng.standard_normal(k).astype(NP[dt])
    if case.startswith("softmax"):
        return (x,)
    return x, (0.5 * rng.standard_normal((n, k))).astype(NP[dt])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="vulkan")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    runs = {}   # (case, label) -> (exe, args)
    for case in CASES:
        for dt in ("f16", "bf16"):
            runs[(case, f"{dt} rules")] = (relax_mlir.compile(module(case, dt), target=a.target), args_for(case, dt))
            with pytest.MonkeyPatch.context() as mp:
                without_half_rules(mp)
                runs[(case, f"{dt} fallback")] = (relax_mlir.compile(module(case, dt), target=a.target),
                                                  args_for(case, dt))
        runs[(case, "f32 rules")] = (relax_mlir.compile(module(case, "f32"), target=a.target), args_for(case, "f32"))
    for exe, args in runs.values():   # warm up (first-call uploads, pipeline creation)
        exe(*args)
    best = {key: float("inf") for key in runs}
    load0 = os.getloadavg()
    for _ in range(a.rounds):
        for key, (exe, args) in runs.items():
            t = time.perf_counter()
            exe(*args)
            best[key] = min(best[key], time.perf_counter() - t)
    load1 = os.getloadavg()
    print(f"target {a.target}, best of {a.rounds} interleaved rounds, load {load0[0]:.1f} -> {load1[0]:.1f}")
    print("| case | dtype | rules ms | fallback ms | fallback / rules | f32 rules ms |")
    print("|---|---|---|---|---|---|")
    for case in CASES:
        f32 = best[(case, "f32 rules")] * 1e3
        for dt in ("f16", "bf16"):
            r, f = best[(case, f"{dt} rules")] * 1e3, best[(case, f"{dt} fallback")] * 1e3
            print(f"| {case} | {dt} | {r:.2f} | {f:.2f} | {f / r:.1f}x | {f32:.2f} |")


if __name__ == "__main__":
    main()
