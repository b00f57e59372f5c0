"""Matmul schedule (``linalg.fill`` + ``linalg.matmul``, f32; M symbolic, N and K static
or symbolic).

A register-blocked micro kernel: the accumulator tile (``rows`` x ``cols``) stays in
vector registers across the K block; per k step it does ``cols/16`` loads of B,
``rows`` broadcasts of A and ``rows * cols/16`` FMAs (AVX-512). Loops, outer to inner::

    N panel (panel_n, scf.forall) -> K block (block_k) -> M rows (6, peeled; then 1) ->
    N sub-panel (cols; 256 for single rows) -> k (1)

The M loop is peeled: full 6-row tiles (static after canonicalization, no masks), then
the remaining M mod 6 rows one at a time with a 256-column tile where the columns are a
static multiple of it, else 64 (M = 1 is GEMV: no packing, no padding work). A symbolic
N peels the sub-panel loop the same way: 64 columns, then the last N mod 64 columns in
masked tiles of one register (below); a static N that is not a multiple of 64 is split
instead (:func:`matmul_schedule`, :func:`_column_rest`). K needs nothing: the innermost K
tile is always 1. (A deeper 4/2/1-row cascade of peeled loops
leaves ``affine.min`` that canonicalization cannot fold, hence masked tiles (MLIR 22:
"'vector.mask' op expects only one operation to mask" with rows (6, 2, 1)); not done;
small M gets a relax-specialize-ranges variant with 4-row tiles instead, ``small_max_m``.)
The accumulator's reads and writes are hoisted out of the k loop
(``hoist_loop_invariant_subsets`` at tensor level, before bufferization). Every size is
correct with one compile. The fill of C is fused into the panel loop (each thread zeroes
its panel in panel-wide vector stores, masked for a partial last panel) or the batch loop,
and vectorized on its own where there is neither (:func:`_fill_rows`). A batch matmul runs
one batch per ``scf.forall`` iteration, each scheduled the same way.

A symbolic column remainder (:func:`_columns`): a second peel of a symbolic extent leaves
``affine.min`` that canonicalization cannot fold, so the remainder's tiles are masked
anyway; they are 16 columns wide (one AVX-512 register; the last one partial), and all
the masks they need are made once per tile, outside the k loop: the vectorizer's
``vector.mask`` regions around transfers become masked transfers and LICM moves the masks
out of the k loop, so the accumulator's masked read and write are a loop-invariant pair,
hoisted like an unmasked tile's. Per k step that leaves one masked load of B (AVX-512:
``vmovups {k}{z}``), ``rows`` broadcasts of A and ``rows`` FMAs. The FMAs are unmasked:
the schedule's script stops before the vector lowering, and a second stage
(:func:`.common.unmasked_lowering`) takes the contractions out of their masks first (a
masked contraction lowers to an FMA and a select per vector, its mask to per-element
shuffles). The packed variant's full K blocks run a half-width tile (32 columns, 12 FMA
chains) before the 16-column ones. Masked vector tiles that MLIR 22 does not lower: a
``vector.mask`` left until ``convert-vector-to-scf`` gets a second op in its region
("'vector.mask' op expects only one operation to mask"); ``lower_vectors`` lowers the
masked transfers first.

Large M (the relax-specialize-ranges variant for M >= ``pack_min_m`` = 40), N a multiple
of ``cols`` wider than one tile or symbolic (:func:`packs_b`), 2-D or batched: B is packed
the BLAS way. Loops::

    N panel (scf.forall) -> K block (pack_block_k, peeled) -> pack B -> N sub-panel (cols) ->
    M rows (6, peeled; then 1) -> k (1)

The K-block loop is peeled when K is symbolic or not a multiple of the block: the full
blocks have a static size, so the packed copy of B has a static shape (a symbolic K
block's size is an ``affine.min``: ``hoist_pad`` fails on it); the last, partial block
reads B in place with the unpacked tiles.

The pack copies the K block of the panel once into ``cols``-wide micro-panels, each
``pack_block_k x cols`` contiguous, that every 6-row tile, and then each of the M mod 6
remainder rows, reads in turn (unpacked, B's rows 8 KB apart fell into the same L1 sets
and crossed a page per k step; the time depended on where A and B lay in their pages).
The remainder rows read the packed micro-panel too (in place, B's 1 x 256 tiles were
slower). A is read in place: packing it as well measured no faster. An M-block loop
(GotoBLAS' ``mc``) and a 256-row K block measured no faster and are left out; packing
starts at ``pack_min_m`` = 40 rows, below which the copy of B is not paid back. The
measurements behind these choices: bench/README.md, "Matmul schedule design measurements".

The kernel is marked ``relax.prefetch = cfg.prefetch``: after the vector lowering,
relax-prefetch prefetches the rows of B that the k loops read in place (and that the
packing copies) that many rows ahead; the packed panel is left to the hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mlir import ir
from mlir.dialects import transform
from mlir.dialects.transform import loop, structured
from mlir.dialects.transform import bufferization as tbuf
from mlir.dialects.transform import tensor as ttensor
from mlir.dialects.transform import vector as tvec

from .common import Body, Step, any_op, cleanup, lower_vectors, match, patterns, unmasked_lowering
from ....target import Simd


@dataclass(frozen=True)
class MatmulConfig:
    rows: tuple[int, ...] = (6, 1)  # M tile cascade (first: the main register tile)
    cols: int = 64  # accumulator columns (4 zmm registers)
    gemv_cols: int = 256  # columns of the 1-row tile (16 independent FMA chains per k step)
    panel_n: int = 256
    block_k: int = 128
    lanes: int = 16  # f32 lanes of one SIMD register (the GEMV's column remainder tiles)
    gemv_rows: int = 3  # largest M run by the few-rows (GEMV) schedule (measured: faster at 1-3)
    unroll_k: int = 8  # K rows of B per step of the GEMV schedule (independent row streams)
    gemv_tile: int = 32  # columns of the GEMV schedule's accumulator tile (its N tile)
    pack_min_m: int = 40  # smallest M whose variant packs B (relax-specialize-ranges; 0: never pack)
    pack_block_k: int = 512  # K block of the packed schedule (B's packed panel: block x cols)
    # M tile cascade of the small-M variant (gemv_rows < M <= small_max_m, relax-specialize-ranges;
    # 0: none): 6-row tiles leave M mod 6 rows to slow 1-row tiles (M = 16: 4 of 16 rows)
    small_rows: tuple[int, ...] = (4, 1)
    small_max_m: int = 16
    # k steps ahead that the register-tiled k loops prefetch their rows of B (relax-prefetch; 0: none)
    prefetch: int = 4


def _vectorize(target: ir.Value, sizes: list[int], contraction: bool = True, masked: bool = False) -> None:
    """Vectorize a tile that is full by construction (a peeled main loop): its dynamic
    sizes equal ``sizes``, so no masks (``assume_dynamic_dims_match_vec_sizes``; MLIR 22
    honours it for the contraction only: with ``create_named_contraction`` the transfers of
    a dynamic-shaped operand are masked all the same, by an all-true mask, where the tile's
    size does not fold to a constant). ``masked``: a partial tile (a symbolic remainder, at
    most ``sizes``): every vector op masked (see :func:`.common.unmask_contractions`)."""
    v = structured.VectorizeOp(target, sizes)
    if not masked:
        v.operation.attributes["assume_dynamic_dims_match_vec_sizes"] = ir.UnitAttr.get()
    if contraction:
        v.operation.attributes["create_named_contraction"] = ir.UnitAttr.get()


def _cascade(fn: ir.Value, op: ir.Value, dim: int, rank: int, sizes: tuple[int, ...],
             exact: bool, name: str = "linalg.matmul") -> list[tuple[ir.Value, int]]:
    """Tile ``op`` along ``dim`` by ``sizes[0]``, peel, tile the remainder by ``sizes[1]``,
    ... : (tiled op, size) pairs whose tiles are all full. ``exact``: the first size
    divides the extent (no remainder). Handles are taken to the ops, never to the loops,
    which canonicalization may fold away (a static loop of one iteration)."""
    parts: list[tuple[ir.Value, int]] = []
    rest = op
    for i, size in enumerate(sizes):
        tile = [0] * rank
        tile[dim] = size
        t = structured.TileUsingForOp(rest, sizes=tile)
        if i == len(sizes) - 1 or (i == 0 and exact):
            parts.append((t.tiled_linalg_op, size))
            break
        p = loop.LoopPeelOp(any_op(), any_op(), t.loops[0])
        parts.append((match(p.results[0], name), size))
        rest = match(p.results[1], name)
    cleanup(fn)
    return parts


def _columns(fn: ir.Value, mm: ir.Value, cols: int, n_extent: Optional[int], rest: int, b: int,
             name: str, half: bool = False) -> list[tuple[ir.Value, int, bool]]:
    """Column tiles of ``mm`` (``n_extent``: its static column extent, None when symbolic):
    (tiled op, width, masked) triples. Full ``cols``-wide tiles (peeled), then a static
    remainder 1 column at a time; a symbolic one (``rest`` > 1) in masked tiles of ``rest``
    columns (one SIMD register; the last one partial), after a full tile of ``cols / 2``
    columns with ``half`` (peeled; 12 FMA chains in flight where a 16-column tile has 6:
    measured in :func:`matmul_schedule`). ``rest`` = 1: a symbolic extent whose remainder
    never runs (a static N's panels, all multiples of ``cols``): the cheapest code, 1-column
    tiles."""
    if n_extent is not None or rest == 1:
        exact = n_extent is not None and n_extent % cols == 0
        return [(op, c, False) for op, c in _cascade(fn, mm, b + 1, b + 3, (cols, 1), exact, name)]
    sizes = (cols, cols // 2, rest) if half and cols // 2 > rest else (cols, rest)
    return [(op, c, i == len(sizes) - 1) for i, (op, c) in enumerate(_cascade(fn, mm, b + 1, b + 3, sizes, False, name))]


def _micro(fn: ir.Value, mm: ir.Value, rows: int, cols: int, n_extent: Optional[int], rest: int, b: int,
           name: str) -> None:
    """Tile the rows x (panel) x (block) matmul ``mm`` into register tiles of ``cols``
    columns (``n_extent``: the static column extent of ``mm``, None when symbolic: the last
    columns in ``rest``-wide masked tiles; ``b``: 1 for a batch matmul, whose batch dim is
    already tiled to 1)."""
    for inner, c, masked in _columns(fn, mm, cols, n_extent, rest, b, name):
        _register_tile(inner, rows, c, b, masked)


def _register_tile(mm: ir.Value, rows: int, cols: int, b: int, masked: bool = False) -> None:
    """The innermost step of every matmul schedule: ``mm`` (a ``rows`` x ``cols`` x K tile;
    ``b``: 1 for a batch matmul) tiled to one k at a time and vectorized (``masked``: a
    partial tile of at most ``cols`` columns, :func:`_columns`)."""
    t = structured.TileUsingForOp(mm, sizes=[0] * b + [0, 0, 1])
    _vectorize(t.tiled_linalg_op, [1] * b + [rows, cols, 1], masked=masked)


def _fill_rows(fn: ir.Value, fill: ir.Value, extent: Optional[int], bound: Optional[int], width: int,
               b: int) -> None:
    """Vectorize ``fill`` (the zeroing of C, or its tile fused into a panel or batch loop;
    ``b``: 1 for a batch matmul's): row by row, in vector stores of ``width`` columns, the
    last ones masked where ``width`` does not divide the column extent (``extent`` when
    static; ``bound``: a static upper bound of a symbolic one, when known). Left to plain
    loops, a fill is a scalar store loop (LLVM makes it a ``memset`` per row): a pass over C
    of its own where the panel loop could zero C in cache. (Peeling the static remainder
    instead cost a canonicalization of the kernel: 0.3 s more to compile K, N = 512, 1000.)"""
    row = structured.TileUsingForOp(fill, sizes=[1] * (b + 1) + [0]).tiled_linalg_op
    whole = extent if extent is not None else bound
    if whole is not None and whole <= width:  # the row in one vector
        structured.VectorizeOp(row, [1] * (b + 1) + [whole])
    else:  # width-wide tiles: static where width divides a static extent, else the last one masked
        t = structured.TileUsingForOp(row, sizes=[0] * (b + 1) + [width]).tiled_linalg_op
        structured.VectorizeOp(t, [1] * (b + 1) + [width])


#: Rows of B per vectorized step of the packing copy.
PACK_COPY_ROWS = 8


def packs_b(n: Optional[int], k: Optional[int], cfg: MatmulConfig, batch: bool = False) -> bool:
    """Whether the large-M variant (M >= ``cfg.pack_min_m``) packs B: a static N that is a
    multiple of the register tile's columns and more than one tile wide (a single 64-column
    B is already a contiguous micro-panel; with a column remainder the 1-column tiles would
    read B in place anyway), or a symbolic N; batch matmuls alike. Any K: a symbolic K, or
    one the packed K block does not divide, runs its last, partial K block on B in place
    (:func:`_split_k`).

    Packing every such B (not only those with rows a multiple of 4 KB apart) measured
    faster at every shape tried, batch matmuls included (bench/README.md, "Matmul schedule
    design measurements")."""
    if not cfg.pack_min_m:
        return False
    if n is None:
        return True
    n -= n % cfg.cols  # a static column remainder is split off (matmul_schedule): the rest is packed
    return n > cfg.cols


def _split_k(fn: ir.Value, mm: ir.Value, block_k: int, k: Optional[int], b: int = 0,
             name: str = "linalg.matmul") -> tuple[ir.Value, Optional[ir.Value]]:
    """Tile K by ``block_k`` (0: no K loop); a symbolic K (or one the block does not divide)
    is peeled: the full blocks (static ``block_k`` after canonicalization: the packed copy
    of B has a static shape) and the last, partial block (None when there is none).
    ``b``: 1 for a batch matmul (its K is dim 3)."""
    if not block_k:
        return mm, None
    t = structured.TileUsingForOp(mm, sizes=[0] * b + [0, 0, block_k])
    if k is not None and k % block_k == 0:
        return t.tiled_linalg_op, None
    p = loop.LoopPeelOp(any_op(), any_op(), t.loops[0])
    full, partial = match(p.results[0], name), match(p.results[1], name)
    cleanup(fn)
    return full, partial


def _pack_b(fn: ir.Value, mm: ir.Value, block_k: int, cols: int, b: int = 0) -> ir.Value:
    """Pack B for the ``cols``-wide column tiles ``mm`` (rows x ``cols`` x ``block_k``; ``b``:
    1 for a batch matmul, its batch dim tiled to 1) the BLAS way: a nofold pad of its B
    tile (the N and K dims only: A and C are left as they are), hoisted above the column-tile
    loop into a packing loop that copies the K block's panel once into ``[panel / cols][block_k][cols]``
    (contiguous ``block_k x cols`` micro-panels, read by every row tile), the copy
    vectorized (``vector.transfer_read`` of B, ``transfer_write`` into the packed tensor;
    folding the subset ops into the transfers keeps canonicalization from folding the copy
    away). Returns the padded matmul."""
    pad = structured.PadOp(mm, padding_values=[ir.FloatAttr.get_f32(0.0)] * 3, padding_dimensions=[b + 1, b + 2],
                           nofold_flags=[0, 1, 0], copy_back_op="none")
    packed = structured.HoistPadOp(any_op(), pad.results[1], 1).result
    # Rows per copy step: the largest power of two up to PACK_COPY_ROWS that divides the block
    # (a whole odd block unrolled compiled for seconds: K = 509, 5.2 s).
    rows = next(r for r in (PACK_COPY_ROWS, 4, 2, 1) if block_k % r == 0)
    if rows < block_k:  # a loop of small copies
        packed = structured.TileUsingForOp(packed, sizes=[0] * b + [rows, 0]).tiled_linalg_op
    structured.VectorizeOp(packed, [1] * b + [rows, cols])
    patterns(fn, ttensor.ApplyFoldTensorSubsetOpsIntoVectorTransfersPatternsOp)
    # The tiled copy fills a fresh block_k x cols tensor then inserted into the packed one:
    # write into the packed tensor's slice directly (else a second copy after bufferization).
    tbuf.EliminateEmptyTensorsOp(fn)
    return pad.results[0]


#: Row blocks per image of :func:`_row_block`; 1: none (the default, see its docstring).
ROW_BLOCKS = 1


def _row_block(m: Optional[int], cfg: MatmulConfig) -> int:
    """Rows per task of a batch matmul whose N is a single panel (static) or symbolic
    (``batch_panels``: a 1x1 conv on 14x14 maps, one task per image): M in
    :data:`ROW_BLOCKS` equal blocks of whole register tiles, each task packing its own copy
    of B (0: no split; M symbolic, or not a multiple of ``ROW_BLOCKS`` register tiles:
    blocks of unequal static size failed to schedule). Off by default: at batch 1 the 14x14
    convs of MobileNetV2 touch under relax-omp-threads' 1 MiB, so their region runs on one
    thread whatever its tasks, and the second pack of B is then pure cost (docs/conv.md,
    "Not done")."""
    tile = cfg.rows[0] * ROW_BLOCKS
    if ROW_BLOCKS < 2 or m is None or m % tile or m < 2 * tile:
        return 0
    return m // ROW_BLOCKS


def config_for(target: Simd) -> MatmulConfig:
    """Register tiles sized for the SIMD registers: 6 rows x 4 vectors (24 accumulators)
    with 32 registers (AVX-512, NEON), 6 x 2 (12) with 16 (AVX2, SSE); 4 rows of as many
    vectors for small M (``small_max_m``: faster at M = 8 and 16 on AVX-512; from M = 24
    6 rows are faster or even)."""
    per_row = 4 if target.registers >= 32 else 2
    cols = per_row * target.lanes
    # The GEMV schedule's N tile: two AVX-512 vectors (measured 8-10% faster than four at
    # M = 1..3, K x N = 512 x 2048 and 2048 x 512, B from L3); other targets, unmeasured,
    # keep the register tile's width.
    gemv_tile = 2 * target.lanes if target.lanes >= 16 else cols
    return MatmulConfig(rows=(6, 1), cols=cols, gemv_cols=4 * cols if target.registers >= 32 else 2 * cols,
                        panel_n=max(256, 4 * cols), block_k=128, lanes=target.lanes, gemv_tile=gemv_tile)


def _tiles(m: Optional[int], n: Optional[int], k: Optional[int], cfg: MatmulConfig, batch: bool, pack: bool,
           batch_panels: bool = False, epilogue: bool = False, rest: int = 0):
    """``(tile, masked)``: ``tile(fn, mm, fill)`` tiles and vectorizes the matmul ``mm`` of
    :func:`matmul_schedule` (``fill``: zero C in the N panel or batch loop, :func:`_fill_rows`);
    ``masked``: it makes masked column tiles (N symbolic, :func:`_columns`). ``epilogue``
    (with ``batch_panels``): the (batch, row block, N panel) tasks are the tiles of the
    epilogue generic that runs in place on the product (relax-epilogue-in-place), the matmul
    and its fill fused into them; each task then runs its epilogue tile on the panel it has
    just written (:func:`.pointwise.epilogue_tile`). ``rest``: a static column remainder after
    ``n`` that each such task splits off (its N whole: the panels, if any, a loop in it)."""
    name, b = ("linalg.batch_matmul", 1) if batch else ("linalg.matmul", 0)
    panel_n, block_k = cfg.panel_n, cfg.pack_block_k if pack else cfg.block_k
    if n is not None and n % panel_n and not pack:
        panel_n = cfg.cols if n % cfg.cols == 0 else panel_n
    # (batch, N panel) tasks over a static N of few panels (a 1x1 conv on 28x28 maps: 768
    # columns + a 16-column rest, three 256-column panels for two threads): two register tiles
    # wide where they divide N (one tile would be a one-iteration loop, folded under its handle)
    if batch_panels and n is not None and n < 4 * panel_n and n % (2 * cfg.cols) == 0:
        panel_n = 2 * cfg.cols
    # No outer loop of one iteration: canonicalization would fold it under a live handle.
    if n is not None and n <= panel_n:
        panel_n = 0
    inner = 0
    if epilogue and rest:   # the whole N per task, its panels (if any) a loop inside
        panel_n, inner = 0, panel_n
    # (batch, row block[, N panel]) tasks where a static N is a single panel (a 1x1 conv on
    # 14x14 maps: 192 columns + a 4-column rest) or N is symbolic (196 pixels: one panel):
    # one task per image would leave threads idle at batch 1
    rows_task = _row_block(m, cfg) if batch and batch_panels and (not panel_n or n is None) else 0
    if k is not None and k <= block_k:
        block_k = 0
    # Column extent seen by the register tiles: the panel when it divides N, else N itself.
    # A static N the panel does not divide is a multiple of cols here (matmul_schedule split
    # off the rest): the panels' column remainder never runs (1-column tiles, no masks).
    rest_width = cfg.lanes if n is None else 1
    if panel_n or inner:
        n_extent = (panel_n or inner) if n is not None and n % (panel_n or inner) == 0 else None
    else:
        n_extent = n

    def cols_for(rows: int) -> int:
        """The 1-row (GEMV) tile is load-bound: wider, to keep 16 FMA chains in flight, where
        the columns are a static multiple of it. Not with a symbolic N: the panels' column
        remainder (all of N below 256) would then run 1-column tiles, measured much slower."""
        if rows == 1 and n_extent is not None and n_extent % cfg.gemv_cols == 0:
            return cfg.gemv_cols
        return cfg.cols

    def tile(fn: ir.Value, mm: ir.Value, fuse_fill: bool) -> None:
        if epilogue:   # one region: the epilogue's tasks, the product fused into each
            from .pointwise import epilogue_tile
            tiled = structured.TileUsingForallOp(match(fn, "linalg.generic"), tile_sizes=[1, rows_task, panel_n])
            fused = structured.FuseIntoContainingOp(mm, tiled.forall_op)
            mm = fused.fused_op
            fill = structured.FuseIntoContainingOp(match(fn, "linalg.fill"), fused.new_containing_op).fused_op
            whole = n + rest if rest else n_extent
            _fill_rows(fn, fill, whole, panel_n or None, panel_n or cfg.panel_n, 1)
            epilogue_tile(fn, tiled.tiled_op, whole)
            if rest:   # the static column remainder of the task's N, B read in place
                split = structured.SplitOp(mm, 2, n).results[0]
                mm, tail = transform.SplitHandleOp([any_op(), any_op()], split).results
                _column_rest(fn, tail, m, rest, cfg, 1, name, forall=False)
            if inner:
                mm = structured.TileUsingForOp(mm, sizes=[0, 0, inner, 0]).tiled_linalg_op
        elif batch and batch_panels and (panel_n or rows_task):   # threads at batch 1 too
            tiled = structured.TileUsingForallOp(mm, tile_sizes=[1, rows_task, panel_n, 0])
            mm = tiled.results[0]
            if fuse_fill:
                fill = structured.FuseIntoContainingOp(match(fn, "linalg.fill"), tiled.results[1]).results[0]
                _fill_rows(fn, fill, n_extent, panel_n or None, panel_n or cfg.panel_n, 1)
        elif batch:
            tiled = structured.TileUsingForallOp(mm, tile_sizes=[1, 0, 0, 0])
            mm = tiled.results[0]
            if fuse_fill:  # each batch zeroes its own C
                fill = structured.FuseIntoContainingOp(match(fn, "linalg.fill"), tiled.results[1]).results[0]
                _fill_rows(fn, fill, n, None, cfg.panel_n, 1)
            if panel_n:
                mm = structured.TileUsingForOp(mm, sizes=[0, 0, panel_n, 0]).tiled_linalg_op
        elif panel_n:  # N panels are independent: an scf.forall (threads, when enabled)
            tiled = structured.TileUsingForallOp(mm, tile_sizes=[0, panel_n, 0])
            mm = tiled.results[0]
            if fuse_fill:
                # Zero each panel of C in its own thread, row by row in panel-wide vector
                # stores (left to plain loops, the fill was a scalar store loop: 5 % of M = 512);
                # the last panel of a symbolic N (or of one the panel does not divide) masked.
                fill = structured.FuseIntoContainingOp(match(fn, "linalg.fill"), tiled.results[1]).results[0]
                _fill_rows(fn, fill, n_extent, panel_n, panel_n, 0)
        elif fuse_fill:  # one panel, no loop to fuse into
            _fill_rows(fn, match(fn, "linalg.fill"), n, None, cfg.panel_n, 0)
        if block_k and not pack:
            mm = structured.TileUsingForOp(mm, sizes=[0] * b + [0, 0, block_k]).tiled_linalg_op
        m_exact = m is not None and m % cfg.rows[0] == 0
        if rows_task:  # equal blocks of whole register tiles (_row_block)
            m_exact = True
        if pack:
            full, partial = _split_k(fn, mm, block_k, k, b, name)
            for npart, cols, masked in _columns(fn, full, cfg.cols, n_extent, rest_width, b, name, half=True):
                # one packed micro-panel for the full row tiles and the remainder rows; the
                # column remainder reads B in place (hoisting the pad of a half-width tile,
                # whose size is an unfolded affine.min, asserts in MLIR 22's HoistPadding:
                # "could not get upper bound", an abort)
                if cols == cfg.cols and not masked:
                    npart = _pack_b(fn, npart, block_k or k, cols, b)
                for part, rows in _cascade(fn, npart, b, b + 3, cfg.rows, m_exact, name):
                    _register_tile(part, rows, cols, b, masked)
            if partial is not None:  # the last, partial K block of a symbolic K: B read in place
                for part, rows in _cascade(fn, partial, b, b + 3, cfg.rows, m_exact, name):
                    _micro(fn, part, rows, cols_for(rows), n_extent, rest_width, b, name)
        else:
            parts = _cascade(fn, mm, b, b + 3, cfg.rows, m_exact, name)
            cleanup(fn)
            for part, rows in parts:
                _micro(fn, part, rows, cols_for(rows), n_extent, rest_width, b, name)

    return tile, n is None


def matmul_schedule(m: Optional[int], n: Optional[int], k: Optional[int], cfg: MatmulConfig = MatmulConfig(),
                    batch: bool = False, pack: bool = False, batch_panels: bool = False,
                    epilogue: bool = False) -> tuple[Body, Optional[Step]]:
    """``(body, finish)``: the transform-script body for a matmul of static sizes
    ``m``/``n``/``k`` (None: symbolic), and the step to run on the kernel after it (None:
    the script is all; with masked tiles it leaves the vector lowering to
    :func:`.common.unmasked_lowering`). ``batch``: a ``linalg.batch_matmul``, one batch per
    ``scf.forall`` iteration (threads), each batch scheduled like a matmul (N panels then in
    a loop; ``batch_panels``: one (batch, N panel) per iteration, so a single batch runs on
    every thread too: relax-conv-gemm's 1x1 convolutions, whose batch is the images).
    ``pack`` (large M, :func:`packs_b` holds): B packed per K block of
    ``cfg.pack_block_k``, loops N panel -> K block -> (pack) -> N tile -> M rows -> k,
    so each packed ``block_k x cols`` micro-panel serves every row tile in turn.

    A static N wider than one register tile and not a multiple of it is split
    (``structured.split``) into the columns up to the last multiple of ``cols``, scheduled
    as above, and the static remainder (``N mod cols`` columns): 6-row (then 1-row) tiles
    of exactly that many columns over all of K, B read in place (:func:`_column_rest`);
    peeled 1-column tiles ran them scalar, up to 5x slower. The fill of C is then
    vectorized on its own, before both parts.

    A symbolic N runs its column remainder in masked tiles (see the module docstring),
    where peeled 1-column tiles ran it scalar; the packed variant uses half-width masked
    tiles. Measurements: bench/README.md, "Matmul schedule design measurements".

    ``epilogue`` (a batch matmul with ``batch_panels``: relax-conv-gemm's pointwise conv after
    relax-epilogue-in-place): the kernel's one generic runs in place on the product; the tasks
    are its tiles, the matmul and fill fused into each (one parallel region; :func:`_tiles`)."""
    name, b = ("linalg.batch_matmul", 1) if batch else ("linalg.matmul", 0)
    rest = n % cfg.cols if n is not None and n > cfg.cols else 0
    epilogue = epilogue and batch and batch_panels
    if epilogue and rest:
        # a static N with a column remainder (14x14 maps: 196 columns, 28x28: 784): the whole
        # N per task, split inside it (the epilogue's tasks cannot be split like the matmul);
        # panels of a symbolic-like N in masked tiles measured 1.1-1.4x slower at one thread
        tile, masked = _tiles(m, n - rest, k, cfg, batch, pack, batch_panels, epilogue=True, rest=rest)
    elif epilogue:
        tile, masked = _tiles(m, n, k, cfg, batch, pack, batch_panels, epilogue=True)
    else:
        tile, masked = _tiles(m, n - rest if rest else n, k, cfg, batch, pack, batch_panels)

    def body(fn: ir.Value) -> None:
        mm = match(fn, name)
        if epilogue:
            tile(fn, mm, True)
        elif rest:
            split = structured.SplitOp(mm, b + 1, n - rest).results[0]
            main, tail = transform.SplitHandleOp([any_op(), any_op()], split).results
            tile(fn, main, False)
            _column_rest(fn, tail, m, rest, cfg, b, name)
            _fill_rows(fn, match(fn, "linalg.fill"), n, None, cfg.panel_n, b)  # C zeroed before the products
        else:
            tile(fn, mm, True)
        cleanup(fn)
        if masked:  # their accumulators hoisted like the others'
            _masks_out_of_loops(fn)
        loop.HoistLoopInvariantSubsetsOp(match(fn, "scf.for"))
        cleanup(fn)
        if not masked:
            lower_vectors(fn)

    return body, unmasked_lowering if masked else None


def _masks_out_of_loops(fn: ir.Value) -> None:
    """Prepare masked tiles for ``hoist_loop_invariant_subsets``: ``vector.mask`` regions
    around transfers become transfers with a mask operand, and the masks (made per k step by
    the vectorizer) move out of the k loops (LICM), so the accumulator's masked read and
    write are a loop-invariant pair like an unmasked tile's."""
    patterns(fn, tvec.ApplyLowerMaskedTransfersPatternsOp)
    transform.apply_licm(match(fn, "scf.for"))


def _column_rest(fn: ir.Value, mm: ir.Value, m: Optional[int], cols: int, cfg: MatmulConfig, b: int,
                 name: str, forall: bool = True) -> None:
    """Schedule ``mm``, the last ``cols`` (< ``cfg.cols``, static) columns of a matmul: one
    batch per ``scf.forall`` iteration (``b``; not with ``forall`` False: already in a task),
    then register tiles of ``cfg.rows`` rows (peeled) by exactly ``cols`` columns, the
    accumulator held across all of K."""
    if b and forall:
        mm = structured.TileUsingForallOp(mm, tile_sizes=[1, 0, 0, 0]).results[0]
    # Whole registers, then the last partial one (40 columns: 32 + 8; a 40-wide vector
    # measured slower than 1-column tiles)
    sizes = tuple(c for c in (cols - cols % cfg.lanes, cols % cfg.lanes) if c)
    parts = _cascade(fn, mm, b + 1, b + 3, sizes, False, name) if len(sizes) > 1 else [(mm, cols)]
    for npart, c in parts:
        for part, rows in _cascade(fn, npart, b, b + 3, cfg.rows, m is not None and m % cfg.rows[0] == 0, name):
            _register_tile(part, rows, c, b)


def _fitting(sizes: tuple[int, ...], extent: Optional[int]) -> tuple[int, ...]:
    """The tile sizes of a cascade that fit a static extent (a tile larger than the whole
    extent cannot be peeled: the transform fails)."""
    if extent is None:
        return sizes
    return tuple(s for s in sizes if s <= extent) or (1,)


#: Attribute marking the op that computes a threaded GEMV's column chunk (see :func:`thread_split`).
CHUNK_ATTR = "relax.thread_chunk"


def _worth_threads(n: Optional[int], k: Optional[int], cols: int) -> bool:
    """Split a GEMV's columns over threads unless that can never pay: fewer than two register
    tiles of columns, or B statically below the run-time threshold (relax-omp-threads runs a
    smaller region on one thread anyway; no split, no forall)."""
    from ..omp_threads import MIN_PARALLEL_BYTES
    if n is not None and n < 2 * cols:
        return False
    return n is None or k is None or 4 * n * k >= MIN_PARALLEL_BYTES


def thread_split(fn: ir.Operation, cols: int, name: str = "linalg.matmul") -> None:
    """Insert, right before the kernel's matmul, the column chunk of one thread at run time:
    ``ceil(ceil(N / threads) / cols) * cols`` with ``threads`` the module's run-time count
    (relax-omp-threads' global), marked :data:`CHUNK_ATTR` for the schedule's
    ``tile_using_forall``. Chunks are whole register tiles (only the last one has a column
    remainder), and there are as many as threads: one contiguous block of B each."""
    from mlir.dialects import arith, tensor

    from ..omp_threads import load_threads
    block = fn.regions[0].blocks[0]
    mm = next(o.operation for o in block.operations if o.operation.name == name)
    b = mm.operands[1]
    idx = ir.IndexType.get()
    with ir.InsertionPoint(mm), mm.location:
        threads = arith.index_cast(idx, load_threads())
        n_dim = ir.RankedTensorType(b.type).shape[-1]
        if ir.ShapedType.is_dynamic_size(n_dim):
            n = tensor.dim(b, arith.constant(idx, ir.RankedTensorType(b.type).rank - 1))
        else:
            n = arith.constant(idx, n_dim)
        per_thread = arith.ceildivui(n, threads)
        c = arith.constant(idx, cols)
        chunk = arith.muli(arith.ceildivui(per_thread, c), c)
        chunk.owner.attributes[CHUNK_ATTR] = ir.UnitAttr.get()


def gemv_schedule(n: Optional[int], k: Optional[int], cfg: MatmulConfig = MatmulConfig(),
                  batch: bool = False, threaded: bool = False,
                  rows: Optional[int] = None) -> tuple[Body, Optional[Step]]:
    """``(body, finish)`` (as :func:`matmul_schedule`) for a matmul with few rows (M == 1,
    the decode GEMV, and M < ``cfg.rows[0]``): no packing and no register blocking along M.
    Loops, outer to inner::

        (N split in one chunk per thread, scf.forall) -> K block (``cfg.unroll_k``, peeled;
        then 1) -> N tile (``cfg.gemv_tile``, peeled; then one register and 1 column if
        static, masked one-register tiles if symbolic) -> M rows (1; M <= 1: see ``rows``)

    Each k block streams ``unroll_k`` rows of B side by side (contiguous, one hardware
    prefetch stream each) and adds ``unroll_k`` broadcast-FMA steps onto ``cols / lanes``
    accumulators, so the output row is read and written once per ``unroll_k`` rows of B
    and the B tile (``unroll_k`` x ``cols``, from L1) is reused by every row of A. Wider
    k blocks (16) or N panels measured slower on AVX-512 (B rows 8 KB apart contend for
    the same L1 sets); so did a four-vector N tile (AVX-512: two, ``gemv_tile``).

    ``threaded``: the kernel holds :func:`thread_split`'s chunk (``gemv_split`` tells
    whether this GEMV gets one): the N split is sized at run time by the thread count then,
    so the code is right, and balanced, for any count. The fill of C is vectorized, in the
    chunk or batch loop when there is one (:func:`_fill_rows`).

    The symbolic remainder runs in masked one-register tiles, unmasked by
    :func:`.common.unmask_contractions` (left masked they are slower than 1-column tiles).

    ``rows``: the largest M the kernel runs at (static M, or its relax-specialize-ranges
    range); at most 1 (the decode GEMV's own variant) the rows loop (one iteration at most)
    moves outside the N tiles::

        K block -> M rows (1) -> N tile (peeled; a symbolic remainder in ONE masked tile of
        ``gemv_tile`` columns, a static one in one tile of exactly N mod ``lanes`` columns)

    so A's ``unroll_k`` values are read once per k block, not per N tile (LICM at tensor
    level; LLVM then keeps the broadcasts in registers: 16 loads of B and 2 of C per tile
    instead of 26, the k step is bound by the loads), and the symbolic remainder's tile is
    the peeled loop's body, not a loop of one-register tiles with its own bookkeeping per k
    block (the last K mod ``unroll_k`` rows: masked ``gemv_tile`` tiles only, no peel: they
    run once per call). This order measured faster than OpenBLAS's sgemv at M = 1. Not for
    M = 2-3: re-reading B's k block per row (from L2 beyond N = 1024) is slower there, where
    the rows-inner order serves each B tile to every row from L1 (bench/README.md, "Matmul
    schedule design measurements")."""
    name, b = ("linalg.batch_matmul", 1) if batch else ("linalg.matmul", 0)
    uk, cols = cfg.unroll_k, cfg.gemv_tile
    one_row = rows is not None and rows <= 1
    split = not batch and threaded and gemv_split(n, k, cfg, batch)
    n_static = None if split else n  # the columns of one chunk are a run-time size

    def body(fn: ir.Value) -> None:
        mm = match(fn, name)
        if batch or split:  # one batch, or one chunk of columns, per thread; each zeroes its C
            if batch:
                tiled = structured.TileUsingForallOp(mm, tile_sizes=[1, 0, 0, 0])
            else:
                chunk = structured.MatchOp(any_op(), fn, op_attrs=ir.DictAttr.get({CHUNK_ATTR: ir.UnitAttr.get()}))
                tiled = structured.TileUsingForallOp(mm, tile_sizes=[0, chunk.result, 0])
            mm = tiled.results[0]
            fill = structured.FuseIntoContainingOp(match(fn, "linalg.fill"), tiled.results[1]).results[0]
            _fill_rows(fn, fill, n_static, None, cfg.panel_n, b)
        else:
            _fill_rows(fn, match(fn, "linalg.fill"), n_static, None, cfg.panel_n, b)
        k_sizes = _fitting((uk, 1), k)
        for kpart, ku in _cascade(fn, mm, b + 2, b + 3, k_sizes, k is not None and k % k_sizes[0] == 0, name):
            if one_row:  # the row loop (at most one iteration) outside the column tiles
                kpart = structured.TileUsingForOp(kpart, sizes=[0] * b + [1, 0, 0]).tiled_linalg_op
            if n_static is None and one_row and ku < uk:  # the last K mod 8 rows: masked tiles only
                t = structured.TileUsingForOp(kpart, sizes=[0] * b + [0, cols, 0])
                nparts = [(t.tiled_linalg_op, cols, True)]
            elif n_static is None and one_row:  # a symbolic column remainder: one masked tile
                nparts = _last_masked(fn, kpart, cols, b, name)
            elif n_static is None:  # a symbolic column remainder: masked tiles of one register
                nparts = _columns(fn, kpart, cols, None, cfg.lanes, b, name)
            else:  # a static one: one register wide, then 1
                n_sizes = _fitting((cols, cfg.lanes, 1) if 1 < cfg.lanes < cols else (cols, 1), n_static)
                if one_row and n_sizes[-1] == 1 and n_static % cfg.lanes > 1:  # the last columns in one tile
                    n_sizes = n_sizes[:-1] + (n_static % cfg.lanes,)
                nparts = [(op, c, False) for op, c in
                          _cascade(fn, kpart, b + 1, b + 3, n_sizes, n_static % n_sizes[0] == 0, name)]
            for npart, nc, masked in nparts:
                if not one_row:
                    npart = structured.TileUsingForOp(npart, sizes=[0] * b + [1, 0, 0]).tiled_linalg_op
                _vectorize(npart, [1] * b + [1, nc, ku], masked=masked)
        cleanup(fn)
        if one_row:  # A's k block read (and broadcast) once per row and k block, not per column tile
            transform.apply_licm(match(fn, "scf.for"))
            cleanup(fn)
        if n_static is not None:
            lower_vectors(fn)

    return body, unmasked_lowering if n_static is None else None


def _last_masked(fn: ir.Value, mm: ir.Value, cols: int, b: int, name: str) -> list[tuple[ir.Value, int, bool]]:
    """Column tiles of ``mm`` (a symbolic column extent) as in :func:`_columns`, but the
    remainder (fewer than ``cols`` columns) in ONE masked tile of ``cols`` columns (the
    peeled loop's body, not tiled again): no inner loop over one-register tiles, whose
    bookkeeping ran once per k block."""
    t = structured.TileUsingForOp(mm, sizes=[0] * b + [0, cols, 0])
    p = loop.LoopPeelOp(any_op(), any_op(), t.loops[0])
    parts = [(match(p.results[0], name), cols, False), (match(p.results[1], name), cols, True)]
    cleanup(fn)
    return parts


def gemv_split(n: Optional[int], k: Optional[int], cfg: MatmulConfig, batch: bool = False) -> bool:
    """Whether a threaded GEMV's columns are split over threads (a batch GEMV splits its batch)."""
    return not batch and _worth_threads(n, k, cfg.gemv_tile)
