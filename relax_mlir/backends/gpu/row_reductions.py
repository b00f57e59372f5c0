"""relax-gpu-row-reductions: row kernels (softmax, RMSNorm, LayerNorm, sum/max/mean over
the last axis) as one launch: a workgroup per row with tree reductions in workgroup
memory when there are few rows, a thread per row when there are many.

The naive route gives each output element (or each row of a reduction) one thread and
makes every op of the kernel its own dispatch, which reads the row from device memory
again; a softmax over a few 1000-wide rows runs its reductions serially in a few
threads. This pass replaces the whole kernel body, when it has the shape of a row
kernel, by ``scf.if rows < workgroup_rows { A } else { B }`` on the run-time row count:

* A, a workgroup per row: workgroup ``w`` takes rows ``w, w + grid, ...`` (the grid is
  capped at 65535, the minimum limit Vulkan guarantees); in a row, thread ``t`` handles
  elements ``t, t + threads, ...``; a reduction accumulates them from its combiner's
  identity, the partials go through a tree reduction in workgroup memory (halving steps
  between ``gpu.barrier``s) and every thread gets the row's value in a register;
* B, a thread per row (rows ``b*threads + t``, stepping by ``grid*threads``): each
  reduction is a serial loop in registers, no workgroup memory, no barrier; on many rows
  this fills a GPU by itself, and on lavapipe (Mesa's CPU Vulkan, whose barriers switch
  coroutines) it is the faster form at every row count measured (bench/README.md).

In both, the kernel's ops run in program order per row: a ``linalg.fill`` of a row
buffer becomes the initial value of the reduction into it; a reduction over the last
loop (``out = comb(f(ins), out)``, comb one of ``addf mulf maximumf maxnumf minimumf
minnumf``) leaves the row's value in a register, stored only when the buffer is a kernel
result or read elsewhere; an all-parallel op on the row writes its elements; an op on
row values only (mean's division) computes one value per row. A buffer the kernel writes
is read only at the indices it was written at (a parallel result by the thread that
wrote it, a row value from the register), and buffers read otherwise (a norm's weight
along the row) are never written in the kernel, so no other barrier is needed. Anything
else (a reduction not over the last loop, several reduction loops, data other than f32,
f16 and bf16 (f64, integers), a reduction into a 16-bit buffer, ops with regions in the
body, a kernel kind other than ``reduction``) keeps the parallel-loop route.

16-bit data (f16, bf16; mixed kernels too, e.g. f16 logits in, f32 probabilities out): the
legalized bodies widen each value where they read it, reduce into f32 row buffers and round
once where they store a 16-bit result; the launches clone them so, and the accumulators,
workgroup memory and row registers are f32. bf16 loads and stores stay 16-bit storage: the
vulkan pipeline computes bf16 in f32 and keeps it as i16 (relax-spirv-bf16-storage).

Run after bufferization, before relax-gpu-prepare-kernels.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, scf

from ...transforms.registry import Option, register_pass
from .launch_builder import (COMBINERS, MAX_GRID, Launch, barrier, check_block_size, delinearize, f32, find, flat_body,
                             for_loop, index, indexing_maps, inline_body, kernels, load, loop_extent, map_indices,
                             map_uses, simple_map, store, thread_grid, when)
THREADS = 128
#: fewer rows than this: a workgroup per row (the rows alone would not fill a GPU); more:
#: a thread per row, the whole kernel still one launch (see the module docstring)
WORKGROUP_ROWS = 1024

#: ops between the work ops that only compute sizes or scalars (moved past freely)
_NEUTRAL = {"memref.alloc", "memref.dim", "arith.constant"}

PARALLEL = "#linalg.iterator_type<parallel>"
REDUCTION = "#linalg.iterator_type<reduction>"


#: 16-bit element types of the buffers a row kernel may read and write besides f32 (the
#: accumulators stay f32; () : only f32 buffers, what the tests and bench use as the fallback)
HALF = (ir.F16Type, ir.BF16Type)


def _float_buffers(op: ir.Operation) -> bool:
    """Every buffer f32, f16 or bf16; a reduction's output (its accumulator) f32. The bodies
    the legalizer writes already widen 16-bit values where they read them (``arith.extf``),
    accumulate in f32 row buffers and round once where they store a 16-bit result
    (``arith.truncf``); the launches clone those bodies as they are."""
    def ok(v: ir.Value) -> bool:
        et = ir.MemRefType(v.type).element_type if isinstance(v.type, ir.MemRefType) else None
        return isinstance(et, (ir.F32Type, *HALF))
    if not all(ok(v) for v in op.operands if isinstance(v.type, ir.ShapedType)):
        return False
    if op.name == "linalg.generic" and any(str(t) == REDUCTION for t in op.opview.iterator_types):
        return isinstance(ir.MemRefType(op.opview.outputs[0].type).element_type, ir.F32Type)
    return op.name != "linalg.fill" or isinstance(ir.MemRefType(op.operands[1].type).element_type, ir.F32Type)


def _scalar(op: ir.Operation) -> bool:
    return (op.name.startswith(("arith.", "math.", "index."))
            and not any(isinstance(v.type, ir.ShapedType) for v in list(op.operands) + list(op.results)))


class _Plan:
    """The matched work ops of one row kernel and what each buffer is."""

    def __init__(self, ops: list[ir.Operation], rank: int):
        self.ops, self.rank = ops, rank
        self.written: list[tuple[ir.Value, tuple]] = []      # buffer -> the index pattern it is written at
        self.combiner: list[tuple[ir.Operation, str]] = []   # reduction op -> combiner op name
        self.scalar: list[ir.Operation] = []                  # ops on row values only (rank - 1 loops)


def _pattern(m: ir.AffineMap) -> tuple:
    """The indices a map gives, as text over d0, d1, ...: the same pattern names the same
    elements in a rank-r reduction (``(d0, d1) -> (d0)``) and a rank-(r-1) op on its
    result (``(d0) -> (d0)``)."""
    return tuple(str(e) for e in m.results)


def _combiner(gen: ir.Operation) -> Optional[str]:
    """The combiner of a reduction body ``out = comb(f(ins), out)``, if it is one."""
    block = gen.regions[0].blocks[0]
    out = block.arguments[len(block.arguments) - 1]
    uses = [u.owner for u in out.uses]
    yld = block.operations[len(block.operations) - 1].operation
    if len(uses) != 1:
        return None
    comb = uses[0]
    if comb.name not in COMBINERS or yld.operands[0] != comb.results[0]:
        return None
    return comb.name


def _row_map(m: ir.AffineMap, shape: list[int], rank: int) -> bool:
    """``m`` names one element per row: it uses exactly the row loops d0..d(rank-2), and
    its constant results index dims of size 1 (a keepdims row result)."""
    if map_uses(m) != set(range(rank - 1)):
        return False
    return all(shape[p] == 1 for p, e in enumerate(m.results) if isinstance(e, ir.AffineConstantExpr))


def _match(fn: ir.Operation) -> Optional[_Plan]:
    block = fn.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    work = [k for k, o in enumerate(body) if o.name in ("linalg.fill", "linalg.generic")]
    if not work:
        return None
    first, last = work[0], work[-1]
    for o in body[first:last + 1]:
        if o.name not in ("linalg.fill", "linalg.generic") and o.name not in _NEUTRAL and not _scalar(o):
            return None
    for o in body[:first] + body[last + 1:]:
        if o.name == "memref.store" and isinstance(ir.MemRefType(o.operands[1].type).element_type, ir.IndexType):
            continue      # a reshape's shape operand (host bookkeeping)
        if o.name.startswith("linalg.") or o.name in ("memref.copy", "memref.store", "memref.load"):
            return None   # other work outside the row ops
    ops = [body[k] for k in work]
    gens = [o for o in ops if o.name == "linalg.generic"]
    if not gens or not all(_float_buffers(o) for o in ops):
        return None
    rank = indexing_maps(gens[0])[0].n_dims
    if rank < 1:
        return None
    plan = _Plan(ops, rank)
    filled: list[tuple[ir.Value, bool]] = []   # row buffers filled, and whether reduced into since
    n_red = 0
    for o in ops:
        if o.name == "linalg.fill":
            if not isinstance(o.operands[0].type, ir.F32Type):
                return None
            filled.append((o.operands[1], False))
            continue
        g = o.opview
        if not flat_body(o):
            return None
        maps = indexing_maps(o)
        its = [str(t) for t in g.iterator_types]
        if not all(simple_map(m) for m in maps):
            return None
        ins, out = list(g.inputs), list(g.outputs)
        if len(out) != 1:
            return None
        out, omap = out[0], maps[-1]
        shape = list(ir.MemRefType(out.type).shape)
        if its == [PARALLEL] * rank:
            if not omap.is_permutation:   # each element written by one (row, j)
                return None
        elif its == [PARALLEL] * (rank - 1) + [REDUCTION]:
            if not _row_map(omap, shape, rank) or _combiner(o) is None:
                return None
            plan.combiner.append((o, _combiner(o)))
            n_red += 1
            filled = [(b, True if b == out else r) for b, r in filled]
        elif its == [PARALLEL] * (rank - 1) and n_red:
            # an op on row results (mean's division by the width): loops = the row loops
            if not _row_map(omap, shape, rank):
                return None
            plan.scalar.append(o)
        else:
            return None
        # a buffer written in the kernel is read only at the indices it was written at
        for v, m in zip(ins, maps[:-1]):
            w = find(plan.written, v)
            if w is not None and w != _pattern(m):
                return None
            if w is None and any(b == v for b, _ in filled):
                return None   # a filled buffer read before its reduction
        w = find(plan.written, out)
        if w is not None and w != _pattern(omap):
            return None
        if w is None:
            if any(v == out for v in ins) and _pattern(maps[ins.index(out)]) != _pattern(omap):
                return None
            plan.written.append((out, _pattern(omap)))
        for v in ins:   # read-only buffers must not be written later
            if find(plan.written, v) is None and any(v == o2.opview.outputs[0] for o2 in gens):
                return None
    if not n_red or not all(r for _, r in filled):
        return None
    return plan


def _launch(plan: _Plan, per_workgroup: bool, threads: int, outer: list[ir.Value], rows: ir.Value,
            widths: list, local) -> None:
    """One launch of the row kernel at the insertion point: a workgroup per row (strided
    row loops, tree reductions in workgroup memory) or a thread per row (serial loops,
    no barriers)."""
    ops = plan.ops
    grid = arith.MinUIOp(rows, index(MAX_GRID)).result if per_workgroup else thread_grid(rows, threads)
    launch = Launch((grid, index(1), index(1)), (threads, 1, 1), [threads] if per_workgroup else [])
    with launch:
        t = launch.thread_id[0]
        if per_workgroup:
            sh = launch.shared[0]
            first, stride = t, index(threads)   # a row's elements among the workgroup's threads
            mine = arith.CmpIOp(arith.CmpIPredicate.eq, t, index(0)).result   # thread 0 stores row values
            row_lb, row_step = launch.block_id[0], launch.grid_dim[0]
        else:
            first, stride = index(0), index(1)
            mine = None
            row_lb, row_step = launch.global_threads(threads)

        def put(val: ir.Value, buf: ir.Value, at: list[ir.Value]) -> None:
            if mine is None:
                store(val, buf, at)
            else:
                when(mine, lambda: store(val, buf, at))

        def row(rid: ir.Value, _: list) -> list:
            idx = delinearize(rid, outer)
            regs: list[tuple[ir.Value, ir.Value]] = []    # row buffer -> its value in a register
            inits: list[tuple[ir.Value, ir.Value]] = []   # row buffer -> its fill value
            for o in ops:
                if o.name == "linalg.fill":
                    inits.append((o.operands[1], o.operands[0]))
                    continue
                g = o.opview
                maps = indexing_maps(o)
                ins, out = list(g.inputs), g.outputs[0]
                width = find(widths, o)
                comb = find(plan.combiner, o)
                out_used = len(list(o.regions[0].blocks[0].arguments[len(ins)].uses)) > 0

                def args_at(j: ir.Value) -> list[ir.Value]:
                    dims = idx + [j]
                    vals = []
                    for v, m in zip(ins, maps[:-1]):
                        r = find(regs, v)
                        vals.append(r if r is not None else load(v, map_indices(m, dims)))
                    return vals

                if any(o == x for x in plan.scalar):   # on row values: every thread, one value
                    at = map_indices(maps[-1], idx)
                    outv = (find(regs, out) or load(out, at)) if out_used else f32(0.0)
                    val = inline_body(o, args_at(index(0)) + [outv], idx)
                    regs.insert(0, (out, val))
                    if not local(out):
                        put(val, out, at)
                    continue
                if comb is None:
                    def elem(j: ir.Value, _: list) -> list:
                        dims = idx + [j]
                        at = map_indices(maps[-1], dims)   # a permutation of the loops
                        outv = load(out, at) if out_used else f32(0.0)
                        store(inline_body(o, args_at(j) + [outv], dims), out, at)
                        return []
                    for_loop(first, width, stride, [], elem)
                    continue
                op_cls, ident = COMBINERS[comb]
                total = for_loop(first, width, stride, [f32(ident)],
                                 lambda j, acc: [inline_body(o, args_at(j) + acc, idx + [j])])[0]
                if per_workgroup:
                    store(total, sh, [t])
                    s = threads // 2
                    while s:
                        barrier()
                        lo = arith.CmpIOp(arith.CmpIPredicate.ult, t, index(s)).result

                        def fold(s=s):
                            other = load(sh, [arith.AddIOp(t, index(s)).result])
                            store(op_cls(load(sh, [t]), other).result, sh, [t])
                        when(lo, fold)
                        s //= 2
                    barrier()
                    total = load(sh, [index(0)])
                    barrier()   # sh is reused by the next reduction
                at = map_indices(maps[-1], idx + [index(0)])
                init = find(inits, out)
                result = op_cls(total, init if init is not None else load(out, at)).result
                regs.insert(0, (out, result))
                if not local(out):
                    put(result, out, at)
            return []

        for_loop(row_lb, rows, row_step, [], row)


def _build(fn: ir.Operation, plan: _Plan, threads: int, workgroup_rows: int) -> None:
    """Both launches under ``scf.if rows < workgroup_rows`` (a workgroup per row for few
    rows, a thread per row for many); only one when the bound decides it statically."""
    ops, rank = plan.ops, plan.rank
    gens = [o for o in ops if o.name == "linalg.generic"]
    anchor = ops[-1]

    def local(v: ir.Value) -> bool:
        """Only the replaced ops (and deallocs) use it: row values are never stored."""
        owner = v.owner
        return (not isinstance(owner, ir.Block) and owner.name == "memref.alloc"
                and all(u.owner.name == "memref.dealloc" or any(u.owner == o for o in ops) for u in v.uses))

    with ir.InsertionPoint(anchor), anchor.location:
        outer = [loop_extent(gens[0], d) for d in range(rank - 1)]
        widths = [(g, loop_extent(g, rank - 1)) for g in gens if not any(g == x for x in plan.scalar)]
        rows = index(1)
        for s in outer:
            rows = arith.MulIOp(rows, s).result
        if workgroup_rows <= 0:
            _launch(plan, False, threads, outer, rows, widths, local)
        else:
            few = arith.CmpIOp(arith.CmpIPredicate.ult, rows, index(workgroup_rows)).result
            branch = scf.IfOp(few, [], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                _launch(plan, True, threads, outer, rows, widths, local)
                scf.YieldOp([])
            with ir.InsertionPoint(branch.else_block):
                _launch(plan, False, threads, outer, rows, widths, local)
                scf.YieldOp([])
    dead: list[ir.Value] = []
    for o in ops:
        v = o.operands[len(o.operands) - 1]
        if not any(v == d for d in dead):
            dead.append(v)
    for o in reversed(ops):
        o.erase()
    for v in dead:
        owner = v.owner
        if isinstance(owner, ir.Block) or owner.name != "memref.alloc":
            continue
        users = [u.owner for u in v.uses]
        if all(u.name == "memref.dealloc" for u in users):
            for u in users:
                u.erase()
            owner.erase()


def _permute(gens: list[ir.Operation], perm: list[int]) -> None:
    """Reorder the loops of each generic: new loop ``i`` is old loop ``perm[i]`` (maps,
    iterator types and ``linalg.index`` dims rewritten; the same computation)."""
    rank = len(perm)
    inv = [perm.index(j) for j in range(rank)]
    sub = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(inv[j]) for j in range(rank)])
    i64 = ir.IntegerType.get_signless(64)
    for g in gens:
        maps = [ir.AffineMapAttr.get(ir.AffineMap.get(rank, m.n_symbols, [e.compose(sub) for e in m.results]))
                for m in indexing_maps(g)]
        g.attributes["indexing_maps"] = ir.ArrayAttr.get(maps)
        its = list(ir.ArrayAttr(g.attributes["iterator_types"]))
        g.attributes["iterator_types"] = ir.ArrayAttr.get([its[perm[i]] for i in range(rank)])
        for o in g.regions[0].blocks[0].operations:
            if o.operation.name == "linalg.index":
                d = ir.IntegerAttr(o.operation.attributes["dim"]).value
                o.operation.attributes["dim"] = ir.IntegerAttr.get(i64, inv[d])


def _reduced_axis_last(fn: ir.Operation) -> Optional[tuple[list[ir.Operation], list[int]]]:
    """A kernel whose generics all have one rank and whose reductions all reduce the same
    single loop ``r`` before the last (a softmax over a middle axis): its loops reordered so
    that ``r`` is last (the row form :func:`_match` takes); the generics permuted and the
    permutation, or None. All-parallel generics of one rank less (a 16-bit sum's rounding of
    its f32 row buffer) run on the row values and keep their loops: the reordered row loops
    are the kept loops in their order."""
    gens = [o.operation for o in fn.regions[0].blocks[0].operations if o.operation.name == "linalg.generic"]
    if not gens:
        return None
    rank = max(indexing_maps(g)[0].n_dims for g in gens)
    full = [g for g in gens if indexing_maps(g)[0].n_dims == rank]
    for g in gens:
        if indexing_maps(g)[0].n_dims != rank and (indexing_maps(g)[0].n_dims != rank - 1 or any(
                str(t) != PARALLEL for t in g.opview.iterator_types)):
            return None
    axes = set()
    for g in full:
        its = [str(t) for t in g.opview.iterator_types]
        red = [i for i, t in enumerate(its) if t == REDUCTION]
        if len(red) > 1:
            return None
        axes.update(red)
    if len(axes) != 1:
        return None
    r = axes.pop()
    if r == rank - 1:
        return None
    perm = [d for d in range(rank) if d != r] + [r]
    _permute(full, perm)
    return full, perm


def schedule_kernel(fn: ir.Operation, threads: int = THREADS, workgroup_rows: int = WORKGROUP_ROWS) -> bool:
    """Kernel ``fn`` as one row-kernel launch pair when it is a row kernel (True), else
    left alone (False). A reduction over another loop than the last (a softmax over a
    middle axis) is taken with its loops reordered."""
    plan = _match(fn)
    if plan is None:
        permuted = _reduced_axis_last(fn)
        if permuted is None:
            return False
        plan = _match(fn)
        if plan is None:   # not a row kernel after all: the loops back in their order
            gens, perm = permuted
            _permute(gens, [perm.index(j) for j in range(len(perm))])
            return False
    _build(fn, plan, threads, workgroup_rows)
    return True


@register_pass("relax-gpu-row-reductions",
               "GPU kernels: row kernels (fills, reductions over the last loop, elementwise ops on the "
               "row; f32, f16, bf16 data, f32 accumulators) -> one gpu.launch, a workgroup per row, "
               "tree reductions in workgroup memory.",
               options=[Option("threads", int, THREADS, "threads per workgroup (a power of two)"),
                        Option("workgroup-rows", int, WORKGROUP_ROWS,
                               "below this many rows a workgroup per row, else a thread per row "
                               "(0: always a thread per row)")])
def relax_gpu_row_reductions(module: ir.Operation, opts) -> None:
    threads = opts.threads
    if threads < 1 or threads & (threads - 1):
        raise ValueError(f"relax-gpu-row-reductions: threads={threads} is not a power of two")
    check_block_size(module, threads, "relax-gpu-row-reductions")
    for f in kernels(module, ("reduction",)):
        schedule_kernel(f, threads, opts.workgroup_rows)
