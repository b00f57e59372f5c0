"""Thread-pool contention: does a numpy (OpenBLAS) or PyTorch matmul called between our calls
slow our calls down? (issue 12, item 2: "a user who calls numpy's matmul between our calls
must not see our time double").

    RELAX_MLIR_NUM_THREADS=2 .venv/bin/python bench/bench_contention.py            # all cases
    .venv/bin/python bench/bench_contention.py --repeat 3 --m 128

Three thread pools can live in one process: our generated kernels' OpenMP workers (Intel's
libiomp5, ``RELAX_MLIR_NUM_THREADS``), numpy's OpenBLAS pthreads, PyTorch's (and MKL's, our
BLAS dispatch) GNU OpenMP (libgomp). After a parallel region each runtime lets its workers
spin for a while before they sleep (libiomp5: ``KMP_BLOCKTIME``, 200 ms by default; libgomp:
``GOMP_SPINCOUNT`` / ``OMP_WAIT_POLICY``; OpenBLAS: its thread timeout), and spinning workers of
one runtime take the cores the next runtime's workers need. Each case times OUR call alone
(median ms, before the other library is first called: none of its workers exists yet), then,
alternating so that both see the same machine load, right after another call of ours ("after
ours") and right after another library's matmul (timing our call only), and prints the ratio
interleaved / alone (1.0: no interference). (Until session 5 the ratio's denominator was the
"after ours" time, which the other library's spinning workers slow down just as well:
numpy's OpenBLAS workers spin ~0.1 s after each call, so it hid the interference.)
``--env OPENBLAS_THREAD_TIMEOUT=4`` shows numpy's workers sleeping right after a call. Cases:

* ``gen+numpy``, ``gen+torch``: our generated 2-thread matmul (dispatch off);
* ``blas+numpy``: our matmul dispatched to relax_blas over MKL (RELAX_BLAS=mkl), with numpy's
  OpenBLAS matmul in between.

Each case runs in a fresh subprocess (the runtimes read their wait policy once, at load),
``--repeat`` times; medians are printed with the load average. ``--env K=V`` adds to the
subprocess's environment (e.g. ``--env KMP_BLOCKTIME=200`` to see the runtime's default
spinning again: relax_mlir sets KMP_BLOCKTIME=1 itself unless it is set, see
relax_mlir.runtime.libraries.openmp_wait_policy).

``--sweep`` measures where threads start to pay (relax-omp-threads' work threshold,
``MIN_PARALLEL_BYTES``): M = 1 GEMVs and add+relu at growing sizes, each compiled once with
the threshold off, timed at 1 and 2 threads through the SAME executable (``exe.num_threads``
switched between calls, the two interleaved), optionally ``--busy`` with another process
spinning on one core (the contended case):

    .venv/bin/python bench/bench_contention.py --sweep [--busy]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _src(k: int, n: int) -> str:
    """@main: one f32 matmul (m, k) x (k, n) with symbolic m."""
    from bench_kernels import single_op
    return single_op("matmul", [["m", k], [k, n]], ["m", n])


def child(case: str, m: int, k: int, n: int, calls: int) -> dict:
    """One case in this (fresh) process: median ms of our call alone and interleaved."""
    import numpy as np
    sys.path.insert(0, ROOT)
    import relax_mlir
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    exe = relax_mlir.compile(_src(k, n), options={"dispatch": case.startswith("blas")})
    x = rng.standard_normal((256, 1024), dtype=np.float32)
    y = rng.standard_normal((1024, 1024), dtype=np.float32)
    if case.endswith("torch"):
        import torch
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        other = lambda: torch.matmul(tx, ty)  # noqa: E731
    else:
        other = lambda: x @ y  # noqa: E731

    def ours_ms() -> float:
        t0 = time.perf_counter()
        exe(a, b)
        return (time.perf_counter() - t0) * 1e3

    # Clean: our calls before the other library's first call (its worker threads do not exist
    # yet, nothing of theirs spins). Then paired in time (the machine is shared): each round
    # times our call right after another call of ours ("after ours": the other library's
    # workers may still spin from the round before) and right after the other library's
    # matmul ("interleaved"). The ratio is interleaved over clean.
    for _ in range(3):
        exe(a, b)
    clean = [ours_ms() for _ in range(calls)]
    assert np.allclose(exe(a, b), a @ b, rtol=1e-3, atol=1e-2)   # numpy's first matmul: after the clean phase
    for _ in range(3):
        exe(a, b), other()
    alone, inter = [], []
    for _ in range(calls):
        exe(a, b)
        alone.append(ours_ms())
        other()
        inter.append(ours_ms())
    t0 = time.perf_counter()
    for _ in range(calls):
        other()
    other_ms = (time.perf_counter() - t0) * 1e3 / calls
    return {"alone": statistics.median(clean), "after_ours": statistics.median(alone),
            "inter": statistics.median(inter), "other": other_ms,
            "blas": exe.metadata.get("blas"), "threads": os.environ.get("RELAX_MLIR_NUM_THREADS", "1"),
            "kmp_blocktime": os.environ.get("KMP_BLOCKTIME")}


def _sweep_cases() -> list[tuple[str, int, str, list]]:
    """(label, bytes moved, program, argument shapes): M = 1 GEMVs (K x N, B dominating the
    bytes) and add+relu over m x 1024 (3 arrays)."""
    from bench_kernels import add_relu
    cases = []
    for k, n in ((128, 256), (256, 256), (256, 512), (512, 512), (512, 1024), (1024, 1024), (512, 2048),
                 (2048, 2048)):
        cases.append((f"gemv {k}x{n}", 4 * (k * n + k + n), _src(k, n), [(1, k), (k, n)]))
    for m in (16, 32, 64, 128, 256, 512):
        cases.append((f"add_relu {m}x1024", 3 * 4 * m * 1024, add_relu(), [(m, 1024), (m, 1024)]))
    return cases


def sweep(calls: int, busy: bool, after: str = "") -> None:
    """Time each case at 1 and 2 threads (threshold off), interleaved; print the ratio.
    ``after``: ``numpy`` or ``torch``: each timed call right after that library's matmul."""
    import numpy as np
    sys.path.insert(0, ROOT)
    import relax_mlir
    from relax_mlir.backends.cpu import omp_threads
    omp_threads.MIN_PARALLEL_BYTES = 0   # every region takes exe.num_threads
    other = lambda: None  # noqa: E731
    if after:
        x = np.ones((256, 1024), np.float32)
        y = np.ones((1024, 1024), np.float32)
        if after == "torch":
            import torch
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            other = lambda: torch.matmul(tx, ty)  # noqa: E731
        else:
            other = lambda: x @ y  # noqa: E731
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()}, busy spinner: {busy}, "
              f"each call after a matmul of: {after or 'nothing'}, OMP_DYNAMIC: {os.environ.get('OMP_DYNAMIC')}, "
              f"RELAX_MLIR_DYNAMIC_THREADS: {os.environ.get('RELAX_MLIR_DYNAMIC_THREADS')}")
        print(f"{'case':22s} {'bytes':>9s} {'1 thr ms':>9s} {'2 thr ms':>9s} {'2/1':>6s}")
        rng = np.random.default_rng(0)
        for label, nbytes, src, shapes in _sweep_cases():
            exe = relax_mlir.compile(src, options={"dispatch": False})
            args = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
            t = {1: [], 2: []}
            for n in (1, 2, 1, 2):
                exe.num_threads = n
                exe(*args)
            for _ in range(calls):
                for n in (1, 2):
                    exe.num_threads = n
                    other()
                    t0 = time.perf_counter()
                    exe(*args)
                    t[n].append((time.perf_counter() - t0) * 1e3)
            a, b = statistics.median(t[1]), statistics.median(t[2])
            print(f"{label:22s} {nbytes:9d} {a:9.4f} {b:9.4f} {b / a:6.2f}", flush=True)
        print(f"load average at end: {os.getloadavg()}")
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


