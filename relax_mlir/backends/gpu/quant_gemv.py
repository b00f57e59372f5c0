"""The quantized GEMV: ``relax.quantized_matmul`` kernels (GGUF Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
Q4_K, Q5_K, Q6_K rows and f16 / bf16 weights kept as stored, any elementwise prologue on x fused in) as one launch
that reads each weight block once.

The generic kernel (relax_mlir/ops/quant.py) dequantizes every element where it is read:
per weight three byte loads (the block's f16 scale, twice, and the quant) and a
conversion, and the GPU took it as a row reduction (a workgroup, or a thread, per output
element). Here the weight's blocks are what the launch is organized around, as in
llama.cpp's ``mul_mat_vec_q``:

* a subgroup of ``subgroup`` lanes owns one output column ``n`` (one weight row) for every
  row of x (grid ``ceil(N / subgroups) x M``, each dimension capped at 65535: column groups
  and rows past it stride);
* ``lanes_per_block`` lanes share a 32-element block: each loads the block's f16 scale
  (and Q4_1's minimum) once, and its ``32 / lanes_per_block`` quants (Q8_0: consecutive
  signed bytes; Q4: ``16 / lanes_per_block`` bytes whose low and high nibbles are elements
  ``j`` and ``j + 16``); the subgroup takes ``subgroup / lanes_per_block`` blocks per step;
* a lane sums ``x_j * q_j`` (and ``x_j`` for Q4_1's minimum) in f32 and scales once per
  block: ``d * sum(x q)`` (Q4_0: ``q - 8``; Q4_1: ``+ m * sum(x)``);
* the lanes are summed with ``gpu.shuffle xor`` (all ``subgroup`` lanes), lane 0 adds the
  fill value, applies the elementwise epilogue that relax-fuse-ops fused after the matmul on
  the GPU targets (``quant-epilogue``: the residual add, a bias, an activation; generics
  reading C at the output point, as the f32 matmul routes take them) and stores.

On cuda the quant bytes come in vector loads as wide as the block layout's alignment allows
(Q4_1: 4-byte words; Q8_0, Q4_0: their 2-byte alignment), which NVPTX emits as
``ld.global.v2/v4.u8`` or ``ld.global.u32``; on vulkan the bytes are scalar loads (8-bit
storage is emulated on 32-bit words by the SPIR-V lowering). x's prologue (a fused
``silu(gate) * up``) is the part of the generic's body that does not read the weight: it is
cloned per element of x.

Q5_0, Q5_1 and the K-quants (:data:`RUN_FORMATS`) share the launch with another lane loop
(:func:`_run_sums`): a lane's step is the runs of consecutive weights whose quants share bytes
(a byte's two nibbles; Q6_K's four 2-bit high fields), each run scaled once by its (sub-)block's
decoded scale and minimum; :func:`decode_runs` is the one place these formats are decoded on the
GPU side (the GEMM's stager calls it too).

f16 and bf16 rows (2 bytes per element, no block: :func:`build_half`) are read as 32-bit
words: a subgroup per output column, each lane loading ``halves`` consecutive elements at
once (8 = a ``vector<4xi32>``, 128 bits: ``ld.global.v4.b32`` / a 16-byte SPIR-V load;
fewer where K's alignment allows no more; odd K: 16-bit loads), every ``subgroup``-th such
chunk, the conversion on the integer words (f16: the word's halves as f16, widened; bf16:
the half shifted into an f32's high 16 bits, so no bf16 type is needed, which the pinned
SPIR-V target lacks), f32 accumulation, the same shuffles. With ``halves`` a multiple of 4,
x's inputs come in ``vector<4xf32>`` loads too (the prologue then runs per element on the
extracted values). ``columns`` output columns per subgroup share those x values. The weight's
i8 buffer is viewed as words outside the launch (``memref.view``), behind a run-time guard
that it (and x, for its vector loads) is aligned for the loads (e.g. a ``relax.view`` at an
odd byte offset): otherwise the generic kernel runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from .launch_builder import (CONTRACT, MAX_GRID, Launch, all_of, f32, flat_body, for_loop, index, indexing_maps, load,
                             vector_view_conditions, when)
from .matmul_routes import finish
from .tile_matmul import FLOAT_TYPES, _epilogue, _erase_if_dead

#: format -> (bytes per 32-element block, offset of the quants, has a minimum)
BLOCKS = {"q8_0": (34, 2, False), "q4_0": (18, 2, False), "q4_1": (20, 4, True)}
#: formats decoded in runs of consecutive elements (:func:`decode_runs`, shared with the GEMM's
#: stager): format -> (elements per block, bytes per block, longest run one scale covers,
#: runs whose quants share bytes (the nibbles / 2-bit fields of one byte), their distance)
RUN_FORMATS = {"q5_0": (32, 22, 16, 2, 16), "q5_1": (32, 24, 16, 2, 16),
               "q4_k": (256, 144, 32, 2, 32), "q5_k": (256, 176, 32, 2, 32), "q6_k": (256, 210, 16, 4, 32)}
#: 16-bit float formats (2 bytes per element, no block; bf16: the high half of an f32)
HALF_FORMATS = ("f16", "bf16")
FORMATS = tuple(BLOCKS) + tuple(RUN_FORMATS) + HALF_FORMATS


@dataclass(frozen=True)
class QuantTiles:
    """The launch's shape (the knobs of :class:`relax_mlir.backends.gpu.rules.QuantMatmul`)."""

    subgroup: int = 32         # lanes per subgroup (the shuffle width)
    lanes_per_block: int = 4   # lanes sharing one 32-element block
    subgroups: int = 4         # subgroups per workgroup, one output column each
    wide: bool = False         # vector loads of the quant bytes (cuda)
    halves: int = 8            # f16 / bf16: elements per lane load (at most what K's alignment allows)
    columns: int = 1           # f16 / bf16: output columns per subgroup (x's values shared)

    @property
    def threads(self) -> int:
        return self.subgroup * self.subgroups


