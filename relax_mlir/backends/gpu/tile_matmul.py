"""relax-gpu-tile-matmul: matmul kernels as shared-memory tiled, register-blocked launches.

The naive route (one thread per element of C, a serial K loop reading A and B from
device memory) reads every element of A N times and of B M times. This pass replaces
each ``linalg.matmul`` / ``linalg.batch_matmul`` of a bufferized kernel whose A and B are
of the requested float types (``dtypes``: f32 by default; f16 and bf16 are widened to f32
where loaded, sums stay in f32 registers, C is stored in its own type) by a
``gpu.launch`` built directly (the GPU rules, relax_mlir/backends/gpu, call the same
builders with the routes they select, the GEMV of gemv.py among them):

* a workgroup of ``threads`` x ``threads`` (8 x 8) computes a ``threads*per_thread``
  (64) square block of C (one batch per ``z`` workgroup), each thread ``per_thread`` x
  ``per_thread`` elements held in registers (rows ``ty + i*threads``, columns
  ``tx + j*threads``: neighbouring threads touch neighbouring columns; 8 x 8 per thread:
  8 + 8 workgroup-memory loads per 64 multiply-adds);
* K advances by ``tile_k`` (16): the workgroup stages a block of A and a block of B in
  workgroup memory (every thread loads its share, out-of-range elements read as 0), a
  ``gpu.barrier``, then each thread runs ``tile_k`` rank-1 updates of its register block
  from workgroup memory, and a second barrier before the next block is staged;
* M, N, K and the batch stay symbolic: the grid is ``ceil(N / tile) x ceil(M / tile) x
  batch`` and every global access is bounds-checked (loads clamp their index and select
  0; stores sit under ``if (row < M && col < N)``), so one kernel serves every shape.

The tiled launch (:func:`tiled_launch`) takes how A's and B's blocks are staged as callables:
here plain loads of A and B; quant_gemm.py decodes B's block from quantized weight rows and
applies x's prologue where A is staged.

The tiled launch runs when M and N are both at least ``min-size`` (32): the pass puts it
under ``scf.if`` on the run-time sizes; the else branch is a *small* launch, one thread
per element of C with a serial K loop (with fewer rows most of a 64-row tile would idle:
GEMV-like products run faster one thread per element; measured on lavapipe,
bench/README.md), the fill and epilogue folded in as in the tiled one.

A ``linalg.fill`` of C right before the matmul becomes the accumulators' initial value
(and is erased), and an elementwise epilogue that follows (bias, activation: all-parallel
generics reading C, or the previous epilogue's result, at the output point) is applied
in registers before the one store: a fused matmul+bias+relu kernel becomes a single
dispatch. Intermediate buffers left without users are erased. Kernels whose recorded
kind (``relax.kernel_kind``) is not ``output-fusable`` are left alone, as are matmuls on
other element types (they keep the parallel-loop route). With ``gemv-rows`` the GEMV route
(gemv.py) sits between the two: ``if M, N >= min-size`` tiled, ``else if M <= gemv-rows``
(and B aligned for 4-wide loads) the GEMV, else the small launch. Run on bufferized kernels,
before relax-gpu-prepare-kernels and ``convert-linalg-to-parallel-loops``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import arith, memref, scf

from ...transforms.registry import Option, register_pass
from .gemv import GemvTiles, build_gemv, gemv_guard
from .launch_builder import (CONTRACT, Launch, barrier, ceil_div, check_block_size, f32, flat_body, for_loop, index,
                             indexing_maps, kernels, load, simple_map, store, to_f32, when)
from .matmul_routes import Builder, Guard, Routes, finish  # noqa: F401  (Builder, Guard: re-exported)

#: element types of A, B and C the tiled, small and GEMV launches take (products and sums
#: in f32 registers whatever the storage type); the targets' rules narrow this per target
FLOAT_TYPES = ("f32", "f16", "bf16")
#: below 32 rows (or columns) of C most of a 64 x 64 tile would be idle: one thread per
#: element of C does less work (measured on lavapipe: M = 1 8 ms naive vs 188 ms tiled,
#: M = 16 about even, M = 64 3x faster tiled; bench/README.md)
MIN_SIZE = 32


@dataclass(frozen=True)
class MatmulTiles:
    threads: int = 8      # threads per workgroup along x and along y
    per_thread: int = 8   # each thread computes per_thread x per_thread elements of C
    tile_k: int = 16      # K step staged in workgroup memory

    @property
    def tile(self) -> int:
        return self.threads * self.per_thread

    def check(self) -> None:
        nt = self.threads * self.threads
        if min(self.threads, self.per_thread, self.tile_k) < 1 or (self.tile * self.tile_k) % nt:
            raise ValueError(f"matmul tiles {self}: threads^2 must divide (threads*per_thread)*tile_k")


def _float_memref(v: ir.Value, dtypes: Sequence[str]) -> bool:
    return isinstance(v.type, ir.MemRefType) and str(ir.MemRefType(v.type).element_type) in dtypes


def _identity(m: ir.AffineMap, rank: int) -> bool:
    return m == ir.AffineMap.get_identity(rank)


def _users(v: ir.Value) -> list[ir.Operation]:
    return [u.owner for u in v.uses]


def _local(v: ir.Value, allowed: list[ir.Operation]) -> bool:
    """``v`` is a memref.alloc of this kernel used only by ``allowed`` ops and deallocs."""
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.name != "memref.alloc":
        return False
    return all(u.name == "memref.dealloc" or any(u == a for a in allowed) for u in _users(v))


def _fill_of(ops: list[ir.Operation], k: int, c: ir.Value) -> Optional[ir.Operation]:
    """The ``linalg.fill`` of ``c`` that is the last op before ``ops[k]`` touching ``c``."""
    for o in reversed(ops[:k]):
        if any(v == c for v in o.operands):
            if o.name == "linalg.fill" and o.operands[1] == c:
                return o
            return None
        if any(r == c for r in o.results):
            return None
    return None


def _epilogue(ops: list[ir.Operation], k: int, c: ir.Value, rank: int, fill,
              dtypes: Sequence[str] = ("f32",)) -> list[ir.Operation]:
    """The elementwise generics right after the matmul ``ops[k]`` that can run in registers
    (on buffers of ``dtypes``)."""
    chain: list[ir.Operation] = []
    carried, producer = c, ops[k]
    for o in ops[k + 1:]:
        if o.name != "linalg.generic" or not flat_body(o):
            break
        g = o.opview
        if any(str(t) != "#linalg.iterator_type<parallel>" for t in g.iterator_types):
            break
        ins, outs = list(g.inputs), list(g.outputs)
        maps = indexing_maps(o)
        if len(outs) != 1 or not all(_float_memref(v, dtypes) for v in ins + outs) or not all(simple_map(m) for m in maps):
            break
        if len(maps[0].results) != rank or maps[0].n_dims != rank or not _identity(maps[-1], rank):
            break
        hits = [i for i, v in enumerate(ins) if v == carried]
        if len(hits) != 1 or not _identity(maps[hits[0]], rank) or outs[0] == carried:
            break
        allowed = [producer, o] + ([fill, ops[k]] if carried == c and fill is not None else [])
        if not _local(carried, allowed + [ops[k]]):
            break
        chain.append(o)
        carried, producer = outs[0], o
    return chain


def _plain(mm: ir.Operation) -> bool:
    """No transposed or broadcast operand (MLIR 22's ``indexing_maps`` on linalg.matmul)."""
    if mm.name != "linalg.matmul" or "indexing_maps" not in mm.attributes:
        return True
    d = [ir.AffineDimExpr.get(k) for k in range(3)]
    return indexing_maps(mm) == [ir.AffineMap.get(3, 0, [d[0], d[2]]), ir.AffineMap.get(3, 0, [d[2], d[1]]),
                                 ir.AffineMap.get(3, 0, [d[0], d[1]])]


def large_guard(min_size: int) -> Guard:
    """M >= min_size and N >= min_size."""
    def guard(mm: ir.Operation, m_: ir.Value, n_: ir.Value) -> ir.Value:
        return arith.AndIOp(arith.CmpIOp(arith.CmpIPredicate.uge, m_, index(min_size)).result,
                            arith.CmpIOp(arith.CmpIPredicate.uge, n_, index(min_size)).result).result
    return guard


def tiled_routes(t: MatmulTiles, min_size: int) -> list[tuple[Optional[Guard], Builder]]:
    """relax-gpu-tile-matmul's routes: the tiled launch when M, N >= ``min_size`` (always
    when ``min_size <= 1``), else the small one (a thread per element of C)."""
    tiled = (lambda mm, m_, n_, fv, chain: _build(mm, m_, n_, fv, chain, t))  # noqa: E731
    if min_size <= 1:
        return [(None, tiled)]
    return [(large_guard(min_size), tiled), (None, build_small)]


def _emit(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value], chain: list,
          routes: Routes) -> None:
    guard, build = routes[0]
    if guard is None or len(routes) == 1:
        build(mm, m_, n_, fill_value, chain)
        return
    branch = scf.IfOp(guard(mm, m_, n_), [], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        end = scf.YieldOp([])
    with ir.InsertionPoint(end):
        build(mm, m_, n_, fill_value, chain)
    with ir.InsertionPoint(branch.else_block):
        end = scf.YieldOp([])
    with ir.InsertionPoint(end):
        _emit(mm, m_, n_, fill_value, chain, routes[1:])


def _rewrite(mm: ir.Operation, fill: Optional[ir.Operation], chain: list[ir.Operation], routes: Routes) -> None:
    """The matmul (with its fill and epilogue) replaced by its ``routes``, each one launch
    with the fill and the epilogue folded in; the original ops are erased, and the local
    intermediates only they used."""
    c = mm.operands[2]
    rank = ir.MemRefType(c.type).rank
    moved = ([fill] if fill is not None else []) + [mm] + chain
    # intermediates only the moved ops use (C too when filled here: the launches never read it)
    locals_ = [g.opview.outputs[0] for g in chain[:-1]] + ([c] if chain and fill is not None else [])
    fill_value = fill.operands[0] if fill is not None else None
    with ir.InsertionPoint(mm), mm.location:
        m_ = memref.DimOp(mm.operands[0], index(rank - 2)).result
        n_ = memref.DimOp(mm.operands[1], index(rank - 1)).result
        _emit(mm, m_, n_, fill_value, chain, routes)
    for o in reversed(moved):
        o.erase()
    for v in locals_:
        _erase_if_dead(v)


#: threads per workgroup of the small route, along N (neighbouring threads read neighbouring
#: columns of B: coalesced; every thread of a row reads the same element of A)
SMALL_THREADS = 64


def build_small(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value],
                chain: list[ir.Operation]) -> None:
    """One thread per element of C (grid ``M x ceil(N / 64) x batch``), a serial K loop in a
    register, then the fill value and the epilogue and one store: for the GEMV-like products
    (M or N below min-size) where most of a 64 x 64 tile would idle. One launch instead of
    the fill, the matmul and each epilogue op on the parallel-loop route."""
    a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
    batch = mm.name == "linalg.batch_matmul"
    rank = 3 if batch else 2
    out = chain[-1].opview.outputs[0] if chain else c
    with mm.location:
        k_ = memref.DimOp(a, index(rank - 1)).result
        nb = memref.DimOp(a, index(0)).result if batch else index(1)
        # rows on grid x (up to 2^31 - 1), column blocks on y (65535 of them: 4M columns)
        launch = Launch((m_, ceil_div(n_, SMALL_THREADS), nb), (SMALL_THREADS, 1, 1), [])
        with launch:
            row, bx, bz = launch.block_id
            lead = [bz] if batch else []
            col = arith.AddIOp(arith.MulIOp(bx, index(SMALL_THREADS)).result, launch.thread_id[0]).result
            ok = arith.CmpIOp(arith.CmpIPredicate.ult, col, n_).result

            def body() -> None:
                def step(kk: ir.Value, acc: list[ir.Value]) -> list[ir.Value]:
                    fm = ir.Attribute.parse(CONTRACT)
                    p = arith.MulFOp(to_f32(load(a, lead + [row, kk])), to_f32(load(b, lead + [kk, col])),
                                     fastmath=fm).result
                    return [arith.AddFOp(acc[0], p, fastmath=fm).result]
                acc = for_loop(index(0), k_, index(1), [f32(0.0)], step)
                finish(acc[0], lead + [row, col], c, fill_value, chain, out)
            when(ok, body)


