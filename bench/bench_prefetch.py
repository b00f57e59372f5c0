"""Software prefetch in the generated matmul (relax-prefetch) on and off, side by side in one
process: per case one executable per prefetch distance (0: none, the kernels unmarked) and
numpy, timed in alternation round by round, best of ``--rounds`` (library dispatch off).

    RELAX_MLIR_NUM_THREADS=1 .venv/bin/python bench/bench_prefetch.py --rounds 31      # one thread, CPU time
    RELAX_MLIR_NUM_THREADS=2 .venv/bin/python bench/bench_prefetch.py --rounds 31      # two threads, wall time
    .venv/bin/python bench/bench_prefetch.py --distances 0,2,4,8 --contiguous          # + the packed panel

Cases: M symbolic at M = 16, 128, 512 for (K, N) = (512, 2048) and (2048, 512), N and K
static and all symbolic (``bench_kernels.py``'s matmul cases). With one thread of ours the
clock is the calling thread's CPU time and numpy is limited to one BLAS thread; otherwise
wall time, numpy on its default threads. Ratios: ours / numpy (lower is better).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
import relax_mlir.backends.cpu.schedules as schedules  # noqa: E402
import relax_mlir.backends.cpu.prefetch as prefetch  # noqa: E402
from bench_kernels import single_op  # noqa: E402
from relax_mlir.backends.cpu.apply_schedules import num_threads  # noqa: E402


def compile_with(src: str, distance: int, contiguous: bool):
    """Compile with ``MatmulConfig.prefetch = distance`` (and relax-prefetch's CONTIGUOUS)."""
    base, old = schedules.config_for, prefetch.CONTIGUOUS
    schedules.config_for = lambda t: dataclasses.replace(base(t), prefetch=distance)
    prefetch.CONTIGUOUS = contiguous
    try:
        return relax_mlir.compile(src, options={"dispatch": False})
    finally:
        schedules.config_for, prefetch.CONTIGUOUS = base, old


def interleaved(fns, rounds: int, clock, batch_s: float = 0.03) -> list[float]:
    """Best-of-``rounds`` ms per call of each of ``fns``, timed in alternation."""
    t0 = time.perf_counter()
    fns[-1]()
    calls = max(1, min(200, int(batch_s / max(time.perf_counter() - t0, 1e-6))))
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, f in enumerate(fns):
            c0 = clock()
            for _ in range(calls):
                f()
            best[i] = min(best[i], (clock() - c0) / calls * 1e3)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--m", default="16,128,512", help="comma-separated M values")
    ap.add_argument("--distances", default="0,4", help="comma-separated prefetch distances (0: none)")
    ap.add_argument("--contiguous", action="store_true", help="also prefetch the packed panel (CONTIGUOUS)")
    args = ap.parse_args()
    ms = [int(m) for m in args.m.split(",")]
    dists = [int(d) for d in args.distances.split(",")]
    one = num_threads() == 1
    clock = time.thread_time if one else time.perf_counter
    print(f"cores: {os.cpu_count()}, our threads: {num_threads()}, load average at start: {os.getloadavg()}; "
          f"{'CPU time of the calling thread, numpy on one BLAS thread' if one else 'wall time'}, "
          f"best of {args.rounds} interleaved rounds; ms (ours / numpy)")
    rng = np.random.default_rng(0)
    for k, n in ((512, 2048), (2048, 512)):
        for sym in (False, True):
            K, N = ("k", "n") if sym else (k, n)
            src = single_op("matmul", [["m", K], [K, N]], ["m", N])
            exes = [compile_with(src, d, args.contiguous) for d in dists]
            b = rng.standard_normal((k, n), dtype=np.float32)
            for m in ms:
                a = rng.standard_normal((m, k), dtype=np.float32)
                want = a.astype(np.float64) @ b.astype(np.float64)
                for e in exes:
                    err = np.max(np.abs(e(a, b) - want)) / np.max(np.abs(want))
                    assert err < 1e-4, err
                fns = [lambda e=e: e(a, b) for e in exes] + [lambda: a @ b]
                if one:
                    with threadpool_limits(1):
                        best = interleaved(fns, args.rounds, clock)
                else:
                    best = interleaved(fns, args.rounds, clock)
                cols = "  ".join(f"d={d} {t:7.3f} ({t / best[-1]:4.2f})" for d, t in zip(dists, best))
                print(f"K={k:<5d} N={n:<5d} {'all symbolic' if sym else 'N, K static':12s} M={m:<4d} {cols}  "
                      f"numpy {best[-1]:7.3f}  load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
