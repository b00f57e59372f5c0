"""relax-dispatch-library{policy=measured}: the calibration table's choice, per matmul, in one
executable, and numerics of both sides against numpy at several sizes."""

from __future__ import annotations

import json

import numpy as np
import pytest

import relax_mlir
from relax_mlir.backends.cpu.dispatch_library import DEFAULT_TABLE, load_table, nearest_class
from relax_mlir.transforms.dispatch_split import select_table, tables_of


def T(dims) -> str:
    s = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    e = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{s}xf32, #relax.shape<[{e}]>>"


# x16 @ w (static M = 16: generated per the table below), x @ w (M symbolic, unbounded: split at
# run time, generated for M in [4, 32], BLAS elsewhere: test_dispatch_split.py),
# y @ v (M symbolic, bounded by 48, (K, N) = (64, 96): generated per the table's [1, 64]).
SRC = (f"func.func @main(%x16: {T([16, 512])}, %x: {T(['m', 512])}, %w: {T([512, 256])}, %y: {T(['s', 64])},"
       f" %v: {T([64, 96])}) -> ({T([16, 256])}, {T(['m', 256])}, {T(['s', 96])})"
       " attributes {relax.function, relax.upper_bounds = {s = 48 : i64}} {\n"
       f'  %0 = "relax.matmul"(%x16, %w) : ({T([16, 512])}, {T([512, 256])}) -> {T([16, 256])}\n'
       f'  %1 = "relax.matmul"(%x, %w) : ({T(["m", 512])}, {T([512, 256])}) -> {T(["m", 256])}\n'
       f'  %2 = "relax.matmul"(%y, %v) : ({T(["s", 64])}, {T([64, 96])}) -> {T(["s", 96])}\n'
       f"  return %0, %1, %2 : {T([16, 256])}, {T(['m', 256])}, {T(['s', 96])}\n}}\n")
TABLE = {"machine": "test", "isa": "any", "classes": [{"k": 512, "n": 256, "generated_m": [[4, 32]]},
                                                      {"k": 64, "n": 96, "generated_m": [[1, 64]]}]}


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    path = tmp_path_factory.mktemp("table") / "table.json"
    path.write_text(json.dumps(TABLE))
    mp = pytest.MonkeyPatch()
    mp.setenv("RELAX_MLIR_DISPATCH_POLICY", "measured")
    mp.setenv("RELAX_MLIR_DISPATCH_TABLE", str(path))
    try:
        yield relax_mlir.compile(SRC)
    finally:
        mp.undo()


def test_choice_in_ir(exe):
    """Only the unbounded matmul calls BLAS (from its split kernel's library variant); the
    other two call generated kernels."""
    ir_text = exe.llvm_dialect_text()
    assert ir_text.count("llvm.call @relax_blas_matmul_22_f32(") == 1
    assert ir_text.count("llvm.call @relax_matmul_f32_Dx512_512x256__lib(") == 2   # M <= 3, M >= 33
    assert ir_text.count("llvm.call @relax_matmul_f32_16x512_512x256(") == 1
    assert ir_text.count("llvm.call @relax_matmul_f32_Dx64_64x96(") == 1
    assert exe.metadata["blas"] in ("mkl", "openblas")


