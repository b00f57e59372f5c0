"""1 against 2 threads of one quantized GEMV (q4_1, exact and _q8) on a provider's relax_blas
build, interleaved: 40 samples per case, each the mean of enough calls for ~2 ms (or the ms given); prints min and
median (us) and the speedups. RELAX_MLIR_DYNAMIC_THREADS=1 for libiomp5's load-balanced teams.

    .venv/bin/python bench/bench_quant_threads.py [openblas|mkl] [NxK] [ms per sample, default 2]
"""
import ctypes
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_quant_kernels import descriptor, weights  # noqa: E402

from relax_mlir.runtime import libraries  # noqa: E402

prov = sys.argv[1] if len(sys.argv) > 1 else "openblas"
n, k = (int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "1536x576").split("x"))
lib = ctypes.CDLL(libraries.build_blas_shim(prov)[0])
lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
rng = np.random.default_rng(0)
x = rng.standard_normal((1, k)).astype(np.float32)
raw = weights("q4_1", n, k, rng)
out = np.empty((1, n), np.float32)
ds = [descriptor(a) for a in (x, raw, out)]
ptrs = [ctypes.addressof(d) for d in ds] + [None]   # thread cell NULL: the BLAS count
fns = {}
for v in ("", "_q8"):
    f = getattr(lib, f"_mlir_ciface_relax_qmatmul_q4_1{v}")
    f.argtypes, f.restype = [ctypes.c_void_p] * 4, None
    fns[v] = f
target_s = float(sys.argv[3]) / 1e3 if len(sys.argv) > 3 else 2e-3   # ms per sample
reps = max(20, int(target_s / (n * k * 6e-11 + 1e-6)))
res = {(v, nt): [] for v in fns for nt in (1, 2)}
print(f"{prov} q4_1 GEMV {n}x{k}, {reps} calls per sample; load at start {os.getloadavg()}")
for s in range(40):
    for nt in (1, 2):
        lib.relax_blas_set_num_threads(nt)
        for v, f in fns.items():
            f(*ptrs)
            t = time.perf_counter()
            for _ in range(reps):
                f(*ptrs)
            res[(v, nt)].append((time.perf_counter() - t) / reps)
    assert lib.relax_quant_last_threads() in (1, 2)
for v in fns:
    a, b = np.array(res[(v, 1)]), np.array(res[(v, 2)])
    print(f"{'exact' if not v else 'q8':5}: 1 thr min {a.min() * 1e6:7.1f} us med {np.median(a) * 1e6:7.1f} | "
          f"2 thr min {b.min() * 1e6:7.1f} us med {np.median(b) * 1e6:7.1f} | "
          f"speedup min {a.min() / b.min():.2f}x med {np.median(a) / np.median(b):.2f}x")
print(f"load at end {os.getloadavg()}")
