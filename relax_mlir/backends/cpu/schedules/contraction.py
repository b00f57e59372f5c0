"""Contractions written as a broadcast-multiply-then-sum generic (decode attention's
``sum(q * K, -1)`` scores and ``sum(p * V, axis=kv_len)`` mix over a symbolic KV length).

Legalization fuses ``multiply`` + ``sum`` into one ``linalg.generic`` with a
multiply-accumulate body (kind ``output-fusable``) that is not a ``linalg.matmul`` (its
operands broadcast through projected maps, grouped-query heads included), so the matmul
schedules do not fit and it would run as scalar loops. Here one loop dim is the *vector
dim*: the innermost dim of the input with the most symbolic dims (the cache: ``hd``,
contiguous in memory), static. Every other loop, parallel or reduction, is tiled by 1 (``tile_using_for`` with
the reductions interchanged outermost, so the cache is read once in memory order), and
the remaining tile, ``hd`` lanes wide, is vectorized:

* scores (``hd`` is the reduction): one ``hd``-lane multiply and one horizontal
  ``vector.reduction`` (``fastmath<reassoc>``, set by the pass) per output element;
* mix (``hd`` is parallel, the KV length the reduction): per cached row, one ``hd``-lane
  multiply-add per head into the output tile (L1-resident).

A symbolic KV length is just a loop bound (tiles of 1 never need peeling). A vector dim
above ``MAX_LANES`` is tiled by ``CHUNK`` lanes first (when it divides it).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects.transform import loop, structured
from mlir.dialects.transform import vector as tvec

from .common import cleanup, lower_vectors, match, patterns

MAX_LANES = 256  # widest vector dim vectorized whole (16 zmm registers of f32)
CHUNK = 64
MIN_LANES = 8  # narrower innermost dims stay scalar loops (LLVM's vectorizer does as well)


def vector_dim(op: ir.Operation) -> Optional[tuple[int, int]]:
    """(loop dim, its static extent) to vectorize along, or None: the innermost loop dim
    read by the input with the most symbolic dims (the cache), when that extent is static
    and at least ``MIN_LANES``."""
    g = op.opview
    maps = [ir.AffineMapAttr(a).value for a in g.indexing_maps]
    best: Optional[tuple[int, int]] = None
    best_rank = -1
    for v, m in zip(g.inputs, maps):
        t = ir.RankedTensorType(v.type)
        res = list(m.results)
        if not res or not isinstance(res[-1], ir.AffineDimExpr):
            continue
        n = t.shape[-1]
        if ir.ShapedType.is_dynamic_size(n) or n < MIN_LANES:
            continue
        rank = sum(ir.ShapedType.is_dynamic_size(d) for d in t.shape) * 100 + t.rank
        if rank > best_rank:
            best, best_rank = (ir.AffineDimExpr(res[-1]).position, n), rank
    if best is None:
        return None
    if best[1] > MAX_LANES and best[1] % CHUNK:
        return None
    return best


def contraction_schedule(iterators: list[str], vdim: int, extent: int):
    """Script body for a fill + contraction generic with loop ``iterators`` (``parallel``
    / ``reduction``), vectorized along loop ``vdim`` of static ``extent``."""
    n = len(iterators)
    lanes = extent if extent <= MAX_LANES else CHUNK
    sizes = [1] * n
    sizes[vdim] = 0 if lanes == extent else lanes
    # Reductions outermost: the cache is swept once, in memory order (the output tile, a
    # few KB, stays in L1); reductions innermost swept it once per head, 2x slower at
    # large KV lengths.
    order = ([d for d in range(n) if iterators[d] == "reduction" and d != vdim]
             + [d for d in range(n) if iterators[d] == "parallel" and d != vdim])
    if sizes[vdim]:
        order.append(vdim)
    interchange = order + [d for d in range(n) if d not in order]

    def body(fn: ir.Value) -> None:
        gen = match(fn, "linalg.generic")
        # The contraction is the generic whose result the kernel returns: the last one.
        structured.TileUsingForOp(gen, sizes=sizes, interchange=interchange)
        cleanup(fn)
        structured.VectorizeOp(match(fn, "linalg.generic"))
        cleanup(fn)
        loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        # The tiles are 1 x ... x 1 x lanes: drop the unit dims, so the operand that does
        # not vary along the vector dim (the mix's probability) is read as one scalar and
        # broadcast. Left 5-D, its read is a broadcast ``transfer_read`` that
        # convert-vector-to-scf lowers to a loop inserting the same scalar lane by lane
        # (64 stack stores and reloads per FMA: ~15% of a 134M Llama's decode step).
        patterns(fn, tvec.ApplyCastAwayVectorLeadingOneDimPatternsOp)
        patterns(fn, tvec.ApplyTransferPermutationPatternsOp)
        cleanup(fn)
        lower_vectors(fn)

    return body
