"""relax_blas's quantized-weight kernels (relax_mlir/runtime/quant_kernels.c), called directly
through ctypes on memref descriptors, against gguf.quants' dequantize + a float64 matmul.

Exact kernels (``relax_qmatmul_<fmt>``): |out - ref| <= 1e-4 * (|x| @ |W|^T) elementwise
(f32 accumulation; measured ~1e-7 of that). ``_q8`` kernels: x quantized per 32 to int8 with
scale amax/127 (error <= amax/254 per element), so |out - ref| <= sum over chunks of
amax/254 * sum|w| in the chunk, plus the f32 term. Every ISA level this CPU has is tested
(AVX-512 VNNI, AVX2, scalar: relax_quant_set_isa)."""

from __future__ import annotations

import ctypes
import zlib

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf import quants  # noqa: E402

from relax_mlir.runtime import libraries  # noqa: E402

FORMATS = {"f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "q5_0": Q.Q5_0,
           "q5_1": Q.Q5_1, "q4_k": Q.Q4_K, "q5_k": Q.Q5_K, "q6_k": Q.Q6_K}
K_QUANTS = ("q4_k", "q5_k", "q6_k")
ISA_NAMES = {2: "avx512", 1: "avx2", 0: "scalar"}


def descriptor(a: np.ndarray):
    """A memref descriptor of the numpy view ``a`` (strides in elements; offset 0)."""
    r = a.ndim

    class D(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64),
                    ("sizes", ctypes.c_int64 * r), ("strides", ctypes.c_int64 * r)]

    assert all(s % a.itemsize == 0 for s in a.strides)
    d = D(a.ctypes.data, a.ctypes.data, 0, (ctypes.c_int64 * r)(*a.shape),
          (ctypes.c_int64 * r)(*[s // a.itemsize for s in a.strides]))
    return d


@pytest.fixture(scope="module", params=libraries.blas_providers())
def lib(request):
    """The relax_blas library of each installed provider (both may be loaded: ctypes loads each
    with RTLD_LOCAL, and every call below goes through its own handle)."""
    path = libraries.build_blas_shim(request.param)[0]
    lib = ctypes.CDLL(path)
    lib.provider = request.param
    lib.relax_quant_set_isa.argtypes = [ctypes.c_int]
    lib.relax_quant_set_fork_work.argtypes = [ctypes.c_double]
    lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
    lib.relax_quant_prefetch.argtypes, lib.relax_quant_prefetch.restype = [ctypes.c_int64], ctypes.c_int64
    best = lib.relax_quant_set_isa(-1)
    yield lib
    lib.relax_quant_set_isa(best)
    lib.relax_quant_set_fork_work(262144.0)


def isa_levels(lib) -> list[int]:
    best = lib.relax_quant_set_isa(-1)
    return list(range(best, -1, -1))


def call(lib, name: str, *arrays, threads=None) -> None:
    """``name`` on the arrays' descriptors; qmatmul entries get the thread-count cell last
    (``threads``: a 0-d int32 array; None: NULL, the BLAS count)."""
    ds = [descriptor(a) for a in arrays]
    args = [ctypes.addressof(d) for d in ds]
    if name.startswith("relax_qmatmul_"):
        cell = None if threads is None else descriptor(np.asarray(threads, np.int32).reshape(()))
        args.append(None if cell is None else ctypes.addressof(cell))
    fn = getattr(lib, f"_mlir_ciface_{name}")
    fn.argtypes = [ctypes.c_void_p] * len(args)
    fn.restype = None
    fn(*args)


def random_weights(fmt: str, n: int, k: int, rng) -> np.ndarray:
    """(n, RB) uint8 GGUF rows: gguf.quants.quantize where it quantizes, else random raw
    K-quant blocks with sane f16 scales."""
    qt = FORMATS[fmt]
    bs, bb = gguf.GGML_QUANT_SIZES[qt]
    if fmt not in K_QUANTS:
        w = rng.standard_normal((n, k)).astype(np.float32) * 0.05
        q = quants.quantize(w, qt)
        return np.ascontiguousarray(q).view(np.uint8).reshape(n, k // bs * bb)
    raw = rng.integers(0, 256, size=(n, k // bs, bb), dtype=np.uint8)
    f16 = lambda lo, hi: rng.uniform(lo, hi, size=(n, k // bs)).astype(np.float16).view(np.uint8).reshape(n, k // bs, 2)
    if fmt == "q6_k":
        raw[:, :, 208:210] = f16(1e-4, 1e-3)          # d; the 16 int8 scales stay random
    else:
        raw[:, :, 0:2] = f16(1e-3, 1e-2)              # d
        raw[:, :, 2:4] = f16(1e-3, 1e-2)              # dmin
    return raw.reshape(n, k // bs * bb)


def dequant(fmt: str, raw: np.ndarray) -> np.ndarray:
    return quants.dequantize(np.ascontiguousarray(raw), FORMATS[fmt]).astype(np.float64)


def q8_bound(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The error bound of x's int8 quantization per 32: sum_c amax_c(x) / 254 * sum_{c} |w|."""
    m, k = x.shape
    nc = k // 32
    amax = np.abs(x[:, :nc * 32]).reshape(m, nc, 32).max(axis=2).astype(np.float64)
    wsum = np.abs(w[:, :nc * 32]).reshape(w.shape[0], nc, 32).sum(axis=2)
    return amax / 254.0 @ wsum.T


def check(lib, fmt: str, m: int, k: int, n: int, q8: bool, rng, stats=None):
    raw = random_weights(fmt, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    out = np.full((m, n), np.nan, np.float32)
    call(lib, f"relax_qmatmul_{fmt}{'_q8' if q8 else ''}", x, raw, out)
    w = dequant(fmt, raw)
    ref = x.astype(np.float64) @ w.T
    scale = np.abs(x).astype(np.float64) @ np.abs(w).T
    err = np.abs(out - ref)
    tol = 1e-4 * scale
    if q8 and fmt not in ("f16", "bf16"):
        tol = tol + q8_bound(x, w) * 1.0001
    assert np.all(np.isfinite(out))
    assert np.all(err <= tol), (fmt, m, k, n, q8, float((err / np.maximum(tol, 1e-30)).max()))
    if stats is not None:   # error relative to sum |x| |w|, the scale of a dot product's rounding
        stats.append(float((err / np.maximum(scale, 1e-30)).max()))
    return out


def shapes(fmt: str, full: bool):
    ks = [256, 768, 1536] if fmt in K_QUANTS else [32, 96, 576, 1536]
    if fmt in ("f16", "bf16"):
        ks += [7, 40]
    ms, ns = ([1, 3, 17, 64], [1, 7, 193]) if full else ([1, 3, 5], [7, 9])
    if not full:
        ks = ks[1:3] + [k for k in ks if k in (7, 40)]
    return [(m, k, n) for m in ms for k in ks for n in ns]


@pytest.mark.parametrize("q8", [False, True], ids=["exact", "q8"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_qmatmul_matches_dequantized_reference(lib, fmt, q8):
    # a stable seed (hash() of a str changes with PYTHONHASHSEED: the data changed per process)
    rng = np.random.default_rng(zlib.crc32(f"{fmt}-{q8}".encode()))
    for level in isa_levels(lib):
        assert lib.relax_quant_set_isa(level) == level
        stats = []
        for m, k, n in shapes(fmt, full=level == isa_levels(lib)[0]):
            check(lib, fmt, m, k, n, q8, rng, stats)
        if q8 and fmt not in ("f16", "bf16"):   # the int8 path is not exact: its error is visible...
            assert max(stats) > 1e-6, (ISA_NAMES[level], max(stats))
        # ... and small (a single block, K = 32, of Gaussian x can reach amax / 254 / mean|x| ~ 1.2e-2:
        # the elementwise bound in check() is the real test)
        assert max(stats) < (2e-2 if q8 else 1e-6), (ISA_NAMES[level], max(stats))
    lib.relax_quant_set_isa(-1)


@pytest.mark.parametrize("q8", [False, True], ids=["exact", "q8"])
@pytest.mark.parametrize("fmt", ["q4_0", "q4_1", "q8_0", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"])
def test_group_and_panel_remainders(lib, fmt, q8):
    """The AVX-512 group kernels (4 blocks per register: K not a multiple of 128 ends in a
    zero-padded group) and the panel kernels (M > 1 exact: PANEL_ROWS = 32 rows of W decoded
    to f32, 4 x 4 register tiles): every remainder of M, N and K, on 1 and 2 threads."""
    rng = np.random.default_rng(zlib.crc32(f"rem-{fmt}-{q8}".encode()))
    ks = [256, 512, 768] if fmt in K_QUANTS else [32, 64, 96, 160, 224, 256, 608]
    for m in (1, 2, 3, 4, 5, 9):
        for k in ks:
            for n in (1, 3, 5, 33, 70):
                check(lib, fmt, m, k, n, q8, rng)
    raw = random_weights(fmt, 70, ks[-1], rng)
    x = rng.standard_normal((9, ks[-1])).astype(np.float32)
    outs = []
    for nt, work in ((1, 262144.0), (2, 0.0)):
        lib.relax_blas_set_num_threads(nt)
        lib.relax_quant_set_fork_work(work)
        out = np.empty((9, 70), np.float32)
        call(lib, f"relax_qmatmul_{fmt}{'_q8' if q8 else ''}", x, raw, out)
        outs.append(out)
    lib.relax_blas_set_num_threads(2)
    lib.relax_quant_set_fork_work(262144.0)
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("q8", [False, True], ids=["exact", "q8"])
@pytest.mark.parametrize("fmt", ["q4_1", "q8_0", "q6_k", "f16"])
def test_isa_levels_agree(lib, fmt, q8):
    """Every level computes the same products (to f32 summation order)."""
    rng = np.random.default_rng(7)
    k = 768
    raw = random_weights(fmt, 13, k, rng)
    x = rng.standard_normal((5, k)).astype(np.float32)
    outs = []
    for level in isa_levels(lib):
        lib.relax_quant_set_isa(level)
        out = np.empty((5, 13), np.float32)
        call(lib, f"relax_qmatmul_{fmt}{'_q8' if q8 else ''}", x, raw, out)
        outs.append(out)
    lib.relax_quant_set_isa(-1)
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-4, atol=1e-4 * float(np.abs(outs[0]).max()))


@pytest.mark.parametrize("fmt", ["q4_1", "q6_k", "bf16"])
def test_strided_views(lib, fmt):
    """Row strides larger than the row, inner strides other than 1 (copied), offsets: the
    same numbers as the contiguous call."""
    rng = np.random.default_rng(3)
    m, k, n = 6, 512, 11
    raw = random_weights(fmt, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    for q8 in (False, True):
        name = f"relax_qmatmul_{fmt}{'_q8' if q8 else ''}"
        want = np.empty((m, n), np.float32)
        call(lib, name, x, raw, want)
        xb = np.zeros((m + 2, k + 40), np.float32)
        xb[1:m + 1, 8:k + 8] = x
        wb = np.zeros((n + 1, raw.shape[1] + 16), np.uint8)
        wb[1:, 5:5 + raw.shape[1]] = raw
        ob = np.full((m + 3, n + 9), 7.0, np.float32)
        call(lib, name, xb[1:m + 1, 8:k + 8], wb[1:, 5:5 + raw.shape[1]], ob[2:m + 2, 3:n + 3])
        np.testing.assert_array_equal(ob[2:m + 2, 3:n + 3], want)
        keep = ob.copy()
        keep[2:m + 2, 3:n + 3] = 7.0
        assert np.all(keep == 7.0)   # nothing written outside the view
        # inner strides other than 1: x every other column, out transposed
        x2 = np.zeros((m, 2 * k), np.float32)
        x2[:, ::2] = x
        ot = np.full((n, m), np.nan, np.float32)
        call(lib, name, x2[:, ::2], raw, ot.T)
        np.testing.assert_array_equal(ot.T, want)


def threaded(provider: str) -> bool:
    """Whether the quantized kernels of ``provider``'s build split rows over OpenMP threads: MKL
    builds, and OpenBLAS builds where libiomp5 is installed (libraries.QUANT_OPENMP_FLAGS)."""
    return libraries.shim_openmp(provider) is not None or provider == "mkl"


@pytest.mark.parametrize("fmt", ["q8_0", "q5_0", "q4_k", "q6_k", "f16"])
def test_prefetch_distance_changes_no_result(lib, fmt):
    """The decode GEMVs prefetch W a distance ahead of the rows they read (the tile's bytes
    spread over its steps, and a call's first bytes): a prefetch only hints, so every distance
    -- none, under a line, past the matrix's end -- gives the same numbers bit for bit, for
    tiles of 4 rows and the remainder rows; the setter keeps a distance and reports it."""
    rng = np.random.default_rng(11)
    k = 512 if fmt in K_QUANTS else 608
    raw = random_weights(fmt, 39, k, rng)
    x = rng.standard_normal((1, k)).astype(np.float32)
    default = lib.relax_quant_prefetch(-1)
    try:
        outs = []
        for dist in (default, 0, 40, 1 << 24):
            assert lib.relax_quant_prefetch(dist) == dist and lib.relax_quant_prefetch(-1) == dist
            for q8 in ("", "_q8"):
                out = np.full((1, 39), np.nan, np.float32)
                call(lib, f"relax_qmatmul_{fmt}{q8}", x, raw, out)
                outs.append(out)
        for i in range(2, len(outs)):
            np.testing.assert_array_equal(outs[i], outs[i % 2])
        assert np.all(np.isfinite(outs[0]))
    finally:
        lib.relax_quant_prefetch(default)


@pytest.mark.parametrize("fmt", ["q4_0", "q4_1", "q6_k"])
def test_threads_split_rows_identically(lib, fmt):
    """Rows of W over 2 OpenMP threads (MKL builds; OpenBLAS builds on libiomp5) give the
    1-thread numbers bit for bit, and the product does run on 2 threads."""
    rng = np.random.default_rng(5)
    k = 512 if fmt in K_QUANTS else 576
    raw = random_weights(fmt, 193, k, rng)
    try:
        for m in (1, 17):
            x = rng.standard_normal((m, k)).astype(np.float32)
            outs = []
            for nt, work in ((1, 262144.0), (2, 0.0)):
                lib.relax_blas_set_num_threads(nt)
                lib.relax_quant_set_fork_work(work)
                assert lib.relax_quant_max_threads() == (nt if threaded(lib.provider) else 1)
                for q8 in ("", "_q8"):
                    out = np.empty((m, 193), np.float32)
                    call(lib, f"relax_qmatmul_{fmt}{q8}", x, raw, out)
                    assert lib.relax_quant_last_threads() == (nt if threaded(lib.provider) else 1)
                    outs.append(out)
            np.testing.assert_array_equal(outs[0], outs[2])
            np.testing.assert_array_equal(outs[1], outs[3])
        # below the work threshold: one thread
        lib.relax_quant_set_fork_work(262144.0)
        x = rng.standard_normal((1, k)).astype(np.float32)
        call(lib, f"relax_qmatmul_{fmt}", x, raw[:7], np.empty((1, 7), np.float32))
        assert lib.relax_quant_last_threads() == 1
    finally:
        lib.relax_blas_set_num_threads(2)
        lib.relax_quant_set_fork_work(262144.0)


@pytest.mark.parametrize("fmt,q8", [("q4_0", True), ("q4_k", False), ("q6_k", True)])
def test_concurrent_callers_share_no_scratch(lib, fmt, q8):
    """x's prepared copy lives in one scratch slot per library (not thread-local: see
    test_many_models.py), taken for the call and given back: four Python threads (ctypes drops
    the GIL) multiplying at once, with sizes that make the slot's buffer grow and shrink, get
    the numbers of one caller alone, bit for bit."""
    import threading
    rng = np.random.default_rng(7)
    name = f"relax_qmatmul_{fmt}{'_q8' if q8 else ''}"
    cases = []
    for m, k in [(1, 256), (3, 2048), (2, 512), (17, 1024), (1, 4096), (5, 256)]:
        raw, x = random_weights(fmt, 24, k, rng), rng.standard_normal((m, k)).astype(np.float32)
        want = np.empty((m, 24), np.float32)
        call(lib, name, x, raw, want, threads=1)
        cases.append((x, raw, want))
    bad = []

    def worker(t):
        for i in range(60):
            x, raw, want = cases[(i * 5 + t) % len(cases)]
            got = np.full_like(want, np.nan)
            call(lib, name, x, raw, got, threads=1)
            if not np.array_equal(got, want):
                bad.append((t, i))

    ths = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert not bad


def test_caller_thread_count_overrides_the_blas_count(lib):
    """The thread-count argument (an executable's num_threads cell) decides the team: 1 under a
    BLAS count of 2, 2 under a BLAS count of 1; a count below 1 (or NULL) falls back to the BLAS
    count. Results equal bit for bit."""
    rng = np.random.default_rng(6)
    raw = random_weights("q4_0", 193, 576, rng)
    x = rng.standard_normal((3, 576)).astype(np.float32)
    two = 2 if threaded(lib.provider) else 1
    try:
        lib.relax_quant_set_fork_work(0.0)
        outs = []
        for blas, cell, team in ((2, 1, 1), (1, 2, two), (2, 0, two), (1, None, 1)):
            lib.relax_blas_set_num_threads(blas)
            out = np.empty((3, 193), np.float32)
            call(lib, "relax_qmatmul_q4_0", x, raw, out, threads=cell)
            assert lib.relax_quant_last_threads() == team, (blas, cell)
            outs.append(out)
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0])
    finally:
        lib.relax_blas_set_num_threads(2)
        lib.relax_quant_set_fork_work(262144.0)


def test_openblas_build_threads_on_libiomp5():
    """The OpenBLAS build's quantized kernels run on the libiomp5 of the generated kernels: the
    library needs it (no libgomp), and the exported object's GOMP_* calls stay undefined (the
    model links libiomp5 by soname, aot.py)."""
    import shutil
    import subprocess

    if "openblas" not in libraries.blas_providers() or libraries.openmp_library() is None:
        pytest.skip("needs scipy-openblas32 and intel-openmp")
    assert libraries.shim_openmp("openblas") == libraries.openmp_library()
    path = libraries.build_blas_shim("openblas")[0]
    obj = libraries.blas_shim_object("openblas")
    if not shutil.which("readelf"):
        pytest.skip("no readelf")
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    needed = [ln.split("[")[1].rstrip("]") for ln in dyn.splitlines() if "(NEEDED)" in ln]
    assert "libiomp5.so" in needed and not any("gomp" in n for n in needed), needed
    syms = subprocess.run(["readelf", "-sW", obj], capture_output=True, text=True, check=True).stdout
    undefined = {ln.split()[-1] for ln in syms.splitlines() if " UND " in ln and ln.split()[-1] != "UND"}
    assert "GOMP_parallel" in undefined
    assert not any(s.startswith("gomp_") for s in undefined)   # no static libgomp pulled in


def test_openblas_build_without_libiomp5_is_single_threaded(tmp_path, monkeypatch):
    """Without libiomp5 (intel-openmp not installed) the OpenBLAS build still builds, without
    OpenMP, and its kernels run on one thread."""
    import subprocess

    if "openblas" not in libraries.blas_providers():
        pytest.skip("needs scipy-openblas32")
    monkeypatch.setattr(libraries, "openmp_library", lambda: None)
    monkeypatch.setenv("RELAX_MLIR_CACHE", str(tmp_path / "cache"))
    assert libraries.shim_openmp("openblas") is None
    cmd = libraries.blas_shim_command(libraries.shim_sources(), "OUT", "openblas")
    assert isinstance(cmd[0], str) and "-fopenmp" not in cmd
    path = libraries._cached_build("library", "openblas",
                                   lambda src, o: libraries.blas_shim_command(src, o, "openblas"), ".so")
    lib = ctypes.CDLL(path)
    lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
    lib.relax_quant_set_fork_work.argtypes = [ctypes.c_double]
    try:
        lib.relax_blas_set_num_threads(2)
        lib.relax_quant_set_fork_work(0.0)
        assert lib.relax_quant_max_threads() == 1
        rng = np.random.default_rng(4)
        raw = random_weights("q4_1", 64, 256, rng)
        call(lib, "relax_qmatmul_q4_1", rng.standard_normal((2, 256)).astype(np.float32), raw,
             np.empty((2, 64), np.float32))
        assert lib.relax_quant_last_threads() == 1
    finally:
        lib.relax_quant_set_fork_work(262144.0)
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    assert "omp" not in dyn


def test_forked_child_runs_one_thread(lib):
    """A forked child's products run on one thread (no OpenMP region there), with the same
    numbers."""
    import os

    rng = np.random.default_rng(8)
    raw = random_weights("q4_0", 96, 256, rng)
    x = rng.standard_normal((3, 256)).astype(np.float32)
    lib.relax_blas_set_num_threads(2)
    lib.relax_quant_set_fork_work(0.0)
    try:
        want = np.empty((3, 96), np.float32)
        call(lib, "relax_qmatmul_q4_0", x, raw, want)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:   # child: report (max threads, last team, equal) and leave at once
            try:
                out = np.empty((3, 96), np.float32)
                call(lib, "relax_qmatmul_q4_0", x, raw, out)
                same = int(np.array_equal(out, want))
                os.write(w, f"{lib.relax_quant_max_threads()} {lib.relax_quant_last_threads()} {same}".encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            got = f.read()
        os.waitpid(pid, 0)
        assert got == "1 1 1"
    finally:
        lib.relax_quant_set_fork_work(262144.0)


def test_invalid_shapes_write_nothing(lib):
    rng = np.random.default_rng(1)
    raw = random_weights("q4_0", 4, 64, rng)
    for x, w, o in [(np.ones((2, 48), np.float32), raw[:, :27], np.empty((2, 4), np.float32)),   # K % 32
                    (np.ones((2, 64), np.float32), raw[:, :18], np.empty((2, 4), np.float32)),   # RB != K row
                    (np.ones((2, 64), np.float32), raw, np.empty((2, 5), np.float32)),           # out (M, N)
                    (np.ones((3, 64), np.float32), raw, np.empty((2, 4), np.float32))]:
        o[...] = 5.0
        for q8 in ("", "_q8"):
            call(lib, f"relax_qmatmul_q4_0{q8}", x, np.ascontiguousarray(w), o)
            assert np.all(o == 5.0)
    out = np.full((3, 48), 5.0, np.float32)
    call(lib, "relax_qtake_q4_0", raw, np.array([0, 1, 2], np.int64), out)
    assert np.all(out == 5.0)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_qtake_rows_and_clamped_ids(lib, fmt):
    rng = np.random.default_rng(11)
    k = 512 if fmt in K_QUANTS else 96
    v = 9
    raw = random_weights(fmt, v, k, rng)
    table = dequant(fmt, raw).astype(np.float32)
    ids = np.array([3, 0, 8, -1, 9, 100, -100, 4], np.int64)
    for level in isa_levels(lib):
        lib.relax_quant_set_isa(level)
        out = np.full((len(ids), k), np.nan, np.float32)
        call(lib, f"relax_qtake_{fmt}", raw, ids, out)
        want = table[np.clip(ids, 0, v - 1)]
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7 * float(np.abs(table).max()))
        # strided ids and a strided (transposed) output
        ids2 = np.zeros(2 * len(ids), np.int64)
        ids2[::2] = ids
        outt = np.full((k, len(ids)), np.nan, np.float32)
        call(lib, f"relax_qtake_{fmt}", raw, ids2[::2], outt.T)
        np.testing.assert_array_equal(outt.T, out)
    lib.relax_quant_set_isa(-1)


def test_f16_tail_columns(lib):
    """f16 / bf16 rows of any K (no blocks): the columns past the last 32 are summed too."""
    rng = np.random.default_rng(2)
    for fmt in ("f16", "bf16"):
        for k in (1, 31, 33, 65):
            check(lib, fmt, 3, k, 5, False, rng)
            raw = random_weights(fmt, 4, k, rng)
            out = np.empty((2, k), np.float32)
            call(lib, f"relax_qtake_{fmt}", raw, np.array([1, 3], np.int64), out)
            np.testing.assert_array_equal(out, dequant(fmt, raw)[[1, 3]].astype(np.float32))


def test_shim_sources_rebuild_on_either_edit(tmp_path, monkeypatch):
    """The relax_blas cache key hashes both C sources: an edit to quant_kernels.c rebuilds."""
    import shutil

    src = tmp_path / "quant_kernels.c"
    shutil.copyfile(libraries.QUANT_KERNELS, src)
    monkeypatch.setattr(libraries, "QUANT_KERNELS", src)
    monkeypatch.setenv("RELAX_MLIR_CACHE", str(tmp_path / "cache"))
    provider = libraries.blas_provider()
    first = libraries.blas_shim_object(provider)
    src.write_text(src.read_text() + "\nint relax_quant_edited(void) { return 1; }\n")
    second = libraries.blas_shim_object(provider)
    assert first != second
    assert b"relax_quant_edited" in open(second, "rb").read() and b"relax_quant_edited" not in open(first, "rb").read()
    assert b"_mlir_ciface_relax_qmatmul_q4_1" in open(second, "rb").read()
    assert b"_mlir_ciface_relax_blas_matmul_22_f32" in open(second, "rb").read()


def _f32_matmul(lib, x, w, out, bias=None):
    """relax_blas's f32 matmul entry (x @ w [+ bias] into out), as compiled models call it."""
    ds = [descriptor(a) for a in (x, w) + ((bias,) if bias is not None else ()) + (out,)]
    f = getattr(lib, "_mlir_ciface_relax_blas_matmul_bias_22_f32" if bias is not None
                else "_mlir_ciface_relax_blas_matmul_22_f32")
    f.argtypes, f.restype = [ctypes.c_void_p] * len(ds), None
    f(*[ctypes.addressof(d) for d in ds])


@pytest.mark.parametrize("m", [1, 2, 3])
def test_f32_gemv_route_matches_numpy(lib, m):
    """Decode-sized f32 products (M <= 3, x @ W with W (K, N) as models bind it) run
    relax_quant_f32_gemv on AVX-512 (its call counter moves; the provider's sgemv otherwise):
    within 1e-6 of |x| @ |W| of the float64 product, like numpy's f32 product, over sizes with
    column tiles (N > 1024), masked tails (N % 16), K % 4 tails and a bias (accumulate), with
    the prefetch distance 0 and default giving identical results."""
    lib.relax_quant_f32_gemv_calls.restype = ctypes.c_int64
    lib.relax_blas_set_num_threads(1)
    rng = np.random.default_rng(7 + m)
    on_avx512 = lib.relax_quant_isa() == 2
    for k, n in [(576, 576), (1536, 576), (577, 1000), (5, 2049), (64, 49152), (1027, 17), (16385, 40)]:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        ref = x.astype(np.float64) @ w.astype(np.float64)
        tol = 1e-6 * (np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64))
        assert np.all(np.abs(x @ w - ref) <= tol)   # the bound numpy's own f32 product meets
        calls = lib.relax_quant_f32_gemv_calls()
        out = np.full((m, n), np.nan, np.float32)
        _f32_matmul(lib, x, w, out)
        assert lib.relax_quant_f32_gemv_calls() - calls == (1 if on_avx512 else 0)
        assert np.all(np.abs(out - ref) <= tol), (k, n, float(np.max(np.abs(out - ref) / tol)))
        outb = np.full((m, n), np.nan, np.float32)
        _f32_matmul(lib, x, w, outb, bias)
        assert np.all(np.abs(outb - (ref + bias)) <= tol + 1e-6 * np.abs(bias)), (k, n)
        old = lib.relax_quant_prefetch(0)
        out0 = np.full((m, n), np.nan, np.float32)
        _f32_matmul(lib, x, w, out0)
        lib.relax_quant_prefetch(old)
        np.testing.assert_array_equal(out0, out)


def test_f32_gemv_threads_and_switch(lib):
    """Two threads split the columns (16-aligned ranges) with the same per-column order: equal
    bits to one thread; relax_quant_set_f32_gemv(0) sends the product to the provider's sgemv
    (the counter stays) with the same result within the bound."""
    lib.relax_quant_f32_gemv_calls.restype = ctypes.c_int64
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 1536)).astype(np.float32)
    w = rng.standard_normal((1536, 1000)).astype(np.float32)
    outs = []
    for t in (1, 2):
        lib.relax_blas_set_num_threads(t)
        outs.append(np.full((1, 1000), np.nan, np.float32))
        _f32_matmul(lib, x, w, outs[-1])
    lib.relax_blas_set_num_threads(1)
    np.testing.assert_array_equal(outs[0], outs[1])
    calls = lib.relax_quant_f32_gemv_calls()
    assert lib.relax_quant_set_f32_gemv(0) == 0
    try:
        blas = np.full((1, 1000), np.nan, np.float32)
        _f32_matmul(lib, x, w, blas)
    finally:
        lib.relax_quant_set_f32_gemv(1)
    assert lib.relax_quant_f32_gemv_calls() == calls
    tol = 1e-6 * (np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64))
    assert np.all(np.abs(blas - outs[0]) <= 2 * tol)
