"""Where a GPU call's time goes: wall time per call, the device's kernel time (PyTorch's
profiler, which records every kernel of the process through CUPTI, ours included) and the
host's Python time by function (cProfile).

    python bench/profile_gpu.py --target cuda                 # on a machine with an NVIDIA GPU
    python bench/profile_gpu.py --target vulkan --cases mlp   # kernel times need CUDA: wall + host only

Each case is one of bench_gpu.py's; the weights are uploaded once (``exe.upload``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import relax_mlir  # noqa: E402
from bench_gpu import cases  # noqa: E402


def kernel_time_ms(fn, calls: int) -> tuple[float, int]:
    """(device kernel milliseconds per call, kernels per call) from PyTorch's profiler, or
    (nan, 0) without torch or CUDA."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return float("nan"), 0
    if not torch.cuda.is_available():
        return float("nan"), 0
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type.name == "CUDA"]
    total_us = sum(e.device_time for e in events)
    return total_us / 1e3 / calls, len(events) // calls


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--cases", default="", help="comma-separated substrings of bench_gpu case names (default: all)")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--top", type=int, default=12, help="host functions listed per case")
    args = ap.parse_args()
    want = [c for c in args.cases.split(",") if c]
    rng = np.random.default_rng(0)
    for name, src, inputs, ref, _, n_w in cases(rng):
        if want and not any(w.lower() in name.lower() for w in want):
            continue
        ctx = relax_mlir.make_context()
        exe = relax_mlir.compile(src(ctx) if callable(src) else src, target=args.target)
        acts = inputs[:len(inputs) - n_w]
        ws = [exe.upload(w) for w in inputs[len(inputs) - n_w:]]
        np.testing.assert_allclose(exe(*acts, *ws), ref(*inputs), rtol=2e-3, atol=2e-3)

        def call():
            return exe(*acts, *ws)
        for _ in range(5):
            call()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            call()
        wall = (time.perf_counter() - t0) / args.calls * 1e3
        kern, nk = kernel_time_ms(call, args.calls)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            call()
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
        print(f"== {name} on {args.target}: {wall:.3f} ms per call, device kernels {kern:.3f} ms "
              f"({nk} per call)")
        lines = out.getvalue().splitlines()
        start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls")), 0)
        print("\n".join(lines[start:start + args.top + 1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
