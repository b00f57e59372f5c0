"""The relax dialect: IRDL generation, builders, pipelines from Python."""

import inspect

import pytest
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function
from relax_mlir.ops import OPS
from relax_mlir.shapes import Shape, read_tensor_type
from relax_mlir.transforms.pipeline import PipelineError
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_checked_in_irdl_is_fresh():
    on_disk = (ROOT / "relax_mlir" / "dialects" / "relax.irdl.mlir").read_text()
    assert on_disk == relax.irdl_text(), "relax.irdl.mlir is stale: run `make irdl`"


def test_every_op_has_a_typed_builder():
    for name, d in OPS.items():
        b = getattr(relax, name)
        params = inspect.signature(b).parameters
        for o in d.operands:
            assert o.name in params
        for a in d.attrs:
            assert params[a.name].kind is inspect.Parameter.KEYWORD_ONLY
        assert d.summary


def test_builders_deduce_types_and_module_verifies():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "f", [("x", ["n", 4], "f32"), ("y", ["m", 4], "f32"),
                                     ("w", [4, "k"], "f32")]) as fn:
            x, y, w = fn.params
            c = relax.concat([x, y], axis=0)
            mm = relax.matmul(c, w)
            fl = relax.flatten(mm)
            r = relax.reshape(x, shape=["2*n", 2])
            a, b = relax.split(r, sections=2, axis=1)
            fn.ret(fl, a)
        assert m.operation.verify()
        assert read_tensor_type(c.type).shape == Shape(["m + n", 4])
        assert read_tensor_type(mm.type).shape == Shape(["m + n", "k"])
        assert read_tensor_type(fl.type).shape == Shape(["k*m + k*n"])
        assert read_tensor_type(a.type).shape == Shape(["2*n", 1])
        relax_mlir.run_pipeline(m, "builtin.module(relax-verify, relax-infer-shapes, canonicalize)")


def test_builder_rejects_provably_wrong_shapes():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with pytest.raises(relax.RelaxError, match="reduction dim K"):
            with graph_function(m, "f", [("x", ["n", 3], "f32"), ("w", [4, 5], "f32")]) as fn:
                relax.matmul(*fn.params)


def test_run_pipeline_reports_diagnostics_and_bad_pipelines():
    ctx = relax_mlir.make_context()
    src = '''
    func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x2xf32> attributes {relax.function} {
      %0 = "relax.reshape"(%x) {shape = #relax.shape<["2*n + 1", 2]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x2xf32>
      return %0 : tensor<?x2xf32>
    }'''
    m = relax_mlir.parse(src, ctx)
    with pytest.raises(ir.MLIRError) as e:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes)")
    msgs = [d.message for d in e.value.error_diagnostics]
    assert any("element count" in s and "4*n" in s and "4*n + 2" in s for s in msgs), msgs
    with pytest.raises(PipelineError, match="no-such-pass"):
        relax_mlir.run_pipeline(m, "builtin.module(no-such-pass)")


def test_parse_error_has_location():
    with pytest.raises(ir.MLIRError) as e:
        relax_mlir.parse('func.func @f() {\n  %0 = "relax.add"() : () -> tensor<f32>\n  return\n}', relax_mlir.make_context())
    d = e.value.error_diagnostics[0]
    assert "2:8" in str(d.location)


def test_concat_of_40_differently_shaped_tensors_compiles_and_runs():
    """40 runs of differently typed operands (beyond the former 16-slot cap)."""
    import numpy as np

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [(f"x{i}", [f"n{i}", 3], "f32") for i in range(40)]) as fn:
            fn.ret(relax.concat(fn.params, axis=0))
        out_shape = read_tensor_type(fn.op.regions[0].blocks[0].operations[0].results[0].type).shape
        assert out_shape == Shape([" + ".join(f"n{i}" for i in range(40)), 3])
        text = str(m)
    exe = relax_mlir.compile(text)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((i % 3, 3)).astype(np.float32) for i in range(40)]
    np.testing.assert_array_equal(exe(*xs), np.concatenate(xs, axis=0))


def test_parse_fills_in_missing_segment_sizes():
    t = 'tensor<?xf32, #relax.shape<["n"]>>'
    src = (f'func.func @f(%x: {t}) -> tensor<?xf32> attributes {{relax.function}} {{\n'
           f'  %0 = "relax.concat"(%x, %x) {{axis = 0 : i64}} : ({t}, {t}) -> tensor<?xf32>\n'
           f'  return %0 : tensor<?xf32>\n}}')
    m = relax_mlir.parse(src, relax_mlir.make_context(), source_name="f.mlir")
    op = m.body.operations[0].regions[0].blocks[0].operations[0]
    assert str(op.attributes["operandSegmentSizes"]) == "array<i32: 2" + ", 0" * (relax.OPERAND_SLOTS - 1) + ">"
    assert str(op.location) == 'loc("f.mlir":2:8)'
    wrong = src.replace("{axis = 0 : i64}", "{axis = 0 : i64, operandSegmentSizes = array<i32: 3"
                        + ", 0" * (relax.OPERAND_SLOTS - 1) + ">}")
    with pytest.raises(relax_mlir.CompileError) as e:
        relax_mlir.parse(wrong, relax_mlir.make_context(), source_name="f.mlir")
    (where, msg), = e.value.diagnostics
    assert where == "f.mlir:2:8"
    assert msg == ("'relax.concat' operandSegmentSizes = array<i32: 3" + ", 0" * (relax.OPERAND_SLOTS - 1)
                   + "> does not fit its types; expected operandSegmentSizes = array<i32: 2"
                   + ", 0" * (relax.OPERAND_SLOTS - 1) + "> (or leave it out)")


def test_compile_error_from_parse_and_run_pipeline():
    with pytest.raises(relax_mlir.CompileError) as e:
        relax_mlir.parse("func.func @f( {", relax_mlir.make_context(), source_name="user.mlir")
    assert e.value.diagnostics == [("user.mlir:1:14", "expected non-function type")]
    assert isinstance(e.value, ir.MLIRError)
    with pytest.raises(relax_mlir.CompileError):
        relax_mlir.run_pipeline(relax_mlir.parse("module {}", relax_mlir.make_context()), "builtin.module(nope)")
