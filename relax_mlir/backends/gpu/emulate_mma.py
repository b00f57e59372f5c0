"""relax-emulate-mma: warp-level matrix ops (``nvgpu.mma.sync``, ``nvgpu.ldmatrix``) rewritten
as an exchange through workgroup memory, so the cuda target's tensor-core kernels run (slowly)
on any GPU, lavapipe included: a testing aid for their numerics where no NVIDIA GPU is lent.

Per ``gpu.func`` kernel holding such ops: one workgroup buffer of f32 (a workgroup attribution,
a slice per warp; warp = linear invocation id / 32, lane = id % 32; the block size, from
``known_block_size`` or ``spirv.entry_point_abi``, must be a multiple of 32).

* ``mma.sync`` (m16n8k16 f16 x f16 -> f32 / f16, m16n8k8 f16, m16n8k8 tf32 x tf32 -> f32):
  each lane stores its A and B fragment elements at their (row, col) in the warp's slice
  (the PTX ISA's fragment layouts, as MLIR's ``nvgpu::getLaneIdAndValueIdToOperandCoord``:
  register ``r`` of an operand with ``R`` 8-row tiles covers rows ``(r % R) * 8 + lane / 4``
  and columns ``(r / R) * 128 bits + (lane % 4) * elements-per-register + e``), barrier, each
  lane sums its own accumulator elements over K (f32 products and adds: an f16 or tf32 product
  is exact in f32), barrier. tf32 inputs are rounded as ``cvt.rna.tf32.f32`` (nearest, ties
  away from zero, 10 mantissa bits), as is ``nvvm.convert.float.to.tf32`` (rna), which the TF32
  route applies first. f16 accumulators are summed in f32 and rounded once.
* ``ldmatrix`` (1, 2 or 4 tiles of 8 rows x 128 bits, transposed for 16-bit elements): lane
  ``8q + r`` copies the row its address points at into tile ``q``, row ``r`` of the slice,
  barrier, each lane reads its elements (row ``lane / 4``, column pair ``lane % 4``; transposed:
  rows ``2 (lane % 4) + j``, column ``lane / 4``), barrier.

The fragments (n-D vectors, which SPIR-V lacks) become scalars: ``vector.from_elements``,
``broadcast``, ``extract``, ``insert``, ``extract_strided_slice``, ``shape_cast``, splat
constants, elementwise arith / math ops and ``scf.for`` iter_args of n-D vector type, in those
kernels. The barriers need the whole workgroup: an op under an ``scf.if`` / ``scf.for`` whose
condition or bounds depend on the invocation id (or under ``scf.while``, or in unstructured
control flow) is an error at the op. Proves layouts and sums, not speed nor the hardware's own
accumulation order (docs/gpu.md). Run after ``gpu-kernel-outlining``, before the SPIR-V
conversion (the vulkan pipeline's ``emulate-tensor-cores`` option).
"""

from __future__ import annotations

from functools import reduce
from typing import Optional

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from ...transforms.registry import emit_error, register_pass
from .launch_builder import WORKGROUP, barrier, index

LANES = 32
OPS = ("nvgpu.mma.sync", "nvgpu.ldmatrix")
#: what the tensor-core routes feed those ops with, emulated too (tf32 rounding)
CVT_TF32 = "nvvm.convert.float.to.tf32"
#: ops whose result differs between the invocations of one workgroup
_VARYING = ("gpu.thread_id", "gpu.lane_id", "gpu.subgroup_id", "gpu.shuffle", "gpu.global_id")


class Unsupported(Exception):
    """An op the emulation cannot rewrite (reported at ``op``)."""

    def __init__(self, op: ir.Operation, message: str):
        super().__init__(message)
        self.op = op


def _nd(t: ir.Type) -> bool:
    return isinstance(t, ir.VectorType) and ir.VectorType(t).rank >= 2


def _shape(t: ir.Type) -> list[int]:
    return list(ir.VectorType(t).shape)


def _count(shape) -> int:
    return reduce(lambda a, b: a * b, shape, 1)


def _bits(t: ir.Type) -> int:
    if isinstance(t, ir.IntegerType):
        return ir.IntegerType(t).width
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(str(t), 0)


