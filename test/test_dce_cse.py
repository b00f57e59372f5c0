"""relax-dce and relax-cse end to end: a dead op is not computed, exp(x) + exp(x)
computes exp once, and what can raise (match_cast) still raises."""

from __future__ import annotations

import re

import numpy as np
import pytest

import relax_mlir
from irtext import callees
from relax_mlir.errors import ShapeError
from relax_mlir.pipelines import cpu
from relax_mlir.transforms.effects import Effects

T = 'tensor<?x4xf32, #relax.shape<["n", 4]>>'
K = 'tensor<?x4xf32, #relax.shape<["2*k", 4]>>'
SRC = f"""
func.func @main(%x: {T}, %w: tensor<4x4xf32>) -> {T} attributes {{relax.function}} {{
  %0 = "relax.exp"(%x) : ({T}) -> {T}
  %1 = "relax.exp"(%x) : ({T}) -> {T}
  %2 = "relax.add"(%0, %1) : ({T}, {T}) -> {T}
  %3 = "relax.matmul"(%x, %w) : ({T}, tensor<4x4xf32>) -> {T}
  %4 = "relax.relu"(%3) : ({T}) -> {T}
  %5 = "relax.match_cast"(%x) {{shape = #relax.shape<["2*k", 4]>}} : ({T}) -> {K}
  return %2 : {T}
}}
"""

GRAPH_PASSES = "relax-infer-shapes, relax-cse, relax-dce"


def optimized(src: str, extra: str = "", passes: str = GRAPH_PASSES) -> str:
    with relax_mlir.make_context() as ctx:
        m = relax_mlir.parse(src, ctx)
        relax_mlir.run_pipeline(m, f"builtin.module({passes}{extra})")
        return str(m)


def test_graph_after_cse_and_dce():
    plain = optimized(SRC, ", relax-legalize", passes="relax-infer-shapes")
    assert callees(plain) == ["relax_exp_f32_Dx4", "relax_exp_f32_Dx4", "relax_add_f32_Dx4_Dx4",
                              "relax_matmul_f32_Dx4_4x4", "relax_relu_f32_Dx4"]
    text = optimized(SRC, ", relax-legalize")
    assert callees(text) == ["relax_exp_f32_Dx4", "relax_add_f32_Dx4_Dx4"]
    assert "relax_matmul" not in text and "relax_relu" not in text


def test_graph_ops_after_cse_and_dce():
    text = optimized(SRC)
    main = text[text.index("func.func @main"):].split("\n  }\n")[0]
    assert re.findall(r'"relax\.(\w+)"\((%\w+(?:, %\w+)*)\)', main) == [
        ("exp", "%arg0"), ("add", "%0, %0"), ("match_cast", "%arg0")]


def kernel_calls(llvm: str) -> list[str]:
    """The kernels the LLVM-dialect main calls, in order (allocation helpers left out)."""
    main = llvm[llvm.index("llvm.func @_mlir_ciface_main("):]
    main = main[:main.index("\n  }\n")]
    return [c for c in re.findall(r"llvm\.call @(\w+)\(", main) if c not in ("malloc", "free", "dealloc_helper")]


@pytest.mark.parametrize("fusion,calls", [(False, ["relax_exp_f32_Dx4", "relax_add_f32_Dx4_Dx4"]),
                                          (True, ["fused_exp_add"])], ids=["fusion-off", "fusion-on"])
def test_full_cpu_pipeline_with_dce_cse(fusion, calls):
    """The cpu pipeline with relax-cse, relax-dce after relax-infer-shapes runs to the LLVM dialect."""
    stages = cpu.graph_stage(fusion=fusion)
    assert stages[0] == "relax-infer-shapes"
    pipeline = ", ".join(["relax-infer-shapes", "relax-cse", "relax-dce"] + stages[1:] + cpu.llvm_stage())
    with relax_mlir.make_context() as ctx:
        m = relax_mlir.parse(SRC, ctx)
        relax_mlir.run_pipeline(m, f"builtin.module({pipeline})")
        text = str(m)
    assert kernel_calls(text) == calls
    assert "matmul" not in text and "relax_relu" not in text


def test_exp_computed_once_and_numerics():
    """One compiled executable: exp is called once per run, the dead matmul is gone, and
    the result is numpy's at n = 2, 8, 300 (even: the match_cast)."""
    exe = relax_mlir.compile(optimized(SRC), options={"fusion": False})
    assert kernel_calls(exe.llvm_dialect_text()) == ["relax_exp_f32_Dx4", "relax_add_f32_Dx4_Dx4"]
    assert "matmul" not in exe.llvm_dialect_text() and "sgemm" not in exe.llvm_dialect_text()
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    for n in (2, 8, 300):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(exe(x, w), np.exp(x) + np.exp(x), rtol=1e-6)


def test_dead_match_cast_still_raises():
    """relax-dce keeps a dead match_cast: an odd row count fails its ["2*k", 4] pattern."""
    exe = relax_mlir.compile(optimized(SRC))
    w = np.eye(4, dtype=np.float32)
    with pytest.raises(ShapeError, match=r"relax.match_cast"):
        exe(np.ones((3, 4), np.float32), w)
    np.testing.assert_allclose(exe(np.zeros((4, 4), np.float32), w), np.full((4, 4), 2.0, np.float32))


def test_planned_calls_are_effects():
    """A call_tir writing into planned memory (dests) is neither removed nor merged."""
    src = f"""
    func.func private @k(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {{relax.kernel}} {{
      return %out : tensor<?x4xf32>
    }}
    func.func @main(%x: {T}, %d: {T}) -> {T} attributes {{relax.function}} {{
      %0 = "relax.call_tir"(%x, %d) {{callee = @k, dests = array<i64: 0>, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : ({T}, {T}) -> {T}
      %1 = "relax.call_tir"(%x) {{callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : ({T}) -> {T}
      return %x : {T}
    }}"""
    with relax_mlir.make_context() as ctx:
        m = relax_mlir.parse(src, ctx)
        effects = Effects(m.operation)
        main = [o for o in m.body.operations if o.operation.name == "func.func"][1].operation
        ops = [o.operation for o in main.regions[0].blocks[0].operations]
        assert [effects.is_pure(o) for o in ops[:2]] == [False, True]
        relax_mlir.run_pipeline(m, "builtin.module(relax-cse, relax-dce)")
        text = str(m)
    assert callees(text) == ["k"] and "dests = array<i64: 0>" in text
