"""relax-epilogue-in-place: a matmul kernel's product lands in its output, the epilogue runs in place.

A fused kernel (relax-fuse-kernels: matmul + bias / activation / residual add) computes the
product into a ``tensor.empty`` and its epilogue reads it into the output argument::

    %e = tensor.empty(%m) ; %z = linalg.fill ins(%cst) outs(%e)
    %p = linalg.matmul ins(%a, %b) outs(%z)
    %r = linalg.generic ins(%p, %bias) outs(%out) { ^bb0(%x, %y, %o): f(%x, %y) }

One-shot bufferization makes the empty an M x N ``memref.alloc`` (malloc + free per call)
in every variant of the kernel: the scheduled ones (relax-apply-schedules tiles the matmul
and the epilogue each on its own) and the library one (relax-library-variants). This pass,
on tensors before relax-specialize-ranges, zero-fills the epilogue's destination instead
and makes the product the epilogue's init, read through its output block argument::

    %z = linalg.fill ins(%cst) outs(%out) ; %p = linalg.matmul ins(%a, %b) outs(%z)
    %r = linalg.generic ins(%bias) outs(%p) { ^bb0(%y, %x): f(%x, %y) }

so the whole kernel bufferizes onto the output buffer (no temporary). It applies where the
product's only user is one all-parallel generic that reads it with the identity map, whose
one output (identity map, the product's type) it does not read, and whose destination is a
kernel argument or an empty tensor. Other kernels are left as they are.

relax-conv-gemm's pointwise kernel (a ``linalg.batch_matmul`` over the images, (N, O, H*W),
reaching its 4-D NCHW epilogue through a ``tensor.reshape``) gets the same rewrite with the
epilogue collapsed onto the product's (N, O, P) space (:func:`in_place_collapsed`): the fill
writes the reshaped destination, the epilogue runs in place on the product, and the reshape
to NCHW moves after it. With the reshape gone from between them, the schedule can tile the
epilogue and fuse the product into its tasks (``schedules/pointwise.py``: one parallel region,
no output-sized temporary). Without an epilogue only its reshapes of the output become
collapse / expand_shape (the tensor.reshape pair made the kernel copy its output per call).
Both need one dynamic dim at most (a static image size).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import linalg

from ...transforms.graph import defining_op, functions_with, indexing_maps, users
from ...transforms.registry import register_pass

#: Products rewritten (a batch matmul's epilogue is left for now: its schedules are not checked
#: against the in-place form; the pointwise conv's, through its reshape, is: :func:`in_place_collapsed`).
_PRODUCTS = ("linalg.matmul",)


def _epilogue(mm: ir.Operation) -> Optional[ir.Operation]:
    """The generic that :func:`in_place` rewrites for product ``mm``, else None."""
    p = mm.results[0]
    us = users(p)
    if len(us) != 1 or us[0].name != "linalg.generic":
        return None
    g = us[0]
    n_in = len(g.opview.inputs)
    if len(g.results) != 1 or len(g.opview.outputs) != 1 or list(g.operands)[:n_in].count(p) != 1:
        return None
    if any(str(a) != "#linalg.iterator_type<parallel>" for a in ir.ArrayAttr(g.attributes["iterator_types"])):
        return None
    dest = g.opview.outputs[0]
    if dest.type != p.type:
        return None
    d = defining_op(dest)
    if not (isinstance(dest, ir.BlockArgument) or (d is not None and d.name == "tensor.empty")):
        return None
    maps, i = indexing_maps(g), list(g.operands).index(p)
    rank = ir.RankedTensorType(p.type).rank
    ident = ir.AffineMap.get_identity(rank)
    if maps[i] != ident or maps[-1] != ident:
        return None
    body = g.regions[0].blocks[0]
    if list(body.arguments[n_in].uses):  # the epilogue reads its destination: not ours to replace
        return None
    return g


def in_place(mm: ir.Operation) -> bool:
    """Rewrite product ``mm`` (into a filled ``tensor.empty``) and its epilogue (see the
    module docstring); False, changing nothing, where it does not apply."""
    fill = defining_op(mm.opview.outputs[0])
    if fill is None or fill.name != "linalg.fill" or len(users(fill.results[0])) != 1:
        return False
    empty = defining_op(fill.opview.outputs[0])
    if empty is None or empty.name != "tensor.empty":
        return False
    g = _epilogue(mm)
    if g is None:
        return False
    p, dest = mm.results[0], g.opview.outputs[0]
    if not isinstance(dest, ir.BlockArgument) and not _dominates(defining_op(dest), fill):
        return False
    n_in = len(g.opview.inputs)
    i = list(g.operands).index(p)
    ins = [v for k, v in enumerate(g.opview.inputs) if k != i]
    maps = indexing_maps(g)
    new_maps = [m for k, m in enumerate(maps[:n_in]) if k != i] + [maps[-1]]
    fill.operands[1] = dest
    with g.location, ir.InsertionPoint(g):
        ng = linalg.GenericOp([g.results[0].type], ins, [p],
                              ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
                              g.attributes["iterator_types"])
        for name in ("doc", "library_call"):
            if name in g.attributes:
                ng.attributes[name] = g.attributes[name]
        _move_body(g, ng, i, n_in)
    g.results[0].replace_all_uses_with(ng.results[0])
    g.erase()
    if not list(empty.results[0].uses):
        empty.erase()
    return True


def _collapsed_map(m: ir.AffineMap) -> Optional[ir.AffineMap]:
    """A 4-D epilogue operand's map on (n, o, h, w) as a map on (n, o, p), p = h*w: the
    identity becomes the identity (the operand is collapsed to (N, O, P)); a map that reads
    neither h nor w (a per-channel bias (d1, 0, 0)) keeps its results; None otherwise."""
    if m == ir.AffineMap.get_identity(4):
        return ir.AffineMap.get_identity(3)
    exprs = []
    for e in m.results:
        if isinstance(e, ir.AffineDimExpr):
            if ir.AffineDimExpr(e).position > 1:
                return None
            exprs.append(ir.AffineDimExpr.get(ir.AffineDimExpr(e).position))
        elif isinstance(e, ir.AffineConstantExpr):
            exprs.append(e)
        else:
            return None
    return ir.AffineMap.get(3, 0, exprs)


def in_place_collapsed(mm: ir.Operation) -> bool:
    """The pointwise conv's form (see the module docstring)::

        %y = tensor.reshape %empty(%s3) ; %z = linalg.fill .. outs(%y)
        %p = linalg.batch_matmul .. outs(%z)      // (N, O, P)
        %q = tensor.reshape %p(%s4)               // (N, O, H, W)
        %r = linalg.generic ins(%q, %bias, %res) outs(%out)   // 4-D, all parallel

    becomes ``fill outs(collapse_shape %out)``, the generic on (N, O, P) with ``outs(%p)``
    (other identity-mapped operands collapsed alike, per-channel maps kept) and the
    ``expand_shape`` of its result to (N, O, H, W); without an epilogue (the reshape returned,
    the output argument filled) see :func:`_views`. False, changing nothing, where it does not
    apply."""
    from mlir.dialects import arith, tensor
    p = mm.results[0]
    pt = ir.RankedTensorType(p.type)
    us = users(p)
    if pt.rank != 3 or len(us) != 1 or us[0].name != "tensor.reshape":
        return False
    back = us[0]
    fill = defining_op(mm.opview.outputs[0])
    if fill is None or fill.name != "linalg.fill" or len(users(fill.results[0])) != 1:
        return False
    view = defining_op(fill.opview.outputs[0])
    if view is None or view.name != "tensor.reshape" or len(users(view.results[0])) != 1:
        return False
    q = back.results[0]
    qt = ir.RankedTensorType(q.type)
    if qt.rank != 4 or view.operands[0].type != q.type:
        return False
    if sum(ir.ShapedType.is_dynamic_size(d) for d in qt.shape) > 1:
        # the returned expand_shape of the collapsed output folds back to the output argument
        # (and its buffer result is dropped) only with one dynamic dim at most (MLIR 22's
        # reshape fold); beyond that it would be copied out per call (and the expansion of
        # two dynamic sizes in one group asserts in expand-strided-metadata): left as is
        return False
    if isinstance(view.operands[0], ir.BlockArgument) and [u.name for u in users(q)] == ["func.return"]:
        return _views(view, back)   # no epilogue: the product is computed in the output already
    empty = defining_op(view.operands[0])
    if empty is None or empty.name != "tensor.empty":
        return False
    g = _epilogue(back)
    if g is None:
        return False
    dest = g.opview.outputs[0]
    if not isinstance(dest, ir.BlockArgument) and not _dominates(defining_op(dest), view):
        return False
    n_in = len(g.opview.inputs)
    i = list(g.operands).index(q)
    maps = indexing_maps(g)
    new_maps, ins = [], []
    for k, (v, m) in enumerate(zip(list(g.opview.inputs), maps[:n_in])):
        if k == i:
            continue
        cm = _collapsed_map(m)
        ident = cm is not None and cm == ir.AffineMap.get_identity(3)
        if cm is None or (ident and ir.RankedTensorType(v.type).shape != qt.shape):
            return False
        new_maps.append(cm)
        ins.append(v)
    new_maps.append(ir.AffineMap.get_identity(3))
    i64 = ir.IntegerType.get_signless(64)
    groups = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in ds]) for ds in ([0], [1], [2, 3])])
    with view.location, ir.InsertionPoint(view):
        out3 = tensor.collapse_shape(p.type, dest, groups)
    view.results[0].replace_all_uses_with(out3)
    view.erase()
    with g.location, ir.InsertionPoint(g):
        ins = [tensor.collapse_shape(ir.RankedTensorType.get(pt.shape, ir.RankedTensorType(v.type).element_type), v,
                                     groups)
               if m == ir.AffineMap.get_identity(3) else v
               for v, m in zip(ins, new_maps[:-1])]
        par = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        ng = linalg.GenericOp([p.type], ins, [p], ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
                              ir.ArrayAttr.get([par] * 3))
        _move_body(g, ng, i, n_in)
        # collapse / expand (not tensor.reshape): bufferized, the returned view folds back to the
        # output argument, whose buffer result is then dropped (a reshape was copied out per call)
        idx = ir.IndexType.get()
        sizes = [tensor.dim(dest, arith.constant(idx, d)) for d, e in enumerate(qt.shape)
                 if ir.ShapedType.is_dynamic_size(e)]
        r = tensor.expand_shape(q.type, ng.results[0], groups, sizes, qt.shape)
    g.results[0].replace_all_uses_with(r)
    g.erase()
    back.erase()
    if not list(empty.results[0].uses):
        empty.erase()
    return True


def _views(view: ir.Operation, back: ir.Operation) -> bool:
    """The pointwise kernel without an epilogue: its output argument viewed as (N, O, P) by a
    ``collapse_shape`` and the product returned through an ``expand_shape`` (the pair folds
    back to the argument once bufferized: the tensor.reshape pair made the kernel copy its
    whole output into a fresh buffer per call)."""
    from mlir.dialects import arith, tensor
    out, q = view.operands[0], back.results[0]
    qt = ir.RankedTensorType(q.type)
    i64 = ir.IntegerType.get_signless(64)
    groups = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in ds]) for ds in ([0], [1], [2, 3])])
    with view.location, ir.InsertionPoint(view):
        v = tensor.collapse_shape(view.results[0].type, out, groups)
    view.results[0].replace_all_uses_with(v)
    view.erase()
    with back.location, ir.InsertionPoint(back):
        idx = ir.IndexType.get()
        sizes = [tensor.dim(out, arith.constant(idx, d)) for d, e in enumerate(qt.shape) if ir.ShapedType.is_dynamic_size(e)]
        r = tensor.expand_shape(q.type, back.operands[0], groups, sizes, qt.shape)
    q.replace_all_uses_with(r)
    back.erase()
    return True


def _move_body(g: ir.Operation, ng, i: int, n_in: int) -> None:
    """Move ``g``'s body into ``ng`` (built without input ``i``, whose value ``ng`` reads
    through its output block argument; ``g``'s own output argument unused)."""
    old = g.regions[0].blocks[0]
    args = [a.type for k, a in enumerate(old.arguments) if k != i and k != n_in] + [old.arguments[i].type]
    nb = ng.regions[0].blocks.append(*args)
    ins_args = [a for k, a in enumerate(old.arguments) if k != i and k < n_in]
    for a, b in zip(ins_args, list(nb.arguments)[:-1]):
        a.replace_all_uses_with(b)
    old.arguments[i].replace_all_uses_with(nb.arguments[len(nb.arguments) - 1])
    for o in [o.operation for o in old.operations]:
        nb.append(o)


def _dominates(d: ir.Operation, fill: ir.Operation) -> bool:
    """``d`` (the destination's empty) comes before ``fill`` in the same block."""
    if d.block != fill.block:
        return False
    for o in d.block.operations:
        if o.operation == d:
            return True
        if o.operation == fill:
            return False
    return False


def _kernel_op(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes["relax.kernel_op"]).value if "relax.kernel_op" in fn.attributes else ""


@register_pass("relax-epilogue-in-place",
               "Matmul kernels with an elementwise epilogue: the product is computed in the "
               "epilogue's destination and the epilogue runs in place (no M x N temporary).")
def relax_epilogue_in_place(module: ir.Operation, opts) -> None:
    for fn in functions_with(module, "relax.kernel"):
        for o in list(fn.regions[0].blocks[0].operations):
            o = o.operation
            if o.name in _PRODUCTS and len(o.results) == 1:
                in_place(o)
            elif o.name == "linalg.batch_matmul" and "conv1x1" in _kernel_op(fn):
                in_place_collapsed(o)
