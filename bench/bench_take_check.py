"""take's run-time index check (mode "check", the default) against mode "clip" (no check),
compiled side by side and timed interleaved in one process: a decode step's embedding
lookup (one token id into a vocab x hidden table), a prefill's (128 ids), and a large
gather (1M scalar indices), where the check's pass over the indices is largest relative
to the work. Prints the median call time of each and the ratio."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import relax_mlir


def _src(v: int, h: int, n_ids, mode: str) -> str:
    ids = f'tensor<?xi64, #relax.shape<["s"]>>'
    tab = f"tensor<{v}x{h}xf32>" if h else f"tensor<{v}xf32>"
    out = f'tensor<?x{h}xf32, #relax.shape<["s", {h}]>>' if h else 'tensor<?xf32, #relax.shape<["s"]>>'
    m = ', mode = "clip"' if mode == "clip" else ""
    return (f"func.func @main(%t: {tab}, %i: {ids}) -> {out} attributes {{relax.function}} {{\n"
            f'  %0 = "relax.take"(%t, %i) {{axis = 0 : i64{m}}} : ({tab}, {ids}) -> {out}\n  return %0 : {out}\n}}')


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = [("decode: 1 id, 49152 x 576 table", 49152, 576, 1, a.reps),
             ("prefill: 128 ids, 49152 x 576 table", 49152, 576, 128, a.reps // 4),
             ("gather: 1M ids, 4096 table", 4096, 0, 1 << 20, max(a.reps // 100, 5))]
    print(f"load {os.getloadavg()[0]:.2f}")
    for name, v, h, n, reps in cases:
        table = rng.standard_normal((v, h) if h else (v,)).astype(np.float32)
        ids = rng.integers(0, v, n).astype(np.int64)
        exes = {m: relax_mlir.compile(_src(v, h, n, m)) for m in ("check", "clip")}
        assert np.array_equal(exes["check"](table, ids), exes["clip"](table, ids))
        best = {m: [] for m in exes}
        for _ in range(a.rounds):                       # interleaved rounds
            for m, exe in exes.items():
                exe(table, ids)
                t0 = time.perf_counter()
                for _ in range(reps):
                    exe(table, ids)
                best[m].append((time.perf_counter() - t0) / reps * 1e6)
        c, k = np.median(best["check"]), np.median(best["clip"])
        print(f"{name:40s} check {c:9.2f} us  clip {k:9.2f} us  check/clip {c / k:.3f}")
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
