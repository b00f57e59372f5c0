"""A decode step's quantized GEMVs as they run in SmolLM2-135M, weights streamed from memory:
the 30 layers' 7 projections (q, k, v, o: 576 x 576 / 192 x 576; gate, up: 1536 x 576; down:
576 x 1536) and the 49152 x 576 lm_head, every matrix its own array (~85-540 MB a step, far
more than the caches hold), called in order through relax_blas's quant kernels (ctypes, one
thread, M = 1), exact and _q8. Prints ms per step (best and median of --reps, thread CPU
time) and the weight bytes per second; ``--prefetch`` sweeps the kernels' prefetch distance
(``relax_quant_prefetch``, bytes). ``f32``: the weights as the model binds them, (K, N) f32
(x @ W), through relax_blas's matmul entry (``relax_blas_matmul_22_f32``: the provider's
sgemv unless M <= 3 takes the quant kernels' f32 GEMV, ``relax_quant_f32_gemv`` below) in the
first column and the BLAS sgemv itself (``relax_quant_set_f32_gemv(0)``) in the second.
``--down-only``: the 30 down projections alone (K = 1536,
for the K-quants, whose 256-blocks do not divide K = 576).

    .venv/bin/python bench/bench_decode_gemv.py [--formats q8_0,q4_1,f16,f32] [--prefetch 0,8192] [--reps 7]

``--ab``: the second column is the exact route again with the integer-digit q5 GEMVs off
(``relax_quant_set_exact_int(0)``: the f32 kernels they replaced), the two alternating per rep.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quant_kernels import cpu_model, descriptor, weights  # noqa: E402
from relax_mlir.runtime import libraries  # noqa: E402

LAYER = [(576, 576), (192, 576), (192, 576), (576, 576), (1536, 576), (1536, 576), (576, 1536)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default="q8_0,q4_1,q4_0,q5_0,f16,f32")
    ap.add_argument("--prefetch", default="8192", help="prefetch distances in bytes, comma-separated")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--down-only", action="store_true")
    ap.add_argument("--ab", action="store_true", help="second column: exact, q5 integer GEMVs off")
    args = ap.parse_args()
    lib = ctypes.CDLL(libraries.build_blas_shim()[0])
    lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
    lib.relax_quant_prefetch.argtypes, lib.relax_quant_prefetch.restype = [ctypes.c_int64], ctypes.c_int64
    lib.relax_blas_set_num_threads(1)
    lib.relax_quant_set_exact_int.argtypes = [ctypes.c_int]
    default = lib.relax_quant_prefetch(-1)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; one thread; load average {os.getloadavg()}")
    shapes = [LAYER[6]] * 30 if args.down_only else LAYER * 30 + [(49152, 576)]
    rng = np.random.default_rng(0)
    print(f"{'format':7} {'prefetch':>8} {'MB/step':>8} {'exact ms':>15} {'GB/s':>6} {'q8 ms':>15} {'GB/s':>6}"
          "   (f32: exact = relax_blas_matmul_22_f32, q8 = the BLAS sgemv)")
    for fmt in args.formats.split(","):
        mats = {}
        for n, k in set(shapes):   # one random matrix per shape, copied per use: distinct memory
            mats[n, k] = (rng.standard_normal((k, n)).astype(np.float32) if fmt == "f32"
                          else weights(fmt, n, k, rng))
        ws = [mats[s].copy() for s in shapes]
        xs = {k: rng.standard_normal((1, k)).astype(np.float32) for _, k in set(shapes)}
        outs = {n: np.empty((1, n), np.float32) for n, _ in set(shapes)}
        keep = [(descriptor(xs[k]), descriptor(w), descriptor(outs[n])) for (n, k), w in zip(shapes, ws)]
        calls = [[ctypes.addressof(d) for d in ds] + ([] if fmt == "f32" else [None]) for ds in keep]
        mb = sum(w.nbytes for w in ws) / 1e6
        fns = {}
        for v in ("", "_q8"):
            if fmt == "f32":   # x @ W (K, N): our f32 GEMV, then the BLAS sgemv (switched off)
                m22 = lib._mlir_ciface_relax_blas_matmul_22_f32
                m22.argtypes, m22.restype = [ctypes.c_void_p] * 3, None
                fns[v] = m22
                continue
            f = getattr(lib, f"_mlir_ciface_relax_qmatmul_{fmt}{v}")
            f.argtypes, f.restype = [ctypes.c_void_p] * 4, None
            fns[v] = f
        for pf in [int(v) for v in args.prefetch.split(",")]:
            lib.relax_quant_prefetch(pf)
            res = {}
            if args.ab:   # exact with the q5 integer GEMVs on, then off, alternately
                tss = {"": [], "_q8": []}
                for _ in range(args.reps):
                    for v in tss:
                        lib.relax_quant_set_exact_int(int(v == ""))
                        t0 = time.thread_time()
                        for c in calls:
                            fns[""](*c)
                        tss[v].append(time.thread_time() - t0)
                lib.relax_quant_set_exact_int(1)
                res = {v: (min(ts), statistics.median(ts)) for v, ts in tss.items()}
            for v, f in ({} if args.ab else fns).items():
                lib.relax_quant_set_f32_gemv(int(v == ""))   # f32: ours, then the BLAS sgemv
                ts = []
                for _ in range(args.reps):
                    t0 = time.thread_time()
                    for c in calls:
                        f(*c)
                    ts.append(time.thread_time() - t0)
                res[v] = (min(ts), statistics.median(ts))
            (be, me), (bq, mq) = res[""], res["_q8"]
            print(f"{fmt:7} {pf:>8} {mb:8.1f} {be * 1e3:6.2f} ({me * 1e3:6.2f}) {mb / 1e3 / be:6.1f}"
                  f" {bq * 1e3:6.2f} ({mq * 1e3:6.2f}) {mb / 1e3 / bq:6.1f}", flush=True)
        del ws, keep, calls
    lib.relax_quant_prefetch(default)
    lib.relax_quant_set_f32_gemv(1)
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
