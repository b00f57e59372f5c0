"""relax-strip-attributes: drop every ``relax.*`` attribute, the last step of a target pipeline.

The relax dialect is declared in Python (IRDL loaded at run time), so attributes that name
it (``#relax.shape`` inside ``relax.graph_type``) or belong to it (``relax.checks``,
``relax.kernel``, ``relax.libraries``, ...) make the final LLVM-dialect module unreadable
for plain upstream tools. The compile driver reads what it needs (run-time checks,
signatures, libraries) before the codegen stage; after this pass,
``mlir-translate --mlir-to-llvmir`` takes the module as it is.
"""

from __future__ import annotations

from mlir import ir

from .registry import register_pass

PREFIX = "relax."


def _strip(op: ir.Operation) -> None:
    names = [a if isinstance(a, str) else a.name for a in op.attributes]   # str in MLIR 22
    names = [n for n in names if n.startswith(PREFIX)]
    for name in names:
        del op.attributes[name]


@register_pass("relax-strip-attributes",
               "Drop every relax.* attribute (after lowering: upstream tools read the result).")
def relax_strip_attributes(module: ir.Operation, opts) -> None:
    def visit(op):
        _strip(op.operation)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