# -- uniform control flow --------------------------------------------------------------------

class _Uniformity:
    """Whether a value is the same in every invocation of a workgroup (conservative)."""

    def __init__(self, fn: ir.Operation):
        self.fn = fn
        self.memo: dict = {}

    def _inputs(self, v: ir.Value) -> Optional[list[ir.Value]]:
        """The values ``v`` is uniform if all of them are (None: varying in any case)."""
        owner = v.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent == self.fn:
                return []   # kernel arguments and workgroup buffers
            if parent.name == "scf.for" and ir.BlockArgument(v).arg_number == 0:
                return list(parent.operands)[:3]   # the induction variable: its bounds
            return None     # loop-carried values, other region arguments: conservatively varying
        op = owner.operation
        if op.name in _VARYING or op.name.startswith("nvgpu.") or len(op.regions) > 0:
            return None
        return list(op.operands)

    def varying(self, v: ir.Value) -> bool:
        """Whether ``v`` may differ between the invocations of the workgroup (an explicit
        stack: index chains can be long)."""
        stack = [v]
        while stack:
            x = stack[-1]
            if x in self.memo:
                stack.pop()
                continue
            ins = self._inputs(x)
            if ins is None:
                self.memo[x] = True
                stack.pop()
                continue
            todo = [i for i in ins if i not in self.memo]
            if todo:
                stack.extend(todo)
                continue
            self.memo[x] = any(self.memo[i] for i in ins)
            stack.pop()
        return self.memo[v]

    def check(self, op: ir.Operation) -> Optional[str]:
        """Why ``op`` may not run in every invocation of the workgroup, else None."""
        o = op
        while True:
            parent = o.parent.operation
            if parent == self.fn:
                return "inside unstructured control flow" if len(list(self.fn.regions[0].blocks)) > 1 else None
            if parent.name == "scf.if" and self.varying(parent.operands[0]):
                return "under an 'scf.if' whose condition depends on the invocation"
            if parent.name == "scf.for" and any(self.varying(x) for x in list(parent.operands)[:3]):
                return "in an 'scf.for' whose bounds depend on the invocation"
            if parent.name not in ("scf.if", "scf.for"):
                return f"under '{parent.name}'"
            o = parent


# -- fragment layouts (PTX ISA "Matrix Fragments for mma.m16n8k*", MLIR MMAUtils) -------------

