"""The op reference (docs/ops.md, relax-opt --list-ops) is generated from the op table."""

from pathlib import Path

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
