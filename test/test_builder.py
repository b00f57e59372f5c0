"""The Python builder: constants, dtype spellings, operators, parameter names, clean failure."""

import numpy as np
import pytest
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function
from relax_mlir.ops.common import dtype_name
from relax_mlir.shapes import Shape


def test_dtype_spellings():
    assert [dtype_name(d) for d in ("f32", "float32", np.float32, np.dtype("float16"), "int64", np.int32, bool)] \
        == ["f32", "f32", "f32", "f16", "i64", "i32", "i1"]
    with pytest.raises(ValueError, match="unknown dtype 'float33'"):
        dtype_name("float33")


def _mlp_module() -> str:
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", 3], "float32"), ("w", [3, 2], np.float32),
                                        ("y", ["n", 2], "f32")]) as fn:
            x, w, y = fn.params
            b = relax.const(np.array([0.5, -1.0], dtype=np.float32))
            h = x @ w + b                    # matmul, then add of a constant row
            z = -(h * 2.0) + y - 1           # scalars promoted to f32 constants
            fn.ret(relax.relu(z) / 4.0, 1.0 - y)
        assert h.shape == Shape(["n", 2]) and z.dtype == "f32"
        return str(m)


def test_operators_constants_and_scalars_compute_like_numpy():
    text = _mlp_module()
    assert "arith.constant dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>" in text
    assert "arith.constant dense<2.000000e+00> : tensor<f32>" in text
    exe = relax_mlir.compile(text)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    for n in (1, 5, 64):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        y = rng.standard_normal((n, 2)).astype(np.float32)
        a, b = exe(x, w, y)
        h = x @ w + np.array([0.5, -1.0], np.float32)
        np.testing.assert_allclose(a, np.maximum(-(h * 2.0) + y - 1, 0) / 4.0, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(b, 1.0 - y)


def test_const_from_python_scalars_and_dtypes():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "f", [("x", [2], "i64")]) as fn:
            c1 = relax.const(3)
            c2 = relax.const([1.5, 2.5], dtype="float64")
            c3 = relax.const(np.arange(4, dtype=np.int32).reshape(2, 2))
            s = fn.params[0] + 7
            fn.ret(s)
        assert str(c1.type) == "tensor<i64>"
        assert str(c2.owner) == "%cst_0 = arith.constant dense<[1.500000e+00, 2.500000e+00]> : tensor<2xf64>"
        assert str(c3.type) == "tensor<2x2xi32>"
        assert str(relax.const(np.array([[True, False, True]])).owner.attributes["value"]) == \
            "dense<[[true, false, true]]> : tensor<1x3xi1>"
        assert str(relax.const([7, 255], dtype="uint8").type) == "tensor<2xui8>"
        assert str(relax.const(np.zeros((2, 0), np.float32)).type) == "tensor<2x0xf32>"
        assert str(s.owner.operands[1].owner) == "%cst_2 = arith.constant dense<7> : tensor<i64>"


def test_parameter_names_in_ir_and_errors():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with pytest.raises(relax.RelaxError) as e:
            with graph_function(m, "f", [("x", ["n", 3], "f32"), ("w", [4, 5], "f32")]) as fn:
                assert [str(p.location) for p in fn.params] == ['loc("x")', 'loc("w")']
                assert fn.param("w").name == "w"
                fn.params[0] @ fn.params[1]
        msg = str(e.value)  # the rule's own wording may change; the operand names end it
        assert msg.startswith("'relax.matmul' reduction dim K") and msg.endswith(": 3 != 4 (in relax.matmul(x, w))")
        assert str(m) == "module {\n}\n"  # the failed function is gone


def test_failed_operator_leaves_no_constant_behind():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "f", [("x", ["n", 3], "f32")]) as fn:
            x = fn.params[0]
            with pytest.raises(relax.RelaxError, match="relax.matmul"):
                x @ 2.0
            assert len(fn.block.operations) == 0
            fn.ret(x)
        assert m.operation.verify()


def test_missing_return_and_duplicate_names_leave_module_clean():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with pytest.raises(ValueError, match="built without a return"):
            with graph_function(m, "f", [("x", [2], "f32")]):
                pass
        with pytest.raises(ValueError, match="parameter names repeat"):
            with graph_function(m, "g", [("x", [2], "f32"), ("x", [2], "f32")]):
                pass
        assert str(m) == "module {\n}\n"


def test_verifier_names_builder_parameters():
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "f", [("x", [4], "f32"), ("mask", [4], "f32")]) as fn:
            fn.ret(fn.params[0])
        # corrupt the second parameter's encoding after the fact: rank 2 attribute on a 1-D type
        bad = ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size()], ir.F32Type.get(),
                                      ir.Attribute.parse('#relax.shape<["n", "m"]>'))
        fn.block.arguments[1].set_type(bad)
        x_t = fn.block.arguments[0].type
        fn.op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([x_t, bad], [x_t]))
        with pytest.raises(relax_mlir.CompileError) as e:
            relax_mlir.run_pipeline(m, "builtin.module(relax-verify)")
        assert e.value.diagnostics[0][1] == ("@f parameter #1 'mask': shape attribute has rank 2 "
                                             "but the tensor type has rank 1")
