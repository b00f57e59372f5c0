"""GPU kernels on lavapipe: the scheduled kernels (relax-gpu-tile-matmul,
relax-gpu-row-reductions) against the naive parallel-loop route, side by side with the
cpu target, in one process.

    .venv/bin/python bench/bench_gpu.py            # all cases
    .venv/bin/python bench/bench_gpu.py --quick    # fewer repetitions

Each program is compiled three times: ``vulkan`` with the schedules (the default),
``vulkan`` with ``relax_mlir.pipelines.gpu.SCHEDULES_DEFAULT = False`` (every kernel one
thread per output element, reductions serial in their thread: the route before issue
11), and ``cpu`` (transform-dialect schedules, library dispatch off: generated code only).
Every size runs through the same executable. Lavapipe runs the SPIR-V on the CPU
(llvmpipe: SIMD lanes as invocations, workgroups on its own threads), so these numbers
say how much the schedules cut the work, not what a real GPU would do. The machine is
shared: the load average is printed with each row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402
from relax_mlir.pipelines import gpu  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from bench_kernels import np_softmax, single_op  # noqa: E402


def timeit(fn, reps: int, min_time: float = 0.2) -> float:
    """Median milliseconds per call over ``reps`` rounds of at least ``min_time`` s."""
    fn()
    times = []
    for _ in range(reps):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        times.append(dt / n * 1e3)
    return statistics.median(times)


def compile_three(src):
    """(vulkan scheduled, vulkan naive, cpu) executables of one program."""
    ctx = relax_mlir.make_context()
    mod = src(ctx) if callable(src) else src
    sched = relax_mlir.compile(mod, target="vulkan")
    gpu.SCHEDULES_DEFAULT = False
    try:
        naive = relax_mlir.compile(mod, target="vulkan")
    finally:
        gpu.SCHEDULES_DEFAULT = True
    cpu = relax_mlir.compile(mod, target="cpu", options={"dispatch": False})
    return sched, naive, cpu


def cases(rng):
    mcfg, bcfg = models.MLPConfig(), models.BlockConfig()
    mlp_params = models.mlp_params(mcfg, rng)
    blk_params = models.block_params(bcfg, rng)
    return [
        ("matmul 256x512x512", single_op("matmul", [["m", "k"], ["k", "n"]], ["m", "n"]),
         [rng.standard_normal((256, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)],
         lambda a, b: a @ b),
        ("matmul 64x512x2048", single_op("matmul", [["m", "k"], ["k", "n"]], ["m", "n"]),
         [rng.standard_normal((64, 512)).astype(np.float32), rng.standard_normal((512, 2048)).astype(np.float32)],
         lambda a, b: a @ b),
        ("softmax 1024x1024", single_op("softmax", [["m", "n"]], ["m", "n"]),
         [rng.standard_normal((1024, 1024)).astype(np.float32)], np_softmax),
        ("softmax 8x32768", single_op("softmax", [["m", "n"]], ["m", "n"]),
         [rng.standard_normal((8, 32768)).astype(np.float32)], np_softmax),
        ("MLP 512-2048-512, n=16", lambda ctx: models.mlp_module(ctx, mcfg),
         [rng.standard_normal((16, 512)).astype(np.float32)] + mlp_params, models.mlp_reference),
        ("MLP 512-2048-512, n=128", lambda ctx: models.mlp_module(ctx, mcfg),
         [rng.standard_normal((128, 512)).astype(np.float32)] + mlp_params, models.mlp_reference),
        ("block d=256, s=128", lambda ctx: models.block_module(ctx, bcfg),
         [rng.standard_normal((128, 256)).astype(np.float32)] + blk_params, models.block_reference),
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    rows = []
    for name, src, inputs, ref in cases(rng):
        sched, naive, cpu = compile_three(src)
        want = ref(*inputs)
        for exe in (sched, naive, cpu):
            np.testing.assert_allclose(exe(*inputs), want, rtol=2e-3, atol=2e-3)
        l0 = os.getloadavg()[0]
        t = [timeit(lambda e=e: e(*inputs), reps) for e in (sched, naive, cpu)]
        rows.append((name, *t, max(l0, os.getloadavg()[0])))
        print(f"{name}: {t[0]:.2f} / {t[1]:.2f} / {t[2]:.2f} ms", file=sys.stderr)
    print(f"{os.cpu_count()} cores; load average (1 min) per row; lavapipe = Mesa's software Vulkan")
    print()
    print("| case | vulkan scheduled ms | vulkan naive ms | naive/scheduled | cpu ms | load |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ts, tn, tc, load in rows:
        print(f"| {name} | {ts:.2f} | {tn:.2f} | {tn / ts:.1f}x | {tc:.2f} | {load:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
