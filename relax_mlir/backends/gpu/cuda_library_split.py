"""relax-cuda-split-library: a matmul kernel split per call by M between its generated routes and cuBLAS.

relax-cuda-dispatch-library{policy=auto|on} marks a 2-D f32 / f16 / bf16 matmul with a
symbolic M ``relax.dispatch_split = {callee, generated_m = [[1, 4]], library}`` (the cpu
target's mark), a relax.quantized_matmul with ``[[1, quant-rows]]``;
relax-legalize and relax-fuse-kernels carry it to the kernel. Run after one-shot
bufferization (the kernel writes its output argument and returns nothing), this pass gives
such a kernel two variants and makes the kernel itself their dispatcher::

    func.func private @k(%a: memref<?x768xf32>, %b, %c) {       // the kernel: callers unchanged
      %m = memref.dim %a, %c0
      scf.if (%m <= 4) { func.call @k__gen(%a, %b, %c) }        // the generated routes (GEMV...)
      else { func.call @k__lib(%a, %b, %c) }                    // cuBLAS, then the epilogue
    }

``@k__gen`` is the kernel as it was (relax-gpu-schedule schedules it: the GEMV and the other
routes); ``@k__lib`` its copy whose zero fill and matmul became the call of the mark's callee
(:func:`relax_mlir.transforms.dispatch_split.library_variant`, the cpu target's
relax-library-variants rewrite, with the callee of the product's accumulator type; kind
``opaque``: no schedule, what stays of it, such as a fused epilogue, is a generated kernel).
Then the one generic reading the product folds into the call when the library does it (a
rounding to f16 / bf16 by cuBLAS, a residual add, bias or relu by cuBLASLt's epilogues:
:func:`_fold_epilogue`). A quantized kernel's library variant (:func:`_quantized_variant`)
decodes the weight into a scratch buffer of x's type (the generic's own decoder) or reads it as
stored, and calls cuBLAS with it transposed. On buffers, so no result is copied (a split on tensors, like the cpu
target's relax-specialize-ranges, leaves the dispatcher returning its output argument, which
ownership-based deallocation copies unless a second drop-equivalent-buffer-results round
follows, as in the cpu pipeline's ``llvm_stage``). A marked kernel the rewrite does
not fit (A not a kernel argument, a static M of a matmul, another matmul shape, a prologue on
a quantized kernel's x) loses its mark and stays generated for every M.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, func, linalg, memref, scf

from ...runtime.cuda_launch import LIBRARY_DTYPES, library_callee
from ...transforms.dispatch_split import OPAQUE, SPLIT_ATTR, KernelSplit, _declare, library_variant, read_split
from ...transforms.graph import defining_op, top_ops, users
from ...transforms.registry import emit_error, register_pass
from . import quant_gemv

KIND_ATTR = "relax.kernel_kind"


def _matmul_a(fn: ir.Operation) -> Optional[ir.BlockArgument]:
    """The A operand of the kernel's one 2-D ``linalg.matmul`` when it is a kernel argument with
    a dynamic M, else None."""
    block = fn.regions[0].blocks[0]
    mms = []

    def visit(op):
        if op.operation.name in ("linalg.matmul", "linalg.batch_matmul"):
            mms.append(op.operation)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    if len(mms) != 1:
        return None
    a = mms[0].operands[0]
    if not (isinstance(a, ir.BlockArgument) and a.owner == block and isinstance(a.type, ir.MemRefType)):
        return None
    if not ir.ShapedType.is_dynamic_size(ir.MemRefType(a.type).shape[-2]):
        return None
    return ir.BlockArgument(a)


def _batched_variant(lib: ir.Operation) -> bool:
    """Rewrite the bufferized kernel ``lib`` (a library variant): its ``linalg.batch_matmul`` of
    two kernel arguments into a zero-filled buffer becomes the call of
    ``relax_cublas_matmul_33_<in>[_<acc>]`` (cublasGemmStridedBatchedEx); what follows stays
    (a half result's rounding: a generated kernel). False, ``lib`` unchanged, when it does not
    fit."""
    block = lib.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    mms = [o for o in ops if o.name == "linalg.batch_matmul"]
    if len(mms) != 1 or len(mms[0].results):
        return False
    mm = mms[0]
    a, b, c = list(mm.operands)[:3]
    k = ops.index(mm)
    fill = ops[k - 1] if k > 0 else None
    if fill is None or fill.name != "linalg.fill" or fill.operands[1] != c or not _zero(fill.operands[0]):
        return False
    if not all(isinstance(x, ir.BlockArgument) and x.owner == block for x in (a, b)):
        return False
    din, acc = (str(ir.MemRefType(x.type).element_type) for x in (a, c))
    if (din, acc) not in LIBRARY_DTYPES:
        return False
    name = library_callee("33", din, acc)
    types = [ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * 3, ir.MemRefType(x.type).element_type)
             for x in (a, b, c)]
    if not _declare(lib.parent.regions[0].blocks[0], name, types):
        return False
    ip = ir.InsertionPoint(mm)
    with mm.location:
        args = [x if x.type == t else memref.CastOp(t, x, ip=ip).result for x, t in zip((a, b, c), types)]
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), args, ip=ip)
    mm.erase()
    fill.erase()
    return True


def _quantized_x(fn: ir.Operation) -> Optional[ir.BlockArgument]:
    """x of the kernel's quantized generic (quant_gemv's match) when it is a 2-D kernel argument."""
    m = quant_gemv.match(fn)
    if m is None or len(m.gen.opview.inputs) != 1:
        return None
    x = m.gen.opview.inputs[0]
    if not (isinstance(x, ir.BlockArgument) and x.owner == fn.regions[0].blocks[0] and ir.MemRefType(x.type).rank == 2):
        return None
    return ir.BlockArgument(x)


def _matmul_dtypes(fn: ir.Operation) -> tuple[str, str]:
    """(input, accumulator) element types of the kernel's one ``linalg.matmul``."""
    found = []

    def visit(op):
        if op.operation.name == "linalg.matmul":
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    a, _, c = list(found[0].operands)[:3]
    return str(ir.MemRefType(a.type).element_type), str(ir.MemRefType(c.type).element_type)