@dataclass
class _Match:
    fill: Optional[ir.Operation]
    gen: ir.Operation
    w: ir.Value
    fmt: str
    x_value: ir.Value        # the body value multiplied with the dequantized weight
    chain: list = field(default_factory=list)   # the elementwise epilogue, applied at the store

    @property
    def out(self) -> ir.Value:
        """The buffer the launch stores into: the epilogue's last output, else C."""
        return (self.chain[-1] if self.chain else self.gen).opview.outputs[0]

    def ops(self) -> list[ir.Operation]:
        """The fill, the generic and the epilogue, in program order."""
        return ([self.fill] if self.fill is not None else []) + [self.gen] + self.chain

    def locals(self) -> list[ir.Value]:
        """Buffers of this kernel that only these ops use (C and the epilogue's intermediates)."""
        return [o.opview.outputs[0] for o in ([self.gen] + self.chain)[:-1]] if self.chain else []


def _kernel_op(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes["relax.kernel_op"]).value if "relax.kernel_op" in fn.attributes else ""


def _producer(v: ir.Value) -> Optional[ir.Operation]:
    return None if isinstance(v.owner, ir.Block) else v.owner


def _deps(body: ir.Block) -> list:
    """(value, what it depends on) for every result of the body's ops, in order: 'arg' (a
    block argument), 'index' (linalg.index), 'load' (a buffer read)."""
    known: list = [(a, {"arg"}) for a in body.arguments]

    def of(v: ir.Value) -> set:
        for a, d in known:
            if a == v:
                return d
        return set()   # defined outside the body

    for o in body.operations:
        o = o.operation
        d = {"index"} if o.name == "linalg.index" else {"load"} if o.name == "memref.load" else set()
        for v in o.operands:
            d = d | of(v)
        known.extend((r, d) for r in o.results)
    return known


def _lookup(pairs: list, v: ir.Value):
    for a, d in pairs:
        if a == v:
            return d
    return set()


def match(fn: ir.Operation) -> Optional[_Match]:
    """The quantized matmul of bufferized kernel ``fn`` when it is one this launch takes:
    [a fill of C,] one generic over (m, n, k) with x read at (m, k), C written at (m, n) and
    a body ``out + x_value * dequantized(w[n, ...])``, w an i8 (N, RB) buffer of a format of
    :data:`BLOCKS` (known by its bytes per block), [then an elementwise epilogue on C that
    the launch applies at the store: every op after the generic must be part of it]."""
    if "quantized_matmul" not in _kernel_op(fn):
        return None
    ops = [o.operation for o in fn.regions[0].blocks[0].operations]
    work = [o for o in ops if o.name.startswith(("linalg.", "memref.copy", "memref.store", "scf.", "gpu."))]
    first = 1 if work and work[0].name == "linalg.fill" else 0
    if len(work) <= first or work[first].name != "linalg.generic":
        return None
    fill, gen = (work[0] if first else None), work[first]
    g = gen.opview
    if not flat_body(gen) or len(g.outputs) != 1:
        return None
    its = [str(t) for t in g.iterator_types]
    if its != ["#linalg.iterator_type<parallel>"] * 2 + ["#linalg.iterator_type<reduction>"]:
        return None
    maps = indexing_maps(gen)
    xmap = ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(2)])
    omap = ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1)])
    if maps[-1] != omap or any(m != xmap for m in maps[:-1]):
        return None
    c = g.outputs[0]
    if fill is not None and (fill.operands[1] != c or not isinstance(fill.operands[0].type, ir.F32Type)):
        return None
    if not isinstance(ir.MemRefType(c.type).element_type, ir.F32Type):
        return None
    chain = _epilogue(work, first, c, 2, fill, FLOAT_TYPES)
    if len(chain) != len(work) - first - 1:
        return None
    if not all(str(ir.MemRefType(v.type).element_type) in FLOAT_TYPES for v in g.inputs):
        return None   # (x f16 / bf16: the body widens it, the launch loads it as stored)
    body = gen.regions[0].blocks[0]
    y = list(body.operations)[-1].operation
    acc = _producer(y.operands[0])
    if acc is None or acc.name != "arith.addf":
        return None
    out_arg = body.arguments[len(body.arguments) - 1]
    others = [v for v in acc.operands if v != out_arg]
    if len(others) != 1 or len(acc.operands) != 2 or len(list(out_arg.uses)) != 1:
        return None
    prod = _producer(others[0])
    if prod is None or prod.name != "arith.mulf":
        return None
    deps = _deps(body)
    sides = [(v, _lookup(deps, v)) for v in prod.operands]
    xs = [v for v, r in sides if r <= {"arg"}]
    ws = [v for v, r in sides if "load" in r and "arg" not in r]
    if len(xs) != 1 or len(ws) != 1:
        return None
    loads = [o.operation for o in body.operations if o.operation.name == "memref.load"]
    if not loads or any(o.operands[0] != loads[0].operands[0] for o in loads):
        return None
    w = loads[0].operands[0]
    wt = ir.MemRefType(w.type)
    xt = ir.MemRefType(g.inputs[0].type)
    if str(wt.element_type) != "i8" or wt.rank != 2 or not wt.has_static_shape or xt.shape[1] == ir.ShapedType.get_dynamic_size():
        return None
    k = xt.shape[1]
    if ir.MemRefType(c.type).shape[1] != wt.shape[0]:
        return None
    if wt.shape[1] == 2 * k and _block_size(body) is None:
        if wt.get_strides_and_offset()[0] != [wt.shape[1], 1]:   # rows read as one run of words
            return None
        fmt = _half_format(body, wt.shape[0])
        return _Match(fill, gen, w, fmt, xs[0], chain) if fmt is not None else None
    size = _block_size(body)
    if size is None or k % size:
        return None
    per_block = wt.shape[1] * size // k if wt.shape[1] * size % k == 0 else 0
    sizes = {f: (32, nb) for f, (nb, _, _) in BLOCKS.items()}
    sizes.update({f: v[:2] for f, v in RUN_FORMATS.items()})
    fmt = next((f for f, sb in sizes.items() if sb == (size, per_block)), None)
    if fmt is None:
        return None
    return _Match(fill, gen, w, fmt, xs[0], chain)


