"""relax-legalize: every relax op with a legalization becomes a ``relax.call_tir`` of a
loop-level kernel (linalg on tensors, destination-passing style).

The default legalization of each op is declared with the op (``registry.legalization``)
and returns a :class:`~relax_mlir.ops.kernels.Kernel`. A target may replace it for some
ops (TVM's ``customize_legalize_map``)::

    @register_legalize("relax.add", target="vulkan")
    def _add_vulkan(call: LegalizeCall) -> Optional[Kernel]: ...

``relax-legalize{target=vulkan}`` then consults the target's table first; an override
returning ``None`` hands the op back to the default (e.g. for dtypes it does not
handle). A target with no overrides legalizes every op the default way.

The pass only walks graph functions, shares kernels between calls (one
``func.func private`` per distinct kernel: kernels are identified by their structure,
see :mod:`.kernel_hash`, and named from the op, its attributes, dtypes and static
dims; ops with the same name, attributes and types share one legalization without
building it again), records the op on each kernel (``relax.kernel_op = "add"``, which names fused
kernels later) and rewrites the op into ``relax.call_tir`` with the op's result types
and the kernel's ``tir_vars``. Run it after relax-infer-shapes: output shapes must be
known.
"""

from __future__ import annotations

from typing import Callable, Optional

from mlir import ir
from mlir.dialects import arith, func

from ..dialects._core import create
from ..ops.kernels import KERNEL_ATTR, Kernel, LegalizeCall
from ..ops.match import isa
from ..ops.registry import OPS, OpDef, RelaxError, python_to_attr, read_attrs
from ..shapes import Shape, ShapeSyntaxError, read_tensor_type
from .dispatch_split import CANDIDATE_ATTR, SPLIT_ATTR
from .graph import body_ops, func_name, graph_functions, relax_opdef, top_ops
from .kernel_hash import structural_hash
from .registry import Option, emit_error, register_pass

#: On each kernel: the relax op it was legalized from (``"matmul"``); fused kernels carry
#: their members' ops joined by ``_``. Names of fused kernels are built from it.
KERNEL_OP_ATTR = "relax.kernel_op"
#: The target whose legalizations are the op table's own.
DEFAULT_TARGET = "cpu"

Legalization = Callable[[LegalizeCall], Optional[Kernel]]

#: target -> op name (without ``relax.``) -> legalization used instead of the default.
LEGALIZE_OVERRIDES: dict[str, dict[str, Legalization]] = {}


def register_legalize(op_name: str, target: str, replace: bool = False):
    """Decorator: ``fn`` legalizes ``op_name`` (``"relax.add"`` or ``"add"``) for ``target``
    instead of the op's default. Registering the same op twice for one target is an error
    unless ``replace=True``."""
    name = op_name[len("relax."):] if op_name.startswith("relax.") else op_name
    if name not in OPS:
        raise ValueError(f"register_legalize: unknown op 'relax.{name}'")

    def deco(fn: Legalization) -> Legalization:
        table = LEGALIZE_OVERRIDES.setdefault(target, {})
        if name in table and not replace:
            raise ValueError(f"relax.{name} already has a legalization for target '{target}'")
        table[name] = fn
        return fn

    return deco


def legalizations(opdef: OpDef, target: str) -> list[Legalization]:
    """The legalizations to try for ``opdef`` on ``target``, in order (override, default)."""
    out = []
    override = LEGALIZE_OVERRIDES.get(target, {}).get(opdef.name)
    if override is not None:
        out.append(override)
    if opdef.legalize is not None:
        out.append(opdef.legalize)
    return out


class KernelTable:
    """The kernels of one module, by structure, so identical kernels are created once."""

    def __init__(self, module: ir.Operation):
        self.module = module
        self.block = module.regions[0].blocks[0]
        self.by_hash: dict[str, str] = {}     # structural hash -> symbol
        self.by_call: dict[tuple, tuple] = {}  # an op's key (_call_key) -> its legalization (fast path)
        self.names = {ir.StringAttr(o.attributes["sym_name"]).value
                      for o in top_ops(module) if "sym_name" in o.attributes}
        for o in top_ops(module):   # kernels already there (an earlier run) are shared too
            if isa(o, func.FuncOp) and KERNEL_ATTR in o.attributes and o.regions[0].blocks:
                self.by_hash.setdefault(structural_hash(o), ir.StringAttr(o.attributes["sym_name"]).value)

    def symbol(self, k: Kernel, op_name: str, extra: Optional[dict[str, ir.Attribute]] = None) -> str:
        """The kernel's symbol: ``k``'s function is moved into the module unless a kernel
        of the same structure is there already; ``extra``: attributes the kernel carries
        (part of its identity)."""
        fn = k.func
        for n, a in (extra or {}).items():
            fn.attributes[n] = a
        key = structural_hash(fn)
        if key in self.by_hash:
            return self.by_hash[key]
        name, i = k.name, 0
        while name in self.names:
            i += 1
            name = f"{k.name}_{i}"
        fn.attributes["sym_name"] = ir.StringAttr.get(name)
        fn.detach_from_parent()
        fn.attributes[KERNEL_OP_ATTR] = ir.StringAttr.get(op_name)
        ir.InsertionPoint(self.block).insert(fn)
        self.names.add(name)
        self.by_hash[key] = name
        return name