def _zero(v: ir.Value) -> bool:
    c = defining_op(v)
    if c is None or c.name != "arith.constant":
        return False
    try:
        return ir.FloatAttr(c.attributes["value"]).value == 0.0
    except ValueError:
        return False


def _epilogue_of(g: ir.Operation, src: ir.Value) -> Optional[tuple[str, Optional[ir.Value], ir.Value]]:
    """(epilogue, its operand or None, the output argument) when the generic ``g`` reading the
    product ``src`` (identity map) is exactly one the library call can do itself, else None:
    ``out = [trunc](src)`` (""), ``src + r`` with r of out's shape ("add"), ``src + b[n]``
    ("bias"), ``max(src, 0)`` ("relu", also after the truncation), ``max(src + b[n], 0)``
    ("biasrelu"); r, b of out's type."""
    if g.name != "linalg.generic" or len(g.results) or len(g.operands) not in (2, 3):
        return None
    ins, out = list(g.operands)[:-1], list(g.operands)[-1]
    if src not in ins or (len(ins) == 2 and ins[0] == ins[1]):
        return None
    at = ins.index(src)          # the product may come second (a residual add written r + y)
    ident, row = ir.AffineMap.get_identity(2), ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(g.attributes["indexing_maps"])]
    if maps[at] != ident or maps[-1] != ident or not isinstance(out, ir.BlockArgument):
        return None
    other = ins[1 - at] if len(ins) == 2 else None
    if other is not None and (maps[1 - at] not in (ident, row) or not isinstance(other, ir.BlockArgument)
                              or ir.MemRefType(other.type).element_type != ir.MemRefType(out.type).element_type):
        return None
    block = g.regions[0].blocks[0]
    args = list(block.arguments)
    ops = [o.operation for o in block.operations]
    v, i, added, relu = args[at], 0, False, False
    if i < len(ops) and other is not None and ops[i].name == "arith.addf" and len(ops[i].operands) == 2 \
            and set(ops[i].operands) == {v, args[1 - at]}:
        v, i, added = ops[i].results[0], i + 1, True
    if i < len(ops) and ops[i].name == "arith.maximumf" and ops[i].operands[0] == v and _zero(ops[i].operands[1]):
        v, i, relu = ops[i].results[0], i + 1, True
    if i < len(ops) and ops[i].name == "arith.truncf" and ops[i].operands[0] == v:
        v, i = ops[i].results[0], i + 1
        # relu after the rounding (a half relu) is the rounding of the relu
        if not relu and i < len(ops) and ops[i].name == "arith.maximumf" and ops[i].operands[0] == v \
                and _zero(ops[i].operands[1]):
            v, i, relu = ops[i].results[0], i + 1, True
    if i != len(ops) - 1 or ops[i].name != "linalg.yield" or ops[i].operands[0] != v or added != (other is not None):
        return None
    if v.type != ir.MemRefType(out.type).element_type:
        return None
    bias = other is not None and maps[1 - at] == row
    kind = ("bias" if bias else "add") if added else ""
    if relu:
        if kind == "add":
            return None          # cuBLASLt's relu would come after beta C, not the residual add's
        kind = "biasrelu" if kind == "bias" else "relu"
    return kind, other, out


