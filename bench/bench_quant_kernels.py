"""Decode GEMV (M = 1) and prefill GEMM (M = 128) over GGUF-format weights: relax_blas's
quant kernels (relax_mlir/runtime/quant_kernels.c, called through ctypes; exact and _q8)
against numpy's f32 product on the dequantized matrix, per format, 1 and 2 threads.

Shapes are SmolLM2-135M's: W (N, K) = (1536, 576) (gate / up), (576, 1536) (down) and
(49152, 576) (lm_head). Prints ms per call (median of 7 runs, each the mean of enough calls
for ~20 ms) and, at M = 1, the effective bandwidth: weight bytes / time (numpy: its f32
bytes); at M > 1 GFLOP/s (2 M N K / time).

    .venv/bin/python bench/bench_quant_kernels.py [--formats q4_1,q8_0] [--ms 1,128] [--threads 1,2] [--quick]

--ab: the exact kernels twice, alternately (5 times each, the best median kept), with the
integer-digit q5 GEMVs on and off (``relax_quant_set_exact_int``: the f32 kernels they
replaced); columns "exact" and "prev"; one thread: thread CPU time (a loaded machine's wall
time mostly measures the other processes).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as Q, quants  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from relax_mlir.runtime import libraries  # noqa: E402

FORMATS = {"q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "f16": Q.F16, "bf16": Q.BF16, "q6_k": Q.Q6_K,
           "q4_k": Q.Q4_K, "q5_k": Q.Q5_K, "q5_0": Q.Q5_0, "q5_1": Q.Q5_1}
SHAPES = [(1536, 576), (576, 1536), (49152, 576)]


def descriptor(a: np.ndarray):
    r = a.ndim

    class D(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
                    ("sizes", ctypes.c_int64 * r), ("strides", ctypes.c_int64 * r)]

    return D(a.ctypes.data, a.ctypes.data, 0, (ctypes.c_int64 * r)(*a.shape),
             (ctypes.c_int64 * r)(*[s // a.itemsize for s in a.strides]))


def weights(fmt: str, n: int, k: int, rng) -> np.ndarray:
    qt = FORMATS[fmt]
    bs, bb = GGML_QUANT_SIZES[qt]
    if fmt.endswith("_k"):   # gguf.quants does not quantize K-quants: random blocks, sane scales
        raw = rng.integers(0, 256, size=(n, k // bs, bb), dtype=np.uint8)
        d = rng.uniform(1e-3, 1e-2, size=(n, k // bs, 2)).astype(np.float16).view(np.uint8)
        if fmt == "q6_k":
            raw[:, :, 208:210] = d[:, :, 0:2]
        else:
            raw[:, :, 0:4] = d.reshape(n, k // bs, 4)
        return raw.reshape(n, -1)
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.05
    return np.ascontiguousarray(quants.quantize(w, qt)).view(np.uint8).reshape(n, -1)


def timeit(fn, target_s: float = 0.02, runs: int = 7, clock=time.perf_counter) -> float:
    fn()
    t0 = clock()
    fn()
    one = max(clock() - t0, 1e-7)
    reps = max(1, int(target_s / one))
    times = []
    for _ in range(runs):
        t0 = clock()
        for _ in range(reps):
            fn()
        times.append((clock() - t0) / reps)
    return float(np.median(times))


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--quick", action="store_true", help="fewer runs")
    ap.add_argument("--ms", default="1,128", help="rows of x (1: decode GEMV; 128: prefill)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--shapes", default=None, help="NxK,... (default: SmolLM2-135M's)")
    ap.add_argument("--ab", action="store_true", help="exact with the q5 integer GEMVs on / off, interleaved")
    args = ap.parse_args()
    runs = 3 if args.quick else 7
    lib = ctypes.CDLL(libraries.build_blas_shim()[0])
    lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
    isa = {2: "AVX-512 VNNI", 1: "AVX2", 0: "scalar"}[lib.relax_quant_isa()]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; kernels: {isa}; BLAS provider "
          f"{libraries.blas_provider()} (threads: MKL builds, and OpenBLAS builds on libiomp5: "
          f"{libraries.shim_openmp(libraries.blas_provider()) is not None})")
    print(f"load average at start: {os.getloadavg()}")
    rng = np.random.default_rng(0)
    lib.relax_quant_set_exact_int.argtypes = [ctypes.c_int]
    third = "prev ms" if args.ab else "q8 ms"
    print(f"{'format':7} {'M':>4} {'N x K':>11} {'thr':>3} {'exact ms':>9} {'GB/s':>6} {third:>9} {'GB/s':>6}"
          f" {'numpy f32 ms':>12} {'GB/s':>6}   (M > 1: GFLOP/s)")
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    for mm in [int(v) for v in args.ms.split(",")]:
        for n, k in shapes:
            if mm > 1 and n > 4096:   # lm_head: decode only (prefill computes it for the last row)
                continue
            x = rng.standard_normal((mm, k)).astype(np.float32)
            wf = rng.standard_normal((n, k)).astype(np.float32)
            xv = x[0] if mm == 1 else x
            for fmt in args.formats.split(","):
                if k % GGML_QUANT_SIZES[FORMATS[fmt]][0]:
                    print(f"{fmt:7} {mm:>4} {n:>5} x {k:<5}   -  (K not a multiple of {GGML_QUANT_SIZES[FORMATS[fmt]][0]})")
                    continue
                raw = weights(fmt, n, k, rng)
                out = np.empty((mm, n), np.float32)
                ds = [descriptor(a) for a in (x, raw, out)]
                ptrs = [ctypes.addressof(d) for d in ds] + [None]   # thread cell NULL: the BLAS count
                fns = {}
                for v in ("", "_q8"):
                    f = getattr(lib, f"_mlir_ciface_relax_qmatmul_{fmt}{v}")
                    f.argtypes, f.restype = [ctypes.c_void_p] * 4, None
                    fns[v] = f
                for nt in [int(v) for v in args.threads.split(",")]:
                    lib.relax_blas_set_num_threads(nt)
                    if args.ab:   # new and previous exact kernels, alternately, best of the medians
                        te = tq = float("inf")
                        clock = time.thread_time if nt == 1 else time.perf_counter
                        for _ in range(5):
                            lib.relax_quant_set_exact_int(1)
                            te = min(te, timeit(lambda: fns[""](*ptrs), runs=runs, clock=clock))
                            lib.relax_quant_set_exact_int(0)
                            tq = min(tq, timeit(lambda: fns[""](*ptrs), runs=runs, clock=clock))
                        lib.relax_quant_set_exact_int(1)
                    else:
                        te = timeit(lambda: fns[""](*ptrs), runs=runs)
                        tq = timeit(lambda: fns["_q8"](*ptrs), runs=runs)
                    with threadpool_limits(nt):
                        tn = timeit((lambda: wf @ xv) if mm == 1 else (lambda: xv @ wf.T), runs=runs)
                    if mm == 1:
                        gb, gn = raw.nbytes / 1e9, wf.nbytes / 1e9
                    else:
                        gb = gn = 2.0 * mm * n * k / 1e9
                    print(f"{fmt:7} {mm:>4} {n:>5} x {k:<5} {nt:>3} {te * 1e3:9.4f} {gb / te:6.1f} {tq * 1e3:9.4f}"
                          f" {gb / tq:6.1f} {tn * 1e3:12.4f} {gn / tn:6.1f}", flush=True)
    lib.relax_blas_set_num_threads(2)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
