"""Measure where generated matmul code beats BLAS dispatch, per (K, N) class and M: the data
behind ``relax-dispatch-library{policy=measured}`` (issue 12, item 5).

    .venv/bin/python bench/calibrate_dispatch.py                      # print the table
    .venv/bin/python bench/calibrate_dispatch.py --write relax_mlir/transforms/dispatch_calibration.json

For each (K, N) class one program ``x @ w`` with M symbolic is compiled twice, dispatch off
(the generated, scheduled kernel with its range variants) and on (relax_blas over the default
provider), and both executables are timed at every M (best of ``--reps`` interleaved rounds of
this process's CPU time, one thread on both sides: RELAX_MLIR_NUM_THREADS=1, BLAS held to one thread by threadpoolctl;
``--threads N``: N threads on both sides, wall-clock time, the table marked ``"threads": N``:
relax-dispatch-library takes the table of the thread count the kernels are compiled for).
A point goes to generated code when its time is below ``--margin`` times BLAS's; consecutive
winning points form a range ``[lo, hi]`` of M (only measured points bound a range: the
table claims nothing between a winning and a losing point). The machine, its ISA and the
load average are written next to the ranges: re-measure on another machine (the pass reads
``$RELAX_MLIR_DISPATCH_TABLE`` or its ``table=`` option before the checked-in file).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time

def _threads_arg() -> int:
    """``--threads N`` read before the runtimes load (they read their thread counts once)."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--threads", type=int, default=1)
    return ap.parse_known_args()[0].threads


THREADS = _threads_arg()
os.environ["RELAX_MLIR_NUM_THREADS"] = str(THREADS)
os.environ["RELAX_BLAS_NUM_THREADS"] = str(THREADS)

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.schedules.target import host_target  # noqa: E402
from relax_mlir.transforms.dispatch_split import cpu_model  # noqa: E402

MS = (1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024)
CLASSES = ((512, 2048), (2048, 512), (512, 512))


def src(k: int, n: int) -> str:
    """@main: one f32 matmul (m, k) x (k, n) with symbolic m."""
    from bench_kernels import single_op
    return single_op("matmul", [["m", k], [k, n]], ["m", n])


def interleaved_best_ms(fns, rounds: int, inner: int) -> list[float]:
    """Best-of-``rounds`` time (ms) of each of ``fns``, the rounds interleaved (each round
    times every fn once, ``inner`` calls averaged), so a burst of load hits all alike: CPU
    time on one thread, wall-clock time on several."""
    clock = time.process_time if THREADS == 1 else time.perf_counter
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = clock()
            for _ in range(inner):
                fn()
            best[i] = min(best[i], (clock() - t0) / inner)
    return [b * 1e3 for b in best]


def ranges(wins: list[tuple[int, bool]]) -> list[list[int]]:
    out: list[list[int]] = []
    prev = False
    for m, w in wins:
        if w and prev:
            out[-1][1] = m
        elif w:
            out.append([m, m])
        prev = w
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--margin", type=float, default=1.0)
    ap.add_argument("--write", default="",
                    help="file to write; an existing file keeps its other tables (this machine's at this "
                         "thread count replaced)")
    ap.add_argument("--threads", type=int, default=1, help="threads of both sides (read before the runtimes load)")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    classes = []
    rng = np.random.default_rng(0)
    for k, n in CLASSES:
        gen = relax_mlir.compile(src(k, n), options={"dispatch": False})
        blas = relax_mlir.compile(src(k, n), options={"dispatch": True})
        b = rng.standard_normal((k, n), dtype=np.float32)
        wins, rows = [], []
        for m in MS:
            a = rng.standard_normal((m, k), dtype=np.float32)
            assert np.allclose(gen(a, b), blas(a, b), rtol=1e-3, atol=1e-2)
            inner = max(1, int(2e7 // (2 * m * k * n)))   # >= ~0.2 ms per timed block
            with threadpool_limits(THREADS):
                tg, tb = interleaved_best_ms([lambda: gen(a, b), lambda: blas(a, b)], args.reps, inner)
            wins.append((m, tg < args.margin * tb))
            rows.append([m, round(tg, 4), round(tb, 4)])
            print(f"K={k:5d} N={n:5d} M={m:4d}  generated {tg:8.3f} ms  blas {tb:8.3f} ms  ratio {tg / tb:5.2f}"
                  f"  load {os.getloadavg()[0]:.1f}", flush=True)
        classes.append({"k": k, "n": n, "generated_m": ranges(wins), "ms_generated_blas": rows})
    t = host_target()
    table = {"machine": cpu_model(), "isa": t.isa, "vector_bits": t.vector_bits, "blas": blas.metadata.get("blas"), "threads": THREADS,
             "date": datetime.date.today().isoformat(), "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
             "command": "bench/calibrate_dispatch.py " + " ".join(sys.argv[1:]), "classes": classes}
    text = json.dumps(table, indent=1)
    print(text)
    if args.write:
        tables = []
        if os.path.exists(args.write):
            with open(args.write) as f:
                old = json.load(f)
            tables = [t for t in (old["tables"] if "tables" in old else [old])
                      if (t.get("machine"), t.get("threads", 1)) != (table["machine"], THREADS)]
        with open(args.write, "w") as f:
            f.write(json.dumps({"tables": [table] + tables}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