def _const(v: ir.Value) -> Optional[int]:
    op = _producer(v)
    if op is None or op.name != "arith.constant" or not isinstance(op.attributes["value"], ir.IntegerAttr):
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


def _block_size(body: ir.Block) -> Optional[int]:
    """The block size the dequantizer divides k (linalg.index 2) by (32, or 256 for the
    K-quants, whose bytes per 32 elements can equal a 32-block format's)."""
    for o in body.operations:
        o = o.operation
        if o.name != "arith.divui":
            continue
        src = _producer(o.operands[0])
        if src is not None and src.name == "linalg.index" and ir.IntegerAttr(src.attributes["dim"]).value == 2:
            return _const(o.operands[1])
    return None


def _half_format(body: ir.Block, n_rows: int) -> Optional[str]:
    """f16 or bf16: how the dequantizer of a 2-byte-per-element kernel makes its float (an
    i16 bitcast to f16; an i32 bitcast to f32, the bf16 bits shifted into its high half),
    the weight read at row ``linalg.index 1`` (folded to 0 when there is one row). Only
    bitcasts of the weight's bytes count (an expanded ``exp`` of x's prologue has its own)."""
    kinds = set()
    deps = _deps(body)
    for o in body.operations:
        o = o.operation
        if o.name == "memref.load":
            src = _producer(o.operands[1])
            row_index = (src is not None and src.name == "linalg.index"
                         and ir.IntegerAttr(src.attributes["dim"]).value == 1)
            if not row_index and not (n_rows == 1 and _const(o.operands[1]) == 0):
                return None
        if o.name == "arith.bitcast" and "load" in _lookup(deps, o.operands[0]):
            t = o.results[0].type
            kinds.add("f16" if isinstance(t, ir.F16Type) else "bf16" if isinstance(t, ir.F32Type) else "?")
    return kinds.pop() if len(kinds) == 1 and kinds <= {"f16", "bf16"} else None


def kernel_format(fn: ir.Operation) -> Optional[str]:
    """The weight format of a quantized-matmul kernel this launch takes, else None."""
    m = match(fn)
    return m.fmt if m is not None else None


def _x_at(m: _Match, row: ir.Value, k: ir.Value, inputs: Optional[list] = None) -> ir.Value:
    """x_value at (row, k): the inputs loaded there (or ``inputs``, their values there) and
    the body's x-side ops cloned."""
    g = m.gen.opview
    body = m.gen.regions[0].blocks[0]
    vals = inputs if inputs is not None else [load(v, [row, k]) for v in g.inputs]
    env: list = list(zip(list(body.arguments)[:-1], vals))

    def look(v):
        for a, b in env:
            if a == v:
                return b
        return v

    if isinstance(m.x_value.owner, ir.Block):
        return look(m.x_value)
    need = []
    stack = [m.x_value]
    while stack:
        v = stack.pop()
        op = _producer(v)
        if op is None or op.parent is None or op.parent.name != "linalg.generic":
            continue
        if not any(op == o for o in need):
            need.append(op)
            stack.extend(op.operands)
    ip = ir.InsertionPoint.current
    for o in body.operations:
        o = o.operation
        if not any(o == n for n in need):
            continue
        new = o.clone(ip=ip)
        for j, v in enumerate(o.operands):
            new.operands[j] = look(v)
        env.extend(zip(o.results, new.results))
    return look(m.x_value)


def _i32(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(32), v).result


def _bytes(w: ir.Value, row: ir.Value, off: ir.Value, count: int, align: int, wide: bool) -> list[ir.Value]:
    """``count`` consecutive bytes of w[row, off...] as i8 values: one vector load per
    ``align`` bytes when ``wide`` (NVPTX: ld.global.v*.u8 / u16 / u32), else scalar loads."""
    i8 = ir.IntegerType.get_signless(8)
    if not wide or align < 2:
        return [load(w, [row, arith.AddIOp(off, index(j)).result]) for j in range(count)]
    out = []
    for s in range(0, count, align):
        vt = ir.VectorType.get([align], i8)
        v = vector.LoadOp(vt, w, [row, arith.AddIOp(off, index(s)).result], alignment=align).result
        out.extend(vector.ExtractOp(v, [], [j]).result for j in range(align))
    return out


def _f16(lo: ir.Value, hi: ir.Value) -> ir.Value:
    i32t, i16 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(16)
    a = arith.ExtUIOp(i32t, lo).result
    b = arith.ShLIOp(arith.ExtUIOp(i32t, hi).result, _i32(8)).result
    h = arith.TruncIOp(i16, arith.OrIOp(a, b).result).result
    return arith.ExtFOp(ir.F32Type.get(), arith.BitcastOp(ir.F16Type.get(), h).result).result


