"""relax-annotate-kernel-kinds: classify every loop-level kernel by reading its linalg IR.

The kinds are Apache TVM's operator patterns, ordered from the most fusable to the
least (each kind admits fewer fusions than the one before)::

    elementwise < broadcast < injective < reduction < output-fusable < opaque

* ``elementwise``: all loops parallel, every tensor is read at the output point
  (identity indexing maps).
* ``broadcast``: all loops parallel, some input is read through a projected map that
  drops or pins loops while keeping their order (``(d0, d1) -> (d1)``, ``-> (0, d1)``).
* ``injective``: each output element comes from one input element but the access is
  not a broadcast: transposed maps, non-identity output maps, affine index expressions
  (slices with offsets or strides), ``tensor.extract`` inside the body (gather), and the
  tensor reshaping ops (``tensor.reshape``/``expand_shape``/``collapse_shape``,
  ``extract_slice``/``insert_slice``, ``concat``, ``pad``, ``gather``).
* ``reduction``: some reduction loop, and the body is not a multiply-accumulate.
* ``output-fusable``: a contraction: reduction loops and a body that accumulates a
  product of two inputs into the output (matmul, batch_matmul, convolutions). It may
  take elementwise epilogues.
* ``opaque``: anything else (loops, calls, unknown ops), and any kernel not on tensors
  (memrefs: bufferized already, or written so; :func:`relax_mlir.transforms.graph.on_tensors`),
  which call_tir's tensor-level fusion cannot inline.

Named linalg ops are read through their generic form (the pass generalizes a copy of
the kernel with upstream ``linalg-generalize-named-ops``), so a hand-written kernel is
classified exactly like a generated one. A kernel with several ops takes the most
restrictive (greatest) of their kinds: a fill + matmul kernel is output-fusable, a
softmax kernel (two reductions and an elementwise op) is a reduction, a matmul followed
by a reduction in one kernel is output-fusable. Scalar and shape bookkeeping (arith
on scalars, ``tensor.empty``, ``tensor.dim``, ``tensor.from_elements``, ``tensor.cast``)
does not count. The kind is stored as ``relax.kernel_kind = "..."`` on the kernel.
"""

from __future__ import annotations

from typing import Iterator, Optional

from mlir import ir, passmanager

from .graph import on_tensors
from .graph import functions_by_name, graph_functions, body_ops
from .registry import register_pass

KIND_ATTR = "relax.kernel_kind"
KINDS = ["elementwise", "broadcast", "injective", "reduction", "output-fusable", "opaque"]
ELEMENTWISE, BROADCAST, INJECTIVE, REDUCTION, OUTPUT_FUSABLE, OPAQUE = range(len(KINDS))

#: Ops that only compute sizes or scalars: they never change a kernel's kind.
_NEUTRAL = {"func.return", "tensor.empty", "tensor.dim", "tensor.from_elements", "tensor.cast",
            "tensor.rank", "bufferization.alloc_tensor", "affine.apply", "affine.min", "affine.max",
            "linalg.yield", "linalg.index"}
_NEUTRAL_DIALECTS = ("arith.", "math.", "index.", "complex.")
_INJECTIVE = {"tensor.reshape", "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
              "tensor.insert_slice", "tensor.concat", "tensor.pad", "tensor.gather", "tensor.extract",
              "tensor.insert", "tensor.generate", "tensor.bitcast"}
_BROADCAST = {"tensor.splat"}
_REDUCTION = {"linalg.softmax"}
_CASTS = {"arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp",
          "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.bitcast"}


def kind_name(kind: int) -> str:
    return KINDS[kind]


def kind_of_name(name: str) -> int:
    return KINDS.index(name)


def _ops_in(block: ir.Block) -> Iterator[ir.Operation]:
    for o in block.operations:
        yield o.operation


def _is_tensor(t: ir.Type) -> bool:
    return isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType))


def _map_kind(m: ir.AffineMap, n_loops: int) -> int:
    """Kind of reading an operand through ``m`` (for an all-parallel generic)."""
    dims = []
    for e in m.results:
        if isinstance(e, ir.AffineDimExpr):
            dims.append(e.position)
        elif isinstance(e, ir.AffineConstantExpr) and e.value == 0:
            dims.append(None)  # a size-1 dim read at 0: broadcast
        else:
            return INJECTIVE  # offsets, strides, modulo: a slice-like access
    pos = [d for d in dims if d is not None]
    if len(set(pos)) != len(pos):
        return INJECTIVE  # diagonal access
    if pos != sorted(pos):
        return INJECTIVE  # transposed
    if len(pos) == n_loops and None not in dims:
        return ELEMENTWISE
    return BROADCAST


def _is_output_map(m: ir.AffineMap, n_loops: int) -> bool:
    res = list(m.results)
    return len(res) == n_loops and all(isinstance(e, ir.AffineDimExpr) and e.position == i
                                       for i, e in enumerate(res))