NUMPY_SIZES = ((64, 512, 512), (256, 1024, 1024), (1024, 1024, 1024), (2048, 512, 2048))


def numpy_child(calls: int) -> dict:
    """In this (fresh) process: median ms of numpy's matmuls back to back, then of our
    2-thread matmul (M=128, K=512, N=2048) right after each numpy matmul."""
    import numpy as np
    sys.path.insert(0, ROOT)
    import relax_mlir
    from relax_mlir.runtime import libraries, openmp
    exe = relax_mlir.compile(_src(512, 2048), options={"dispatch": False})   # initializes OpenMP (and shares)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 512), dtype=np.float32)
    b = rng.standard_normal((512, 2048), dtype=np.float32)
    out = {"shared": any(v and "numpy" in p for p, v in openmp.shared_blas_pools.items())}
    for m, k, n in NUMPY_SIZES:
        x = rng.standard_normal((m, k), dtype=np.float32)
        y = rng.standard_normal((k, n), dtype=np.float32)
        own, after = [], []
        for _ in range(3):
            x @ y
        for _ in range(calls):
            t0 = time.perf_counter()
            x @ y
            own.append((time.perf_counter() - t0) * 1e3)
        for _ in range(calls):
            x @ y
            t0 = time.perf_counter()
            exe(a, b)
            after.append((time.perf_counter() - t0) * 1e3)
        out[str((m, k, n))] = [statistics.median(own), statistics.median(after)]
    return out


