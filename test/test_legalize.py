"""relax-legalize: every op of the op set has a legalization, kernels are shared, and
kernels are in destination-passing style (results bufferize into the output arguments)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from kernel_harness import kernel_of, legalized, run_legalized  # noqa: E402
from test_ops_numerics import CASES  # noqa: E402

import relax_mlir  # noqa: E402
from relax_mlir.ops import OPS  # noqa: E402

# Lowered by relax-lower-host rather than legalized into kernels (memory ops come from relax-plan-memory).
HOST_LOWERED = {"call_tir", "call_dps_library", "call", "match_cast", "assert", "check_indices", "shape_of",
                "alloc_storage", "alloc_tensor", "state_read", "state_write", "repeat", "view"}


def test_every_op_is_legalized_and_tested():
    ops = set(OPS) - HOST_LOWERED
    assert {n for n in ops if OPS[n].legalize is None} == set()
    assert ops - {c.op for c in CASES} == set()


def test_identical_ops_share_one_kernel():
    src = '''
    func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["m", 4]>>)
        -> tensor<?x4xf32, #relax.shape<["m", 4]>> attributes {relax.function} {
      %0 = "relax.add"(%x, %x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
      %1 = "relax.add"(%y, %y) : (tensor<?x4xf32, #relax.shape<["m", 4]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>>
      return %1 : tensor<?x4xf32, #relax.shape<["m", 4]>>
    }'''
    m = relax_mlir.parse(src, relax_mlir.make_context())
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize)")
    text = str(m)
    assert text.count("func.func private @relax_add_f32_Dx4_Dx4") == 1
    assert text.count("callee = @relax_add_f32_Dx4_Dx4") == 2


def test_unknown_result_dim_is_an_error():
    src = '''
    func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> attributes {relax.function} {
      %0 = "relax.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
      return %0 : tensor<?xf32>
    }'''
    m = relax_mlir.parse(src, relax_mlir.make_context())
    with m.context, pytest.raises(Exception, match="unknown dim"):
        relax_mlir.run_pipeline(m, "builtin.module(relax-legalize)")


@pytest.mark.parametrize("op,shapes,dtypes,attrs,outs", [
    ("concat", [["a", "n", 4], ["a", "m", 4]], ["f32", "f32"], "axis = 1 : i64", None),
    ("split", [["a", "n", 4]], ["f32"], "indices = array<i64: 1, 3>, axis = 2 : i64", None),
    ("strided_slice", [["n", 4]], ["f32"], 'axes = array<i64: 0>, begin = #relax.shape<["n - 2"]>, '
                                           'end = #relax.shape<["n"]>', None),
    ("reshape", [["a", "n", 4]], ["f32"], 'shape = #relax.shape<[2, "a", "n", 2]>', None),
    ("layer_norm", [["a", "n"], ["n"], ["n"]], ["f32"] * 3, "", None),
    ("argmax", [["a", "n"]], ["f32"], "axis = 1 : i64", None),
    ("matmul", [["n", "k"], ["k", "m"]], ["f16", "f16"], "", None),
])
def test_kernels_run_standalone_in_place(op, shapes, dtypes, attrs, outs):
    """The kernel alone, through upstream passes only: its results must be its output
    arguments after bufferization (checked by the harness), and its values right."""
    m = legalized(op, shapes, dtypes, attrs)
    call, kernel = kernel_of(m)
    assert "relax.kernel" in kernel.attributes
    rng = np.random.default_rng(1)
    env = {"a": 3, "n": 5, "m": 2, "k": 6}
    from relax_mlir.shapes import Shape, read_tensor_type
    with m.context:
        ins = [rng.standard_normal(Shape.of(s).evaluate(env)).astype({"f32": np.float32, "f16": np.float16}[d])
               for s, d in zip(shapes, dtypes)]
        out_sigs = [read_tensor_type(r.type) for r in call.results]
        out_shapes = [s.shape.evaluate(env) for s in out_sigs]
        out_dtypes = [{"f32": np.float32, "f16": np.float16, "i64": np.int64}[s.dtype] for s in out_sigs]
    got = run_legalized(m, ins, out_shapes, out_dtypes, syms=env)
    for g in got:
        assert not (g.dtype.kind == "f" and np.isnan(g).any())