def _is_mul_acc(body: ir.Block, n_inputs: int) -> bool:
    """The body yields ``out + f(in_a) * g(in_b)`` (f, g casts), a and b distinct inputs, or
    a chain of such terms ``((out + a0 * b0) + a1 * b1) + ...`` (relax-conv-gemm's direct
    convolution sums its window taps in one body)."""
    ops = list(_ops_in(body))
    if not ops or ops[-1].name != "linalg.yield" or len(ops[-1].operands) != 1:
        return False
    args = list(body.arguments)
    outs, ins = args[n_inputs:], args[:n_inputs]

    def strip(v: ir.Value) -> ir.Value:
        while True:
            o = _defining_op(v)
            if o is None or o.name not in _CASTS:
                return v
            v = o.operands[0]

    def product(v: ir.Value) -> bool:
        mul = _defining_op(strip(v))
        if mul is None or mul.name not in ("arith.mulf", "arith.muli"):
            return False
        p, q = strip(mul.operands[0]), strip(mul.operands[1])
        return _is_arg(p, ins) and _is_arg(q, ins) and _arg_no(p) != _arg_no(q)

    v, terms = ops[-1].operands[0], 0
    while True:
        acc = _defining_op(v)
        if acc is None or acc.name not in ("arith.addf", "arith.addi"):
            return False
        a, b = acc.operands[0], acc.operands[1]
        nxt = next((x for x, y in ((a, b), (b, a)) if product(y)), None)
        if nxt is None:
            return False
        terms += 1
        if _is_arg(strip(nxt), outs):
            return True
        if terms > n_inputs:
            return False
        v = nxt


def _defining_op(v: ir.Value) -> Optional[ir.Operation]:
    if isinstance(v, ir.OpResult):
        return v.owner.operation if hasattr(v.owner, "operation") else v.owner
    return None


def _is_arg(v: ir.Value, args) -> bool:
    return isinstance(v, ir.BlockArgument) and any(v == a for a in args)


def _arg_no(v: ir.Value) -> int:
    return ir.BlockArgument(v).arg_number


def classify_generic(op: ir.Operation) -> int:
    g = op.opview
    iters = [str(t) for t in g.iterator_types]
    n_loops = len(iters)
    n_red = sum("reduction" in t for t in iters)
    maps = [ir.AffineMapAttr(a).value for a in g.indexing_maps]
    n_in = len(g.inputs)
    body = g.regions[0].blocks[0]
    if n_red:
        return OUTPUT_FUSABLE if _is_mul_acc(body, n_in) else REDUCTION
    kind = ELEMENTWISE
    for m in maps[n_in:]:
        if not _is_output_map(m, n_loops):
            kind = max(kind, INJECTIVE)
    for v, m in zip(g.inputs, maps[:n_in]):
        if _is_tensor(v.type):
            kind = max(kind, _map_kind(m, n_loops))
    for inner in _walk_block(body):
        if inner.name in ("tensor.extract", "tensor.gather"):
            kind = max(kind, INJECTIVE)
        elif not (inner.name in _NEUTRAL or inner.name.startswith(_NEUTRAL_DIALECTS)):
            kind = max(kind, OPAQUE)
    return kind


def _walk_block(block: ir.Block) -> Iterator[ir.Operation]:
    for op in _ops_in(block):
        yield op
        for r in op.regions:
            for b in r.blocks:
                yield from _walk_block(b)


def classify_op(op: ir.Operation) -> int:
    name = op.name
    if name == "linalg.generic":
        return classify_generic(op)
    if name in _NEUTRAL or name.startswith(_NEUTRAL_DIALECTS):
        return ELEMENTWISE  # bookkeeping, or arith/math on whole tensors (elementwise)
    if name in _INJECTIVE:
        return INJECTIVE
    if name in _BROADCAST:
        return BROADCAST
    if name in _REDUCTION:
        return REDUCTION
    return OPAQUE


def classify_kernel(fn: ir.Operation) -> tuple[int, list[tuple[str, int]]]:
    """The kernel's kind and the kind of each op that decided it (for diagnostics)."""
    if not on_tensors(fn):
        return OPAQUE, [("kernel not on tensors", OPAQUE)]
    # Read named linalg ops through their generic form: generalize a copy of the kernel.
    with fn.context, ir.Location.unknown():
        tmp = ir.Module.create()
        clone = fn.clone(ir.InsertionPoint(tmp.body))
        try:
            passmanager.PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(
                tmp.operation)
        except Exception:  # noqa: BLE001  (an op that cannot be generalized stays named)
            pass
        clone = tmp.body.operations[0].operation
        per_op: list[tuple[str, int]] = []
        if not clone.regions[0].blocks:
            return OPAQUE, [("declaration", OPAQUE)]
        kind = ELEMENTWISE
        for block in clone.regions[0].blocks:
            for op in _ops_in(block):
                k = classify_op(op)
                per_op.append((op.name, k))
                kind = max(kind, k)
        return kind, per_op


def kernels_called(module_op: ir.Operation) -> list[ir.Operation]:
    """Every func.func a graph function's relax.call_tir calls, in module order."""
    names = set()
    for f in graph_functions(module_op):
        for op in body_ops(f):
            if op.name == "relax.call_tir":
                names.add(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    return [fn for n, fn in functions_by_name(module_op).items() if n in names]


def annotate(fn: ir.Operation) -> int:
    kind, _ = classify_kernel(fn)
    fn.attributes[KIND_ATTR] = ir.StringAttr.get(KINDS[kind])
    return kind


def kernel_kind(fn: ir.Operation) -> int:
    """The recorded kind of a kernel, classifying it first when it has none; opaque for a
    kernel not on tensors whatever it records (nothing fuses with it)."""
    if not on_tensors(fn):
        return OPAQUE
    if KIND_ATTR in fn.attributes:
        name = ir.StringAttr(fn.attributes[KIND_ATTR]).value
        if name in KINDS:
            return KINDS.index(name)
    return annotate(fn)


@register_pass("relax-annotate-kernel-kinds",
               "Classify each call_tir kernel (elementwise, broadcast, injective, reduction, "
               "output-fusable, opaque) from its linalg IR into relax.kernel_kind.")
def relax_annotate_kernel_kinds(module: ir.Operation, opts) -> None:
    for fn in kernels_called(module):
        annotate(fn)
