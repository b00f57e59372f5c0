"""Bound weights packed once (blas_gemm_avx512.c "Bound weights", packing.WeightPacker, PreparedCall):
numerics against numpy at M = 1, odd, large and above the packed range through ONE executable,
the packed copies' lifetime (made on first use, shared by the PreparedCalls over one array,
freed with the last), the unpacked path for a weight passed per call, f64, transposed and
batched operands, threads, weights_changed, export/load."""

from __future__ import annotations

import ctypes
import gc
import shutil

import numpy as np
import pytest

import relax_mlir

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

K, N = 96, 45            # N: one full panel of 32 and one partial of 13, or one partial of 64 (the
                         # panel width: 64 on Intel CPUs, else 32); M*N*K >= the shim's small
                         # threshold (4096) from M = 1: every product calls BLAS or packs
PANEL_BYTES = 2 * K * 32 * 4   # the packed copy of the K x N f32 weight: ceil(N / 32) panels of K x 32,
                               # or one of K x 64: the same bytes


def T(dims: list, dt: str = "f32") -> str:
    static = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    enc = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f'tensor<{static}x{dt}, #relax.shape<[{enc}]>>'


def linear_module(dt: str = "f32") -> str:
    """y = x @ w + b, z = x3 @ w (batched, collapsed into one product), u = x @ permute_dims(wt)."""
    x, w, b = T(["m", K], dt), T([K, N], dt), T([N], dt)
    x3, wt, y, y3 = T(["bt", "m", K], dt), T([N, K], dt), T(["m", N], dt), T(["bt", "m", N], dt)
    wtt = T([K, N], dt)
    return f"""
func.func @main(%x: {x}, %x3: {x3}, %w: {w}, %b: {b}, %wt: {wt}) -> ({y}, {y3}, {y}) attributes {{relax.function}} {{
  %0 = "relax.matmul"(%x, %w) : ({x}, {w}) -> {y}
  %1 = "relax.add"(%0, %b) : ({y}, {b}) -> {y}
  %2 = "relax.matmul"(%x3, %w) : ({x3}, {w}) -> {y3}
  %t = "relax.permute_dims"(%wt) {{axes = array<i64: 1, 0>}} : ({wt}) -> {wtt}
  %3 = "relax.matmul"(%x, %t) : ({x}, {wtt}) -> {y}
  return %1, %2, %3 : {y}, {y3}, {y}
}}
"""


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(linear_module())


@pytest.fixture(scope="module")
def shim(exe):
    paths = [p for p in exe.libraries if "relax_blas" in p]
    assert len(paths) == 1
    lib = ctypes.CDLL(paths[0])
    lib.relax_blas_pack_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)] * 2
    lib.relax_blas_pack_stats.restype = ctypes.c_int64
    lib.relax_blas_set_pack_m.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.relax_blas_pack_mkl_above.restype = ctypes.c_int64
    lib.relax_blas_pack_panel.restype = ctypes.c_int64
    return lib


def stats(shim) -> tuple[int, int, int]:
    """(packed copies, their bytes, registered regions) in this process."""
    b, r = ctypes.c_int64(), ctypes.c_int64()
    n = shim.relax_blas_pack_stats(ctypes.byref(b), ctypes.byref(r))
    return n, b.value, r.value


@pytest.fixture
def packing(shim):
    """Packing on (skips where this build or CPU never packs); restored after."""
    if not shim.relax_blas_set_pack(1):
        pytest.skip("this shim never packs (OpenBLAS build, or a CPU without AVX-512)")
    yield shim
    shim.relax_blas_set_pack(1)
    shim.relax_blas_set_num_threads(2)


def weights(seed: int = 0, dt=np.float32):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((K, N)).astype(dt), rng.standard_normal(N).astype(dt),
            rng.standard_normal((N, K)).astype(dt))


def check(outs, x, x3, w, b, wt) -> None:
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    tol = dict(rtol=1e-5, atol=1e-5 * np.sqrt(K))
    np.testing.assert_allclose(outs[0], x64 @ w64 + b, **tol)
    np.testing.assert_allclose(outs[1], x3.astype(np.float64) @ w64, **tol)
    np.testing.assert_allclose(outs[2], x64 @ wt.astype(np.float64).T, **tol)


