"""Two builds of relax_blas (the same provider) side by side in one process: the matmul,
bound-weight (packed) and attention entry points called alternately, best of N each. For
checking that a change to the shim's C files (e.g. issue 26's split by job) keeps its speed.

    .venv/bin/python bench/bench_blas_builds.py OLD.so NEW.so
    # e.g. OLD: a librelax_blas-<provider>-*.so built from an older tree (the cache keeps it),
    #      NEW: libraries.build_blas_shim(provider)[0]

Prints | case | old ms | new ms | new/old |; each output is checked against numpy first.
"""
import ctypes
import sys
import time

import numpy as np

old_so, new_so = sys.argv[1], sys.argv[2]
libs = {"old": ctypes.CDLL(old_so), "new": ctypes.CDLL(new_so)}

def desc(a):
    r = a.ndim
    class D(ctypes.Structure):
        _fields_ = [("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("o", ctypes.c_int64),
                    ("s", ctypes.c_int64 * max(r, 1)), ("t", ctypes.c_int64 * max(r, 1))]
    return D(a.ctypes.data, a.ctypes.data, 0, (ctypes.c_int64 * max(r, 1))(*a.shape),
             (ctypes.c_int64 * max(r, 1))(*(s // a.itemsize for s in a.strides)))

rng = np.random.default_rng(0)
cases = {}
keep = []   # the arrays the descriptors point into
def mm(m, k, n):
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    c = np.empty((m, n), np.float32)
    d = [desc(a), desc(b), desc(c)]
    keep.append((a, b, c))
    return lambda lib: lib._mlir_ciface_relax_blas_matmul_22_f32(*map(ctypes.byref, d)), (c, a @ b)
def att(H, L, E, causal):
    q, k, v = (rng.standard_normal((H, L, E), np.float32) for _ in range(3))
    scale = np.full((H,), E ** -0.5, np.float32)
    bias = np.triu(np.full((L, L), -np.inf, np.float32), 1)[None] if causal else np.zeros((1, 1, 1), np.float32)
    lo = np.array(-np.inf, np.float32)
    live = np.ones((1, 1, 1), np.float32)
    out = np.empty((H, L, E), np.float32)
    d = [desc(x) for x in (q, k, v, scale, bias, lo, live, out)]
    keep.append((q, k, v, scale, bias, lo, live, out))
    s = q @ k.transpose(0, 2, 1) * scale[:, None, None] + bias
    p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
    return lambda lib: lib._mlir_ciface_relax_blas_attention_h0000_f32(*map(ctypes.byref, d)), (out, p @ v)
cases["matmul 1x256x512"] = mm(1, 256, 512)
cases["matmul 16x256x512"] = mm(16, 256, 512)
cases["matmul 512x256x512"] = mm(512, 256, 512)
cases["matmul 20x30x10 (small loop)"] = mm(20, 30, 10)
def packed(m, k, n):
    fn, (c, want) = mm(m, k, n)
    b = keep[-1][1]
    for lib in libs.values():
        lib.relax_blas_pack_register.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        lib.relax_blas_pack_register(b.ctypes.data, b.nbytes)
    return fn, (c, want)
cases["matmul 64x256x512, B bound (packed on MKL)"] = packed(64, 256, 512)
cases["attention H4 L128 E64 causal"] = att(4, 128, 64, True)
cases["attention H4 L512 E64 causal"] = att(4, 512, 64, True)
for name, (fn, (got, want)) in cases.items():
    best = {"old": 1e9, "new": 1e9}
    for lib in libs.values():
        fn(lib)
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    reps = 40 if "512x" in name or "L512" in name else 400
    for _ in range(reps):
        for key, lib in libs.items():
            t = time.perf_counter(); fn(lib); best[key] = min(best[key], time.perf_counter() - t)
    print(f"| {name} | {best['old']*1e3:.4f} | {best['new']*1e3:.4f} | {best['new']/best['old']:.2f} |")
