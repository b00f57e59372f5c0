"""The machine's limits for the roofline table in bench/README.md: peak f32 GFLOP/s (numpy's
4096^3 matmul, best of a few, on 1 and 2 BLAS threads), memory bandwidth (numpy copy of a
256 MB array: 512 MB moved per copy, best of a few) and read bandwidth (a GEMV streaming a
442 MB matrix, on 1 and 2 threads: the bound of an LLM decode step, bench_llm.py).

    .venv/bin/python bench/roofline.py

Compare bench/bench_kernels.py's "rate ours/np" column against these. The machine is shared:
the load average is printed; best-of timings are used because other processes only slow a run.
"""

from __future__ import annotations

import os
import time

import numpy as np
from threadpoolctl import threadpool_limits


def best_s(fn, reps: int, clock=time.perf_counter) -> float:
    """Best of ``reps``; ``clock=time.process_time``: this process's CPU time (one thread:
    insensitive to other processes taking the core away)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def main() -> None:
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()}")
    n = 4096
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = a.copy()
    with threadpool_limits(1):
        t = best_s(lambda: a @ b, 3, clock=time.process_time)
    print(f"peak f32 (numpy {n}^3 matmul, 1 thread, CPU time): {2 * n ** 3 / t / 1e9:.1f} GFLOP/s")
    for threads in (1, 2):
        with threadpool_limits(threads):
            t = best_s(lambda: a @ b, 3)
        print(f"peak f32 (numpy {n}^3 matmul, {threads} thread(s)): {2 * n ** 3 / t / 1e9:.1f} GFLOP/s")
    src = np.ones(64 * 1024 * 1024, np.float32)        # 256 MB
    dst = np.empty_like(src)
    t = best_s(lambda: np.copyto(dst, src), 5)
    print(f"memory bandwidth (numpy copy of 256 MB, read + write, wall): {2 * src.nbytes / t / 1e9:.1f} GB/s")
    t = best_s(lambda: np.copyto(dst, src), 5, clock=time.process_time)
    print(f"memory bandwidth (same, CPU time): {2 * src.nbytes / t / 1e9:.1f} GB/s")
    # Read bandwidth: what bounds an LLM decode step (every weight streamed once). A GEMV
    # over a 442 MB matrix, the size of the 134M Llama's weights, on 1 and 2 threads.
    w = np.ones((32000, 3456), np.float32)
    x = np.ones(3456, np.float32)
    for threads in (1, 2):
        with threadpool_limits(threads):
            t = best_s(lambda: w @ x, 5)
        print(f"read bandwidth (numpy GEMV over {w.nbytes / 1e6:.0f} MB, {threads} thread(s), wall): "
              f"{w.nbytes / t / 1e9:.1f} GB/s ({t * 1e3:.1f} ms)")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