def fragment_coords(role: str, elem: ir.Type, rows: int, vshape: list[int]) -> list[tuple[int, int, int, int]]:
    """Per value ``v`` of a fragment ``vector<regs x per x elem>``: ``(row0, col0, per, e)``; the
    lane's element is at row ``row0 + lane / 4``, column ``col0 + (lane % 4) * per + e`` of the
    operand (A: M x K, B: N x K, C: M x N). ``role``: "A", "B" or "C"."""
    regs, per = vshape
    bits = _bits(elem)
    line = (256 if bits == 32 else 128) if role == "C" else 128   # bits per 8-row tile's row
    tiles = rows // 8
    out = []
    for r in range(regs):
        for e in range(per):
            out.append(((r % tiles) * 8, (r // tiles) * (line // bits), per, e))
    return out


# -- the rewrite -----------------------------------------------------------------------------

class _Kernel:
    """One kernel's rewrite: the warp's slice of the workgroup buffer, lane / group ids, the
    fragments' scalars (``env``) and the ops to erase once everything is rewritten."""

    def __init__(self, fn: ir.Operation, per_warp: int, threads: list[int]):
        self.fn = fn
        self.env: dict = {}            # n-D vector value -> its scalars (row-major)
        self.dead: list[ir.Operation] = []
        block = fn.regions[0].blocks[0]
        space = ir.Attribute.parse(WORKGROUP)
        warps = _count(threads) // LANES
        self.scratch = block.add_argument(ir.MemRefType.get([warps * per_warp], ir.F32Type.get(), memory_space=space),
                                          fn.location)
        n = ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value if "workgroup_attributions" in fn.attributes else 0
        fn.attributes["workgroup_attributions"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n + 1)
        self.consts: dict[int, ir.Value] = {}
        with ir.InsertionPoint.at_block_begin(block), fn.location:
            self._first = index(0)
            self.consts[0] = self._first
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            if threads[1] > 1 or threads[2] > 1:   # linear id x + y * bx + z * bx * by
                tid = self.lin((tid, 1), (gpu.ThreadIdOp(gpu.Dimension.y).result, threads[0]),
                               (gpu.ThreadIdOp(gpu.Dimension.z).result, threads[0] * threads[1]))
            self.lane = arith.RemUIOp(tid, self.c(LANES)).result
            self.base = arith.MulIOp(arith.DivUIOp(tid, self.c(LANES)).result, self.c(per_warp)).result
            self.g = arith.DivUIOp(self.lane, self.c(4)).result
            self.t = arith.RemUIOp(self.lane, self.c(4)).result

    def c(self, k: int) -> ir.Value:
        """The index constant ``k``, made once at the kernel's entry."""
        if k not in self.consts:
            with ir.InsertionPoint(self._first.owner), self.fn.location:
                self.consts[k] = index(k)
        return self.consts[k]

    def add(self, a: ir.Value, k: int) -> ir.Value:
        return arith.AddIOp(a, self.c(k)).result if k else a

    def lin(self, *terms: tuple[ir.Value, int]) -> ir.Value:
        """``sum(v * k)`` over ``terms`` (k = 1: no multiply)."""
        out = None
        for v, k in terms:
            x = v if k == 1 else arith.MulIOp(v, self.c(k)).result
            out = x if out is None else arith.AddIOp(out, x).result
        return out

    def scalars(self, v: ir.Value) -> list[ir.Value]:
        """The elements of ``v``, row-major (a scalar: itself)."""
        if v in self.env:
            return self.env[v]
        if isinstance(v.type, ir.VectorType):
            n = _count(_shape(v.type))
            flat = [divmod_all(i, _shape(v.type)) for i in range(n)]
            return [vector.ExtractOp(v, [], p).result for p in flat]
        return [v]

    # -- nvgpu.mma.sync ----------------------------------------------------------------------
    def mma(self, op: ir.Operation) -> list[ir.Value]:
        m, n, k = [ir.IntegerAttr(x).value for x in ir.ArrayAttr(op.attributes["mmaShape"])]
        a, b, c = op.operands[0], op.operands[1], op.operands[2]
        ea, ec = ir.VectorType(a.type).element_type, ir.VectorType(c.type).element_type
        tf32 = "tf32Enabled" in op.attributes
        if str(ea) not in ("f16", "f32") or str(ec) not in ("f16", "f32") or (str(ea) == "f32" and not tf32):
            raise Unsupported(op, f"relax-emulate-mma: mma.sync of {ea} -> {ec} is not emulated "
                                  "(f16 x f16 -> f16 / f32 and tf32 x tf32 -> f32 are)")
        f32t = ir.F32Type.get()
        sa, sb, sc = self.scalars(a), self.scalars(b), self.scalars(c)
        base_b = m * k

        # each lane's element (row0 + g, col0 + t * per + e) of A (M x K) at row * K + col, of B
        # (given N x K) at base_b + col * N + row (K-major: the sums below read B[k][n])
        def put(vals, role, elem, rows, vshape, stride, swap):
            coords = fragment_coords(role, elem, rows, vshape)
            per = coords[0][2]
            lane = (self.lin((self.base, 1), (self.t, per * stride), (self.g, 1)) if swap else
                    self.lin((self.base, 1), (self.g, stride), (self.t, per)))
            for v, (r0, c0, _, e) in zip(vals, coords):
                x = arith.ExtFOp(f32t, v).result if str(ea) == "f16" else _tf32(v)
                memref.StoreOp(x, self.scratch, [self.add(lane, (c0 + e) * stride + r0 + base_b if swap
                                                           else r0 * stride + c0 + e)])

        put(sa, "A", ea, m, _shape(a.type), k, False)
        put(sb, "B", ea, n, _shape(b.type), n, True)
        barrier()
        # the lane's accumulator (row0 + g, col0 + t * per + e): A's row, B's column over k
        coords = fragment_coords("C", ec, m, _shape(c.type))
        row_g = self.lin((self.base, 1), (self.g, k))
        col_t = self.lin((self.base, 1), (self.t, coords[0][2]))
        rows = [self.add(row_g, r0 * k) for r0, _, _, _ in coords]
        cols = [self.add(col_t, base_b + c0 + e) for _, c0, _, e in coords]
        init = [arith.ExtFOp(f32t, v).result if str(ec) == "f16" else v for v in sc]
        loop = scf.ForOp(self.c(0), self.c(k), self.c(1), init)
        with ir.InsertionPoint(loop.body):
            kk = loop.induction_variable
            kn = arith.MulIOp(kk, self.c(n)).result
            out = []
            for acc, ra, cb in zip(loop.inner_iter_args, rows, cols):
                x = memref.LoadOp(self.scratch, [arith.AddIOp(ra, kk).result]).result
                y = memref.LoadOp(self.scratch, [arith.AddIOp(cb, kn).result]).result
                out.append(arith.AddFOp(acc, arith.MulFOp(x, y).result).result)
            scf.YieldOp(out)
        barrier()
        res = list(loop.results)
        return [arith.TruncFOp(ec, v).result for v in res] if str(ec) == "f16" else res

    # -- nvgpu.ldmatrix ------------------------------------------------------------------------
    def ldmatrix(self, op: ir.Operation) -> list[ir.Value]:
        src, idx = op.operands[0], list(op.operands[1:])
        tiles = ir.IntegerAttr(op.attributes["numTiles"]).value
        trans = ir.BoolAttr(op.attributes["transpose"]).value
        vt = ir.VectorType(op.results[0].type)
        et, (regs, per) = vt.element_type, list(vt.shape)
        bits = _bits(et)
        if not isinstance(et, (ir.F16Type, ir.F32Type)) or (trans and bits != 16):
            raise Unsupported(op, f"relax-emulate-mma: ldmatrix of {et}{' transposed' if trans else ''} is not "
                                  "emulated (f16, transposed or not; f32 not transposed are)")
        strides, _ = ir.MemRefType(src.type).get_strides_and_offset()
        if strides and strides[-1] != 1:
            raise Unsupported(op, "relax-emulate-mma: ldmatrix from a memref whose last dimension is not "
                                  "contiguous is not emulated")
        f32t = ir.F32Type.get()
        row_elems = 128 // bits
        # lanes 8q + r (q < tiles) copy their row into tile q, row r: [(8q + r) * row_elems + e]
        active = arith.CmpIOp(arith.CmpIPredicate.ult, self.lane, self.c(8 * tiles)).result
        guard = scf.IfOp(active)
        with ir.InsertionPoint(guard.then_block):
            dst = self.lin((self.base, 1), (self.lane, row_elems))
            for e in range(row_elems):
                x = memref.LoadOp(src, idx[:-1] + [self.add(idx[-1], e)]).result
                x = arith.ExtFOp(f32t, x).result if bits == 16 else x
                memref.StoreOp(x, self.scratch, [self.add(dst, e)])
            scf.YieldOp([])
        barrier()
        # element j of tile q: row g, column t * per + j (transposed: row 2 t + j, column g)
        lane = (self.lin((self.base, 1), (self.t, 2 * row_elems), (self.g, 1)) if trans else
                self.lin((self.base, 1), (self.g, row_elems), (self.t, per)))
        out = []
        for q in range(regs):
            for j in range(per):
                at = self.add(lane, (8 * q + j) * row_elems if trans else 8 * q * row_elems + j)
                x = memref.LoadOp(self.scratch, [at]).result
                out.append(arith.TruncFOp(et, x).result if bits == 16 else x)
        barrier()
        return out

    def cvt_tf32(self, op: ir.Operation) -> None:
        cvt_tf32(op)
        self.dead.append(op)

    # -- walking the kernel --------------------------------------------------------------------
    def block(self, block: ir.Block) -> None:
        for op in list(block.operations):
            self.op(op.operation)

    def op(self, op: ir.Operation) -> None:
        name = op.name
        if name == "scf.for" and any(_nd(v.type) for v in op.results):
            self.loop(op)
            return
        for r in op.regions:
            for b in r.blocks:
                self.block(b)
        nd_in = any(v in self.env or _nd(v.type) for v in op.operands)
        nd_out = any(_nd(v.type) for v in op.results)
        if name == CVT_TF32:
            self.cvt_tf32(op)
            return
        if not (nd_in or nd_out or name in OPS):
            return
        with ir.InsertionPoint(op), op.location:
            if name == "nvgpu.mma.sync":
                self.env[op.results[0]] = self.mma(op)
            elif name == "nvgpu.ldmatrix":
                self.env[op.results[0]] = self.ldmatrix(op)
            elif name == "scf.yield":
                vals = [x for v in op.operands for x in (self.scalars(v) if _nd(v.type) else [v])]
                scf.YieldOp(vals)
            else:
                self.vector_op(op)
        self.dead.append(op)

    def loop(self, op: ir.Operation) -> None:
        """An scf.for with n-D vector iter_args: the same loop over their scalars."""
        lb, ub, step, inits = op.operands[0], op.operands[1], op.operands[2], list(op.operands[3:])
        flat = [x for v in inits for x in (self.scalars(v) if _nd(v.type) else [v])]
        with ir.InsertionPoint(op), op.location:
            new = scf.ForOp(lb, ub, step, flat)
        old = op.regions[0].blocks[0]
        args = list(new.inner_iter_args)
        old.arguments[0].replace_all_uses_with(new.induction_variable)
        pos = 0
        for v, a in zip(inits, list(old.arguments)[1:]):
            if _nd(v.type):
                w = _count(_shape(v.type))
                self.env[a] = args[pos:pos + w]
                pos += w
            else:
                a.replace_all_uses_with(args[pos])
                pos += 1
        for o in list(old.operations):
            new.body.append(o)
        self.block(new.body)
        pos = 0
        for r in list(op.results):
            if _nd(r.type):
                w = _count(_shape(r.type))
                self.env[r] = list(new.results)[pos:pos + w]
                pos += w
            else:
                r.replace_all_uses_with(new.results[pos])
                pos += 1
        self.dead.append(op)

    def vector_op(self, op: ir.Operation) -> None:
        name, res = op.name, op.results[0] if len(op.results) == 1 else None
        if res is None:
            raise Unsupported(op, f"relax-emulate-mma: '{name}' on an n-D fragment is not emulated")
        if name == "vector.from_elements":
            self.out(op, list(op.operands))
        elif name == "vector.broadcast":
            src = op.operands[0]
            if isinstance(src.type, ir.VectorType):
                if list(ir.VectorType(src.type).shape) != _shape(res.type):
                    raise Unsupported(op, "relax-emulate-mma: a broadcast between vector shapes is not emulated")
                self.out(op, self.scalars(src))
            else:
                self.out(op, [src] * _count(_shape(res.type)))
        elif name == "arith.constant":
            d = ir.DenseElementsAttr(op.attributes["value"])
            if not d.is_splat:
                raise Unsupported(op, "relax-emulate-mma: a non-splat n-D vector constant is not emulated")
            c = arith.ConstantOp(ir.VectorType(res.type).element_type, d.get_splat_value()).result
            self.out(op, [c] * _count(_shape(res.type)))
        elif name == "vector.extract":
            src = op.operands[0]
            pos = list(op.opview.static_position)
            if len(op.operands) > 1 or any(p < 0 for p in pos):
                raise Unsupported(op, "relax-emulate-mma: an extract at a dynamic position is not emulated")
            shape = _shape(src.type)
            inner = _count(shape[len(pos):])
            start = sum(p * _count(shape[i + 1:]) for i, p in enumerate(pos))
            self.out(op, self.scalars(src)[start:start + inner])
        elif name == "vector.insert":
            val, dest = op.operands[0], op.operands[1]
            pos = list(op.opview.static_position)
            if len(op.operands) > 2 or any(p < 0 for p in pos):
                raise Unsupported(op, "relax-emulate-mma: an insert at a dynamic position is not emulated")
            shape = _shape(dest.type)
            start = sum(p * _count(shape[i + 1:]) for i, p in enumerate(pos))
            vals = self.scalars(val)
            out = list(self.scalars(dest))
            out[start:start + len(vals)] = vals
            self.out(op, out)
        elif name == "vector.extract_strided_slice":
            src = op.operands[0]
            shape = _shape(src.type)
            offs = [ir.IntegerAttr(x).value for x in ir.ArrayAttr(op.attributes["offsets"])]
            sizes = [ir.IntegerAttr(x).value for x in ir.ArrayAttr(op.attributes["sizes"])]
            if any(ir.IntegerAttr(x).value != 1 for x in ir.ArrayAttr(op.attributes["strides"])):
                raise Unsupported(op, "relax-emulate-mma: a strided slice with strides is not emulated")
            full = offs + [0] * (len(shape) - len(offs))
            sz = sizes + shape[len(sizes):]
            s = self.scalars(src)
            out = []
            for i in range(_count(sz)):
                p = divmod_all(i, sz)
                out.append(s[sum((full[d] + p[d]) * _count(shape[d + 1:]) for d in range(len(shape)))])
            self.out(op, out)
        elif name == "vector.shape_cast":
            self.out(op, self.scalars(op.operands[0]))
        elif (name.startswith("arith.") or name.startswith("math.")) and _nd(res.type) and all(
                _shape(v.type) == _shape(res.type) for v in op.operands if isinstance(v.type, ir.VectorType)):
            n = _count(_shape(res.type))
            ops = [self.scalars(v) if _nd(v.type) else [v] * n for v in op.operands]
            attrs = {a.name: a.attr for a in op.attributes}
            elem = ir.VectorType(res.type).element_type
            out = [ir.Operation.create(name, results=[elem], operands=[o[i] for o in ops], attributes=attrs).result
                   for i in range(n)]
            self.out(op, out)
        else:
            raise Unsupported(op, f"relax-emulate-mma: '{name}' on an n-D fragment is not emulated")

    def out(self, op: ir.Operation, vals: list[ir.Value]) -> None:
        """``op``'s result is ``vals``: kept as scalars (n-D), rebuilt (1-D) or the scalar."""
        res = op.results[0]
        if _nd(res.type):
            self.env[res] = vals
        elif isinstance(res.type, ir.VectorType):
            res.replace_all_uses_with(vector.FromElementsOp(res.type, vals).result)
        else:
            res.replace_all_uses_with(vals[0])

    def finish(self) -> None:
        """Erase the rewritten ops, each once nothing uses its results (nor, for the emptied
        loops, the old block arguments that moved ops used)."""
        def unused(op: ir.Operation) -> bool:
            vals = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.arguments]
            return all(not any(True for _ in v.uses) for v in vals)

        left = list(reversed(self.dead))
        while left:
            keep = []
            for op in left:
                if unused(op):
                    op.erase()
                else:
                    keep.append(op)
            if len(keep) == len(left):
                raise Unsupported(left[0], f"relax-emulate-mma: '{left[0].name}' on a fragment is still used")
            left = keep


def divmod_all(i: int, shape: list[int]) -> list[int]:
    """Row-major position of flat index ``i`` in ``shape``."""
    out = []
    for s in reversed(shape):
        i, r = divmod(i, s)
        out.append(r)
    return out[::-1]


def _tf32(v: ir.Value) -> ir.Value:
    """``v`` (f32) rounded to tf32 as ``cvt.rna.tf32.f32``: nearest, ties away from zero, the
    low 13 mantissa bits cleared (sign-magnitude: adding half of the dropped unit rounds the
    magnitude); NaN kept as it is."""
    i32 = ir.IntegerType.get_signless(32)
    bits = arith.BitcastOp(i32, v).result
    r = arith.AndIOp(arith.AddIOp(bits, arith.ConstantOp(i32, 0x1000).result).result,
                     arith.ConstantOp(i32, -0x2000).result).result
    rounded = arith.BitcastOp(ir.F32Type.get(), r).result
    nan = arith.CmpFOp(arith.CmpFPredicate.UNO, v, v).result
    return arith.SelectOp(nan, v, rounded).result


def cvt_tf32(op: ir.Operation) -> None:
    """``cvt.rna.tf32.f32`` emulated: its i32 result becomes the bits of the rounded f32 (the op
    is left for the caller to erase); other rounding modes are refused."""
    rnd = str(op.attributes["rnd"]) if "rnd" in op.attributes else ""
    sat = str(op.attributes["sat"]) if "sat" in op.attributes else "none"
    relu = str(op.attributes["relu"]) if "relu" in op.attributes else "false"
    if "rna" not in rnd or "none" not in sat or relu != "false":
        raise Unsupported(op, f"relax-emulate-mma: {CVT_TF32} is emulated with rnd = rna only (no sat, relu)")
    with ir.InsertionPoint(op), op.location:
        bits = arith.BitcastOp(ir.IntegerType.get_signless(32), _tf32(op.operands[0])).result
    op.results[0].replace_all_uses_with(bits)


def _threads(fn: ir.Operation) -> Optional[list[int]]:
    if "known_block_size" in fn.attributes:
        return [int(x) for x in ir.DenseI32ArrayAttr(fn.attributes["known_block_size"])]
    if "spirv.entry_point_abi" in fn.attributes:
        text = str(fn.attributes["spirv.entry_point_abi"])
        if "workgroup_size = [" in text:
            return [int(x) for x in text.split("workgroup_size = [")[1].split("]")[0].split(",")]
    return None


def _per_warp(ops: list[ir.Operation]) -> int:
    """f32 elements of the largest exchange: A and B of an mma, the tiles of an ldmatrix."""
    need = 0
    for op in ops:
        if op.name == CVT_TF32:
            continue
        if op.name == "nvgpu.mma.sync":
            m, n, k = [ir.IntegerAttr(x).value for x in ir.ArrayAttr(op.attributes["mmaShape"])]
            need = max(need, m * k + k * n)
        else:
            tiles = ir.IntegerAttr(op.attributes["numTiles"]).value
            need = max(need, tiles * 8 * (128 // _bits(ir.VectorType(op.results[0].type).element_type)))
    return need


def emulate_kernel(fn: ir.Operation) -> bool:
    """Rewrite the warp-level matrix ops of gpu.func ``fn``; False after an error diagnostic."""
    ops: list[ir.Operation] = []

    def visit(o):
        if o.operation.name in OPS + (CVT_TF32,):
            ops.append(o.operation)
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    if not ops:
        return True
    if not any(o.name in OPS for o in ops):   # conversions alone: no exchange, no scratch
        try:
            for op in ops:
                cvt_tf32(op)
                op.erase()
        except Unsupported as e:
            emit_error(e.op, str(e))
            return False
        return True
    uniform = _Uniformity(fn)
    ok = True
    for op in (o for o in ops if o.name in OPS):
        why = uniform.check(op)
        if why is not None:
            emit_error(op, f"relax-emulate-mma: '{op.name}' {why}: its emulation's barriers need every "
                           "invocation of the workgroup")
            ok = False
    threads = _threads(fn)
    if threads is None or _count(threads) % LANES:
        emit_error(fn, f"relax-emulate-mma: the kernel's block size ({threads or 'unknown'}) must be static and a "
                       f"multiple of {LANES} (whole warps)")
        ok = False
    if "private_attributions" in fn.attributes:
        emit_error(fn, "relax-emulate-mma: kernels with private attributions are not supported")
        ok = False
    if not ok:
        return False
    k = _Kernel(fn, _per_warp(ops), threads)
    try:
        k.block(fn.regions[0].blocks[0])
    except Unsupported as e:
        emit_error(e.op, str(e))
        return False
    k.finish()
    return True


@register_pass("relax-emulate-mma",
               "gpu.func kernels: nvgpu.mma.sync / nvgpu.ldmatrix emulated through a per-warp workgroup-memory "
               "exchange and barriers (exact PTX fragment layouts; runs tensor-core kernels on any GPU, "
               "e.g. lavapipe, to check numerics; run after gpu-kernel-outlining).")
def relax_emulate_mma(module: ir.Operation, opts) -> None:
    for top in module.regions[0].blocks[0].operations:
        top = top.operation
        if top.name != "gpu.module":
            continue
        for f in top.regions[0].blocks[0].operations:
            if f.operation.name == "gpu.func" and not emulate_kernel(f.operation):
                return