def _column_groups(launch: Launch, groups: int, body) -> None:
    """``body(group)`` for the workgroup's group of output columns: its x block index, or,
    past the grid's limit of :data:`MAX_GRID` workgroups (a 152k-row lm head at one column
    per workgroup), every grid-th group from it."""
    if groups <= MAX_GRID:
        body(launch.block_id[0])
        return
    for_loop(launch.block_id[0], index(groups), launch.grid_dim[0], [], lambda g, _: body(g) or [])


def build(fn: ir.Operation, m: _Match, t: QuantTiles) -> None:
    """Replace the fill and generic of ``m`` in kernel ``fn`` by the launch."""
    if m.fmt in HALF_FORMATS:
        return build_half(fn, m, t)
    if m.fmt in RUN_FORMATS:
        return _launch(m, t, _run_sums(m, t))
    return _launch(m, t, _block_sums(m, t))


def _block_sums(m: _Match, t: QuantTiles):
    """Q8_0 / Q4: per lane, ``32 / lanes_per_block`` elements of every ``subgroup /
    lanes_per_block``-th block (Q4: the low and high nibbles of its bytes, elements j and
    j + 16), scaled once per block."""
    nbytes, qoff, has_min = BLOCKS[m.fmt]
    S, L = t.subgroup, t.lanes_per_block
    per_lane = 32 // L                      # elements of a block per lane
    q4 = m.fmt != "q8_0"
    nq = per_lane // 2 if q4 else per_lane  # quant bytes per lane
    align = min(nq, 4 if m.fmt == "q4_1" else 2)
    contract = ir.Attribute.parse(CONTRACT)
    nblocks = ir.MemRefType(m.w.type).shape[1] // nbytes
    i32t, f32t = ir.IntegerType.get_signless(32), ir.F32Type.get()

    def setup(nn: ir.Value, lane: ir.Value):
        part = arith.RemUIOp(lane, index(L)).result
        b0 = arith.DivUIOp(lane, index(L)).result
        first_q = arith.MulIOp(part, index(nq)).result      # the lane's first quant byte in the block

        def sums(row: ir.Value) -> ir.Value:
            def block(blk: ir.Value, acc: list) -> list:
                base = arith.MulIOp(blk, index(nbytes)).result
                d0, d1 = _bytes(m.w, nn, base, 2, 2, t.wide)
                d = _f16(d0, d1)
                qs = _bytes(m.w, nn, arith.AddIOp(arith.AddIOp(base, index(qoff)).result, first_q).result,
                            nq, align, t.wide)
                k0 = arith.AddIOp(arith.MulIOp(blk, index(32)).result, first_q).result
                s, sx = f32(0.0), f32(0.0)
                for j, qb in enumerate(qs):
                    if q4:
                        u = arith.ExtUIOp(i32t, qb).result
                        pairs = [(arith.AndIOp(u, _i32(15)).result, j),
                                 (arith.ShRUIOp(u, _i32(4)).result, j + 16)]
                    else:
                        pairs = [(arith.ExtSIOp(i32t, qb).result, j)]
                    for q, e in pairs:
                        if m.fmt == "q4_0":
                            q = arith.SubIOp(q, _i32(8)).result
                        qf = arith.SIToFPOp(f32t, q).result
                        xv = _x_at(m, row, arith.AddIOp(k0, index(e)).result)
                        s = arith.AddFOp(s, arith.MulFOp(xv, qf, fastmath=contract).result,
                                         fastmath=contract).result
                        if has_min:
                            sx = arith.AddFOp(sx, xv).result
                v = arith.MulFOp(d, s, fastmath=contract).result
                if has_min:
                    m0, m1 = _bytes(m.w, nn, arith.AddIOp(base, index(2)).result, 2, 2, t.wide)
                    v = arith.AddFOp(v, arith.MulFOp(_f16(m0, m1), sx, fastmath=contract).result,
                                     fastmath=contract).result
                return [arith.AddFOp(acc[0], v).result]

            (acc,) = for_loop(b0, index(nblocks), index(S // L), [f32(0.0)], block)
            return acc
        return sums
    return setup


def run_length(fmt: str, lanes_per_block: int) -> int:
    """Elements per lane and run of a :data:`RUN_FORMATS` GEMV: 32 / lanes_per_block, at most
    the run one scale covers (Q5_0 / Q5_1: half a block; Q6_K: its 16-element groups)."""
    return min(32 // lanes_per_block, RUN_FORMATS[fmt][2])


def _run_sums(m: _Match, t: QuantTiles):
    """Q5_0, Q5_1, Q4_K, Q5_K, Q6_K: lane ``l`` takes steps l, l + subgroup, ...; a step is
    the runs of :func:`run_length` elements whose quants share bytes (Q5: elements j and
    j + 16, the two nibbles; Q4_K / Q5_K: the same positions of sub-blocks 2c and 2c + 1; Q6_K:
    of the four 32-element groups of a 128 half), so each quant byte is loaded once. Per run
    the lane decodes the scale (and minimum) once (:func:`decode_runs`), sums ``x * q`` (and
    ``x``) over its elements, then adds ``scale * sum(x q) + min * sum(x)``."""
    S = t.subgroup
    R = run_length(m.fmt, t.lanes_per_block)
    _, _, _, pieces, stride = RUN_FORMATS[m.fmt]
    per = stride // R        # steps per span of ``pieces * stride`` elements
    k_ = ir.MemRefType(m.gen.opview.inputs[0].type).shape[1]
    contract = ir.Attribute.parse(CONTRACT)
    f32t = ir.F32Type.get()

    def setup(nn: ir.Value, lane: ir.Value):
        def sums(row: ir.Value) -> ir.Value:
            def step(r: ir.Value, acc: list) -> list:
                span = arith.MulIOp(arith.DivUIOp(r, index(per)).result, index(pieces * stride)).result
                k0 = arith.AddIOp(span, arith.MulIOp(arith.RemUIOp(r, index(per)).result, index(R)).result).result
                total = acc[0]
                for p, run in enumerate(decode_runs(m.fmt, m.w, nn, k0, R, t.wide, pieces)):
                    kp = arith.AddIOp(k0, index(p * stride)).result if p else k0
                    s, sx = f32(0.0), f32(0.0)
                    for e, q in enumerate(run.qs):
                        xv = _x_at(m, row, arith.AddIOp(kp, index(e)).result)
                        qf = arith.SIToFPOp(f32t, q).result
                        s = arith.AddFOp(s, arith.MulFOp(xv, qf, fastmath=contract).result, fastmath=contract).result
                        if run.offset is not None:
                            sx = arith.AddFOp(sx, xv).result
                    v = arith.MulFOp(run.scale, s, fastmath=contract).result
                    if run.offset is not None:
                        v = arith.AddFOp(v, arith.MulFOp(run.offset, sx, fastmath=contract).result,
                                         fastmath=contract).result
                    total = arith.AddFOp(total, v).result
                return [total]

            (acc,) = for_loop(lane, index(k_ // (R * pieces)), index(S), [f32(0.0)], step)
            return acc
        return sums
    return setup


def _launch(m: _Match, t: QuantTiles, lane_sums) -> None:
    """The GEMV launch of a block format: a subgroup per output column ``n``, ``lane_sums(nn,
    lane)(row)`` each lane's partial sum, the shuffles, lane 0's epilogue and store; the fill,
    the generic and the epilogue erased."""
    S = t.subgroup
    g = m.gen.opview
    c = g.outputs[0]
    fill_value = m.fill.operands[0] if m.fill is not None else None
    n_rows = ir.MemRefType(m.w.type).shape[0]
    i32t = ir.IntegerType.get_signless(32)
    with ir.InsertionPoint(m.fill if m.fill is not None else m.gen), m.gen.location:
        rows = memref.DimOp(m.out, index(0)).result   # (not C: the fallback alone uses it)
        grid_y = arith.MinUIOp(rows, index(MAX_GRID)).result
        groups = -(-n_rows // t.subgroups)
        grid_x = index(min(groups, MAX_GRID))
        launch = Launch((grid_x, grid_y, index(1)), (t.threads, 1, 1), [])
        with launch:
            tid = launch.thread_id[0]
            by = launch.block_id[1]
            lane = arith.RemUIOp(tid, index(S)).result
            sg = arith.DivUIOp(tid, index(S)).result

            def group(bx: ir.Value) -> None:
                n = arith.AddIOp(arith.MulIOp(bx, index(t.subgroups)).result, sg).result
                ok = arith.CmpIOp(arith.CmpIPredicate.ult, n, index(n_rows)).result
                nn = arith.SelectOp(ok, n, index(0)).result
                sums = lane_sums(nn, lane)

                def row_body(row: ir.Value, _: list) -> list:
                    acc = sums(row)
                    width = arith.ConstantOp(i32t, S).result
                    off = 1
                    while off < S:
                        o = arith.ConstantOp(i32t, off).result
                        acc = arith.AddFOp(acc, gpu.ShuffleOp(acc, o, width, gpu.ShuffleMode.XOR).results[0]).result
                        off *= 2
                    head = arith.CmpIOp(arith.CmpIPredicate.eq, lane, index(0)).result
                    when(arith.AndIOp(head, ok).result, lambda: finish(acc, [row, n], c, fill_value, m.chain, m.out))
                    return []

                for_loop(by, rows, launch.grid_dim[1], [], row_body)

            _column_groups(launch, groups, group)
    dead = m.locals()
    for o in reversed(m.ops()):
        o.erase()
    for v in dead:
        _erase_if_dead(v)


# -- the run formats' decoding (the GEMV's lanes and the GEMM's weight stager) ---------------

@dataclass
class Run:
    """``count`` consecutive weights ``scale * q + offset`` (``offset`` None: 0), ``qs`` the
    integer quants (i32)."""

    scale: ir.Value
    offset: Optional[ir.Value]
    qs: list


def _u(v: ir.Value) -> ir.Value:
    return arith.ExtUIOp(ir.IntegerType.get_signless(32), v).result


def _bits(v: ir.Value, shift, mask: int) -> ir.Value:
    """(v >> shift) & mask on i32 (``shift`` an int or an i32 value)."""
    s = _i32(shift) if isinstance(shift, int) else shift
    return arith.AndIOp(arith.ShRUIOp(v, s).result if not (isinstance(shift, int) and shift == 0) else v,
                        _i32(mask)).result


def _idx32(v: ir.Value) -> ir.Value:
    return arith.IndexCastOp(ir.IntegerType.get_signless(32), v).result


def _align(base_align: int, count: int) -> int:
    """The widest power-of-two load (at most 4 bytes) of ``count`` bytes at an offset that is
    a multiple of ``base_align``."""
    a = 1
    while a < 4 and base_align % (2 * a) == 0 and count % (2 * a) == 0:
        a *= 2
    return a


def _kquant_scale_min(w: ir.Value, row: ir.Value, base: ir.Value, sb: ir.Value) -> tuple:
    """Q4_K / Q5_K: the 6-bit scale and minimum of sub-block ``sb`` (0-7) from the 12 bytes
    at base + 4 (ggml's get_scale_min_k4), as i32."""
    at = arith.AddIOp(base, index(4)).result
    s_sb = _u(load(w, [row, arith.AddIOp(at, sb).result]))
    s_hi = _u(load(w, [row, arith.AddIOp(at, arith.AddIOp(sb, index(4)).result).result]))
    s_lo = _u(load(w, [row, arith.AddIOp(at, arith.RemUIOp(sb, index(4)).result).result]))
    first = arith.CmpIOp(arith.CmpIPredicate.ult, sb, index(4)).result
    top = lambda v: arith.ShLIOp(_bits(v, 6, 3), _i32(4)).result   # noqa: E731 (the 2 high bits)
    sc = arith.SelectOp(first, _bits(s_sb, 0, 63), arith.OrIOp(_bits(s_hi, 0, 15), top(s_lo)).result).result
    mn = arith.SelectOp(first, _bits(s_hi, 0, 63), arith.OrIOp(_bits(s_hi, 4, 15), top(s_sb)).result).result
    return sc, mn


def decode_runs(fmt: str, w: ir.Value, row: ir.Value, k0: ir.Value, count: int, wide: bool,
                pieces: int = 1) -> list:
    """The runs k0 + p * stride ... + count - 1 (p < ``pieces``; :data:`RUN_FORMATS`' stride)
    of row ``row`` of a run format, each a :class:`Run`: the byte arithmetic of ggml's
    dequantize_row_* (docs/quantization.md), each run's scale and minimum decoded once, the
    quant bytes the runs share loaded once, in loads as wide as their alignment allows when
    ``wide`` (cuda). ``k0`` is a multiple of ``count``, a power of two at most the format's
    run; with ``pieces`` > 1 it is a lead run (in the first stride of its span: Q5 j < 16;
    Q4_K / Q5_K an even sub-block; Q6_K group 0 of its half)."""
    block, nbytes, longest, most, stride = RUN_FORMATS[fmt]
    assert count <= longest and longest % count == 0 and pieces in (1, most), (fmt, count, pieces)
    f32t = ir.F32Type.get()
    base = arith.MulIOp(arith.DivUIOp(k0, index(block)).result, index(nbytes)).result
    j0 = arith.RemUIOp(k0, index(block)).result
    at = lambda off: arith.AddIOp(base, off if isinstance(off, ir.Value) else index(off)).result  # noqa: E731

    def f16(off: int) -> ir.Value:
        return _f16(*_bytes(w, row, at(off), 2, 2, wide))

    def quant_bytes(off: ir.Value, field_align: int) -> list:
        return [_u(b) for b in _bytes(w, row, off, count, _align(field_align, count), wide)]

    def plus(v, c: int):        # an i32 shift (a value, or an int: static) plus c
        if isinstance(v, int):
            return v + c
        return arith.AddIOp(v, _i32(c)).result if c else v

    def dyn_shift(v: ir.Value, scale: int):   # i32 of v * scale, 0 for a lead run (pieces > 1)
        return 0 if pieces > 1 else _idx32(arith.MulIOp(v, index(scale)).result)

    def dyn_shift_g(g: ir.Value, div: int, scale: int) -> ir.Value:   # i32 of (g / div) * scale
        return _idx32(arith.MulIOp(arith.DivUIOp(g, index(div)).result, index(scale)).result)

    if fmt in ("q5_0", "q5_1"):
        # [f16 d, [f16 m]], u32 qh, 16 bytes of nibbles: element j the low (j < 16) or high
        # nibble of byte j % 16, plus bit j of qh times 16; Q5_0 minus 16
        qh_at, qs_at = (2, 6) if fmt == "q5_0" else (4, 8)
        hb = [_u(b) for b in _bytes(w, row, at(qh_at), 4, _align(math.gcd(nbytes, qh_at), 4), wide)]
        qh = hb[0]
        for i in (1, 2, 3):
            qh = arith.OrIOp(qh, arith.ShLIOp(hb[i], _i32(8 * i)).result).result
        qh = arith.ShRUIOp(qh, _idx32(j0)).result
        shift = dyn_shift(arith.DivUIOp(j0, index(16)).result, 4)
        us = quant_bytes(at(arith.AddIOp(index(qs_at), arith.RemUIOp(j0, index(16)).result).result),
                         math.gcd(nbytes, qs_at))
        d, mn = f16(0), (f16(2) if fmt == "q5_1" else None)
        runs = []
        for p in range(pieces):
            qs = []
            for e, u in enumerate(us):
                q = arith.OrIOp(_bits(u, plus(shift, 4 * p), 15),
                                arith.ShLIOp(_bits(qh, e + 16 * p, 1), _i32(4)).result).result
                qs.append(arith.SubIOp(q, _i32(16)).result if fmt == "q5_0" else q)
            runs.append(Run(d, mn, qs))
        return runs
    if fmt in ("q4_k", "q5_k"):
        # f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) for the 8 sub-blocks of 32, [Q5_K: 32
        # bytes qh], 128 bytes of nibbles: sub-block sb's element l is nibble sb % 2 of byte
        # 32 (sb / 2) + l; Q5_K: plus bit sb of qh[l] times 16
        sb = arith.DivUIOp(j0, index(32)).result
        d, dmin = f16(0), f16(2)
        l0 = arith.RemUIOp(j0, index(32)).result
        qs_at = 16 if fmt == "q4_k" else 48
        off = arith.AddIOp(arith.MulIOp(arith.DivUIOp(sb, index(2)).result, index(32)).result, l0).result
        us = quant_bytes(at(arith.AddIOp(index(qs_at), off).result), math.gcd(nbytes, qs_at))
        shift = dyn_shift(arith.RemUIOp(sb, index(2)).result, 4)
        hs = quant_bytes(at(arith.AddIOp(index(16), l0).result), math.gcd(nbytes, 16)) if fmt == "q5_k" else []
        runs = []
        for p in range(pieces):
            sbp = arith.AddIOp(sb, index(p)).result if p else sb
            sc, mn = _kquant_scale_min(w, row, base, sbp)
            scale = arith.MulFOp(d, arith.SIToFPOp(f32t, sc).result).result
            offset = arith.NegFOp(arith.MulFOp(dmin, arith.SIToFPOp(f32t, mn).result).result).result
            qs = [_bits(u, plus(shift, 4 * p), 15) for u in us]
            if fmt == "q5_k":
                hsh = _idx32(sbp)
                qs = [arith.OrIOp(q, arith.ShLIOp(_bits(h, hsh, 1), _i32(4)).result).result for q, h in zip(qs, hs)]
            runs.append(Run(scale, offset, qs))
        return runs
    if fmt == "q6_k":
        # 128 bytes ql, 64 bytes qh, 16 i8 scales (one per 16 weights), f16 d; half h = j / 128,
        # group g = (j % 128) / 32, l = j % 32: low 4 bits nibble g / 2 of ql[64 h + 32 (g % 2)
        # + l], high 2 bits (2 g) of qh[32 h + l]; minus 32 (groups 0 and 2, 1 and 3 share their
        # ql bytes, all four their qh bytes)
        h = arith.DivUIOp(j0, index(128)).result
        g = arith.DivUIOp(arith.RemUIOp(j0, index(128)).result, index(32)).result
        l0 = arith.RemUIOp(j0, index(32)).result
        d = f16(208)
        hi_at = arith.AddIOp(arith.AddIOp(index(128), arith.MulIOp(h, index(32)).result).result, l0).result
        his = quant_bytes(at(hi_at), 2)
        lows = {}
        runs = []
        for p in range(pieces):   # pieces > 1: g = 0, group p
            if p % 2 not in lows:
                odd = index(32 * p) if pieces > 1 else arith.MulIOp(arith.RemUIOp(g, index(2)).result, index(32)).result
                lo_at = arith.AddIOp(arith.AddIOp(arith.MulIOp(h, index(64)).result, odd).result, l0).result
                lows[p % 2] = quant_bytes(at(lo_at), 2)
            lsh = 4 * (p // 2) if pieces > 1 else dyn_shift_g(g, 2, 4)
            hsh = 2 * p if pieces > 1 else _idx32(arith.MulIOp(g, index(2)).result)
            qs = [arith.SubIOp(arith.OrIOp(_bits(lo, lsh, 15), arith.ShLIOp(_bits(hi, hsh, 3), _i32(4)).result).result,
                               _i32(32)).result for lo, hi in zip(lows[p % 2], his)]
            kp = arith.AddIOp(j0, index(32 * p)).result if p else j0
            sc = load(w, [row, at(arith.AddIOp(index(192), arith.DivUIOp(kp, index(16)).result).result)])
            runs.append(Run(arith.MulFOp(d, arith.SIToFPOp(f32t, sc).result).result, None, qs))
        return runs
    raise AssertionError(fmt)


def half_width(k: int, halves: int) -> int:
    """Elements per lane load of an f16 / bf16 row of ``k``: ``halves`` halved until it
    divides k (every row then starts aligned for the loads)."""
    h = halves
    while h > 1 and k % h:
        h //= 2
    return h


def _words_to_f32(word: ir.Value, fmt: str) -> list[ir.Value]:
    """The f32 values of the 16-bit floats in an i32 (low half first) or i16 word: f16 as
    f16 widened, bf16 by integer shifts into an f32's high half."""
    i16, i32t, f32t = ir.IntegerType.get_signless(16), ir.IntegerType.get_signless(32), ir.F32Type.get()
    if ir.IntegerType(word.type).width == 16:
        if fmt == "f16":
            return [arith.ExtFOp(f32t, arith.BitcastOp(ir.F16Type.get(), word).result).result]
        return [arith.BitcastOp(f32t, arith.ShLIOp(arith.ExtUIOp(i32t, word).result, _i32(16)).result).result]
    if fmt == "f16":
        lo = arith.TruncIOp(i16, word).result
        hi = arith.TruncIOp(i16, arith.ShRUIOp(word, _i32(16)).result).result
        return [arith.ExtFOp(f32t, arith.BitcastOp(ir.F16Type.get(), h).result).result for h in (lo, hi)]
    lo = arith.ShLIOp(word, _i32(16)).result
    hi = arith.AndIOp(word, _i32(-65536)).result
    return [arith.BitcastOp(f32t, v).result for v in (lo, hi)]


def build_half(fn: ir.Operation, m: _Match, t: QuantTiles) -> None:
    """Replace the fill and generic of an f16 / bf16 ``m`` in kernel ``fn`` by ``scf.if
    (the weight aligned for the loads) { the launch } else { the fill and generic }``."""
    S, C = t.subgroup, t.columns
    contract = ir.Attribute.parse(CONTRACT)
    g = m.gen.opview
    c = g.outputs[0]
    fill_value = m.fill.operands[0] if m.fill is not None else None
    wt = ir.MemRefType(m.w.type)
    n_rows, k = wt.shape[0], wt.shape[1] // 2
    h = half_width(k, t.halves)
    wb = 4 if h >= 2 else 2                  # bytes per word: i32 (two elements) or i16
    per = h * 2 // wb                        # words per lane load
    wty = ir.IntegerType.get_signless(8 * wb)
    i32t = ir.IntegerType.get_signless(32)
    first = m.fill if m.fill is not None else m.gen
    with ir.InsertionPoint(first), m.gen.location:
        rows = memref.DimOp(m.out, index(0)).result   # (not C: the fallback alone uses it)
        xvec = 4 if h % 4 == 0 else 1       # x's inputs in vector<4xT> loads (k0 a multiple of h)
        xbytes = [ir.FloatType(ir.MemRefType(v.type).element_type).width // 8 for v in g.inputs]   # f32: 4; halves: 2
        conds = vector_view_conditions(m.w, 2 * h, 2 * h)
        if xvec > 1:
            for v, nb in zip(g.inputs, xbytes):
                conds += vector_view_conditions(v, xvec, nb * xvec)
        branch = scf.IfOp(all_of(conds), [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            meta = memref.ExtractStridedMetadataOp(m.w)
            ext = arith.AddIOp(meta.offset, index(n_rows * wt.shape[1])).result   # bytes from the base
            dyn = ir.ShapedType.get_dynamic_size()
            flat = memref.ReinterpretCastOp(ir.MemRefType.get([dyn], wt.element_type), meta.base_buffer,
                                            [], [ext], [], [0], [dyn], [1]).result
            words = memref.ViewOp(ir.MemRefType.get([dyn], wty), flat, index(0),
                                  [arith.DivUIOp(ext, index(wb)).result]).result
            woff = arith.DivUIOp(meta.offset, index(wb)).result
            grid_y = arith.MinUIOp(rows, index(MAX_GRID)).result
            groups = -(-n_rows // (t.subgroups * C))
            launch = Launch((index(min(groups, MAX_GRID)), grid_y, index(1)), (t.threads, 1, 1), [])
            with launch:
                tid = launch.thread_id[0]
                lane = arith.RemUIOp(tid, index(S)).result
                sg = arith.DivUIOp(tid, index(S)).result

                def group(bx: ir.Value) -> None:
                    n0 = arith.MulIOp(arith.AddIOp(arith.MulIOp(bx, index(t.subgroups)).result,
                                                   sg).result, index(C)).result
                    cols = []   # (n, n < N, the column's first word)
                    for i in range(C):
                        n = arith.AddIOp(n0, index(i)).result
                        ok = arith.CmpIOp(arith.CmpIPredicate.ult, n, index(n_rows)).result
                        nn = arith.SelectOp(ok, n, index(0)).result
                        cols.append((n, ok, arith.AddIOp(woff, arith.MulIOp(nn, index(k * 2 // wb)).result).result))

                    def row_body(row: ir.Value, _: list) -> list:
                        def chunk(ch: ir.Value, acc: list) -> list:
                            k0 = arith.MulIOp(ch, index(h)).result
                            if xvec > 1:   # each input's h values in h / 4 vector loads, the prologue per element
                                vecs = [[vector.LoadOp(ir.VectorType.get([xvec], ir.MemRefType(v.type).element_type),
                                                       v, [row, arith.AddIOp(k0, index(q)).result],
                                                       alignment=nb * xvec).result
                                         for q in range(0, h, xvec)] for v, nb in zip(g.inputs, xbytes)]
                                xs = [_x_at(m, row, None, [vector.ExtractOp(vs[e // xvec], [], [e % xvec]).result
                                                           for vs in vecs]) for e in range(h)]
                            else:
                                xs = [_x_at(m, row, arith.AddIOp(k0, index(e)).result) for e in range(h)]
                            out = []
                            for (_, _, first), s in zip(cols, acc):
                                at = arith.AddIOp(first, arith.MulIOp(ch, index(per)).result).result
                                if per > 1:
                                    v = vector.LoadOp(ir.VectorType.get([per], wty), words, [at],
                                                      alignment=2 * h).result
                                    ws = [vector.ExtractOp(v, [], [j]).result for j in range(per)]
                                else:
                                    ws = [load(words, [at])]
                                wv = [f for word in ws for f in _words_to_f32(word, m.fmt)]
                                for xv, w_ in zip(xs, wv):
                                    s = arith.AddFOp(s, arith.MulFOp(xv, w_, fastmath=contract).result,
                                                     fastmath=contract).result
                                out.append(s)
                            return out

                        accs = for_loop(lane, index(k // h), index(S), [f32(0.0)] * C, chunk)
                        width = arith.ConstantOp(i32t, S).result
                        head = arith.CmpIOp(arith.CmpIPredicate.eq, lane, index(0)).result
                        for (n, ok, _), acc in zip(cols, accs):
                            off = 1
                            while off < S:
                                o = arith.ConstantOp(i32t, off).result
                                other = gpu.ShuffleOp(acc, o, width, gpu.ShuffleMode.XOR).results[0]
                                acc = arith.AddFOp(acc, other).result
                                off *= 2
                            when(arith.AndIOp(head, ok).result,
                                 lambda acc=acc, n=n: finish(acc, [row, n], c, fill_value, m.chain, m.out))
                        return []

                    for_loop(launch.block_id[1], rows, launch.grid_dim[1], [], row_body)

                _column_groups(launch, groups, group)
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            end = scf.YieldOp([])
    for o in m.ops():
        o.move_before(end)
    _into_else(m.locals(), m.ops(), end)


def _into_else(bufs: list[ir.Value], moved: list[ir.Operation], end: ir.Operation) -> None:
    """The allocations of ``bufs`` (C and the epilogue's intermediates) that only the ``moved``
    ops (now the fallback branch's) use, moved into that branch: before its first op, their
    deallocs before ``end``; so the launch's branch allocates nothing."""
    for v in bufs:
        owner = v.owner
        if isinstance(owner, ir.Block) or owner.name != "memref.alloc":
            continue
        users = [u.owner for u in v.uses]
        if not all(u.name == "memref.dealloc" or any(u == o for o in moved) for u in users):
            continue
        owner.move_before(moved[0])
        for u in users:
            if u.name == "memref.dealloc":
                u.move_before(end)