def _fold_epilogue(lib: ir.Operation, callee: str, din: str, form: str = "22") -> None:
    """In the library variant ``lib``: a call of ``callee`` into a temporary (f32) that only one
    generic reads, writing an output argument, becomes the call writing that output itself when
    the generic is a truncation to the output's type (cuBLAS rounds: no f32 temporary, no
    conversion kernel) and/or an epilogue cuBLASLt applies (:func:`_epilogue_of`: a residual
    add as beta = 1, a bias, relu): one library call, no kernel after it."""
    calls = []

    def visit(op):
        if op.operation.name == "func.call" and ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value == callee:
            calls.append(op.operation)
        return ir.WalkResult.ADVANCE

    lib.walk(visit)
    if len(calls) != 1:
        return
    call = calls[0]
    dest = call.operands[2]
    cast = defining_op(dest)
    tmp = cast.operands[0] if cast is not None and cast.name == "memref.cast" else dest
    alloc = defining_op(tmp)
    if alloc is None or alloc.name != "memref.alloc":
        return
    rest = [u for u in users(tmp) if u != call and u != cast]
    gens = [u for u in rest if u.name == "linalg.generic"]
    if len(gens) != 1 or any(u.name not in ("linalg.generic", "memref.dealloc") for u in rest):
        return
    found = _epilogue_of(gens[0], tmp)
    if found is None:
        return
    epilogue, other, out = found
    dout = str(ir.MemRefType(out.type).element_type)
    if (din, dout) not in LIBRARY_DTYPES or (not epilogue and din == dout == "f32"):
        return
    name = library_callee(form, din, dout, epilogue)
    operands = [call.operands[0], call.operands[1]] + ([other] if other is not None else []) + [out]
    types = [ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * ir.MemRefType(x.type).rank,
                               ir.MemRefType(x.type).element_type) for x in operands]
    if not _declare(lib.parent.regions[0].blocks[0], name, types):
        return
    ip = ir.InsertionPoint(call)      # where the product was made (before a scratch buffer's dealloc)
    with call.location:
        args = [x if x.type == t else memref.CastOp(t, x, ip=ip).result for x, t in zip(operands, types)]
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), args, ip=ip)
    deallocs = [u for u in rest if u.name == "memref.dealloc"]
    gens[0].erase()
    call.erase()
    for u in deallocs:
        u.erase()
    if cast is not None and cast != alloc:
        cast.erase()
    sizes = list(alloc.operands)
    alloc.erase()
    for v in sizes:
        d = defining_op(v)
        if d is not None and d.name == "memref.dim" and not list(v.uses):
            d.erase()
    _drop_unused_declaration(lib.parent.regions[0].blocks[0], callee)


def _drop_unused_declaration(module_block: ir.Block, callee: str) -> None:
    decl, used = None, []
    for o in module_block.operations:
        o = o.operation
        if o.name != "func.func":
            continue
        if ir.StringAttr(o.attributes["sym_name"]).value == callee and not o.regions[0].blocks:
            decl = o
            continue

        def visit(op):
            if op.operation.name == "func.call" and ir.FlatSymbolRefAttr(op.operation.attributes["callee"]).value == callee:
                used.append(op)
            return ir.WalkResult.ADVANCE

        o.walk(visit)
    if decl is not None and not used:
        decl.erase()


def _lookup(pairs: list, v: ir.Value) -> Optional[ir.Value]:
    return next((new for old, new in pairs if old == v), None)