@pytest.mark.parametrize("m,s", [(1, 1), (7, 13), (64, 48), (300, 2)])
def test_numerics_one_executable(exe, m, s):
    rng = np.random.default_rng(m)
    x16 = rng.standard_normal((16, 512), dtype=np.float32)
    x = rng.standard_normal((m, 512), dtype=np.float32)
    w = rng.standard_normal((512, 256), dtype=np.float32)
    y = rng.standard_normal((s, 64), dtype=np.float32)
    v = rng.standard_normal((64, 96), dtype=np.float32)
    r0, r1, r2 = exe(x16, x, w, y, v)
    np.testing.assert_allclose(r0, x16 @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(r1, x @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(r2, y @ v, rtol=1e-4, atol=1e-4)


def test_checked_in_table():
    """The checked-in file: one table per machine measured, each naming where it was measured
    and partitioning nothing twice; this machine's table first."""
    data = load_table(str(DEFAULT_TABLE))
    tables = tables_of(data)
    assert [t["isa"] for t in tables] == ["avx512", "avx512", "avx512"]
    assert [t.get("threads", 1) for t in tables] == [1, 2, 1]
    assert tables[0]["machine"].startswith("Intel(R) Xeon(R)") and tables[1]["machine"] == tables[0]["machine"]
    assert tables[2]["machine"] == "AMD EPYC"
    for t in tables:
        assert t["machine"] and t["isa"] and t["command"].startswith("bench/calibrate_dispatch.py")
        for c in t["classes"]:
            rs = c["generated_m"]
            assert all(a[1] < b[0] for a, b in zip(rs, rs[1:]))
    t = tables[0]
    assert nearest_class(t, 512, 2048)["k"] == 512
    assert nearest_class(t, 8192, 8192) is None
    assert select_table(data, "avx512", "AMD EPYC") == (tables[2], "")
    assert select_table(data, "avx512", "another avx512 CPU") == (tables[0], "")
    table, note = select_table(data, "avx2", "an avx2 CPU")
    assert table is None and note.endswith("this host is avx2 (an avx2 CPU): min-flops rule")


def test_table_per_thread_count():
    """Of the tables of one machine, the one measured at the kernels' thread count is taken,
    else the nearest (fewer on a tie); a table without 'threads' counts as one thread; the
    machine still comes first."""
    def t(machine, threads=None):
        d = {"machine": machine, "isa": "avx512", "classes": []}
        if threads is not None:
            d["threads"] = threads
        return d
    data = {"tables": [t("X", 2), t("X"), t("X", 4), t("Y", 2)]}
    tables = data["tables"]
    assert select_table(data, "avx512", "X", 1) == (tables[1], "")
    assert select_table(data, "avx512", "X", 2) == (tables[0], "")
    assert select_table(data, "avx512", "X", 3) == (tables[0], "")
    assert select_table(data, "avx512", "X", 16) == (tables[2], "")
    assert select_table(data, "avx512", "Y", 1) == (tables[3], "")
    assert select_table(data, "avx512", "Z", 2) == (tables[0], "")



def test_measured_is_the_default_policy(tmp_path, monkeypatch):
    """relax_mlir.compile and the cpu pipeline give relax-dispatch-library the measured policy
    unless told otherwise (option, environment), and the min-flops rule without schedules."""
    from relax_mlir import CompileError
    from relax_mlir.pipelines.cpu import graph_stage

    def policy(**kw):
        return next(p for p in graph_stage(**kw) if p.startswith("relax-dispatch-library"))

    monkeypatch.delenv("RELAX_MLIR_DISPATCH_POLICY", raising=False)
    assert policy().endswith("policy=measured}")
    assert policy(schedules=False).endswith("policy=flops}")
    assert policy(policy="flops").endswith("policy=flops}")
    monkeypatch.setenv("RELAX_MLIR_DISPATCH_POLICY", "flops")
    assert policy().endswith("policy=flops}")
    assert policy(policy="measured").endswith("policy=measured}")
    monkeypatch.delenv("RELAX_MLIR_DISPATCH_POLICY")
    with pytest.raises(CompileError, match="dispatch-policy must be one of measured, flops, got 'fast'"):
        relax_mlir.compile(SRC, options={"dispatch_policy": "fast"})

    path = tmp_path / "table.json"
    path.write_text(json.dumps(TABLE))
    monkeypatch.setenv("RELAX_MLIR_DISPATCH_TABLE", str(path))
    measured = relax_mlir.compile(SRC).llvm_dialect_text()
    flops = relax_mlir.compile(SRC, options={"dispatch_policy": "flops"}).llvm_dialect_text()
    assert measured.count("llvm.call @relax_matmul_f32_16x512_512x256(") == 1   # the table's choice
    assert flops.count("llvm.call @relax_matmul_f32_16x512_512x256(") == 0      # min-flops: BLAS
    assert flops.count("llvm.call @relax_blas_matmul_22_f32(") == 3
