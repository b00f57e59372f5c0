"""relax-internalize-graph-functions: one function per graph-function entry point.

A graph function ``f`` lowered with ``llvm.emit_c_interface`` exists twice: ``f`` takes
every memref as its expanded descriptor (5 + 2 * rank scalars), ``_mlir_ciface_f`` takes
descriptor pointers, loads them and calls ``f``; the runtime and exported libraries call
only ``_mlir_ciface_f``. That one call passes every scalar: a 60-layer model calls ``f``
with ~3500 arguments, and LLVM is quadratic in the arguments of one call between two
defined functions (CalledValuePropagation revisits the call for every argument: 1.4 s at
60 layers, 0.36 s at 30; store merging over the stack arguments in codegen).

So where ``_mlir_ciface_f`` is the only user of ``f``, ``f``'s body moves INTO the C
interface: the loads of the descriptors stay first, then a branch to ``f``'s blocks
(``f``'s parameters replaced by the loaded values), and each ``llvm.return`` of ``f``
becomes what the interface did with the call's result (store it, return). No call with
thousands of arguments is left, and no second copy of the code. Where ``f`` has other
callers (a graph function called by another one), ``f`` only gets internal linkage (no
ExecutionEngine packed wrapper; LLVM inlines it into the interface when it can).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from .registry import register_pass

CIFACE_PREFIX = "_mlir_ciface_"


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _symbol_uses(module: ir.Operation) -> dict[str, list[ir.Operation]]:
    """Function name -> the ops naming it (``llvm.call`` callee, ``llvm.mlir.addressof``)."""
    uses: dict[str, list[ir.Operation]] = {}

    def visit(op):
        op = op.operation
        if op.name == "llvm.call" and "callee" in op.attributes:
            uses.setdefault(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, []).append(op)
        elif op.name == "llvm.mlir.addressof":
            uses.setdefault(ir.FlatSymbolRefAttr(op.attributes["global_name"]).value, []).append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return uses


def _merge(f: ir.Operation, iface: ir.Operation, call: ir.Operation) -> None:
    """Move ``f``'s body into ``iface`` in place of ``call`` (see the module docstring)."""
    entry = iface.regions[0].blocks[0]
    ops = [o.operation for o in entry.operations]
    at = next(k for k, o in enumerate(ops) if o == call)
    epilogue = ops[at + 1:]   # what the interface does with the result, its return included
    blocks = list(f.regions[0].blocks)
    first = blocks[0]
    for k, a in enumerate(first.arguments):
        a.replace_all_uses_with(call.operands[k])
    for k in reversed(range(len(first.arguments))):
        first.erase_argument(k)
    for b in blocks:
        b.append_to(iface.regions[0])
    for b in blocks:
        ret = b.operations[len(b.operations) - 1].operation
        if ret.name != "llvm.return":
            continue
        vmap = {}
        if len(call.results):
            vmap[call.results[0]] = ret.operands[0]
        for e in epilogue:
            new = e.clone(ip=ir.InsertionPoint(ret)).operation
            for old, v in vmap.items():
                new.replace_uses_of_with(old, v)
            vmap.update(zip(e.results, new.results))
        ret.erase()
    for e in reversed(epilogue):
        e.erase()
    loc = call.location
    call.erase()
    llvm.BrOp([], first, loc=loc, ip=ir.InsertionPoint(entry))
    f.erase()


@register_pass("relax-internalize-graph-functions",
               "Move llvm.func @f into @_mlir_ciface_f, its entry point, when that is its only user "
               "(else internal linkage); run on the LLVM dialect, after convert-func-to-llvm.")
def relax_internalize_graph_functions(module: ir.Operation, opts) -> None:
    funcs = [o.operation for o in module.regions[0].blocks[0].operations
             if o.operation.name == "llvm.func"]
    defined = {_name(f): f for f in funcs if len(f.regions[0].blocks)}
    pairs = [(name, f, defined[CIFACE_PREFIX + name]) for name, f in defined.items()
             if not name.startswith(CIFACE_PREFIX) and CIFACE_PREFIX + name in defined]
    if not pairs:
        return
    uses = _symbol_uses(module)
    internal = ir.Attribute.parse("#llvm.linkage<internal>")
    for name, f, iface in pairs:
        users = uses.get(name, [])
        blocks = list(iface.regions[0].blocks)
        if len(users) == 1 and users[0].name == "llvm.call" and len(blocks) == 1 and \
                users[0].parent is not None and users[0].parent == iface:
            _merge(f, iface, users[0])
        else:
            f.attributes["linkage"] = internal