def numpy_speed(calls: int, repeat: int) -> None:
    """numpy's own matmuls with OpenBLAS's jobs on our OpenMP team (share_blas_threads, the
    default) and on OpenBLAS's own workers (RELAX_MLIR_SHARE_BLAS_THREADS=0), one fresh
    process each, alternating, ``repeat`` times; medians. Also our matmul right after each."""
    env = dict(os.environ)
    env.setdefault("RELAX_MLIR_NUM_THREADS", "2")
    runs: dict[str, list[dict]] = {"1": [], "0": []}
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()}")
    for _ in range(repeat):
        for share in ("0", "1"):
            out = subprocess.run([sys.executable, __file__, "--numpy-child", "--calls", str(calls)],
                                 env=dict(env, RELAX_MLIR_SHARE_BLAS_THREADS=share), capture_output=True, text=True,
                                 check=True)
            runs[share].append(json.loads(out.stdout.strip().splitlines()[-1]))
    if not all(r["shared"] for r in runs["1"]):
        print("numpy's BLAS was not shared (not an OpenBLAS with the callback API): nothing to compare")
        return
    print(f"{'numpy matmul (M, K, N)':24s} {'own pool ms':>11s} {'our team ms':>11s} {'ratio':>6s}"
          f" {'ours after numpy, own':>22s} {'shared':>7s}")
    for size in NUMPY_SIZES:
        key = str(size)
        med = lambda share, i: statistics.median(r[key][i] for r in runs[share])  # noqa: E731
        print(f"{key:24s} {med('0', 0):11.3f} {med('1', 0):11.3f} {med('1', 0) / med('0', 0):6.2f}"
              f" {med('0', 1):22.3f} {med('1', 1):7.3f}", flush=True)
    print(f"load average at end: {os.getloadavg()}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", default="")
    ap.add_argument("--m", type=int, default=128)
    ap.add_argument("--k", type=int, default=512)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="gen+numpy,gen+torch,blas+numpy")
    ap.add_argument("--env", action="append", default=[], help="K=V for the subprocesses")
    ap.add_argument("--sweep", action="store_true", help="1 vs 2 threads at growing sizes (the work threshold)")
    ap.add_argument("--busy", action="store_true", help="--sweep with a process spinning on one core")
    ap.add_argument("--after", default="", choices=["", "numpy", "torch"],
                    help="--sweep: each timed call right after a numpy or torch matmul")
    ap.add_argument("--numpy-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--numpy-speed", action="store_true",
                    help="numpy's matmuls on OpenBLAS's own workers against on our team (share_blas_threads)")
    args = ap.parse_args()
    if args.numpy_child:
        print(json.dumps(numpy_child(args.calls)))
        return 0
    if args.numpy_speed:
        numpy_speed(args.calls, args.repeat)
        return 0
    if args.sweep:
        sweep(max(args.calls, 200) if not args.after else args.calls, args.busy, args.after)
        return 0
    if args.child:
        print(json.dumps(child(args.child, args.m, args.k, args.n, args.calls)))
        return 0
    env = dict(os.environ)
    env.setdefault("RELAX_MLIR_NUM_THREADS", "2")
    env.setdefault("RELAX_BLAS", "mkl")
    for kv in args.env:
        key, _, val = kv.partition("=")
        env[key] = val
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()}; "
          f"M={args.m} K={args.k} N={args.n}, RELAX_MLIR_NUM_THREADS={env['RELAX_MLIR_NUM_THREADS']}, "
          f"extra env: {args.env or 'none'}")
    print(f"{'case':12s} {'alone ms':>9s} {'after ours':>11s} {'interleaved':>12s} {'ratio':>6s} {'other ms':>9s}"
          "  runs (ratio)")
    for case in [c for c in args.cases.split(",") if c]:
        rows = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, "--child", case, "--m", str(args.m), "--k", str(args.k),
                                  "--n", str(args.n), "--calls", str(args.calls)],
                                 env=env, capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        med = lambda key: statistics.median(r[key] for r in rows)  # noqa: E731
        ratios = [r["inter"] / r["alone"] for r in rows]
        print(f"{case:12s} {med('alone'):9.3f} {med('after_ours'):11.3f} {med('inter'):12.3f}"
              f" {statistics.median(ratios):6.2f}"
              f" {med('other'):9.3f}  {' '.join(f'{x:.2f}' for x in ratios)}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
