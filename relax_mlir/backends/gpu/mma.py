"""The tensor-core route of an f16 GPU matmul on cuda: ``nvgpu.mma.sync`` (m16n8k16, f16
inputs, f32 accumulators; PTX ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``, sm_80+).

A warp owns a 16 x 8 tile of C; a workgroup has ``warps`` warps side by side along N
(grid ``ceil(N / (8 * warps)) x ceil(M / 16) x batch``). K advances by 16: each lane loads
its fragments of A (4 pairs of f16: rows ``g`` and ``g + 8``, columns ``2t, 2t + 1`` and
``+ 8``; ``g = lane / 4``, ``t = lane % 4``) and of B (2 pairs: rows ``2t, 2t + 1`` and
``+ 8``, column ``g``) straight from global memory, out-of-range elements read as 0 (any M,
N, K), and one ``mma.sync`` accumulates the 16 x 8 x 16 product. Each lane then holds C
at rows ``g, g + 8`` and columns ``2t, 2t + 1``: the fill, the epilogue and the stores
are the matmul's (:func:`relax_mlir.backends.gpu.matmul_routes.finish`), bounds-checked.

No shared memory and no ``ldmatrix`` yet: the fragments are plain 16-bit loads (a warp reads
each A row segment of 16 bytes once per 8 columns of C). Numerics can only be checked on a
device (test_gpu_rules' tensor-core test runs with RELAX_MLIR_TEST_TENSOR_CORES=1 in
bench/gpu_session.sh), so the route is behind the matmul rule's ``f16_gemm`` knob (2; 1, the SIMT
tiles, by default).
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, memref, nvgpu, vector

from .launch_builder import Launch, ceil_div, element_type, f32, for_loop, index, load, when
from .matmul_routes import Guard, finish

WARPS = 4


def mma_guard(min_size: int) -> Guard:
    """M and N both at least ``min_size`` (as the GEMM tiles' route)."""
    def guard(mm: ir.Operation, m_: ir.Value, n_: ir.Value) -> ir.Value:
        big = lambda v: arith.CmpIOp(arith.CmpIPredicate.uge, v, index(min_size)).result  # noqa: E731
        return arith.AndIOp(big(m_), big(n_)).result
    return guard


def _lt(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.ult, a, b).result


def _add(a: ir.Value, k: int) -> ir.Value:
    return arith.AddIOp(a, index(k)).result if k else a


def build_mma(warps: int = WARPS):
    """The route's builder (:data:`relax_mlir.backends.gpu.matmul_routes.Builder`)."""

    def build(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value], chain: list) -> None:
        a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
        batch = mm.name == "linalg.batch_matmul"
        rank = 3 if batch else 2
        out = chain[-1].opview.outputs[0] if chain else c
        f16 = element_type(a)
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
                t2 = arith.MulIOp(arith.RemUIOp(lane, index(4)).result, index(2)).result
                m0 = arith.MulIOp(by, index(16)).result
                n0 = arith.AddIOp(arith.MulIOp(bx, index(8 * warps)).result,
                                  arith.MulIOp(warp, index(8)).result).result
                row = arith.AddIOp(m0, g).result
                col_b = arith.AddIOp(n0, g).result
                zero = arith.ConstantOp(f16, 0.0).result

                def ld(buf: ir.Value, i: ir.Value, j: ir.Value, ni: ir.Value, nj: ir.Value) -> ir.Value:
                    ok = arith.AndIOp(_lt(i, ni), _lt(j, nj)).result
                    ii = arith.SelectOp(ok, i, index(0)).result
                    jj = arith.SelectOp(ok, j, index(0)).result
                    return arith.SelectOp(ok, load(buf, lead + [ii, jj]), zero).result

                def step(kk: ir.Value, acc: list) -> list:
                    kc = arith.AddIOp(kk, t2).result
                    av = []
                    for dr, dk in ((0, 0), (8, 0), (0, 8), (8, 8)):
                        for e in range(2):
                            av.append(ld(a, _add(row, dr), _add(kc, dk + e), m_, k_))
                    bv = []
                    for dk in (0, 8):
                        for e in range(2):
                            bv.append(ld(b, _add(kc, dk + e), col_b, k_, n_))
                    fa = vector.FromElementsOp(ir.VectorType.get([4, 2], f16), av).result
                    fb = vector.FromElementsOp(ir.VectorType.get([2, 2], f16), bv).result
                    cv = acc[0]
                    r = nvgpu.MmaSyncOp(cv.type, fa, fb, cv, ir.ArrayAttr.get(
                        [ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for v in (16, 8, 16)])).result
                    return [r]

                z = vector.BroadcastOp(ir.VectorType.get([2, 2], f32t), f32(0.0)).result
                (acc,) = for_loop(index(0), k_, index(16), [z], step)
                col_c = arith.AddIOp(n0, t2).result
                for i, dr in enumerate((0, 8)):
                    for e in range(2):
                        r_, c_ = _add(row, dr), _add(col_c, e)
                        v = vector.ExtractOp(acc, [], [i, e]).result
                        when(arith.AndIOp(_lt(r_, m_), _lt(c_, n_)).result,
                             lambda v=v, r_=r_, c_=c_: finish(v, lead + [r_, c_], c, fill_value, chain, out))

    return build
