"""relax-prefetch: software prefetch of B's rows in the matmul schedule's streaming loops.

The matmul schedule's micro kernel (``schedules/matmul.py``) carries its accumulator tile
in vector registers across the k loop (an ``scf.for`` of step 1 with ``vector`` iter_args)
and, per k step, reads one row of B (``cols`` floats: 4 cache lines on AVX-512) and
``rows`` scalars of A. Read in place, B's consecutive rows are N floats apart (8 KB at
N = 2048: a new page every k step, and all rows in the same L1 sets), which the hardware
prefetchers do not follow; BLAS kernels (and our shim's ``MICRO64``) prefetch such rows a
fixed number of k steps ahead. This pass does the same in generated code, after
bufferization and ``convert-vector-to-scf`` (1-D transfers on memrefs):

* a kernel opts in with the attribute ``relax.prefetch = D : i64`` (set by
  relax-apply-schedules from ``MatmulConfig.prefetch``, tuning knob ``prefetch``);
* in each streaming ``scf.for`` of it -- one that carries a ``vector`` (a register-tiled
  k loop) or only copies (vector transfers and index computations: the packing of B) --
  every 1-D ``vector.transfer_read`` / ``vector.load`` of at least one cache line whose
  address depends on the induction variable, and whose rows are not adjacent in memory,
  gets one ``memref.prefetch`` (read, locality 3: T0) per cache line at ``iv + ahead``:
  ``ahead`` = D rounded up to whole iterations (k loop: D rows; the packing loop of 8 rows
  per step: 8). The address is the read's own, the index computations between ``iv`` and
  the read (a ``memref.subview`` of the loop body included) cloned with ``iv + ahead``.

Not prefetched: the packed B panel (adjacent rows: the hardware follows them; prefetching
them measured neutral to slower, :data:`CONTIGUOUS`), A's scalars (less than a line per
step), loop-invariant reads. Measured (one thread, AVX-512, bench/README.md "Software
prefetch"): 2-20 % faster at M = 16, 128, 512.

The prefetched address may lie past the end of the buffer in the last iterations (as in
BLAS kernels): a prefetch never faults and does not change the program's behaviour.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, memref

from ...transforms.graph import defined_inside, functions_with
from ...transforms.registry import register_pass

ATTR = "relax.prefetch"
LINE = 64  # bytes of a cache line
#: ops whose clone at ``iv + D`` is a pure index computation
_PURE = ("arith.", "affine.apply", "affine.min", "affine.max", "index.")
_READS = ("vector.transfer_read", "vector.load")
#: Also prefetch reads whose consecutive rows are adjacent in memory (the packed B panel).
#: Off: measured neutral to 10 % slower (the hardware's stride prefetcher follows them within
#: a page, and 4 more instructions per k step cost front-end slots); rows a page or more
#: apart (B in place) are what it cannot follow.
CONTIGUOUS = False


class _Shift:
    """Values of the loop body re-evaluated at ``ivd`` = ``iv + D * step`` (clones of the
    index computations between the induction variable and the read, at the insertion point)."""

    def __init__(self, loop: ir.Operation):
        self.loop, self.iv = loop, loop.regions[0].blocks[0].arguments[0]
        self.ivd: Optional[ir.Value] = None
        self.memo: dict = {}

    def depends(self, v: ir.Value, depth: int = 0) -> bool:
        """``v`` depends on the induction variable (through ops of the loop body)."""
        if v == self.iv:
            return True
        if depth > 16 or isinstance(v.owner, ir.Block) or not defined_inside(v, self.loop):
            return False
        return any(self.depends(o, depth + 1) for o in v.owner.operands)

    def shiftable(self, v: ir.Value, depth: int = 0) -> bool:
        """``v`` at another iteration takes only pure index ops and subviews to compute."""
        if v == self.iv or not self.depends(v):
            return True
        if depth > 16 or isinstance(v.owner, ir.Block):
            return False
        op = v.owner.operation
        if not (op.name.startswith(_PURE) or op.name == "memref.subview") or len(op.regions):
            return False
        return all(self.shiftable(o, depth + 1) for o in op.operands)

    def at(self, v: ir.Value) -> ir.Value:
        """``v`` at the shifted iteration (``shiftable(v)`` holds)."""
        if v == self.iv:
            return self.ivd
        if not self.depends(v):
            return v
        op = v.owner.operation
        if op not in self.memo:
            operands = [self.at(o) for o in op.operands]
            clone = op.clone()
            for i, o in enumerate(operands):
                clone.operands[i] = o
            self.memo[op] = clone
        return self.memo[op].results[list(op.results).index(v)]


def _index(c: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), c)


def _constant(v: ir.Value) -> Optional[int]:
    op = v.owner
    if isinstance(op, ir.Block) or op.operation.name != "arith.constant":
        return None
    return ir.IntegerAttr(op.operation.attributes["value"]).value


def _add(v: ir.Value, c: int) -> ir.Value:
    k = _constant(v)
    return _index(k + c) if k is not None else arith.addi(v, _index(c))


def _lines(read: ir.Operation) -> int:
    """Cache lines of a 1-D read along the innermost dim of its memref (0 for any other)."""
    t = ir.VectorType(read.results[0].type)
    if "permutation_map" in read.attributes:
        rank = ir.MemRefType(read.operands[0].type).rank
        if ir.AffineMapAttr(read.attributes["permutation_map"]).value != ir.AffineMap.get_minor_identity(rank, 1):
            return 0
    if t.rank != 1 or not isinstance(t.element_type, (ir.F32Type, ir.F16Type, ir.BF16Type, ir.F64Type)):
        return 0
    bytes_ = t.shape[0] * t.element_type.width // 8
    return bytes_ // LINE


def _contiguous_rows(read: ir.Operation) -> bool:
    """The read's row and the next row of its memref are adjacent in memory (a packed panel)."""
    t = ir.MemRefType(read.operands[0].type)
    if t.rank < 2:
        return True
    strides, _ = t.get_strides_and_offset()
    n = ir.VectorType(read.results[0].type).shape[0]
    return strides[-1] == 1 and strides[-2] == n


