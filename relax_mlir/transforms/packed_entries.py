"""relax-packed-entries: a one-argument entry point for every wide C-interface function.

A graph function's C entry point ``_mlir_ciface_<f>`` takes one pointer per parameter
(plus the result struct, the workspace and the state buffers). ctypes calls at most
:data:`relax_mlir.runtime.abi.MAX_DIRECT_ARGS` arguments, so for a wider one this pass adds
``_mlir_relax_packed_<f>(ptr argv)``: it loads the ``n`` pointers of the array ``argv`` and
calls ``_mlir_ciface_<f>`` with them (its result, if any, returned as is). The runtime calls
that entry with one argument; narrower functions keep the direct call (no indirection).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from ..runtime import abi
from ..runtime.abi import PACKED_PREFIX
from .registry import Option, register_pass

CIFACE = "_mlir_ciface_"


def _add_packed(module: ir.Operation, fn: ir.Operation, name: str) -> None:
    ftype = ir.TypeAttr(fn.attributes["function_type"]).value
    block = fn.regions[0].blocks[0]
    params = [a.type for a in block.arguments]
    ptr = llvm.PointerType.get()
    if any(t != ptr for t in params):   # not an entry of pointers only: leave it alone
        return
    text = str(ftype)
    result = None if text.startswith("!llvm.func<void ") else ir.Type.parse(text[len("!llvm.func<"):text.index(" (")])
    loc = fn.location
    ip = ir.InsertionPoint(module.regions[0].blocks[0])
    wrapper = llvm.LLVMFuncOp(PACKED_PREFIX + name,
                              ir.TypeAttr.get(ir.Type.parse(f"!llvm.func<{result or 'void'} (ptr)>")),
                              loc=loc, ip=ip)
    body = wrapper.body.blocks.append(ptr)
    bip = ir.InsertionPoint(body)
    argv = body.arguments[0]
    args = []
    for k in range(len(params)):
        slot = llvm.GEPOp(ptr, argv, [], [k], ptr, 0, loc=loc, ip=bip).result
        args.append(llvm.LoadOp(ptr, slot, loc=loc, ip=bip).result)
    call = llvm.CallOp(result, args, [], [], callee=ir.FlatSymbolRefAttr.get(CIFACE + name), loc=loc, ip=bip)
    llvm.ReturnOp(arg=call.result if result is not None else None, loc=loc, ip=bip)


@register_pass("relax-packed-entries",
               "Add _mlir_relax_packed_<f>(argv) for each C-interface entry wider than ctypes calls.",
               options=[Option("min-args", int, -1, "wrap the entries with more than this many "
                               "arguments (default -1: abi.MAX_DIRECT_ARGS, the runtime's limit)")])
def relax_packed_entries(module: ir.Operation, opts) -> None:
    top = module.regions[0].blocks[0]
    names = {ir.StringAttr(op.attributes["sym_name"]).value for op in top.operations
             if op.operation.name == "llvm.func"}
    limit = opts.min_args if opts.min_args >= 0 else abi.MAX_DIRECT_ARGS
    for op in list(top.operations):
        op = op.operation
        if op.name != "llvm.func" or len(op.regions[0].blocks) == 0:
            continue
        sym = ir.StringAttr(op.attributes["sym_name"]).value
        if not sym.startswith(CIFACE) or PACKED_PREFIX + sym[len(CIFACE):] in names:
            continue
        if len(op.regions[0].blocks[0].arguments) > limit:
            _add_packed(module, op, sym[len(CIFACE):])