def _decode_weight(m, scratch: ir.Value, ip: ir.InsertionPoint) -> bool:
    """Fill ``scratch`` (N, K) with the weight as the quantized generic ``m.gen`` decodes it: a
    2-D parallel generic whose body is the slice of the generic's body computing the weight's
    value at (n, k) (relax.quantized_matmul's legalization, ops/quant.py), its indices
    ``linalg.index 1, 2`` now 0, 1, the value converted to scratch's type. False (nothing
    built) when that value reads anything but the indices n, k and values from outside."""
    body = m.gen.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    acc = quant_gemv._producer(ops[-1].operands[0])
    prods = [quant_gemv._producer(v) for v in acc.operands]
    prod = next(p for p in prods if p is not None and p.name == "arith.mulf")
    w_value = next(v for v in prod.operands if v != m.x_value)
    # the backward slice of w_value inside the body, in program order
    need = [w_value]
    slice_ = []
    for o in reversed(ops):
        if any(r == v for r in o.results for v in need):
            if o.name == "linalg.index" and ir.IntegerAttr(o.attributes["dim"]).value not in (1, 2):
                return False
            if any(isinstance(v, ir.BlockArgument) and v.owner == body for v in o.operands):
                return False
            slice_.append(o)
            need.extend(o.operands)
    slice_.reverse()
    et = ir.MemRefType(scratch.type).element_type
    ident = ir.AffineMap.get_identity(2)
    par = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    with m.gen.location:
        g = linalg.GenericOp([], [], [scratch], ir.ArrayAttr.get([ir.AffineMapAttr.get(ident)]),
                             ir.ArrayAttr.get([par, par]), ip=ip)
        blk = g.regions[0].blocks.append(et)
        pairs = []
        with ir.InsertionPoint(blk):
            for o in slice_:
                if o.name == "linalg.index":
                    new = linalg.IndexOp(ir.IntegerAttr(o.attributes["dim"]).value - 1).operation
                else:
                    new = o.clone()
                    for i, v in enumerate(list(new.operands)):
                        r = _lookup(pairs, v)
                        if r is not None:
                            new.operands[i] = r
                pairs.extend(zip(o.results, new.results))
            v = _lookup(pairs, w_value)
            if v.type != et:
                v = arith.TruncFOp(et, v).result
            linalg.YieldOp([v])
    return True


def _quantized_variant(lib: ir.Operation) -> bool:
    """Rewrite the bufferized quantized-matmul kernel ``lib`` (a library variant, see the module
    docstring): its zero fill and quantized generic become the weight's decoding into a scratch
    buffer of x's type (none when the weight is stored in x's type: f16 / bf16 rows read as they
    are) and the cuBLAS call ``C = x W^T``; a truncation to x's type after it folds into the
    call, any other epilogue stays generated. False, ``lib`` unchanged, when it does not fit
    (a prologue on x, no zero fill, x not a 2-D kernel argument, another format)."""
    m = quant_gemv.match(lib)
    if m is None or m.fill is None or m.fmt not in quant_gemv.FORMATS:
        return False
    block = lib.regions[0].blocks[0]
    g = m.gen.opview
    body = m.gen.regions[0].blocks[0]
    if len(g.inputs) != 1:
        return False
    x = g.inputs[0]
    if not (isinstance(x, ir.BlockArgument) and x.owner == block and ir.MemRefType(x.type).rank == 2):
        return False
    xv, xarg = m.x_value, body.arguments[0]
    if xv != xarg:
        p = quant_gemv._producer(xv)
        if p is None or p.name != "arith.extf" or p.operands[0] != xarg:
            return False
    fill_value = quant_gemv._producer(m.fill.operands[0])
    if fill_value is None or fill_value.name != "arith.constant" or ir.FloatAttr(fill_value.attributes["value"]).value != 0.0:
        return False
    dx = str(ir.MemRefType(x.type).element_type)
    c = g.outputs[0]
    n_rows, k = ir.MemRefType(m.w.type).shape[0], ir.MemRefType(x.type).shape[1]
    ip = ir.InsertionPoint(m.gen)
    scratch = None
    if m.fmt == dx:
        form, weight = "22w", m.w
    else:
        form = "22t"
        with m.gen.location:
            scratch = memref.AllocOp(ir.MemRefType.get([n_rows, k], ir.MemRefType(x.type).element_type), [], [],
                                     ip=ip).result
        if not _decode_weight(m, scratch, ip):
            scratch.owner.erase()
            return False
        weight = scratch
    name = library_callee(form, dx, "f32")
    operands = [x, weight, c]
    dyn = [ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * 2, ir.MemRefType(v.type).element_type)
           for v in operands]
    if not _declare(lib.parent.regions[0].blocks[0], name, dyn):
        return False
    with m.gen.location:
        args = [v if v.type == t else memref.CastOp(t, v, ip=ip).result for v, t in zip(operands, dyn)]
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), args, ip=ip)
        if scratch is not None:
            memref.DeallocOp(scratch, ip=ip)
    m.gen.erase()
    m.fill.erase()
    _fold_epilogue(lib, name, dx, form)
    return True


