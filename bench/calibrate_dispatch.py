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
A point goes to generated code when its time is below ``--margin`` times BLAS's (``--combine``:
when it was in every file combined); consecutive
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
from relax_mlir.backends.cpu.schedules.target import host_target  # noqa: E402
from relax_mlir.transforms.dispatch_split import cpu_model, tables_of  # noqa: E402

MS = (1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024)
CLASSES = ((512, 2048), (2048, 512), (512, 512), (256, 256))


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


def ranges(wins: list[tuple[int, bool]], min_points: int = 1) -> list[list[int]]:
    """The ranges ``[lo, hi]`` of consecutive winning points, of at least ``min_points`` points."""
    out: list[list[int]] = []
    count = []
    prev = False
    for m, w in wins:
        if w and prev:
            out[-1][1] = m
            count[-1] += 1
        elif w:
            out.append([m, m])
            count.append(1)
        prev = w
    return [r for r, c in zip(out, count) if c >= min_points]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--margin", type=float, default=1.0)
    ap.add_argument("--write", default="",
                    help="file to write; an existing file keeps its other tables (this machine's at this "
                         "thread count replaced)")
    ap.add_argument("--threads", type=int, default=1, help="threads of both sides (read before the runtimes load)")
    ap.add_argument("--min-points", type=int, default=2,
                    help="a generated range spans at least this many consecutive winning points (a lone "
                         "winning M is noise more often than not, and costs a run-time split)")
    ap.add_argument("--combine", nargs="+", default=[], metavar="JSON",
                    help="measure nothing: combine these files' tables (of this machine and --threads), "
                         "e.g. one sweep per process each (a process can keep a slow BLAS mode for its "
                         "whole life): a point goes to generated code only when it won (ratio below "
                         "--margin) in every one of them")
    args = ap.parse_args()
    if args.combine:
        return write(combine(args.combine, args.margin, args.min_points), args.write)
    load0 = os.getloadavg()[0]
    rng = np.random.default_rng(0)
    exes = {(k, n): (relax_mlir.compile(src(k, n), options={"dispatch": False, "dispatch_policy": "flops"}),
                     relax_mlir.compile(src(k, n), options={"dispatch": True, "dispatch_policy": "flops"}),
                     rng.standard_normal((k, n), dtype=np.float32)) for k, n in CLASSES}
    blas = next(iter(exes.values()))[1]
    classes = []
    for (k, n), (gen, lib, b) in exes.items():
        wins, rows = [], []
        for m in MS:
            a = rng.standard_normal((m, k), dtype=np.float32)
            assert np.allclose(gen(a, b), lib(a, b), rtol=1e-3, atol=1e-2)
            inner = max(1, int(2e7 // (2 * m * k * n)))   # >= ~0.2 ms per timed block
            with threadpool_limits(THREADS):
                tg, tb = interleaved_best_ms([lambda: gen(a, b), lambda: lib(a, b)], args.reps, inner)
            wins.append((m, tg < args.margin * tb))
            rows.append([m, round(tg, 4), round(tb, 4)])
            print(f"K={k:5d} N={n:5d} M={m:4d}  generated {tg:8.3f} ms  blas {tb:8.3f} ms  ratio {tg / tb:5.2f}"
                  f"  load {os.getloadavg()[0]:.1f}", flush=True)
        classes.append({"k": k, "n": n, "generated_m": ranges(wins, args.min_points), "ms_generated_blas": rows})
    t = host_target()
    table = {"machine": cpu_model(), "isa": t.isa, "vector_bits": t.vector_bits, "blas": blas.metadata.get("blas"), "threads": THREADS,
             "date": datetime.date.today().isoformat(), "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
             "command": "bench/calibrate_dispatch.py " + " ".join(sys.argv[1:]), "classes": classes}
    return write(table, args.write)


def combine(paths: list[str], margin: float, min_points: int) -> dict:
    """The table of this machine and thread count whose generated-code points are those that
    won in every table of ``paths`` (rows: median times, and each table's ratio)."""
    found = []
    for p in paths:
        with open(p) as f:
            found += [t for t in tables_of(json.load(f)) if _key(t) == (cpu_model(), THREADS)]
    if not found:
        raise SystemExit(f"no table of {cpu_model()} at {THREADS} thread(s) in {', '.join(paths)}")
    classes = []
    for c in found[0]["classes"]:
        same = [next(x for x in t["classes"] if (x["k"], x["n"]) == (c["k"], c["n"])) for t in found]
        wins, rows = [], []
        for i, (m, *_rest) in enumerate(c["ms_generated_blas"]):
            pts = [x["ms_generated_blas"][i] for x in same]
            ratios = [p[1] / p[2] for p in pts]
            wins.append((m, max(ratios) < margin))
            rows.append([m, round(float(np.median([p[1] for p in pts])), 4),
                         round(float(np.median([p[2] for p in pts])), 4), [round(r, 3) for r in ratios]])
        classes.append({"k": c["k"], "n": c["n"], "generated_m": ranges(wins, min_points), "ms_generated_blas": rows})
    return dict(found[0], date=datetime.date.today().isoformat(), load=[x for t in found for x in t["load"]],
                command="bench/calibrate_dispatch.py " + " ".join(sys.argv[1:])
                        + f" (combining {len(found)} runs, each: {found[0]['command']})", classes=classes)


def _key(table: dict) -> tuple:
    """What one table of a calibration file stands for: (CPU model, thread count)."""
    return table.get("machine"), table.get("threads", 1)


def write(table: dict, path: str) -> int:
    """Print ``table``; with ``path``, write it there (the file's other tables kept, this
    machine's at this thread count replaced)."""
    print(json.dumps(table, indent=1))
    if path:
        tables = []
        if os.path.exists(path):
            with open(path) as f:
                old = json.load(f)
            tables = [t for t in tables_of(old) if _key(t) != _key(table)]
        with open(path, "w") as f:
            f.write(json.dumps({"tables": [table] + tables}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
