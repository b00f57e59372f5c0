"""Walking graph functions: the helpers every relax pass shares."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ..dialects.relax import FUNCTION_ATTR, UPPER_BOUNDS_ATTR
from ..ops.registry import OPS, OpDef, RelaxError, read_attrs
from ..shapes import Dim, Shape, TensorSig, is_tensor, read_tensor_type, symbol
from ..shapes.match import match_shapes

#: Ops that call a graph function (``callee``): relax.call once, relax.repeat in a loop.
CALL_OPS = ("relax.call", "relax.repeat")


def top_ops(module_op: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in module_op.regions[0].blocks[0].operations]


def functions_with(module_op: ir.Operation, attr: str) -> list[ir.Operation]:
    """The module's ``func.func`` definitions (with a body) that carry attribute ``attr``."""
    return [f for f in top_ops(module_op)
            if f.name == "func.func" and attr in f.attributes and len(f.regions[0].blocks)]


def outermost(root: ir.Operation, name: str) -> list[ir.Operation]:
    """The ops named ``name`` below ``root``, in order, without those nested in one."""
    found: list[ir.Operation] = []

    def visit(op):
        if op.operation.name == name:
            found.append(op.operation)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def is_graph_function(op: ir.Operation) -> bool:
    return op.name == "func.func" and FUNCTION_ATTR in op.attributes


def graph_functions(module_op: ir.Operation) -> list[ir.Operation]:
    return [o for o in top_ops(module_op) if is_graph_function(o)]


def functions_by_name(module_op: ir.Operation) -> dict[str, ir.Operation]:
    return {ir.StringAttr(o.attributes["sym_name"]).value: o
            for o in top_ops(module_op) if o.name == "func.func"}


def func_name(f: ir.Operation) -> str:
    return ir.StringAttr(f.attributes["sym_name"]).value


def entry_block(f: ir.Operation) -> ir.Block:
    return f.regions[0].blocks[0]


def body_ops(f: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in entry_block(f).operations]


def function_type(f: ir.Operation) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)


def set_function_type(f: ir.Operation, inputs, results) -> None:
    f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(list(inputs), list(results)))


def relax_opdef(op: ir.Operation) -> Optional[OpDef]:
    name = op.name
    if name.startswith("relax."):
        return OPS.get(name[len("relax."):])
    return None


def indexing_maps(op: ir.Operation) -> list[ir.AffineMap]:
    """A linalg structured op's indexing maps, one per operand (a named op's defaults too)."""
    return [ir.AffineMapAttr(a).value for a in op.opview.indexing_maps]


def defining_op(v: ir.Value) -> Optional[ir.Operation]:
    """The op defining ``v`` (None for a block argument)."""
    if isinstance(v.owner, ir.Block):
        return None
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def defined_inside(v: ir.Value, op: ir.Operation) -> bool:
    """True when ``v`` is defined in a region of ``op`` (a block argument there, or the result
    of an op nested in it)."""
    owner = v.owner
    o = owner.owner if isinstance(owner, ir.Block) else owner
    o = o.operation if o is not None else None
    while o is not None:
        if o == op:
            return True
        o = o.parent
    return False


def users(v: ir.Value) -> list[ir.Operation]:
    """The ops using ``v``, once per use."""
    return [u.owner.operation if hasattr(u.owner, "operation") else u.owner for u in v.uses]


def single_user(v: ir.Value, near: ir.Operation) -> Optional[ir.Operation]:
    """The only user of ``v`` when it lies in the block of ``near``; else None."""
    us = users(v)
    return us[0] if len(us) == 1 and us[0].parent == near.parent else None


def producer(v: ir.Value, name: str, user: ir.Operation) -> Optional[ir.Operation]:
    """The op named ``name`` defining ``v`` when ``user`` (same block) is its only user."""
    op = defining_op(v)
    if op is None or op.name != name or op.parent != user.parent:
        return None
    only = single_user(v, op)
    return op if only is not None and only == user else None


def sig_or_none(t: ir.Type) -> Optional[TensorSig]:
    return read_tensor_type(t) if is_tensor(t) else None


def value_sig(v: ir.Value) -> Optional[TensorSig]:
    """The TensorSig of ``v``; None for a non-tensor or an unreadable type (for matchers, which
    must accept any well-formed input)."""
    try:
        return sig_or_none(v.type)
    except (RelaxError, ValueError):
        return None


def relax_attrs(op: ir.Operation) -> Optional[dict]:
    """A relax op's attributes as its declaration reads them; None when unreadable."""
    try:
        return read_attrs(relax_opdef(op), op)
    except (RelaxError, ValueError):
        return None


def other_operand(op: ir.Operation, chained: ir.Value) -> Optional[ir.Value]:
    """The operand of a binary ``op`` that is not ``chained`` (None when both or neither are)."""
    ops = list(op.operands)
    if len(ops) != 2 or (ops[0] == chained) == (ops[1] == chained):
        return None
    return ops[1] if ops[0] == chained else ops[0]


def param_sigs(f: ir.Operation) -> list[Optional[TensorSig]]:
    return [sig_or_none(t) for t in function_type(f).inputs]


def result_sigs(f: ir.Operation) -> list[Optional[TensorSig]]:
    return [sig_or_none(t) for t in function_type(f).results]


def bound_by_params(sigs: list[Optional[TensorSig]]) -> tuple[set[str], set[str]]:
    """Symbols the parameter shapes bind (plain dims, or linear in one symbol), and the rest."""
    shapes = [s.shape for s in sigs if s is not None]
    placeholders = [Shape(Dim(symbol(f"?p{i}_{j}")) for j in range(s.rank)) for i, s in enumerate(shapes)]
    all_syms: set[str] = set().union(*(s.symbols for s in shapes)) if shapes else set()
    m = match_shapes(shapes, placeholders, all_syms)
    return all_syms - m.unresolved, m.unresolved


def upper_bounds(f: ir.Operation) -> dict[str, int]:
    if UPPER_BOUNDS_ATTR not in f.attributes:
        return {}
    d = ir.DictAttr(f.attributes[UPPER_BOUNDS_ATTR])
    return {d[i].name: ir.IntegerAttr(d[i].attr).value for i in range(len(d))}


def on_tensors(fn: ir.Operation) -> bool:
    """Whether kernel ``fn`` is on tensors: no memref, unranked tensor or other non-ranked-
    tensor shaped type (vectors aside) among its signature and its ops' operands and
    results. Schedules and range variants are made before bufferization; a kernel on
    memrefs (bufferized already, or written so) is well-formed input all the same and
    goes through plain loops (fuzz seeds 1000211, 1000222)."""
    def tensor_level(t: ir.Type) -> bool:
        return not isinstance(t, ir.ShapedType) or isinstance(t, (ir.RankedTensorType, ir.VectorType))

    fty = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    if not all(tensor_level(t) for t in list(fty.inputs) + list(fty.results)):
        return False
    ok = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal ok
        op = op.operation
        if not all(tensor_level(v.type) for v in list(op.operands) + list(op.results)):
            ok = False
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    for block in fn.regions[0].blocks:
        for o in block.operations:
            o.operation.walk(visit)
            if not ok:
                return False
    return True
