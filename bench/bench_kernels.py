"""Generated-kernel benchmark: the transform-dialect schedules (relax-apply-schedules)
against numpy, side by side in one process, library dispatch off.

    .venv/bin/python bench/bench_kernels.py            # all cases
    .venv/bin/python bench/bench_kernels.py --quick    # fewer repetitions
    .venv/bin/python bench/bench_kernels.py --only softmax,add_relu
    .venv/bin/python bench/bench_kernels.py --only matmul --rounds 9   # best of 9 rounds, interleaved

With ``--rounds`` ours and numpy alternate call batch by call batch. For the memory-bound
kernels (add+relu, softmax, norms over 16 MB) that changes what is measured: after numpy's
calls our 16 MB result lands on fresh pages and its page faults dominate (session 5, one
thread: add+relu 11.2 ms interleaved against 4.5-4.9 ms in the median run, softmax 15.1
against 6.8); the median run (no ``--rounds``) is the one to compare with earlier tables.

Each program is compiled ONCE with ``options={"dispatch": False}`` (schedules on, the
default) and once more with ``"schedules": False`` (plain ``convert-linalg-to-loops``,
auto-vectorized by LLVM) for reference; every size runs through the same executable.
Cases: matmul with M symbolic at M = 1, 16, 128, 512 for (K, N) = (512, 2048) and
(2048, 512), the same with M, N, K all symbolic (one executable holds the GEMV variant
for M <= 3 and the register-tiled one, relax-specialize-ranges); add + relu over 4M floats; softmax,
RMSNorm and LayerNorm over 4096 x 1024. The ratio is our median time over numpy's
(lower is better). The machine is shared: the 1-minute load average is printed per
row; a figure taken with load above the core count is noise-prone.
Our parallel loops run on OpenMP threads, every core by default (``RELAX_MLIR_NUM_THREADS``
sets the count; 1 for the CPU-time columns to compare one thread with one): with several,
compare the wall-clock columns (numpy on its default threads).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.backends.cpu.apply_schedules import num_threads  # noqa: E402


def T(dims) -> str:
    static = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    enc = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{static}xf32, #relax.shape<[{enc}]>>"


def single_op(name: str, args: list[list], out: list, attrs: str = "") -> str:
    ps = ", ".join(f"%a{i}: {T(d)}" for i, d in enumerate(args))
    ns = ", ".join(f"%a{i}" for i in range(len(args)))
    ts = ", ".join(T(d) for d in args)
    return (f"func.func @main({ps}) -> {T(out)} attributes {{relax.function}} {{\n"
            f'  %r = "relax.{name}"({ns}){attrs} : ({ts}) -> {T(out)}\n  return %r : {T(out)}\n}}\n')


def add_relu() -> str:
    x = T(["m", 1024])
    return (f"func.func @main(%x: {x}, %y: {x}) -> {x} attributes {{relax.function}} {{\n"
            f'  %a = "relax.add"(%x, %y) : ({x}, {x}) -> {x}\n'
            f'  %r = "relax.relu"(%a) : ({x}) -> {x}\n  return %r : {x}\n}}\n')


def timeit(fn, reps: int, min_time: float = 0.2, clock=time.perf_counter) -> float:
    """Median milliseconds per call; ``clock=time.process_time`` measures this process's CPU
    time (less sensitive to other processes on a loaded machine, for one-thread code)."""
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < reps or (time.perf_counter() - start < min_time and len(times) < 50 * reps):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times) * 1e3


def interleaved(ours, ref, rounds: int, clock, batch_s: float = 0.02) -> tuple[float, float]:
    """Best-of-``rounds`` milliseconds per call of ``ours`` and ``ref``, timed in alternation
    round by round (each round a batch of about ``batch_s`` seconds per side): both sides
    see the same machine state, and the best round is the one least disturbed by other
    work (bench_pages.py's measure)."""
    t0 = time.perf_counter()
    ref()
    calls = max(1, min(200, int(batch_s / max(time.perf_counter() - t0, 1e-6))))
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, fn in enumerate((ours, ref)):
            c0 = clock()
            for _ in range(calls):
                fn()
            best[i] = min(best[i], (clock() - c0) / calls * 1e3)
    return best[0], best[1]


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_rms_norm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w


def np_layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def cases(rng):
    norm = " {axes = array<i64: -1>, epsilon = 1.0e-5 : f64}"
    out = []
    for k, n in ((512, 2048), (2048, 512)):
        for sym in (False, True):
            K, N = ("k", "n") if sym else (k, n)
            b = rng.standard_normal((k, n), dtype=np.float32)
            name = f"matmul K={k} N={n}" + (" (M,N,K symbolic)" if sym else "")
            out.append((name, single_op("matmul", [["m", K], [K, N]], ["m", N]),
                        [(m, (rng.standard_normal((m, k), dtype=np.float32), b)) for m in (1, 16, 128, 512)],
                        np.matmul, lambda m, k=k, n=n: 2.0 * m * k * n / 1e9, "GFLOP/s"))
    x = rng.standard_normal((4096, 1024), dtype=np.float32)
    y = rng.standard_normal((4096, 1024), dtype=np.float32)
    w, g = (rng.standard_normal(1024, dtype=np.float32) for _ in range(2))
    gb = lambda m, n_arrays: n_arrays * 4096 * 1024 * 4 / 1e9  # noqa: E731
    out.append(("add_relu 4M", add_relu(), [(4096, (x, y))], lambda a, b: np.maximum(a + b, 0),
                lambda m: gb(m, 3), "GB/s"))
    out.append(("softmax 4096x1024", single_op("softmax", [["m", 1024]], ["m", 1024], " {axis = -1 : i64}"),
                [(4096, (x,))], np_softmax, lambda m: gb(m, 2), "GB/s"))
    out.append(("rms_norm 4096x1024", single_op("rms_norm", [["m", 1024], [1024]], ["m", 1024], norm),
                [(4096, (x, w))], np_rms_norm, lambda m: gb(m, 2), "GB/s"))
    out.append(("layer_norm 4096x1024", single_op("layer_norm", [["m", 1024], [1024], [1024]], ["m", 1024], norm),
                [(4096, (x, w, g))], np_layer_norm, lambda m: gb(m, 2), "GB/s"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated name prefixes")
    ap.add_argument("--no-loops", action="store_true", help="skip the plain-loops column")
    ap.add_argument("--m", default="", help="comma-separated M values of the matmul cases (e.g. 1: the GEMV rows)")
    ap.add_argument("--rounds", type=int, default=0,
                    help="CPU columns as the best of this many rounds, ours and numpy interleaved (steadier on a "
                         "loaded machine than the default medians)")
    args = ap.parse_args()
    reps = 3 if args.quick else 10
    rng = np.random.default_rng(0)
    only = [s for s in args.only.split(",") if s]
    ms = {int(m) for m in args.m.split(",") if m}
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()}")
    # One thread of ours: the calling thread's CPU time (see the CPU columns below).
    cpu_clock = time.thread_time if num_threads() == 1 else time.process_time
    print(f"wall: {f'best of {args.rounds} interleaved rounds' if args.rounds else 'median'} of wall-clock ms "
          f"(numpy on its default threads); cpu: "
          f"{f'best of {args.rounds} interleaved rounds' if args.rounds else 'median'}, CPU ms of the calling\n"
          "thread (of this process when our thread count is not 1), numpy limited to one BLAS thread\n"
          "(threadpoolctl): with RELAX_MLIR_NUM_THREADS=1 both sides single-threaded")
    print(f"{'case':38s} {'M':>5s} {'ours ms':>9s} {'numpy ms':>9s} {'ratio':>6s} {'rate ours/np':>18s}"
          f" {'cpu ours':>9s} {'cpu np1T':>9s} {'ratio':>6s} {'loops ms':>9s} {'load':>5s}")
    if not only or any("matmul".startswith(o) or o.startswith("matmul") for o in only):
        # The fixed cost of one call through the Python runtime (argument descriptors, shape
        # checks, result allocation): a 1x16 @ 16x16 matmul. It is part of every "ours" time
        # and dominates the GEMV rows (M = 1), whose kernel alone takes a few tens of us.
        tiny = relax_mlir.compile(single_op("matmul", [["m", 16], [16, 16]], ["m", 16]), options={"dispatch": False})
        ta, tb = np.ones((1, 16), np.float32), np.ones((16, 16), np.float32)
        add1 = relax_mlir.compile(single_op("add", [[1], [1]], [1]), options={"dispatch": False})
        a1 = np.ones(1, np.float32)
        print(f"call overhead (1x16 @ 16x16): ours {timeit(lambda: tiny(ta, tb), reps, clock=time.process_time):.4f} ms"
              f" cpu, numpy {timeit(lambda: ta @ tb, reps, clock=time.process_time):.4f} ms cpu;"
              f" (1,) + (1,): ours {timeit(lambda: add1(a1, a1), reps, clock=time.process_time):.4f} ms cpu,"
              f" numpy {timeit(lambda: a1 + a1, reps, clock=time.process_time):.4f} ms cpu;"
              f" our threads: {num_threads()}")
    for name, src, runs, ref, work, unit in cases(rng):
        if only and not any(name.startswith(o) for o in only):
            continue
        exe = relax_mlir.compile(src, options={"dispatch": False, "schedules": True})
        loops = None if args.no_loops else relax_mlir.compile(src, options={"dispatch": False, "schedules": False})
        for m, arrays in runs:
            if ms and m not in ms:
                continue
            got, want = exe(*arrays), ref(*arrays)
            err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-6))
            assert err < 1e-3, f"{name} M={m}: relative error {err}"
            # CPU columns first, and on one thread the calling thread's CPU time: the process's
            # (time.process_time) also counts OpenBLAS workers still spinning after numpy's
            # multi-threaded call of the wall-clock column (measured: up to 2.5x on our side).
            if args.rounds:
                with threadpool_limits(1):
                    c_ours, c_np = interleaved(lambda: exe(*arrays), lambda: ref(*arrays), args.rounds, cpu_clock)
            else:
                c_ours = timeit(lambda: exe(*arrays), reps, clock=cpu_clock)
                with threadpool_limits(1):
                    c_np = timeit(lambda: ref(*arrays), reps, clock=cpu_clock)
            if args.rounds:   # wall clock the same way: best of interleaved rounds, numpy on its threads
                t_ours, t_np = interleaved(lambda: exe(*arrays), lambda: ref(*arrays), args.rounds, time.perf_counter)
            else:
                t_ours = timeit(lambda: exe(*arrays), reps)
                t_np = timeit(lambda: ref(*arrays), reps)
            t_loops = timeit(lambda: loops(*arrays), max(1, reps // 3)) if loops is not None else float("nan")
            rate = f"{work(m) / t_ours * 1e3:7.1f}/{work(m) / t_np * 1e3:7.1f} {unit}"
            print(f"{name:38s} {m:5d} {t_ours:9.3f} {t_np:9.3f} {t_ours / t_np:6.2f} {rate:>18s}"
                  f" {c_ours:9.3f} {c_np:9.3f} {c_ours / max(c_np, 1e-9):6.2f}"
                  f" {t_loops:9.3f} {os.getloadavg()[0]:5.1f}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
