"""The quantized GEMM: ``relax.quantized_matmul`` kernels (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
Q5_K, Q6_K rows, f16 / bf16
weights kept as stored, any elementwise prologue on x) at many rows of x, as the f32 GEMM's
tiles with the weight decoded into workgroup memory once per workgroup.

The quantized GEMV (quant_gemv.py) puts M in its grid: every row of x re-reads and re-decodes
the whole weight, one FMA per decoded weight, so a 128-token prefill reads the weight 128
times. Here, under ``scf.if (M >= min_rows)`` (the rule's ``qgemm_min_rows``; the GEMV in the
else branch, unchanged), tile_matmul's launch (:func:`~.tile_matmul.tiled_launch`: a 64 x 64
block of C per 8 x 8-thread workgroup, 8 x 8 f32 accumulators per thread, K blocks of 16)
stages:

* A's block from x with the kernel's prologue (``silu(gate) * up``) cloned per element
  (quant_gemv's ``_x_at``: the part of the generic's body that does not read the weight; an
  f16 / bf16 x is loaded as stored and widened there);
* B's block (k x n) decoded from the weight's rows (N, RB), which are B transposed: a thread
  takes a run of ``chunk`` consecutive k of one row n (16 with the defaults), loads the
  block's f16 scale (Q4_1: and minimum) once for it (a K block of 16 or 32 lies inside one
  32-element block) and its quant bytes (Q4: one nibble each, the low ones for elements 0-15
  of a block, the high ones for 16-31; on cuda vector loads as wide as the block layout's
  alignment allows, as the GEMV), and writes the f32 values to workgroup memory
  (f16 / bf16: two byte loads per element, no alignment assumed; Q5_0, Q5_1 and the
  K-quants: quant_gemv's ``decode_runs`` on the run, one scale and minimum per run);

then the same register-blocked multiply-adds (``fastmath<contract>``: FMAs, as the GEMV's).
Bounds: M at run time (rows clamped, 0 outside), N and K are static (the weight's shape);
K of a block format is a multiple of its block (the op's own requirement), of a half format any (elements past K
staged as 0). A kernel with more than the fill and the quantized generic (an elementwise
epilogue) is left to the GEMV (:func:`takes`).
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, memref, scf

from .launch_builder import f32, index, load, store
from .matmul_routes import finish
from .quant_gemv import BLOCKS, HALF_FORMATS, RUN_FORMATS, _bytes, _f16, _i32, _Match, _x_at, decode_runs
from .tile_matmul import MatmulTiles, Stager, TileSite, stage_a_rows, tiled_launch


def chunk(t: MatmulTiles) -> int:
    """Consecutive k of one weight row a thread decodes per K block."""
    per = t.tile_k * t.tile // (t.threads * t.threads)
    return min(per, t.tile_k)


def check(t: MatmulTiles) -> None:
    """ValueError unless a K block lies inside one 32-element weight block and a thread's
    run of k divides it (the scale is loaded once per run)."""
    t.check()
    c = chunk(t)
    if 32 % t.tile_k or 32 % c or (t.tile_k * t.tile) % (c * t.threads * t.threads):
        raise ValueError(f"quantized GEMM tiles {t}: tile_k must divide 32 and each thread decode a "
                         "power-of-two run of k")


def takes(fn: ir.Operation, m: _Match) -> bool:
    """The fill, the quantized generic and its elementwise epilogue (``m.chain``, applied at
    the store) are all the kernel computes."""
    work = [o.operation for o in fn.regions[0].blocks[0].operations
            if o.operation.name.startswith(("linalg.", "memref.copy", "memref.store", "scf.", "gpu."))]
    return [o for o in work if o not in m.ops()] == []


def _block_values(m: _Match, nn: ir.Value, kk0: ir.Value, run: int, wide: bool) -> list[ir.Value]:
    """f32 values of weight row ``nn`` at k = kk0 ... kk0 + run - 1 (inside one block)."""
    nbytes, qoff, has_min = BLOCKS[m.fmt]
    i32t, f32t = ir.IntegerType.get_signless(32), ir.F32Type.get()
    base = arith.MulIOp(arith.DivUIOp(kk0, index(32)).result, index(nbytes)).result
    j0 = arith.RemUIOp(kk0, index(32)).result
    d = _f16(*_bytes(m.w, nn, base, 2, 2, wide))
    mn = _f16(*_bytes(m.w, nn, arith.AddIOp(base, index(2)).result, 2, 2, wide)) if has_min else None
    if m.fmt == "q8_0":
        qb = _bytes(m.w, nn, arith.AddIOp(arith.AddIOp(base, index(qoff)).result, j0).result, run,
                    min(run, 2), wide)
        qs = [arith.ExtSIOp(i32t, q).result for q in qb]
    elif run == 32:   # both nibbles of the block's 16 bytes: low ones first
        u = [arith.ExtUIOp(i32t, q).result
             for q in _bytes(m.w, nn, arith.AddIOp(base, index(qoff)).result, 16, 4 if has_min else 2, wide)]
        qs = [arith.AndIOp(v, _i32(15)).result for v in u] + [arith.ShRUIOp(v, _i32(4)).result for v in u]
    else:             # one nibble of each of ``run`` bytes: low for j < 16, high from 16
        off = arith.AddIOp(arith.AddIOp(base, index(qoff)).result, arith.RemUIOp(j0, index(16)).result).result
        shift = arith.IndexCastOp(i32t, arith.MulIOp(arith.DivUIOp(j0, index(16)).result, index(4)).result).result
        u = [arith.ExtUIOp(i32t, q).result for q in _bytes(m.w, nn, off, run, min(run, 4 if has_min else 2), wide)]
        qs = [arith.AndIOp(arith.ShRUIOp(v, shift).result, _i32(15)).result for v in u]
    out = []
    for q in qs:
        if m.fmt == "q4_0":
            q = arith.SubIOp(q, _i32(8)).result
        v = arith.MulFOp(arith.SIToFPOp(f32t, q).result, d).result
        out.append(arith.AddFOp(v, mn).result if has_min else v)
    return out


def _run_values(m: _Match, nn: ir.Value, kk0: ir.Value, run: int, wide: bool) -> list[ir.Value]:
    """f32 values of weight row ``nn`` at k = kk0 ... kk0 + run - 1 of a run format (Q5_0, Q5_1,
    K-quants): quant_gemv's :func:`~.quant_gemv.decode_runs` on pieces one scale covers."""
    f32t = ir.F32Type.get()
    piece = min(run, RUN_FORMATS[m.fmt][2])
    out = []
    for p in range(0, run, piece):
        (r,) = decode_runs(m.fmt, m.w, nn, arith.AddIOp(kk0, index(p)).result if p else kk0, piece, wide)
        for q in r.qs:
            v = arith.MulFOp(arith.SIToFPOp(f32t, q).result, r.scale).result
            out.append(arith.AddFOp(v, r.offset).result if r.offset is not None else v)
    return out


