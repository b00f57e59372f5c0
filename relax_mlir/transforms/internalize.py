"""relax-internalize-graph-functions: internal linkage for functions reached only through
their C interface.

A graph function ``f`` lowered with ``llvm.emit_c_interface`` exists twice: ``f`` takes
every memref as its expanded descriptor (5 + 2 * rank scalars), ``_mlir_ciface_f`` takes
descriptor pointers and calls ``f``; the runtime and exported libraries call only
``_mlir_ciface_f``. Left external, ``f`` also gets the ExecutionEngine's packed wrapper,
and both wrappers make one call with every scalar: a model with 270 weight matrices calls
``f`` with ~1900 arguments, and LLVM's store merging over the stack arguments of one call
is quadratic (30 layers: 40 s of JIT codegen). Internal, ``f`` has one caller, which
LLVM inlines, and no packed wrapper: codegen grows linearly with the number of layers.
"""

from __future__ import annotations

from mlir import ir

from .registry import register_pass

CIFACE_PREFIX = "_mlir_ciface_"


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


@register_pass("relax-internalize-graph-functions",
               "Give llvm.func @f internal linkage where @_mlir_ciface_f is its entry point "
               "(run on the LLVM dialect, after convert-func-to-llvm).")
def relax_internalize_graph_functions(module: ir.Operation, opts) -> None:
    funcs = [o.operation for o in module.regions[0].blocks[0].operations
             if o.operation.name == "llvm.func"]
    defined = {_name(f): f for f in funcs if len(f.regions[0].blocks)}
    internal = ir.Attribute.parse("#llvm.linkage<internal>")
    for name, f in defined.items():
        if not name.startswith(CIFACE_PREFIX) and CIFACE_PREFIX + name in defined:
            f.attributes["linkage"] = internal
