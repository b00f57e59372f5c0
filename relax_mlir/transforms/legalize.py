"""relax-legalize: every relax op with a legalization becomes a ``relax.call_tir`` of a
loop-level kernel (linalg on tensors, destination-passing style).

The legalization of each op is declared with the op (``registry.legalization``) and
returns a :class:`~relax_mlir.ops.kernels.Kernel`; this pass only walks graph
functions, shares kernels between calls (one ``func.func private`` per distinct
kernel, named from the op, its attributes, dtypes and static dims) and rewrites
the op into ``relax.call_tir`` with the op's result types and the kernel's
``tir_vars``. Run it after relax-infer-shapes: output shapes must be known.
"""

from __future__ import annotations

from mlir import ir

from ..dialects._core import create
from ..ops.kernels import Kernel, LegalizeCall
from ..ops.registry import RelaxError, read_attrs
from ..shapes import Shape, ShapeSyntaxError, read_tensor_type
from .graph import body_ops, func_name, graph_functions, relax_opdef, top_ops
from .registry import emit_error, register_pass

#: On each kernel: the relax op it was legalized from (``"matmul"``); fused kernels carry
#: their members' ops joined by ``_``. Names of fused kernels are built from it.
KERNEL_OP_ATTR = "relax.kernel_op"


class KernelTable:
    """The kernels of one module: text -> symbol, so identical kernels are created once."""

    def __init__(self, module: ir.Operation):
        self.module = module
        self.block = module.regions[0].blocks[0]
        self.by_text: dict[str, str] = {}
        self.names = {ir.StringAttr(o.attributes["sym_name"]).value
                      for o in top_ops(module) if "sym_name" in o.attributes}

    def symbol(self, k: Kernel, op_name: str) -> str:
        if k.text in self.by_text:
            return self.by_text[k.text]
        name, i = k.name, 0
        while name in self.names:
            i += 1
            name = f"{k.name}_{i}"
        text = k.text.replace("@{NAME}", "@" + name, 1)
        parsed = ir.Module.parse(text)
        fn = parsed.body.operations[0].operation
        fn.detach_from_parent()
        fn.attributes[KERNEL_OP_ATTR] = ir.StringAttr.get(op_name)
        ir.InsertionPoint(self.block).insert(fn)
        self.names.add(name)
        self.by_text[k.text] = name
        return name


def legalize_op(op: ir.Operation, table: KernelTable) -> None:
    opdef = relax_opdef(op)
    attrs = read_attrs(opdef, op)
    inputs = [read_tensor_type(v.type) for v in op.operands]
    outputs = [read_tensor_type(r.type) for r in op.results]
    for i, s in enumerate(outputs):
        if s.shape.has_unknown:
            raise RelaxError(f"'{op.name}' result #{i} has an unknown dim '?' "
                             "(run relax-infer-shapes first, or name it with relax.match_cast)")
    kernel = opdef.legalize(LegalizeCall(opdef, attrs, inputs, outputs))
    callee = table.symbol(kernel, opdef.name)
    call_attrs = {"callee": ir.FlatSymbolRefAttr.get(callee)}
    if kernel.tir_vars:
        call_attrs["tir_vars"] = Shape(kernel.tir_vars).to_attr()
    new = create("call_tir", list(op.operands), [r.type for r in op.results], call_attrs,
                 loc=op.location, ip=ir.InsertionPoint(op))
    for old, rep in zip(op.results, new.results):
        old.replace_all_uses_with(rep)
    op.erase()


@register_pass("relax-legalize",
               "Rewrite every relax op into relax.call_tir of a shared loop-level linalg kernel.")
def relax_legalize(module: ir.Operation, opts) -> None:
    table = KernelTable(module)
    for f in graph_functions(module):
        for op in body_ops(f):
            opdef = relax_opdef(op)
            if opdef is None or opdef.legalize is None:
                continue
            try:
                legalize_op(op, table)
            except (RelaxError, ShapeSyntaxError) as e:
                emit_error(op, f"in @{func_name(f)}: {e}")