def split_kernel(fn: ir.Operation) -> bool:
    """Split the marked, bufferized kernel ``fn`` (see the module docstring); False (the mark
    dropped, ``fn`` unchanged otherwise) when the rewrite does not fit."""
    mark = fn.attributes[SPLIT_ATTR]
    del fn.attributes[SPLIT_ATTR]
    split = read_split(mark)
    fty = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    quantized = "quantized_matmul" in quant_gemv._kernel_op(fn)
    a = _quantized_x(fn) if quantized else _matmul_a(fn)
    if a is None or len(fty.results) or len(split.generated) != 1 or split.generated[0][0] > 1:
        return False
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    lib = fn.clone(ir.InsertionPoint(fn))
    lib.attributes["sym_name"] = ir.StringAttr.get(f"{name}__lib")
    lib.attributes["sym_visibility"] = ir.StringAttr.get("private")
    lib.attributes[KIND_ATTR] = ir.StringAttr.get(OPAQUE)
    if quantized:
        if not _quantized_variant(lib):
            lib.erase()
            return False
    elif ir.MemRefType(a.type).rank == 3:
        if not _batched_variant(lib):
            lib.erase()
            return False
    else:
        # the callee for the matmul as bufferized (a half product accumulates into f32), then
        # the truncation after it folded into the call
        din, acc = _matmul_dtypes(fn)
        if (din, acc) not in LIBRARY_DTYPES:
            lib.erase()
            return False
        callee = library_callee("22", din, acc)
        if not library_variant(lib, KernelSplit(callee, None, split.generated)):
            lib.erase()
            return False
        _fold_epilogue(lib, callee, din)
    gen = fn.clone(ir.InsertionPoint(fn))
    gen.attributes["sym_name"] = ir.StringAttr.get(f"{name}__gen")
    gen.attributes["sym_visibility"] = ir.StringAttr.get("private")
    block = fn.regions[0].blocks[0]
    for op in reversed(list(block.operations)):
        op.operation.erase()
    args = list(block.arguments)
    with ir.InsertionPoint(block), fn.location:
        m = memref.DimOp(a, arith.ConstantOp.create_index(ir.MemRefType(a.type).rank - 2)).result
        small = arith.CmpIOp(arith.CmpIPredicate.ule, m, arith.ConstantOp.create_index(split.generated[0][1])).result
        branch = scf.IfOp(small, [], has_else=True)
        for blk, callee in ((branch.then_block, f"{name}__gen"), (branch.else_block, f"{name}__lib")):
            with ir.InsertionPoint(blk):
                func.CallOp([], ir.FlatSymbolRefAttr.get(callee), args)
                scf.YieldOp([])
        func.ReturnOp([])
    return True


@register_pass("relax-cuda-split-library",
               "cuda: a bufferized matmul kernel marked relax.dispatch_split becomes a dispatcher by M between "
               "its generated routes and a cuBLAS variant (no result copy).")
def relax_cuda_split_library(module: ir.Operation, opts) -> None:
    for fn in top_ops(module):
        if fn.name != "func.func" or SPLIT_ATTR not in fn.attributes or not fn.regions[0].blocks:
            continue
        if any(isinstance(x.type, ir.RankedTensorType) for x in fn.regions[0].blocks[0].arguments):
            emit_error(fn, "relax-cuda-split-library: run after bufferization (the kernel takes tensors)")
            continue
        try:
            split_kernel(fn)
        except ValueError as e:
            emit_error(fn, f"{SPLIT_ATTR}: {e}")
