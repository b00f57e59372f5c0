"""The tensor-core GEMM of f16 and bf16 matmuls on cuda: m16n8k16 ``mma.sync`` (f32
accumulators, sm_80+) on fragments read with ``ldmatrix`` from workgroup memory.

A workgroup of ``warps_m x warps_n`` warps computes a ``block_m x block_n`` tile of C
(defaults: 2 x 2 warps, 64 x 64); each warp a ``warp_m x warp_n`` tile (32 x 32: 2 x 4
m16n8 accumulators of ``vector<2x2xf32>`` in registers). The grid is ``ceil(N / block_n) x
ceil(M / block_m) x batch``. K advances by ``tile_k`` (32):

* staging: the workgroup copies A's ``block_m x tile_k`` and B's ``tile_k x block_n`` blocks
  (both row-major, as in memory) into workgroup memory in chunks of ``vec`` elements per
  thread (8: 128-bit ``ld.global.v4`` / ``st.shared.v4``) where the chunk lies inside the
  matrix and the run-time layout allows (row length a multiple of ``vec``, 16-byte aligned
  base), else element by element with clamped indices and zeros outside M x K / K x N:
  any M, N, K, zero padded. Rows are padded by ``pad`` elements (8: a row stride of
  80 / 144 bytes puts the 8 rows one ``ldmatrix`` phase reads on distinct banks). The
  buffers are double-buffered: while the warps compute on block ``i`` (half ``i % 2``),
  block ``i + 1``'s global loads are already in flight into registers, stored into the other
  half afterwards; one barrier per block;
* per 16-deep step each warp reads its A fragments with ``ldmatrix.x4``
  (lane ``l`` gives the address of row ``l % 16``, column ``(l / 16) * 8`` of an m16k16
  tile: the four 8 x 8 matrices in the order the mma's A operand wants) and its B
  fragments with ``ldmatrix.x4.trans`` (the same addressing over a k16n16 tile of the
  row-major B block: the transposed 8 x 8 matrices are the col-major B operand of two
  n8 tiles), then ``warp_m/16 x warp_n/8`` mma's.

Every ``ldmatrix`` / ``mma`` sits in uniform control flow (bounds are in the staging), as
warps (and relax-emulate-mma) need. f16 uses ``nvgpu.mma.sync`` (lowered by
``convert-nvgpu-to-nvvm``); bf16 builds ``nvvm.mma.sync`` itself (MLIR 22's nvgpu lowering
cannot deduce bf16 PTX types): fragments as i32 words of two bf16. Each lane then holds C
at rows ``g, g + 8`` and columns ``2t, 2t + 1`` of each m16n8 tile (``g = lane / 4``,
``t = lane % 4``); the fill, the epilogue and the store are the matmul's
(:func:`relax_mlir.backends.gpu.matmul_routes.finish`), bounds-checked.

Numerics can only be checked on a device (or through relax-emulate-mma on lavapipe), so the
route is behind the matmul rule's ``f16_gemm`` knob (2; 1, the SIMT tiles, by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvgpu, nvvm, scf, vector

from .launch_builder import (Launch, all_of, barrier, ceil_div, element_type, f32, for_loop, index, load,
                             vector_view_conditions, when)
from .matmul_routes import finish

#: the mma's shape
MMA_M, MMA_N, MMA_K = 16, 8, 16


@dataclass(frozen=True)
class MmaTiles:
    """The tensor-core GEMM's tiles (the matmul rule's ``tc_*`` knobs)."""

    warps_m: int = 2     # warps per workgroup along M
    warps_n: int = 2     # warps per workgroup along N
    warp_m: int = 32     # rows of C per warp (a multiple of 16)
    warp_n: int = 32     # columns of C per warp (a multiple of 16: ldmatrix.x4.trans reads two n8 tiles)
    tile_k: int = 32     # K step staged in workgroup memory (a multiple of 16)
    vec: int = 8         # elements per staging chunk (8 x 16 bits: 128-bit loads)
    pad: int = 8         # elements of padding per staged row (bank conflicts; keeps 16-byte rows)

    @property
    def block_m(self) -> int:
        return self.warps_m * self.warp_m

    @property
    def block_n(self) -> int:
        return self.warps_n * self.warp_n

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def a_stride(self) -> int:
        return self.tile_k + self.pad

    @property
    def b_stride(self) -> int:
        return self.block_n + self.pad

    @property
    def shared_bytes(self) -> int:
        return 2 * 2 * (self.block_m * self.a_stride + self.tile_k * self.b_stride)   # two halves of f16

    def problem(self, max_threads: Optional[int] = None, shared_bytes: Optional[int] = None) -> Optional[str]:
        """Why these tiles cannot be built for a device with these limits (None: they can)."""
        if min(self.warps_m, self.warps_n) < 1 or self.warp_m % 16 or self.warp_n % 16 or self.tile_k % 16 \
                or min(self.warp_m, self.warp_n, self.tile_k) < 16:
            return "tensor-core tiles: warp_m, warp_n and tile_k must be positive multiples of 16"
        if self.vec not in (4, 8) or self.pad % 8:
            return "tensor-core tiles: vec must be 4 or 8 and pad a multiple of 8 (16-byte ldmatrix rows)"
        if max_threads is not None and self.threads > max_threads:
            return f"{self.threads} threads per tensor-core workgroup exceed the target's {max_threads}"
        if shared_bytes is not None and self.shared_bytes > shared_bytes:
            return (f"tensor-core blocks of A and B ({self.shared_bytes} bytes) exceed {shared_bytes} bytes of "
                    f"workgroup memory")
        return None


def _lt(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.ult, a, b).result


def _add(a: ir.Value, k: int) -> ir.Value:
    return arith.AddIOp(a, index(k)).result if k else a


def _mul(a: ir.Value, k: int) -> ir.Value:
    return arith.MulIOp(a, index(k)).result


def _affine(base: ir.Value, a: ir.Value, k: int) -> ir.Value:
    """``base + a * k``."""
    return arith.AddIOp(base, _mul(a, k)).result


class _Stager:
    """One operand's block ``src[row0:+rows, col0:+cols]`` staged row-major (``stride``
    elements per row) in chunks of ``t.vec`` along the row, chunk ``tid + r * threads`` in
    round ``r`` (a last partial round: the first threads store). :meth:`fetch` loads the
    chunks into registers: one vector load where the chunk is inside and ``fast_ok`` (the
    uniform layout check), zeros where it is wholly outside, else element by element
    (indices clamped, zeros selected: any size, zero padded); :meth:`put` stores them into
    workgroup memory. Split so that the next block's loads are in flight while the mma's run
    on the current one."""

    def __init__(self, src: ir.Value, lead: list, rows: int, cols: int, stride: int, nrows: ir.Value,
                 ncols: ir.Value, fast_ok: ir.Value, tid: ir.Value, t: MmaTiles):
        self.src, self.lead, self.nrows, self.ncols, self.fast_ok, self.t = src, lead, nrows, ncols, fast_ok, t
        per_row, chunks = cols // t.vec, rows * cols // t.vec
        et = element_type(src)
        self.vt = ir.VectorType.get([t.vec], et)
        self.zero = arith.ConstantOp(et, 0.0).result
        self.r1 = arith.SubIOp(nrows, index(1)).result
        self.c1 = arith.SubIOp(ncols, index(1)).result
        #: per round: (row in the block, column in the block, offset in the buffer, store guard)
        self.rounds = []
        for r in range(-(-chunks // t.threads)):
            e = _add(tid, r * t.threads)
            lr = arith.DivUIOp(e, index(per_row)).result
            lc = _mul(arith.RemUIOp(e, index(per_row)).result, t.vec)
            guard = _lt(e, index(chunks)) if (r + 1) * t.threads > chunks else None
            self.rounds.append((lr, lc, _affine(lc, lr, stride), guard))

    def fetch(self, row0: ir.Value, col0: ir.Value) -> list[ir.Value]:
        out = []
        for lr, lc, _, _ in self.rounds:
            gr, gc = arith.AddIOp(row0, lr).result, arith.AddIOp(col0, lc).result
            row_in = _lt(gr, self.nrows)
            # gc is a multiple of vec: with ncols a multiple of vec (part of fast_ok) gc < ncols
            # means the whole chunk is inside
            branch = scf.IfOp(all_of([self.fast_ok, row_in, _lt(gc, self.ncols)]), [self.vt], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([vector.LoadOp(self.vt, self.src, self.lead + [gr, gc], alignment=2 * self.t.vec).result])
            with ir.InsertionPoint(branch.else_block):
                # a chunk wholly outside (edge blocks, the block after the last): zeros, no loads
                part = scf.IfOp(arith.AndIOp(row_in, _lt(gc, self.ncols)).result, [self.vt], has_else=True)
                with ir.InsertionPoint(part.then_block):
                    rr = arith.MinUIOp(gr, self.r1).result
                    xs = []
                    for j in range(self.t.vec):
                        cj = _add(gc, j)
                        x = load(self.src, self.lead + [rr, arith.MinUIOp(cj, self.c1).result])
                        xs.append(arith.SelectOp(_lt(cj, self.ncols), x, self.zero).result)
                    scf.YieldOp([vector.FromElementsOp(self.vt, xs).result])
                with ir.InsertionPoint(part.else_block):
                    scf.YieldOp([vector.BroadcastOp(self.vt, self.zero).result])
                scf.YieldOp([part.results[0]])
            out.append(branch.results[0])
        return out

    def put(self, values: list[ir.Value], dst: ir.Value, base: ir.Value) -> None:
        for v, (_, _, at, guard) in zip(values, self.rounds):
            def st(v=v, at=at) -> None:
                vector.StoreOp(v, dst, [arith.AddIOp(base, at).result], alignment=2 * self.t.vec)
            if guard is None:
                st()
            else:
                when(guard, st)


def _words(frag: ir.Value, rows: range) -> list[ir.Value]:
    """Rows of a ``vector<Rx2xbf16>`` fragment as i32 words (nvvm.mma.sync's bf16 operands)."""
    i32 = ir.IntegerType.get_signless(32)
    out = []
    for r in rows:
        pair = vector.ExtractOp(frag, [], [r]).result
        word = vector.BitCastOp(ir.VectorType.get([1], i32), pair).result
        out.append(vector.ExtractOp(word, [], [0]).result)
    return out


def _mma(fa: ir.Value, fb: ir.Value, acc: ir.Value, bf16: bool) -> ir.Value:
    """``acc += A * B`` for one m16n8k16 tile: A ``vector<4x2xT>``, B ``vector<2x2xT>``,
    acc ``vector<2x2xf32>``."""
    if not bf16:
        return nvgpu.MmaSyncOp(acc.type, fa, fb, acc, ir.ArrayAttr.get(
            [ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for v in (MMA_M, MMA_N, MMA_K)])).result
    f32t = ir.F32Type.get()
    cs = [vector.ExtractOp(acc, [], [i, j]).result for i in range(2) for j in range(2)]
    struct = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
    d = nvvm.MmaOp(struct, ir.Attribute.parse(f"#nvvm.shape<m = {MMA_M}, n = {MMA_N}, k = {MMA_K}>"),
                   ir.Attribute.parse("#nvvm.mma_layout<row>"), ir.Attribute.parse("#nvvm.mma_layout<col>"),
                   _words(fa, range(4)), _words(fb, range(2)), cs,
                   multiplicandAPtxType=ir.Attribute.parse("#nvvm.mma_type<bf16>"),
                   multiplicandBPtxType=ir.Attribute.parse("#nvvm.mma_type<bf16>")).result
    parts = [llvm.ExtractValueOp(f32t, d, [i]).result for i in range(4)]
    return vector.FromElementsOp(ir.VectorType.get([2, 2], f32t), parts).result


def build_mma(t: MmaTiles = MmaTiles()):
    """The route's builder (:data:`relax_mlir.backends.gpu.matmul_routes.Builder`)."""
    MT, NT, BK = t.warp_m // MMA_M, t.warp_n // MMA_N, t.tile_k

    def build(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value], chain: list) -> None:
        a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
        batch = mm.name == "linalg.batch_matmul"
        rank = 3 if batch else 2
        out = chain[-1].opview.outputs[0] if chain else c
        et = element_type(a)
        bf16 = isinstance(et, ir.BF16Type)
        f32t = ir.F32Type.get()
        frag_a = ir.VectorType.get([4, 2], et)
        frag_b = ir.VectorType.get([2, 2], et)
        with mm.location:
            k_ = memref.DimOp(a, index(rank - 1)).result
            nb = memref.DimOp(a, index(0)).result if batch else index(1)
            # vector staging: rows a multiple of vec long and 16-byte (vec * 2) aligned bases
            fast_a = all_of(vector_view_conditions(a, t.vec, 2 * t.vec)
                            + [arith.CmpIOp(arith.CmpIPredicate.eq, arith.RemUIOp(k_, index(t.vec)).result,
                                            index(0)).result])
            fast_b = all_of(vector_view_conditions(b, t.vec, 2 * t.vec)
                            + [arith.CmpIOp(arith.CmpIPredicate.eq, arith.RemUIOp(n_, index(t.vec)).result,
                                            index(0)).result])
            launch = Launch((ceil_div(n_, t.block_n), ceil_div(m_, t.block_m), nb), (t.threads, 1, 1),
                            [2 * t.block_m * t.a_stride, 2 * BK * t.b_stride], shared_type=et)
            with launch:
                sa, sb = launch.shared
                tid = launch.thread_id[0]
                bx, by, bz = launch.block_id
                lead = [bz] if batch else []
                lane = arith.RemUIOp(tid, index(32)).result
                warp = arith.DivUIOp(tid, index(32)).result
                wm = arith.DivUIOp(warp, index(t.warps_n)).result
                wn = arith.RemUIOp(warp, index(t.warps_n)).result
                row0 = _mul(by, t.block_m)
                col0 = _mul(bx, t.block_n)
                # ldmatrix addressing (the same for A's m16k16 and B's k16n16 tiles): lane l
                # points at row l % 16, column (l / 16) * 8 of the tile
                lrow = arith.RemUIOp(lane, index(16)).result
                lcol = _mul(arith.DivUIOp(lane, index(16)).result, 8)
                a_base = _affine(lcol, arith.AddIOp(_mul(wm, t.warp_m), lrow).result, t.a_stride)
                b_base = arith.AddIOp(_mul(lrow, t.b_stride), arith.AddIOp(_mul(wn, t.warp_n), lcol).result).result

                zb = vector.BroadcastOp(frag_b, arith.ConstantOp(et, 0.0).result).result

                def k_step(kk: ir.Value, acc: list, base_a: ir.Value, base_b: ir.Value) -> list:
                    """One 16-deep step on the buffers' halves at ``base_a`` / ``base_b``."""
                    a0 = arith.AddIOp(arith.AddIOp(a_base, base_a).result, kk).result
                    fa = [nvgpu.LdMatrixOp(frag_a, sa, [_add(a0, i * MMA_M * t.a_stride)], False, 4).result
                          for i in range(MT)]
                    fb = []
                    kb = arith.AddIOp(_mul(kk, t.b_stride), base_b).result
                    for j in range(NT // 2):
                        pair = nvgpu.LdMatrixOp(frag_a, sb, [arith.AddIOp(_add(b_base, j * 2 * MMA_N), kb).result],
                                                True, 4).result
                        for h in range(2):   # rows 2h, 2h + 1 (n-D extract_strided_slice does not lower)
                            v = zb
                            for r in range(2):
                                v = vector.InsertOp(vector.ExtractOp(pair, [], [2 * h + r]).result, v, [], [r]).result
                            fb.append(v)
                    return [_mma(fa[i], fb[j], acc[i * NT + j], bf16) for i in range(MT) for j in range(NT)]

                stage_a = _Stager(a, lead, t.block_m, BK, t.a_stride, m_, k_, fast_a, tid, t)
                stage_b = _Stager(b, lead, BK, t.block_n, t.b_stride, k_, n_, fast_b, tid, t)
                a_size, b_size = t.block_m * t.a_stride, BK * t.b_stride

                def stage(k0: ir.Value, parity: ir.Value) -> None:
                    va, vb = stage_a.fetch(row0, k0), stage_b.fetch(k0, col0)
                    stage_a.put(va, sa, _mul(parity, a_size))
                    stage_b.put(vb, sb, _mul(parity, b_size))

                # double-buffered: block i is read from half i % 2 while block i + 1's loads are
                # in flight and then stored into the other half; one barrier per block
                when(_lt(index(0), k_), lambda: stage(index(0), index(0)))
                barrier()

                def k_block(kb: ir.Value, acc: list) -> list:
                    parity = arith.RemUIOp(kb, index(2)).result
                    k_next = _mul(arith.AddIOp(kb, index(1)).result, BK)
                    va, vb = stage_a.fetch(row0, k_next), stage_b.fetch(k_next, col0)
                    base_a, base_b = _mul(parity, a_size), _mul(parity, b_size)
                    for kk in range(0, BK, MMA_K):
                        acc = k_step(index(kk), acc, base_a, base_b)
                    other = arith.SubIOp(index(1), parity).result
                    stage_a.put(va, sa, _mul(other, a_size))
                    stage_b.put(vb, sb, _mul(other, b_size))
                    barrier()
                    return acc

                z = vector.BroadcastOp(ir.VectorType.get([2, 2], f32t), f32(0.0)).result
                acc = for_loop(index(0), ceil_div(k_, BK), index(1), [z] * (MT * NT), k_block)
                g = arith.DivUIOp(lane, index(4)).result
                t2 = _mul(arith.RemUIOp(lane, index(4)).result, 2)
                r_lane = arith.AddIOp(arith.AddIOp(row0, _mul(wm, t.warp_m)).result, g).result
                c_lane = arith.AddIOp(arith.AddIOp(col0, _mul(wn, t.warp_n)).result, t2).result
                for i in range(MT):
                    for j in range(NT):
                        for h in range(2):
                            for e in range(2):
                                r_, c_ = _add(r_lane, i * MMA_M + 8 * h), _add(c_lane, j * MMA_N + e)
                                v = vector.ExtractOp(acc[i * NT + j], [], [h, e]).result
                                when(arith.AndIOp(_lt(r_, m_), _lt(c_, n_)).result,
                                     lambda v=v, r_=r_, c_=c_: finish(v, lead + [r_, c_], c, fill_value, chain, out))

    return build