@dataclass(frozen=True)
class TileSite:
    """What a staging callback of :func:`tiled_launch` sees of its workgroup: the thread's
    linear id, the first row and column of the workgroup's block of C, the batch index (or
    []), the run-time M, N, K and M - 1, K - 1, N - 1 (clamps for bounds-checked loads)."""

    tid: ir.Value
    row0: ir.Value
    col0: ir.Value
    lead: list
    m: ir.Value
    n: ir.Value
    k: ir.Value
    m1: ir.Value
    k1: ir.Value
    n1: ir.Value


#: stages one K block into a workgroup buffer: (the site, the buffer, the block's first k)
Stager = Callable[[TileSite, ir.Value, ir.Value], None]
#: stores one f32 sum of C: (value, row, column, the batch index or [])
Emitter = Callable[[ir.Value, ir.Value, ir.Value, list], None]


def _lt(x: ir.Value, y: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.ult, x, y).result


def stage_a_rows(t: MatmulTiles, value_at: Callable[[TileSite, ir.Value, ir.Value], ir.Value]) -> Stager:
    """A's BM x BK block (row-major) staged element by element: ``value_at(site, row, k)``
    (indices clamped into range) is the element's f32 value, 0 outside M x K."""
    BM, BK, NT = t.tile, t.tile_k, t.threads * t.threads

    def stage(s: TileSite, sa: ir.Value, k0: ir.Value) -> None:
        for r in range(BM * BK // NT):
            e = arith.AddIOp(s.tid, index(r * NT)).result
            gr = arith.AddIOp(s.row0, arith.DivUIOp(e, index(BK)).result).result
            gk = arith.AddIOp(k0, arith.RemUIOp(e, index(BK)).result).result
            ok = arith.AndIOp(_lt(gr, s.m), _lt(gk, s.k)).result
            v = value_at(s, arith.MinUIOp(gr, s.m1).result, arith.MinUIOp(gk, s.k1).result)
            store(arith.SelectOp(ok, v, f32(0.0)).result, sa, [e])
    return stage


def tiled_launch(t: MatmulTiles, m_: ir.Value, n_: ir.Value, k_: ir.Value, nb: Optional[ir.Value],
                 stage_a: Stager, stage_b: Stager, emit: Emitter) -> None:
    """The tiled launch at the insertion point: a grid of ``ceil(N / tile) x ceil(M / tile) x
    nb``, per K block ``stage_a`` fills A's BM x BK block (row-major) and ``stage_b`` B's BK x
    BN block (row-major: k, then n) in workgroup memory (f32, 0 outside the matrices), then
    the register-blocked rank-1 updates (fused multiply-adds: ``fastmath<contract>``, without
    which NVPTX emits ``mul.rn`` + ``add.rn``, which ptxas may not fuse);
    ``emit`` stores each sum inside M x N. The operands' layouts are the stagers' business
    (relax.quantized_matmul's decoded rows: quant_gemm.py)."""
    T, P, BK = t.threads, t.per_thread, t.tile_k
    BM = BN = t.tile
    z = nb if nb is not None else index(1)
    launch = Launch((ceil_div(n_, BN), ceil_div(m_, BM), z), (T, T, 1), [BM * BK, BK * BN])
    with launch:
        sa, sb = launch.shared
        tx, ty = launch.thread_id[0], launch.thread_id[1]
        bx, by, bz = launch.block_id
        lead = [bz] if nb is not None else []
        zero = f32(0.0)
        one = index(1)
        tid = arith.AddIOp(arith.MulIOp(ty, index(T)).result, tx).result
        row0 = arith.MulIOp(by, index(BM)).result
        col0 = arith.MulIOp(bx, index(BN)).result
        m1, k1, n1 = (arith.SubIOp(v, one).result for v in (m_, k_, n_))
        site = TileSite(tid, row0, col0, lead, m_, n_, k_, m1, k1, n1)

        a_rows = [arith.MulIOp(arith.AddIOp(ty, index(i * T)).result, index(BK)).result for i in range(P)]
        b_cols = [arith.AddIOp(tx, index(j * T)).result for j in range(P)]

        def rank1(kk: ir.Value, acc: list[ir.Value]) -> list[ir.Value]:
            av = [load(sa, [arith.AddIOp(r, kk).result]) for r in a_rows]
            kb = arith.MulIOp(kk, index(BN)).result
            bv = [load(sb, [arith.AddIOp(kb, cj).result]) for cj in b_cols]
            fm = ir.Attribute.parse(CONTRACT)
            return [arith.AddFOp(acc[i * P + j], arith.MulFOp(av[i], bv[j], fastmath=fm).result,
                                 fastmath=fm).result for i in range(P) for j in range(P)]

        def k_block(k0: ir.Value, acc: list[ir.Value]) -> list[ir.Value]:
            stage_a(site, sa, k0)
            stage_b(site, sb, k0)
            barrier()
            acc = for_loop(index(0), index(BK), one, acc, rank1)
            barrier()
            return acc

        acc = for_loop(index(0), k_, index(BK), [zero] * (P * P), k_block)
        for i in range(P):
            rr = arith.AddIOp(row0, arith.AddIOp(ty, index(i * T)).result).result
            for j in range(P):
                cc = arith.AddIOp(col0, b_cols[j]).result
                ok = arith.AndIOp(_lt(rr, m_), _lt(cc, n_)).result
                when(ok, lambda v=acc[i * P + j], rr=rr, cc=cc: emit(v, rr, cc, lead))


def _build(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value],
           chain: list[ir.Operation], t: MatmulTiles) -> None:
    a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
    batch = mm.name == "linalg.batch_matmul"
    rank = 3 if batch else 2
    out = chain[-1].opview.outputs[0] if chain else c
    BK, BN, NT = t.tile_k, t.tile, t.threads * t.threads

    def stage_b(s: TileSite, sb: ir.Value, k0: ir.Value) -> None:
        for r in range(BK * BN // NT):
            e = arith.AddIOp(s.tid, index(r * NT)).result
            gk = arith.AddIOp(k0, arith.DivUIOp(e, index(BN)).result).result
            gc = arith.AddIOp(s.col0, arith.RemUIOp(e, index(BN)).result).result
            ok = arith.AndIOp(_lt(gk, s.k), _lt(gc, s.n)).result
            v = to_f32(load(b, s.lead + [arith.MinUIOp(gk, s.k1).result, arith.MinUIOp(gc, s.n1).result]))
            store(arith.SelectOp(ok, v, f32(0.0)).result, sb, [e])

    with mm.location:
        k_ = memref.DimOp(a, index(rank - 1)).result
        nb = memref.DimOp(a, index(0)).result if batch else None
        tiled_launch(t, m_, n_, k_, nb,
                     stage_a_rows(t, lambda s, r, k: to_f32(load(a, s.lead + [r, k]))), stage_b,
                     lambda v, rr, cc, lead: finish(v, lead + [rr, cc], c, fill_value, chain, out))


def _erase_if_dead(v: ir.Value) -> None:
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.name != "memref.alloc":
        return
    users = _users(v)
    if all(u.name == "memref.dealloc" for u in users):
        for u in users:
            u.erase()
        owner.erase()


def tile_kernel(fn: ir.Operation, routes: Routes, dtypes: Sequence[str] = ("f32",)) -> int:
    """Rewrite every eligible matmul of kernel ``fn`` (A and B of ``dtypes``, C, its fill and
    the epilogue's buffers of :data:`FLOAT_TYPES`: legalization gives f16 products an f32 C
    and truncates in the epilogue; no transposed operand) into ``routes``; the number
    rewritten."""
    done = 0
    while True:
        ops = [o.operation for o in fn.regions[0].blocks[0].operations]
        for k, o in enumerate(ops):
            if o.name not in ("linalg.matmul", "linalg.batch_matmul"):
                continue
            a, b, c = o.operands[0], o.operands[1], o.operands[2]
            if not (_float_memref(a, dtypes) and _float_memref(b, dtypes) and _float_memref(c, FLOAT_TYPES)
                    and _plain(o)):
                continue
            rank = ir.MemRefType(c.type).rank
            fill = _fill_of(ops, k, c)
            chain = _epilogue(ops, k, c, rank, fill, FLOAT_TYPES)
            if fill is not None and str(fill.operands[0].type) not in FLOAT_TYPES:
                fill = None
            _rewrite(o, fill, chain, routes)
            done += 1
            break
        else:
            return done


@register_pass("relax-gpu-tile-matmul",
               "GPU kernels: f32 (f16) matmul / batch_matmul -> a gpu.launch with A and B blocks staged in "
               "workgroup memory and a register block of C per thread; fill and elementwise epilogue "
               "folded in; symbolic M, N, K (bounds-checked).",
               options=[Option("threads", int, MatmulTiles.threads, "threads per workgroup along x and y"),
                        Option("per-thread", int, MatmulTiles.per_thread,
                               "each thread computes per-thread x per-thread elements of C"),
                        Option("tile-k", int, MatmulTiles.tile_k, "K step staged in workgroup memory"),
                        Option("min-size", int, MIN_SIZE,
                               "M and N from which the tiled launch runs (below: the parallel-loop "
                               "route, in an scf.if on the run-time sizes); 1: always tiled"),
                        Option("gemv-rows", int, 0, "M up to which the GEMV route runs (below min-size; "
                                                    "0: no GEMV route)"),
                        Option("subgroup", int, 32, "the GEMV's subgroup width (gpu.shuffle width)"),
                        Option("gemv-lanes", int, 8, "lanes along N per GEMV subgroup"),
                        Option("gemv-k-subgroups", int, 4, "subgroups per GEMV workgroup splitting K"),
                        Option("dtypes", str, "f32", "element types of the matmuls rewritten (comma-separated: "
                                                     "f32, f16, bf16)")])
def relax_gpu_tile_matmul(module: ir.Operation, opts) -> None:
    tiles = MatmulTiles(opts.threads, opts.per_thread, opts.tile_k)
    check_block_size(module, opts.threads * opts.threads, "relax-gpu-tile-matmul")
    tiles.check()
    dtypes = tuple(d.strip() for d in opts.dtypes.split(",") if d.strip())
    if not dtypes or any(d not in FLOAT_TYPES for d in dtypes):
        raise ValueError(f"relax-gpu-tile-matmul: dtypes must be among {', '.join(FLOAT_TYPES)}, got '{opts.dtypes}'")
    routes = tiled_routes(tiles, opts.min_size)
    if opts.gemv_rows > 0 and len(routes) > 1:
        g = GemvTiles(opts.subgroup, opts.gemv_lanes, opts.gemv_k_subgroups, opts.gemv_rows)
        check_block_size(module, g.threads, "relax-gpu-tile-matmul (GEMV)")
        routes.insert(1, (gemv_guard(g), build_gemv(g)))
    for f in kernels(module, ("output-fusable",)):
        tile_kernel(f, routes, dtypes)
