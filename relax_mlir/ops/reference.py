"""The op reference, generated from the op table: ``relax-opt --list-ops`` and ``docs/ops.md``.

Signatures, attributes, defaults, summaries and legalizations come from the declarations;
the shape rules in words are kept here, next to the generator, one line per rule (a
test fails when an op has none, or when ``docs/ops.md`` differs from :func:`ops_markdown`).
"""

from __future__ import annotations

import inspect

from .registry import OPS, OpDef

_BINARY = "numpy broadcasting of the two shapes (dims equal or static 1; a relation not provable at compile time becomes a run-time check); the operands' dtype"
_COMPARE = _BINARY.replace("the operands' dtype", "dtype i1")
_UNARY = "the operand's shape and dtype"
_REDUCE = "the input shape without `axes` (kept as 1 with `keepdims`); the input dtype"
_FILLED = "`shape` (symbols must be in scope); dtype `dtype`"

#: The shape rule of every op, in words.
SHAPE_RULES: dict[str, str] = {
    **{n: _BINARY for n in ("add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power", "maximum", "minimum")},
    **{n: _COMPARE for n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")},
    **{n: _UNARY for n in ("abs", "ceil", "cos", "erf", "exp", "floor", "gelu", "gelu_tanh", "log", "negative",
                           "relu", "round", "rsqrt", "sigmoid", "silu", "sin", "sqrt", "tanh", "tril", "triu",
                           "softmax", "log_softmax")},
    **{n: _REDUCE for n in ("sum", "mean", "max", "min", "prod")},
    **{n: _FILLED for n in ("zeros", "ones", "full")},
    "argmax": "the input shape without `axis` (kept as 1 with `keepdims`; no axis: a scalar); dtype i64",
    "argmin": "the input shape without `axis` (kept as 1 with `keepdims`; no axis: a scalar); dtype i64",
    "astype": "the operand's shape; dtype `dtype`",
    "arange": "1-D of length max((end - start + step - 1) // step, 0) over the symbolic `start`/`end`/`step`; dtype `dtype`",
    "layer_norm": "the shape of `x`; `gamma` and `beta` have the shape of the normalized trailing `axes`",
    "rms_norm": "the shape of `x`; `weight` has the shape of the normalized trailing `axes`",
    "matmul": "numpy matmul: (..., n, k) x (..., k, m) -> (broadcast batch dims..., n, m); 1-D operands gain "
              "and lose a unit dim; the reduction dims must agree; dtype `out_dtype` or the operands'",
    "where": "three-way numpy broadcasting of `cond` (i1), `x` and `y`; the dtype of `x` and `y`",
    "broadcast_to": "`shape`; the input broadcasts to it by numpy rules",
    "concat": "the operands' shape with the `axis` dims summed; the other dims must agree",
    "expand_dims": "the input shape with unit dims inserted at `axis` (positions in the result)",
    "flatten": "1-D of the product of the input dims",
    "permute_dims": "the input dims reordered by `axes` (default: reversed)",
    "reshape": "`shape` (one -1 is deduced); the element counts must agree (checked at run time when unproven)",
    "split": "along `axis`: `sections` parts of dim // sections (dim % sections == 0), or the pieces between `indices`",
    "squeeze": "the input shape without the unit dims at `axis` (default: every static 1)",
    "strided_slice": "per sliced axis: the clamped length ceil((end - begin) / stride) (see docs/semantics.md); other dims kept",
    "take": "x.shape[:axis] + indices.shape + x.shape[axis + 1:]; indices are integers",
    "quantized_matmul": "x.shape[:-1] + (N,) in x's dtype (f32, f16 or bf16) for w (N, RB) i8: RB a whole number of `format` blocks whose "
                        "K (RB / block bytes * block size) equals x's last dim",
    "quantized_take": "indices.shape + (K,) f32 for table (V, RB) i8 (K from RB and `format`); integer indices",
    "match_cast": "the pattern `shape`, whose new symbols are bound from the operand at run time",
    "shape_of": "1-D of length rank(x); dtype i64",
    "assert": "no result; `dims` holds two dims in scope",
    "check_indices": "no result; integer `indices`, `size` a dim in scope",
    "call": "the callee's result types with its parameter symbols bound from the arguments",
    "repeat": "the carried operands' types: the callee's results must have its carried parameters' types, "
              "independent of the iteration; count >= 1",
    "call_tir": "as the result types state (outputs written in destination-passing style)",
    "call_dps_library": "as the result types state (outputs written in destination-passing style)",
    "alloc_storage": "as the result type states: a 1-D i8 tensor of the planned byte size",
    "alloc_tensor": "as the result type states, carved out of `storage` at `offset`",
    "view": "`shape` (static) of `dtype`, from the bytes of the i8 operand at byte `offset` (0 <= offset; "
            "offset + the view's bytes <= the operand's bytes is checked at run time)",
    "state_read": "(end - begin, *rows of the state); the state's dtype; 0 <= begin <= end (end <= capacity, of block "
                  "`block` when `blocks` > 1, is checked at run time)",
    "state_write": "no result; `value` is (rows, *the state's row shape) of the state's dtype; 0 <= offset",
    "conv2d": "(N, O, OH, OW) with OH = (H + pad_top + pad_bottom - dilation * (KH - 1) - 1) // stride + 1 "
              "(OW likewise); C == I * groups; the padded input must cover the dilated kernel (run-time check "
              "when unproven); the operands' dtype; (N, OH, OW, O) with `data_layout = \"NHWC\"` (weight HWIO)",
    "max_pool2d": "(N, C, OH, OW) with OH = (H + pad_top + pad_bottom - dilation * (KH - 1) - 1) // stride + 1 "
                  "(OW likewise); the input dtype; (N, OH, OW, C) with `data_layout = \"NHWC\"`",
    "avg_pool2d": "(N, C, OH, OW) with OH = (H + pad_top + pad_bottom - KH) // stride + 1 (OW likewise); "
                  "the input dtype; (N, OH, OW, C) with `data_layout = \"NHWC\"`",
    "sort": _UNARY,
    "argsort": "the operand's shape; dtype `dtype` (i64 or i32)",
    "topk": "two results, values and indices: the input shape with the `axis` dim replaced by `k` "
            "(k <= that dim, a run-time check when unproven); the input dtype and `dtype`",
}


def signature(d: OpDef) -> str:
    """``relax.concat(*tensors) {axis: int = 0} -> result``."""
    ops = ", ".join(("*" if o.variadic else "") + o.name for o in d.operands)
    attrs = ", ".join(f"{a.name}: {a.kind}" + ("" if a.required else f" = {_default(a.default)}") for a in d.attrs)
    res = ", ".join(("*" if r.variadic else "") + r.name for r in d.results) or "()"
    return f"relax.{d.name}({ops})" + (f" {{{attrs}}}" if attrs else "") + f" -> {res}"


def _default(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else str(v)


def legalization(d: OpDef) -> str:
    """How the op becomes a kernel: the legalization's name and the first line of its docstring."""
    if d.legalize is None:
        return "none: lowered by relax-lower-host (a cross-level or memory op)"
    doc = (inspect.getdoc(d.legalize) or "").split("\n")[0].strip()
    name = d.legalize.__name__.lstrip("_")
    where = d.legalize.__module__.replace(".", "/") + ".py"
    return f"`{name}` in `{where}`" + (f": {doc}" if doc else "")


def list_ops() -> str:
    """One block per op for ``relax-opt --list-ops``."""
    lines = []
    for name in sorted(OPS):
        d = OPS[name]
        lines.append(signature(d))
        lines.append(f"    {d.summary}")
        lines.append(f"    shape: {SHAPE_RULES.get(name, 'undocumented')}")
    return "\n".join(lines) + "\n"


def ops_markdown() -> str:
    """The text of ``docs/ops.md``."""
    out = ["# relax ops", "",
           "Generated from the op table (`relax_mlir/ops`) by `relax-opt --list-ops=markdown -o docs/ops.md`",
           "(`make docs`); `test/test_op_reference.py` fails when this file is stale.", "",
           "Each op is generic-form MLIR: `\"relax.add\"(%a, %b) : (...) -> ...`. Attribute kinds: int (i64),",
           "ints (`array<i64: ...>`), float (f64), bool, str, dtype (a type), shape (`#relax.shape<[...]>`),",
           "dim (an integer or an expression string), symbol (`@name`). Ops with a variadic group (`*name`)",
           "carry `operandSegmentSizes`/`resultSegmentSizes`, which relax-opt fills in when left out.", ""]
    families: dict[str, list[str]] = {}
    for name in sorted(OPS):
        families.setdefault(OPS[name].family, []).append(name)
    for fam in sorted(families):
        out += [f"## {fam}", ""]
        for name in families[fam]:
            d = OPS[name]
            out += [f"### relax.{name}", "", f"`{signature(d)}`", "", d.summary[0].upper() + d.summary[1:] + ".", ""]
            if d.attrs:
                out.append("| attribute | kind | default |")
                out.append("|---|---|---|")
                out += [f"| `{a.name}` | {a.kind} | {'required' if a.required else _default(a.default)} |"
                        for a in d.attrs]
                out.append("")
            out += [f"- Shape rule: {SHAPE_RULES.get(name, 'undocumented')}.",
                    f"- Legalization: {legalization(d)}", ""]
    return "\n".join(out).rstrip("\n") + "\n"