def _half_value(m: _Match, nn: ir.Value, k: ir.Value) -> ir.Value:
    """The f16 / bf16 element (nn, k) as f32, from its two bytes."""
    k2 = arith.MulIOp(k, index(2)).result
    lo, hi = load(m.w, [nn, k2]), load(m.w, [nn, arith.AddIOp(k2, index(1)).result])
    if m.fmt == "f16":
        return _f16(lo, hi)
    i32t = ir.IntegerType.get_signless(32)
    bits = arith.OrIOp(arith.ExtUIOp(i32t, lo).result,
                       arith.ShLIOp(arith.ExtUIOp(i32t, hi).result, _i32(8)).result).result
    return arith.BitcastOp(ir.F32Type.get(), arith.ShLIOp(bits, _i32(16)).result).result


def stage_weight(m: _Match, t: MatmulTiles, wide: bool) -> Stager:
    """B's BK x BN block (k, then n) decoded from the weight rows ``col0 ...`` at ``k0 ...``."""
    BK, BN, NT = t.tile_k, t.tile, t.threads * t.threads
    run = chunk(t)
    runs = BK * BN // (NT * run)
    wt = ir.MemRefType(m.w.type)
    n_rows = wt.shape[0]
    k_ = ir.MemRefType(m.gen.opview.inputs[0].type).shape[1]
    half = m.fmt in HALF_FORMATS

    def stage(s: TileSite, sb: ir.Value, k0: ir.Value) -> None:
        for r in range(runs):
            lin = arith.MulIOp(arith.AddIOp(arith.MulIOp(s.tid, index(runs)).result, index(r)).result,
                               index(run)).result
            nl, kl = arith.DivUIOp(lin, index(BK)).result, arith.RemUIOp(lin, index(BK)).result
            n = arith.AddIOp(s.col0, nl).result
            ok = arith.CmpIOp(arith.CmpIPredicate.ult, n, index(n_rows)).result
            nn = arith.MinUIOp(n, index(n_rows - 1)).result
            kk0 = arith.AddIOp(k0, kl).result
            oks = [ok] * run
            if m.fmt in RUN_FORMATS:
                vals = _run_values(m, nn, kk0, run, wide)
            elif not half:
                vals = _block_values(m, nn, kk0, run, wide)
            elif k_ % BK == 0:   # every K block whole
                vals = [_half_value(m, nn, arith.AddIOp(kk0, index(j)).result) for j in range(run)]
            else:
                ks = [arith.AddIOp(kk0, index(j)).result for j in range(run)]
                vals = [_half_value(m, nn, arith.MinUIOp(k, index(k_ - 1)).result) for k in ks]
                oks = [arith.AndIOp(ok, arith.CmpIOp(arith.CmpIPredicate.ult, k, index(k_)).result).result
                       for k in ks]
            for j, (v, o) in enumerate(zip(vals, oks)):
                at = arith.AddIOp(arith.MulIOp(arith.AddIOp(kl, index(j)).result, index(BN)).result, nl).result
                store(arith.SelectOp(o, v, f32(0.0)).result, sb, [at])
    return stage


def build(fn: ir.Operation, m: _Match, t: MatmulTiles, min_rows: int, wide: bool,
          gemv: Callable[[], None]) -> None:
    """Replace the fill, generic and epilogue of ``m`` by ``scf.if (M >= min_rows) { the tiled
    launch, the epilogue applied at its store } else { what ``gemv()`` builds from them, moved
    there }``."""
    check(t)
    g = m.gen.opview
    c = g.outputs[0]
    fill_value = m.fill.operands[0] if m.fill is not None else None
    n_rows = ir.MemRefType(m.w.type).shape[0]
    k_ = ir.MemRefType(g.inputs[0].type).shape[1]
    with ir.InsertionPoint(m.fill if m.fill is not None else m.gen), m.gen.location:
        rows = memref.DimOp(m.out, index(0)).result   # (not C: the GEMV's fallback alone uses it)
        branch = scf.IfOp(arith.CmpIOp(arith.CmpIPredicate.uge, rows, index(min_rows)).result, [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            tiled_launch(t, rows, index(n_rows), index(k_), None,
                         stage_a_rows(t, lambda s, r, k: _x_at(m, r, k)), stage_weight(m, t, wide),
                         lambda v, rr, cc, lead: finish(v, [rr, cc], c, fill_value, m.chain, m.out))
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            end = scf.YieldOp([])
    for o in m.ops():
        o.move_before(end)
    gemv()
