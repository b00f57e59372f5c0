"""The TF32 tensor-core route of an f32 GPU matmul on cuda (issue 27: "TF32 only behind an
option"): ``nvgpu.mma.sync`` m16n8k8 with ``tf32Enabled`` (PTX
``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``, sm_80+), f32 accumulators.

The products use A and B at tf32 precision (10 mantissa bits): results differ from the f32
SIMT tiles by about 1e-3 relative, which is why the route is behind the matmul rule's
``f32_gemm`` knob (2; 1, the SIMT tiles, by default). Same shape as the f16 route
(:mod:`.mma`): a warp per 16 x 8 tile of C, 4 warps side by side along N, K by 8, each lane's
fragments loaded from global memory with bounds checks (out of range: 0; any M, N, K). PTX
tables (g = lane / 4, t = lane % 4): A ``a_i`` at row ``g + 8 (i % 2)``, column
``t + 4 (i / 2)``; B ``b_i`` at row ``t + 4 i``, column ``g``; C as the f16 route's. Each
operand is rounded to tf32 first (``nvvm.convert.float.to.tf32`` rna: PTX ``cvt.rna.tf32.f32``,
nearest, ties away from zero; the tensor cores would otherwise read the f32 bits' tf32 part, a
truncation), which relax-emulate-mma reproduces bit for bit.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, memref, nvgpu, nvvm, vector

from .launch_builder import Launch, ceil_div, f32, for_loop, index, load, when
from .matmul_routes import finish

WARPS = 4


def _lt(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.ult, a, b).result


def _add(a: ir.Value, k: int) -> ir.Value:
    return arith.AddIOp(a, index(k)).result if k else a


def build_tf32(warps: int = WARPS):
    """The route's builder (:data:`relax_mlir.backends.gpu.matmul_routes.Builder`)."""

    def build(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value], chain: list) -> None:
        a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
        batch = mm.name == "linalg.batch_matmul"
        rank = 3 if batch else 2
        out = chain[-1].opview.outputs[0] if chain else c
        f32t = ir.F32Type.get()
        with mm.location:
            k_ = memref.DimOp(a, index(rank - 1)).result
            nb = memref.DimOp(a, index(0)).result if batch else index(1)
            launch = Launch((ceil_div(n_, 8 * warps), ceil_div(m_, 16), nb), (32 * warps, 1, 1), [])
            with launch:
                tid = launch.thread_id[0]
                bx, by, bz = launch.block_id
                lead = [bz] if batch else []
                lane = arith.RemUIOp(tid, index(32)).result
                warp = arith.DivUIOp(tid, index(32)).result
                g = arith.DivUIOp(lane, index(4)).result
                t = arith.RemUIOp(lane, index(4)).result
                m0 = arith.MulIOp(by, index(16)).result
                n0 = arith.AddIOp(arith.MulIOp(bx, index(8 * warps)).result,
                                  arith.MulIOp(warp, index(8)).result).result
                row = arith.AddIOp(m0, g).result
                col_b = arith.AddIOp(n0, g).result
                zero = f32(0.0)

                def ld(buf: ir.Value, i: ir.Value, j: ir.Value, ni: ir.Value, nj: ir.Value) -> ir.Value:
                    ok = arith.AndIOp(_lt(i, ni), _lt(j, nj)).result
                    ii = arith.SelectOp(ok, i, index(0)).result
                    jj = arith.SelectOp(ok, j, index(0)).result
                    return arith.SelectOp(ok, load(buf, lead + [ii, jj]), zero).result

                rna = ir.Attribute.parse("#nvvm.fp_rnd_mode<rna>")
                i32 = ir.IntegerType.get_signless(32)

                def tf32(x: ir.Value) -> ir.Value:
                    return arith.BitcastOp(f32t, nvvm.ConvertFloatToTF32Op(i32, x, rnd=rna).result).result

                def step(kk: ir.Value, acc: list) -> list:
                    kt = arith.AddIOp(kk, t).result
                    av = [tf32(ld(a, _add(row, 8 * (i % 2)), _add(kt, 4 * (i // 2)), m_, k_)) for i in range(4)]
                    bv = [tf32(ld(b, _add(kt, 4 * i), col_b, k_, n_)) for i in range(2)]
                    fa = vector.FromElementsOp(ir.VectorType.get([4, 1], f32t), av).result
                    fb = vector.FromElementsOp(ir.VectorType.get([2, 1], f32t), bv).result
                    shape = ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for v in (16, 8, 8)])
                    return [nvgpu.MmaSyncOp(acc[0].type, fa, fb, acc[0], shape, tf32Enabled=ir.UnitAttr.get()).result]

                z = vector.BroadcastOp(ir.VectorType.get([2, 2], f32t), zero).result
                (acc,) = for_loop(index(0), k_, index(8), [z], step)
                col_c = arith.AddIOp(n0, arith.MulIOp(t, index(2)).result).result
                for i, dr in enumerate((0, 8)):
                    for e in range(2):
                        r_, c_ = _add(row, dr), _add(col_c, e)
                        v = vector.ExtractOp(acc, [], [i, e]).result
                        when(arith.AndIOp(_lt(r_, m_), _lt(c_, n_)).result,
                             lambda v=v, r_=r_, c_=c_: finish(v, lead + [r_, c_], c, fill_value, chain, out))

    return build
