"""One compiled matmul executable timed with its operands at different offsets from a 4 KB
page boundary (issue 12: the generated kernel's time depended on them, numpy's does not).

    .venv/bin/python bench/bench_pages.py                # N, K static
    .venv/bin/python bench/bench_pages.py --symbolic     # M, N, K symbolic

One thread on both sides (``RELAX_MLIR_NUM_THREADS=1``, numpy under threadpoolctl's limit
of 1), CPU time of the calling thread, ours and numpy interleaved round by round; the
best of the rounds (the figure least disturbed by other work on a shared machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ["RELAX_MLIR_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
from bench_kernels import single_op  # noqa: E402

#: (A, B) byte offsets past a page boundary
OFFSETS = ((0, 0), (16, 64), (2048, 16))


def at_offset(shape: tuple[int, int], offset: int, rng) -> np.ndarray:
    """A random f32 array whose data starts ``offset`` bytes past a 4 KB page boundary."""
    n = shape[0] * shape[1]
    buf = np.empty(n + 2048, np.float32)
    start = ((-buf.ctypes.data) % 4096 + offset) // 4
    a = buf[start:start + n].reshape(shape)
    a[...] = rng.standard_normal(shape, dtype=np.float32)
    return a


def best(fn, rounds: int, calls: int = 2) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        out.append((time.thread_time() - t0) / calls * 1e3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--symbolic", action="store_true", help="M, N, K all symbolic")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--m", default="16,128,512")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"load average at start: {os.getloadavg()}; ms per call (best of {args.rounds} rounds), ours / numpy = ratio")
    for k, n in ((512, 2048), (2048, 512)):
        K, N = ("k", "n") if args.symbolic else (k, n)
        exe = relax_mlir.compile(single_op("matmul", [["m", K], [K, N]], ["m", N]), options={"dispatch": False})
        for m in (int(x) for x in args.m.split(",")):
            row = []
            for oa, ob in OFFSETS:
                a, b = at_offset((m, k), oa, rng), at_offset((k, n), ob, rng)
                want = a.astype(np.float64) @ b
                assert np.max(np.abs(exe(a, b) - want)) <= 1e-3 * np.max(np.abs(want))
                ours, ref = [], []
                with threadpool_limits(1):
                    for _ in range(args.rounds):
                        ours += best(lambda: exe(a, b), 1)
                        ref += best(lambda: a @ b, 1)
                row.append(f"A+{oa} B+{ob}: {min(ours):.2f}/{min(ref):.2f} = {min(ours) / min(ref):.2f}")
            print(f"K={k} N={n}{' (symbolic)' if args.symbolic else ''} M={m}: " + "   ".join(row), flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