def legalize_op(op: ir.Operation, table: KernelTable, target: str = DEFAULT_TARGET) -> bool:
    """Rewrite ``op`` into a call_tir of its kernel; False when no legalization takes it."""
    key = _call_key(op, target)
    hit = table.by_call.get(key)
    if hit is None:
        hit = _legalized(op, table, target)
        if hit is None:
            return False
        table.by_call[key] = hit
    callee, tir_vars, index_checks = hit
    for k, size, what in index_checks:
        _index_check(op, op.operands[k], size, what)
    call_attrs = {"callee": ir.FlatSymbolRefAttr.get(callee)}
    if tir_vars:
        call_attrs["tir_vars"] = Shape(tir_vars).to_attr()
    new = create("call_tir", list(op.operands), [r.type for r in op.results], call_attrs,
                 loc=op.location, ip=ir.InsertionPoint(op))
    for old, rep in zip(op.results, new.results):
        old.replace_all_uses_with(rep)
    op.erase()
    return True


def _call_key(op: ir.Operation, target: str) -> tuple:
    """What a legalization's result depends on: the op, its attributes and its (symbolic)
    operand and result types, printed; equal keys legalize to the same kernel and call."""
    attrs = op.attributes
    return (target, op.name, tuple(str(v.type) for v in op.operands), tuple(str(r.type) for r in op.results),
            tuple(sorted((a.name, str(a.attr)) for a in (attrs[i] for i in range(len(attrs))))))


def _legalized(op: ir.Operation, table: KernelTable, target: str):
    """(kernel symbol, tir_vars, index checks) of ``op``'s legalization; None when none takes it."""
    opdef = relax_opdef(op)
    attrs = read_attrs(opdef, op)
    inputs = [read_tensor_type(v.type) for v in op.operands]
    outputs = [read_tensor_type(r.type) for r in op.results]
    for i, s in enumerate(outputs):
        if s.shape.has_unknown:
            raise RelaxError(f"'{op.name}' result #{i} has an unknown dim '?' "
                             "(run relax-infer-shapes first, or name it with relax.match_cast)")
    kernel = None
    for legalize in legalizations(opdef, target):
        call = LegalizeCall(opdef, attrs, inputs, outputs)
        kernel = legalize(call)
        if kernel is not None:
            break
    if kernel is None:
        return None
    # relax-dispatch-library's run-time split (dispatch_split.SPLIT_ATTR) goes to the kernel
    # and so does the tuner's mark (CANDIDATE_ATTR)
    extra = {a: op.attributes[a] for a in (SPLIT_ATTR, CANDIDATE_ATTR) if a in op.attributes} or None
    return table.symbol(kernel, opdef.name, extra), list(kernel.tir_vars), list(call.index_checks)


def _constant_ints(v: ir.Value):
    """The values of an ``arith.constant`` integer tensor (numpy), else None."""
    owner = v.owner
    if not isa(owner, arith.ConstantOp):
        return None
    try:
        import numpy as np
        attr = ir.DenseIntElementsAttr(owner.operation.attributes["value"])
        if attr.is_splat:
            return np.asarray([attr.get_splat_value().value])
        return np.asarray(attr)
    except (ValueError, TypeError):
        return None


def _index_check(op: ir.Operation, indices: ir.Value, size, what: str) -> None:
    """Indices that must lie in ``[-size, size)`` (LegalizeCall.check_indices): a constant
    against a static size is checked here (an error at the op); anything else gets a
    ``relax.check_indices`` before the op (lowered by relax-lower-host)."""
    values = _constant_ints(indices)
    if values is not None and size.is_static:
        d = size.value
        bad = values[(values < -d) | (values >= d)] if values.size else values
        if bad.size:
            raise RelaxError(f"{what}: index {int(bad.reshape(-1)[0])} is out of range for a dim of size {d}")
        return
    create("check_indices", [indices], [], {"size": python_to_attr("dim", size), "message": ir.StringAttr.get(what)},
           loc=op.location, ip=ir.InsertionPoint(op))


@register_pass("relax-legalize",
               "Rewrite every relax op into relax.call_tir of a shared loop-level linalg kernel.",
               options=[Option("target", str, DEFAULT_TARGET,
                               "whose legalization overrides (register_legalize) come before "
                               "the op table's defaults")])
def relax_legalize(module: ir.Operation, opts) -> None:
    table = KernelTable(module)
    for f in graph_functions(module):
        for op in body_ops(f):
            opdef = relax_opdef(op)
            if opdef is None or not legalizations(opdef, opts.target):
                continue
            try:
                legalize_op(op, table, opts.target)
            except (RelaxError, ShapeSyntaxError) as e:
                emit_error(op, f"in @{func_name(f)}: {e}")
