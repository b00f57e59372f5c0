"""relax_blas built from the shim's files (one job each, blas_shim.h): the library exports the
entry points of every file and nothing of what the files share among themselves (hidden
``relax_shim_*`` symbols), and the knobs of blas_policy.c are the ones the other files read."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from relax_mlir.runtime import libraries

#: one entry point per file of the shim (and of quant_kernels.c, built into the same library)
ENTRIES = {
    "blas_adapter.c": ["_mlir_ciface_relax_blas_matmul_22_f32", "_mlir_ciface_relax_blas_matmul_bias_tb_33_f64",
                       "_mlir_ciface_relax_blas_matmul_33_h11_f32", "_mlir_ciface_relax_blas_conv_gemm_bias_f32"],
    "blas_policy.c": ["relax_blas_set_num_threads", "relax_blas_provider", "relax_blas_set_small_flops",
                      "relax_blas_get_small_flops", "relax_blas_set_pack", "relax_blas_pack_panel"],
    "blas_gemm_avx512.c": ["relax_blas_pack_register", "relax_blas_pack_release", "relax_blas_pack_invalidate",
                           "relax_blas_pack_stats"],
    "blas_attention.c": ["_mlir_ciface_relax_blas_attention_h0000_f32",
                         "_mlir_ciface_relax_blas_attention_h1111_safe_tiled_f64"],
    "blas_fork.c": [],   # exports nothing: its atfork handler and after_fork are the library's own
    "quant_kernels.c": ["_mlir_ciface_relax_qmatmul_q4_0"],
}
#: what the files share (blas_shim.h's renaming table): never visible outside the library
SHARED = ["relax_shim_small_flops", "relax_shim_pack_fork_flops", "relax_shim_panel", "relax_shim_pack_on",
          "relax_shim_after_fork", "relax_shim_f32_gemm", "relax_shim_f64_gemm", "relax_shim_f32_fill",
          "relax_shim_f32_packed"]


@pytest.fixture(scope="module", params=libraries.blas_providers())
def shim(request):
    return request.param, ctypes.CDLL(libraries.build_blas_shim(request.param)[0])


def test_every_file_is_in_the_library(shim):
    provider, lib = shim
    assert sorted(p.name for p in libraries.BLAS_SHIM_SOURCES) == sorted(k for k in ENTRIES if k.startswith("blas_"))
    missing = [name for names in ENTRIES.values() for name in names if not hasattr(lib, name)]
    assert missing == []
    lib.relax_blas_provider.restype = ctypes.c_char_p
    assert lib.relax_blas_provider().decode() == provider
    assert hasattr(lib, "relax_blas_threading_layer") == (provider == "mkl")   # blas_policy.c, MKL builds only


def test_shared_symbols_are_hidden(shim):
    _, lib = shim
    assert [name for name in SHARED if hasattr(lib, name)] == []


def _desc(a: np.ndarray):
    """A ranked memref descriptor of ``a`` (C interface: allocated, aligned, offset, sizes, strides)."""
    r = a.ndim

    class D(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
                    ("sizes", ctypes.c_int64 * r), ("strides", ctypes.c_int64 * r)]
    return D(a.ctypes.data, a.ctypes.data, 0, (ctypes.c_int64 * r)(*a.shape),
             (ctypes.c_int64 * r)(*(s // a.itemsize for s in a.strides)))


def _copies(lib) -> int:
    lib.relax_blas_pack_stats.restype = ctypes.c_int64
    return lib.relax_blas_pack_stats(None, None)


@pytest.mark.parametrize("m, k, n", [(1, 5, 7), (3, 5, 7), (64, 96, 48)])
def test_policy_knobs_steer_the_other_files(shim, m, k, n):
    """blas_policy.c's knobs are the variables blas_adapter.c and blas_gemm_avx512.c read:
    over a registered (bound) B, an MKL build on an AVX-512 CPU packs B once the small
    threshold (set in blas_policy.c) lets the product past the adapter's plain loop, and
    never while it does not; an OpenBLAS build never packs. The product is right either way."""
    provider, lib = shim
    lib.relax_blas_set_small_flops.argtypes = [ctypes.c_double]
    lib.relax_blas_get_small_flops.restype = ctypes.c_double
    lib.relax_blas_pack_register.argtypes = lib.relax_blas_pack_release.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    before = lib.relax_blas_get_small_flops()
    rng = np.random.default_rng(m * 100 + k)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    packs = lib.relax_blas_pack_register(b.ctypes.data, b.nbytes)
    if provider == "openblas":
        assert packs == 0
    try:
        for flops, copies in ((1e18, 0), (0.0, packs)):   # every product a plain loop; through BLAS or packed
            lib.relax_blas_set_small_flops(flops)
            assert lib.relax_blas_get_small_flops() == flops
            c = np.full((m, n), np.nan, np.float32)
            da, db, dc = _desc(a), _desc(b), _desc(c)
            lib._mlir_ciface_relax_blas_matmul_22_f32(ctypes.byref(da), ctypes.byref(db), ctypes.byref(dc))
            np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
            assert _copies(lib) == copies
    finally:
        lib.relax_blas_set_small_flops(before)
        if packs:
            lib.relax_blas_pack_release(b.ctypes.data, b.nbytes)
    assert _copies(lib) == 0