@pytest.mark.parametrize("threads", [1, 2])
def test_packed_numerics_every_m_one_executable(exe, packing, threads):
    shim = packing
    shim.relax_blas_set_num_threads(threads)
    w, b, wt = weights()
    n0, bytes0, r0 = stats(shim)
    f = exe["main"].bind_params(w, b, wt)
    assert stats(shim) == (n0, bytes0, r0 + 2)        # w and wt registered (not the 1-D bias), nothing packed yet
    rng = np.random.default_rng(1)
    mkl_above = shim.relax_blas_pack_mkl_above()       # Intel CPUs: M > 256 uses MKL's packed format
    mkl_copies = 0
    # every row remainder of the 12-row (panel 32) and 6-row (panel 64) blocks: 1, 2, 4 + 1, 6 + 4 + 1
    for m in (1, 2, 5, 7, 11, 13, 300, 1500):         # 1500 > the packed range (1024): MKL gemm, same results
        x = rng.standard_normal((m, K)).astype(np.float32)
        x3 = rng.standard_normal((3, m, K)).astype(np.float32)
        outs = f(x, x3)
        check(outs, x, x3, w, b, wt)
        # one packed copy of w, made on first use and reused at every M (by the 2-D and the
        # batched product), and one of wt: its permute_dims folds into the call (the _tb
        # variant reads wt in place), so the bound weight itself reaches the product; above
        # the packed kernel's range on Intel, one more of each in MKL's format
        if 0 <= mkl_above < m:
            mkl_copies = 2
        n, nbytes, nreg = stats(shim)
        assert (n, nreg) == (n0 + 2 + mkl_copies, r0 + 2)
        assert nbytes == bytes0 + 2 * PANEL_BYTES if not mkl_copies else nbytes > bytes0 + 2 * PANEL_BYTES
        # the same call with the weights passed per call (not bound): today's unpacked path
        unbound = exe(x, x3, w, b, wt)
        for o, u in zip(outs, unbound):
            np.testing.assert_allclose(o, u, rtol=1e-5, atol=1e-5 * np.sqrt(K))
        assert stats(shim) == (n, nbytes, nreg)
    del f
    gc.collect()
    assert stats(shim) == (n0, bytes0, r0)            # freed with the PreparedCall


def test_packing_off_same_results(exe, packing):
    shim = packing
    w, b, wt = weights(3)
    f = exe["main"].bind_params(w, b, wt)
    x = np.random.default_rng(4).standard_normal((9, K)).astype(np.float32)
    x3 = np.random.default_rng(5).standard_normal((2, 9, K)).astype(np.float32)
    on = f(x, x3)
    n = stats(shim)
    shim.relax_blas_set_pack(0)
    off = f(x, x3)
    assert stats(shim) == n
    for a, c in zip(on, off):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5 * np.sqrt(K))
    check(off, x, x3, w, b, wt)


def test_two_bindings_share_one_copy(exe, packing):
    shim = packing
    w, b, wt = weights(5)
    n0, bytes0, r0 = stats(shim)
    f1 = exe["main"].bind_params(w, b, wt)
    f2 = exe.session()["main"].bind_params(w, b, wt)
    assert stats(shim) == (n0, bytes0, r0 + 2)       # the same regions, counted twice
    x = np.ones((4, K), np.float32)
    x3 = np.ones((1, 4, K), np.float32)
    f1(x, x3)
    f2(x, x3)
    assert stats(shim) == (n0 + 2, bytes0 + 2 * PANEL_BYTES, r0 + 2)   # w and wt, once each
    del f1
    gc.collect()
    assert stats(shim) == (n0 + 2, bytes0 + 2 * PANEL_BYTES, r0 + 2)   # f2 still holds them
    check(f2(x, x3), x, x3, w, b, wt)
    del f2
    gc.collect()
    assert stats(shim) == (n0, bytes0, r0)


def test_weights_changed_repacks(exe, packing):
    shim = packing
    w, b, wt = weights(7)
    f = exe["main"].bind_params(w, b, wt)
    x = np.random.default_rng(8).standard_normal((5, K)).astype(np.float32)
    x3 = x[None]
    check(f(x, x3), x, x3, w, b, wt)
    old = w.copy()
    w *= 2.0                                          # in place: bound weights are constant until told
    np.testing.assert_allclose(f(x, x3)[0], x.astype(np.float64) @ old + b, rtol=1e-5, atol=1e-4)
    f.weights_changed()
    check(f(x, x3), x, x3, w, b, wt)