def _prefetch_loop(loop: ir.Operation, distance: int) -> int:
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    reads = [o.operation for o in body.operations if o.operation.name in _READS and _lines(o.operation)
             and (CONTIGUOUS or not _contiguous_rows(o.operation))]
    added = 0
    for read in reads:
        src, idx = read.operands[0], list(read.operands[1:1 + ir.MemRefType(read.operands[0].type).rank])
        shift = _Shift(loop)
        if not any(shift.depends(v) for v in [src] + idx):
            continue  # loop-invariant: nothing streams
        if not all(shift.shiftable(v) for v in [src] + idx):
            continue
        with ir.InsertionPoint(read), read.location:
            step = _constant(loop.operands[2])
            if step is not None:  # D rows ahead, at least one iteration
                ahead = _index(-(-distance // step) * step)
            else:
                ahead = arith.muli(loop.operands[2], _index(distance))
            shift.ivd = arith.addi(iv, ahead)
            # the clones land at the insertion point (before the read), operands first
            shifted_src = shift.at(src)
            shifted_idx = [shift.at(i) for i in idx]
            width = ir.MemRefType(src.type).element_type.width // 8
            last = shifted_idx[-1]
            for j in range(_lines(read)):
                col = last if j == 0 else _add(last, j * LINE // width)
                memref.prefetch(shifted_src, shifted_idx[:-1] + [col], False, 3, True)
                added += 1
    return added


#: ops a copy loop's body may hold besides its transfers (index computations, views)
_COPY_BODY = ("vector.transfer_read", "vector.transfer_write", "vector.load", "vector.store", "memref.subview",
              "scf.yield") + _PURE


def _streams(loop: ir.Operation) -> bool:
    """A loop whose reads stream: it carries a vector (a register-tiled k loop), or it only
    copies (vector transfers and index computations: the packing of B)."""
    if any(isinstance(r.type, ir.VectorType) for r in loop.results):
        return True
    ops = [o.operation for o in loop.regions[0].blocks[0].operations]
    names = {o.name for o in ops}
    return (not len(loop.results) and all(n.startswith(_COPY_BODY) for n in names)
            and bool(names & {"vector.transfer_write", "vector.store"}))


def prefetch_kernel(fn: ir.Operation, distance: int) -> int:
    """Add the prefetches to kernel ``fn``; how many prefetch ops were added."""
    loops: list[ir.Operation] = []

    def visit(op):
        op = op.operation
        if op.name == "scf.for" and _streams(op):
            loops.append(op)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    return sum(_prefetch_loop(lp, distance) for lp in loops)


@register_pass("relax-prefetch",
               "Software-prefetch the streamed rows of a register-tiled k loop (kernels marked "
               "relax.prefetch = D: D iterations ahead); run after convert-vector-to-scf.")
def relax_prefetch(module: ir.Operation, opts) -> None:
    for fn in functions_with(module, ATTR):
        d = ir.IntegerAttr(fn.attributes[ATTR]).value
        if d > 0:
            prefetch_kernel(fn, d)
