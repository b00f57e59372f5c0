"""Range specialization (relax-specialize-ranges) end to end: ONE compiled executable per
program holds a few-rows (GEMV) variant and a register-tiled variant of each matmul
kernel with symbolic M, picks one at run time from M, and gives numpy's answer at every
M on both sides of the boundary (M = 0..1 the decode GEMV, 2..3 few rows, 4..16 small register
tiles, 17.. the 6-row ones)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import relax_mlir
from relax_mlir.backends.cpu.schedules.matmul import MatmulConfig, config_for
from relax_mlir.backends.cpu.schedules.target import host_target

from relax_mlir.pipelines.cpu import graph_stage
from relax_mlir.transforms.pipeline import run_pipeline
from test_schedules import compile_scheduled, f32, op, program

MS = [1, 2, 3, 4, 5, 16, 17, 127, 513]


def llvm_functions(exe) -> dict[str, str]:
    """Function name -> body text in the executable's LLVM dialect."""
    parts = re.split(r"\n\s*llvm\.func ", exe.llvm_dialect_text())
    return {p.split("(", 1)[0].lstrip("@"): p for p in parts[1:]}


def kernel_variants(exe) -> dict[str, list[str]]:
    """Dispatcher kernel -> its variants (the functions named ``<kernel>__m...``)."""
    fns = llvm_functions(exe)
    out: dict[str, list[str]] = {}
    for name in fns:
        base, sep, _ = name.partition("__m")
        if sep and base in fns:
            out.setdefault(base, []).append(name)
    return {k: sorted(v) for k, v in out.items()}


def variant_schedules(src: str) -> dict[str, str]:
    """Kernel name -> the schedule relax-apply-schedules gave it after relax-specialize-ranges
    ("" for none: a failed schedule leaves plain loops, correct but slow)."""
    from mlir import ir
    with relax_mlir.make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        run_pipeline(m, "builtin.module(" + ", ".join(graph_stage(dispatch=False))
                     + ", relax-specialize-ranges, relax-apply-schedules)")
        out = {}
        for f in m.body.operations:
            f = f.operation
            if "relax.kernel" in f.attributes and "relax.range_dispatch" not in f.attributes:
                name = ir.StringAttr(f.attributes["sym_name"]).value
                out[name.partition("__")[2]] = (ir.StringAttr(f.attributes["relax.schedule"]).value
                                                if "relax.schedule" in f.attributes else "")
        return out


def test_host_gemv_rows():
    """The boundary the pass uses by default: the config's gemv_rows (3: measured faster
    than 6-row tiles at M = 1, 2, 3)."""
    assert MatmulConfig().gemv_rows == 3
    assert config_for(host_target()).gemv_rows == 3


@pytest.mark.parametrize("kn", [(96, 256), (50, 200), (77, 1000), (3, 5), (512, 2048), ("k", "n")])
def test_matmul_variants(kn):
    """Static, odd (peeled K remainders, N's last N mod 64 columns split off, in every
    variant), smaller than one GEMV tile (K < 8 rows, N < 16 columns), the decode shapes,
    and fully symbolic (the LLM's symbolic N): every M through one executable."""
    K, N = kn
    src = program([("a", ["m", K]), ("b", [K, N])], [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])],
                  [("r", ["m", N])])
    # N wider than two 64-column register tiles: M >= 40 gets a variant of its own that packs
    # B (all but the split-off N mod 64 columns); so does a symbolic N, its symbolic K in full
    # packed blocks of 512 and a partial block on B in place. N = 5 is not packed.
    packed = kn != (3, 5)
    want = {"m0_1": "gemv", "m2_3": "gemv", "m4_16": "matmul", "m17_39": "matmul", "m40": "matmul"} if packed else \
        {"m0_1": "gemv", "m2_3": "gemv", "m4_16": "matmul", "m17": "matmul"}
    assert variant_schedules(src) == want
    exe = compile_scheduled(src)
    variants = kernel_variants(exe)
    assert len(variants) == 1
    (kernel, names), = variants.items()
    assert sorted(names) == sorted(kernel + "__" + v for v in want)
    body = llvm_functions(exe)[kernel]
    assert body.count("llvm.call @" + kernel + "__m") == len(want)
    assert "malloc" not in body and "memcpy" not in body  # the result is the output argument: no copy
    k, n = (K, N) if isinstance(K, int) else (37, 129)
    for i, m in enumerate(MS + [0] + ([39, 40, 41, 128, 131, 6 * 43] if packed else [])):
        if not isinstance(K, int):
            k, n = [(37, 129), (8, 64), (513, 7), (1, 1), (64, 200), (9, 65), (130, 17), (16, 3), (70, 300), (5, 5),
                    (1024, 130), (700, 64), (13, 2048), (512, 128), (1100, 70), (3, 1), (1024, 130), (700, 64),
                    (13, 2048)][i]
        a, b = f32(m, k), f32(k, n)
        got = exe(a, b)
        assert got.shape == (m, n)
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("kn", [(96, 320), (512, 1024)])
def test_fused_epilogue_variants(kn):
    """matmul + bias + relu in one kernel: every variant keeps the epilogue (N a multiple of
    the 64-column register tile: a fourth variant packs B for M >= 40)."""
    K, N = kn
    packed = True
    X, Y = ["m", K], ["m", N]
    src = program([("x", X), ("w", [K, N]), ("b", [N])],
                  [op("p", "matmul", [("x", X), ("w", [K, N])], Y), op("q", "add", [("p", Y), ("b", [N])], Y),
                   op("r", "relu", [("q", Y)], Y)],
                  [("r", Y)])
    want = {"m0_1": "gemv+elementwise", "m2_3": "gemv+elementwise", "m4_16": "matmul+elementwise", "m17": "matmul+elementwise"}
    if packed:
        want = {"m0_1": "gemv+elementwise", "m2_3": "gemv+elementwise", "m4_16": "matmul+elementwise", "m17_39": "matmul+elementwise",
                "m40": "matmul+elementwise"}
    assert variant_schedules(src) == want
    exe = compile_scheduled(src)
    assert [len(v) for v in kernel_variants(exe).values()] == [len(want)]
    for m in MS + ([39, 40, 131] if packed else []):
        x, w, b = f32(m, K), f32(K, N), f32(N)
        np.testing.assert_allclose(exe(x, w, b), np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-4, atol=1e-4)