def test_f64_weights_not_packed(packing):
    shim = packing
    exe64 = relax_mlir.compile(linear_module("f64"))
    w, b, wt = weights(9, np.float64)
    n0 = stats(shim)
    f = exe64["main"].bind_params(w, b, wt)
    x = np.random.default_rng(10).standard_normal((6, K))
    x3 = np.random.default_rng(11).standard_normal((2, 6, K))
    check(f(x, x3), x, x3, w, b, wt)
    assert stats(shim) == n0                          # f64 arrays are not even registered


def test_export_load_packs_in_the_model(exe, packing, tmp_path):
    shim = packing
    path = exe.export(str(tmp_path / "linear.so"))
    loaded = relax_mlir.load(path)
    w, b, wt = weights(12)
    before = stats(shim)
    f = loaded["main"].bind_params(w, b, wt)
    lib = loaded._resolver.lib                        # the model's own copy of the shim
    lib.relax_blas_pack_stats.argtypes = [ctypes.POINTER(ctypes.c_int64)] * 2
    lib.relax_blas_pack_stats.restype = ctypes.c_int64
    x = np.random.default_rng(13).standard_normal((11, K)).astype(np.float32)
    x3 = x.reshape(1, 11, K)
    check(f(x, x3), x, x3, w, b, wt)
    assert stats(lib) == (2, 2 * PANEL_BYTES, 2)      # w and wt
    assert stats(shim) == before                      # the JIT's shim is not involved
    del f
    gc.collect()
    assert stats(lib) == (0, 0, 0)


FORK = """
import os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import relax_mlir
from test_packed_weights import linear_module, weights, check
exe = relax_mlir.compile(linear_module())
w, b, wt = weights(14)
f = exe["main"].bind_params(w, b, wt)
x = np.random.default_rng(15).standard_normal((300, 96)).astype(np.float32)
x3 = np.stack([x, x[::-1]])
check(f(x, x3), x, x3, w, b, wt)      # packed on 2 threads: the parent's OpenMP pool exists now
pid = os.fork()
if pid == 0:
    try:
        check(f(x, x3), x, x3, w, b, wt)
        check(f(x[:2], x3[:, :2]), x[:2], x3[:, :2], w, b, wt)
        os._exit(0)
    except BaseException:
        os._exit(3)
_, status = os.waitpid(pid, 0)
check(f(x, x3), x, x3, w, b, wt)
print(os.waitstatus_to_exitcode(status))
"""


def test_fork_after_packed_products(packing, tmp_path):
    """fork() after packed products ran on the BLAS threads: the child's packed products run on
    one thread (GNU OpenMP's pool does not survive fork), finish and are right."""
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, RELAX_BLAS_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join([os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", FORK, here], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["0"]


PANEL_CHECK = r"""
import sys, ctypes
import numpy as np
sys.path.insert(0, sys.argv[1])
import relax_mlir
from test_packed_weights import linear_module, weights, check, K
exe = relax_mlir.compile(linear_module())
shim = ctypes.CDLL([p for p in exe.libraries if "relax_blas" in p][0])
shim.relax_blas_pack_panel.restype = ctypes.c_int64
if not shim.relax_blas_set_pack(1):
    print("nopack"); sys.exit(0)
w, b, wt = weights()
f = exe["main"].bind_params(w, b, wt)
rng = np.random.default_rng(2)
for m in (1, 3, 5, 6, 11, 12, 13, 25, 97, 256):
    x = rng.standard_normal((m, K)).astype(np.float32)
    x3 = rng.standard_normal((2, m, K)).astype(np.float32)
    check(f(x, x3), x, x3, w, b, wt)
print(shim.relax_blas_pack_panel())
"""


@pytest.mark.parametrize("panel", ["32", "64"])
def test_both_panel_widths(packing, panel):
    """RELAX_BLAS_PACK_PANEL selects the packed kernels' panel width (12 x 32 or 6 x 64 register
    blocks); both are right at every row remainder, one and two threads' split of the panels."""
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, RELAX_BLAS_PACK_PANEL=panel, RELAX_BLAS_NUM_THREADS="2", RELAX_BLAS_PACK_FORK_FLOPS="0",
               PYTHONPATH=os.pathsep.join([os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", PANEL_CHECK, here], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == [panel]
