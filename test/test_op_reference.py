"""The op reference (docs/ops.md, relax-opt --list-ops) is generated from the op table."""

from pathlib import Path

import numpy as np
import pytest

import relax_mlir
from relax_mlir.ops import OPS
from relax_mlir.ops.reference import SHAPE_RULES, list_ops, ops_markdown, signature

ROOT = Path(__file__).resolve().parents[1]


def test_docs_ops_md_is_fresh():
    on_disk = (ROOT / "docs" / "ops.md").read_text()
    assert on_disk == ops_markdown(), "docs/ops.md is stale: run `make docs`"


def test_every_op_has_a_shape_rule_in_words():
    assert sorted(set(OPS) - set(SHAPE_RULES)) == []
    assert sorted(set(SHAPE_RULES) - set(OPS)) == []


def test_signatures_show_variadics_attributes_and_defaults():
    assert signature(OPS["concat"]) == "relax.concat(*tensors) {axis: int = 0} -> result"
    assert signature(OPS["sum"]) == "relax.sum(x) {axes: ints = none, keepdims: bool = false} -> result"
    assert signature(OPS["reshape"]) == "relax.reshape(x) {shape: shape} -> result"
    text = list_ops()
    assert text.count("\nrelax.") + 1 == len(OPS)
    md = ops_markdown()
    assert "### relax.softmax\n\n`relax.softmax(x) {axis: int = -1} -> result`\n" in md
    assert "| `keepdims` | bool | false |" in md


RMS_OVERFLOW = """func.func @main(%x: tensor<?x3x{dt}, #relax.shape<["n", 3]>>, %g: tensor<3x{dt}>) -> tensor<?x3x{dt}, #relax.shape<["n", 3]>> attributes {{relax.function}} {{
  %0 = "relax.rms_norm"(%x, %g) {{axes = array<i64: -1>}} : (tensor<?x3x{dt}, #relax.shape<["n", 3]>>, tensor<3x{dt}>) -> tensor<?x3x{dt}, #relax.shape<["n", 3]>>
  return %0 : tensor<?x3x{dt}, #relax.shape<["n", 3]>>
}}"""


@pytest.mark.parametrize("dt,value,want", [("f16", 300.0, 1.0), ("f32", -1e30, -0.0), ("f64", -1e30, -1.0)])
def test_rms_norm_computes_in_its_compute_type(dt, value, want):
    """rms_norm's mean of squares is computed in f32 for f16 and f32 (f64 for f64), as
    PyTorch's: in f32 the square of -1e30 overflows and the result is -0.0 (docs/semantics.md;
    the fuzz oracle had used float64: long fuzz program seed 44001398)."""
    np_dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[dt]
    exe = relax_mlir.compile(RMS_OVERFLOW.format(dt=dt))
    for n in (1, 4):
        y = exe(np.full((n, 3), value, np_dt), np.ones(3, np_dt))
        assert y.dtype == np_dt
        np.testing.assert_allclose(y.astype(np.float64), np.full((n, 3), want), rtol=1e-6, atol=0)
        assert np.all(np.signbit(y) == np.signbit(np_dt(want)))
