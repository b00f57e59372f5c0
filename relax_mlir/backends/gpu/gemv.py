"""The GEMV route of a GPU matmul: few rows of C (decode's M = 1), B read once with
vector loads, the K sum split over subgroup lanes and reduced with ``gpu.shuffle``.

For few rows both other routes waste the memory system: the tiled launch idles most of a
64 x 64 tile, and the small one (a thread per element of C) walks K serially with scalar
loads. B is ``K x N`` row-major (the weights of ``relax.matmul(x, W)``), so a GEMV reads
B's rows once per row of A; the launch is organized so that those reads are wide and
coalesced:

* a workgroup owns ``lanes_n * vec`` consecutive columns of C (one column group) for one
  row of A (grid ``ceil(N / columns) x M x batch``);
* it has ``k_subgroups`` subgroups of ``subgroup`` lanes (the target's warp / subgroup
  width: ``gpu.shuffle``'s width must be exactly that); lane ``l`` of subgroup ``s`` takes
  the ``vec`` columns ``(l % lanes_n) * vec ...`` and every ``k`` congruent to
  ``s * (subgroup / lanes_n) + l / lanes_n`` modulo ``k_subgroups * subgroup / lanes_n``:
  per k step one ``vector<vec x T>`` load of B (128 bits for 32-bit types; the lanes of a
  subgroup read ``subgroup / lanes_n`` whole row segments of ``lanes_n * vec`` elements) and
  one scalar of A, accumulated in f32 registers with multiply-adds (``fastmath<contract>``);
* the lanes of one column slot are summed with ``gpu.shuffle xor`` (offsets ``lanes_n``,
  ``2 * lanes_n``, ...: MLIR 22 lowers it to ``nvvm.shfl.sync bfly`` and to
  ``spirv.GroupNonUniformShuffleXor``; ``gpu.subgroup_reduce`` on f32 does not lower to
  NVVM); with several subgroups the partial sums meet in workgroup memory after one
  ``gpu.barrier`` and the first subgroup adds them;
* the fill value (or C's old value), the epilogue (bias, activation) and the one store
  per element are the matmul's (:func:`relax_mlir.backends.gpu.matmul_routes.finish`).

The route's guard (:func:`gemv_guard`) holds when M is at most ``rows``, N is a multiple
of ``vec`` and B is aligned for ``vec``-wide loads (its pointer, and a view's offset and
row stride); otherwise the next route runs. Every lane runs every shuffle (the loop trip
counts differ, the shuffles come after the loop); lanes past N read column 0 and store
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mlir import ir
from mlir.dialects import arith, gpu, memref, vector

from .launch_builder import (CONTRACT, Launch, all_of, barrier, ceil_div, element_type, f32, for_loop, index,
                             is_zero_mod, load, store, to_f32, vector_view_conditions, when)
from .matmul_routes import Guard, finish



@dataclass(frozen=True)
class GemvTiles:
    """The GEMV launch's shape (the knobs of the targets' matmul rule)."""

    subgroup: int = 32    # lanes per subgroup: the target's warp / subgroup width
    lanes_n: int = 8      # lanes along N per subgroup (each ``vec`` columns); the rest along K
    k_subgroups: int = 4  # subgroups per workgroup, each a share of K (summed in workgroup memory)
    rows: int = 4         # the route runs for M <= rows
    vec: int = 4          # columns per lane: one vector<vec x T> load of B per k step

    @property
    def threads(self) -> int:
        return self.subgroup * self.k_subgroups

    @property
    def columns(self) -> int:
        return self.lanes_n * self.vec

    def check(self) -> None:
        def pow2(v: int) -> bool:
            return v >= 1 and not v & (v - 1)

        if not all(pow2(v) for v in (self.subgroup, self.lanes_n, self.k_subgroups, self.vec)):
            raise ValueError(f"GEMV tiles {self}: subgroup, lanes_n, k_subgroups and vec must be powers of two")
        if self.lanes_n > self.subgroup:
            raise ValueError(f"GEMV tiles {self}: lanes_n exceeds the subgroup")
        if self.rows < 1:
            raise ValueError(f"GEMV tiles {self}: rows must be positive")


def gemv_guard(t: GemvTiles) -> Guard:
    """M <= rows, N % vec == 0 and B aligned for vec-wide loads."""
    def guard(mm: ir.Operation, m_: ir.Value, n_: ir.Value) -> ir.Value:
        b = mm.operands[1]
        nbytes = t.vec * ir.FloatType(element_type(b)).width // 8
        few = arith.CmpIOp(arith.CmpIPredicate.ule, m_, index(t.rows)).result
        return all_of([few, is_zero_mod(n_, t.vec), *vector_view_conditions(b, t.vec, nbytes)])
    return guard


def _lt(x: ir.Value, y: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.ult, x, y).result


def build_gemv(t: GemvTiles):
    """The route's builder (:data:`relax_mlir.backends.gpu.matmul_routes.Builder`)."""
    t.check()

    def build(mm: ir.Operation, m_: ir.Value, n_: ir.Value, fill_value: Optional[ir.Value], chain: list) -> None:
        a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
        batch = mm.name == "linalg.batch_matmul"
        rank = 3 if batch else 2
        out = chain[-1].opview.outputs[0] if chain else c
        S, L, KW, V = t.subgroup, t.lanes_n, t.k_subgroups, t.vec
        KS = S // L                       # lanes along K in one subgroup
        bt = element_type(b)
        bytes_ = V * ir.FloatType(bt).width // 8
        contract = ir.Attribute.parse(CONTRACT)
        vt = ir.VectorType.get([V], bt)
        i32 = ir.IntegerType.get_signless(32)
        with mm.location:
            k_ = memref.DimOp(a, index(rank - 1)).result
            nb = memref.DimOp(a, index(0)).result if batch else index(1)
            launch = Launch((ceil_div(n_, t.columns), m_, nb), (t.threads, 1, 1), [KW * t.columns] if KW > 1 else [])
            with launch:
                tid = launch.thread_id[0]
                bx, row, bz = launch.block_id
                lead = [bz] if batch else []
                lane = arith.RemUIOp(tid, index(S)).result
                sg = arith.DivUIOp(tid, index(S)).result
                ln = arith.RemUIOp(lane, index(L)).result
                lk = arith.DivUIOp(lane, index(L)).result
                slot = arith.MulIOp(ln, index(V)).result               # the lane's first column in the group
                col = arith.AddIOp(arith.MulIOp(bx, index(t.columns)).result, slot).result
                ok = _lt(col, n_)
                col_in = arith.SelectOp(ok, col, index(0)).result     # lanes past N read column 0
                first = arith.AddIOp(arith.MulIOp(sg, index(KS)).result, lk).result

                def step(kk: ir.Value, acc: list[ir.Value]) -> list[ir.Value]:
                    av = to_f32(load(a, lead + [row, kk]))
                    bv = to_f32(vector.LoadOp(vt, b, lead + [kk, col_in], alignment=bytes_).result)
                    out_ = []
                    for j in range(V):
                        p = arith.MulFOp(av, vector.ExtractOp(bv, [], [j]).result, fastmath=contract).result
                        out_.append(arith.AddFOp(acc[j], p, fastmath=contract).result)
                    return out_

                acc = for_loop(first, k_, index(KS * KW), [f32(0.0)] * V, step)
                width = arith.ConstantOp(i32, S).result
                off = L
                while off < S:   # the KS lanes of a column slot: lanes ln, ln + L, ln + 2L, ...
                    o = arith.ConstantOp(i32, off).result
                    acc = [arith.AddFOp(v, gpu.ShuffleOp(v, o, width, gpu.ShuffleMode.XOR).results[0]).result
                           for v in acc]
                    off *= 2
                head = arith.CmpIOp(arith.CmpIPredicate.eq, lk, index(0)).result

                def store_all(vals: list[ir.Value]) -> None:
                    for j in range(V):
                        finish(vals[j], lead + [row, arith.AddIOp(col, index(j)).result], c, fill_value, chain, out)

                if KW == 1:
                    when(arith.AndIOp(head, ok).result, lambda: store_all(acc))
                    return
                sh = launch.shared[0]
                base = arith.AddIOp(arith.MulIOp(sg, index(t.columns)).result, slot).result

                def put() -> None:
                    for j in range(V):
                        store(acc[j], sh, [arith.AddIOp(base, index(j)).result])
                when(head, put)
                barrier()

                def total() -> None:
                    vals = []
                    for j in range(V):
                        v = load(sh, [arith.AddIOp(slot, index(j)).result])
                        for s in range(1, KW):
                            v = arith.AddFOp(v, load(sh, [arith.AddIOp(slot, index(s * t.columns + j)).result])).result
                        vals.append(v)
                    store_all(vals)
                first_sg = arith.CmpIOp(arith.CmpIPredicate.eq, sg, index(0)).result
                when(arith.AndIOp(arith.AndIOp(first_sg, head).result, ok).result, total)

    return build