def test_batch_matmul_variants():
    """Attention's products at decode (one query row) and prefill: M is dim 1 of A; from
    M = 40 B is packed (N symbolic)."""
    A, B, Y = [4, "m", 64], [4, 64, "n"], [4, "m", "n"]
    src = program([("a", A), ("b", B)], [op("r", "matmul", [("a", A), ("b", B)], Y)], [("r", Y)])
    assert variant_schedules(src) == {"m0_1": "batch_gemv", "m2_3": "batch_gemv", "m4_39": "batch_matmul",
                                      "m40": "batch_matmul"}
    exe = compile_scheduled(src)
    assert [len(v) for v in kernel_variants(exe).values()] == [4]
    for m, n in zip(MS + [39, 40, 131], [130, 1, 64, 65, 7, 200, 33, 128, 17, 64, 300, 1]):
        a, b = f32(4, m, 64), f32(4, 64, n)
        np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_schedules_off_has_no_variants():
    """options={"schedules": False}: plain loops, no specialization either."""
    src = program([("a", ["m", 8]), ("b", [8, 8])], [op("r", "matmul", [("a", ["m", 8]), ("b", [8, 8])], ["m", 8])],
                  [("r", ["m", 8])])
    exe = relax_mlir.compile(src, options={"dispatch": False, "schedules": False})
    assert kernel_variants(exe) == {}
    a, b = f32(5, 8), f32(8, 8)
    np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_gemv_threads(monkeypatch):
    """RELAX_MLIR_NUM_THREADS=2: a large GEMV variant splits N over the threads (one
    omp.parallel each in the M <= 1 and M = 2-3 variants, besides the tiled variants': small
    M, 6-row tiles and the packed large-M one), a small one does not."""
    from relax_mlir.backends.cpu.apply_schedules import openmp_library
    if not openmp_library():
        pytest.skip("no OpenMP runtime (libiomp5) in this environment")
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "2")
    for (K, N), regions in (((512, "n"), 5), ((64, 512), 3)):
        src = program([("a", ["m", K]), ("b", [K, N])],
                      [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])], [("r", ["m", N])])
        exe = compile_scheduled(src)
        assert exe.llvm_dialect_text().count("omp.parallel") == regions
        n = 300 if N == "n" else N
        for m in (1, 2, 3, 4, 17, 41):
            a, b = f32(m, K), f32(K, n)
            np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m", [1, 3])
def test_static_few_rows_get_the_gemv_schedule(m):
    """A static M (decode with a fixed batch of one) needs no dispatch: the kernel itself
    gets the few-rows schedule, K and N symbolic (the LM head over a symbolic vocabulary)."""
    src = program([("a", [m, "k"]), ("b", ["k", "n"])],
                  [op("r", "matmul", [("a", [m, "k"]), ("b", ["k", "n"])], [m, "n"])], [("r", [m, "n"])])
    assert list(variant_schedules(src).values()) == ["gemv"]
    exe = compile_scheduled(src)
    assert kernel_variants(exe) == {}
    for k, n in ((1, 1), (7, 65), (512, 2000), (33, 64)):
        a, b = f32(m, k), f32(k, n)
        np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
