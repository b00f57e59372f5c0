"""relax-omp-threads: each OpenMP parallel region reads its thread count at run time.

``convert-scf-to-openmp{num-threads=1}`` gives every ``omp.parallel`` a constant
``num_threads``; this pass replaces that operand by a value computed right before the
region::

    num_threads = (bytes of the memrefs the region uses >= min-bytes
                   or FLOPs of its kernel >= min-flops) ? @_mlir_relax_num_threads : 1

``@_mlir_relax_num_threads`` is a module global (``memref.global``, i32), the thread count
of the module: its initial value is the target's (``Target.threads`` of the module's
``relax.target``, else :func:`num_threads` now), and
the runtime rewrites it when an executable is created (``RELAX_MLIR_NUM_THREADS`` then) and
whenever ``exe.num_threads`` is set (:mod:`relax_mlir.runtime.libraries`, threads part).
The name starts with ``_mlir_`` because the ExecutionEngine's lookup prefixes that.

A region never gets more threads than its parallel loop has iterations (a single (image,
panel) task at batch 1 runs on the calling thread: no fork). The work test keeps small
regions on the calling thread: a decode GEMV of a few hundred
KB or a tiny elementwise kernel costs less than a fork/join of OpenMP's team (several us,
far more when another process holds a core). ``num_threads(1)`` makes libiomp5 run the
region serialized on the caller (no wake-up of the workers). The work measure is the
bytes of every memref the region reads or writes that is defined outside it (the kernel's
arguments: inputs and outputs), each counted once. ``min-bytes`` (default
:data:`MIN_PARALLEL_BYTES`, 1 MiB) from ``bench/bench_contention.py --sweep`` (2 cores, the
other one idle; time on 2 threads over 1, the threshold off): M = 1 GEMVs 0.81-1.06 at
527 KB, 0.75-1.11 at 1 MB, 0.68-0.74 at 2 MB, 0.59-0.69 at 4 MB; add+relu 0.76-0.79 at
786 KB, 0.68-0.78 at 1.5 MB. Below 1 MiB two threads save a few us at best, above they
save 25-40%. (When another process holds the other core a 2-thread region waited 75 us,
some 4 ms, for it: libiomp5's dynamic team sizes handle that case, see
:func:`relax_mlir.runtime.libraries.init_openmp`.)

Bytes undercount compute-bound regions: a 1x1 conv on a 14x14 map (MobileNetV2's middle
layers, 9-22 MFLOP at batch 1) touches 0.5-0.75 MB, so it ran on one thread. A kernel whose
schedule knows its work marks itself :data:`FLOPS_ATTR` (FLOPs per element of its output,
the last argument: ``2*K`` for a matmul or 1x1 conv with a static K); its regions then also
take the run-time count when ``FLOPs = that * output elements`` reaches ``min-flops``
(default :data:`MIN_PARALLEL_FLOPS`; measured in bench/README.md, "Pointwise convs in one
region"). A FLOP count is a time only per machine; the threshold is set where two threads
paid on the AVX-512 machine, and on AVX2 (half the FLOPs per cycle) the same work takes
longer, so it pays there as well.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import arith, memref

from ...runtime.libraries import THREADS_SYMBOL, default_threads, env_threads, openmp_library  # noqa: F401 (re-exported)
from ...target import Target
from ...transforms.graph import top_ops
from ...transforms.lower_host.target import ensure_threads_global  # noqa: F401 (re-exported)
from ...transforms.registry import Option, emit_error, register_pass


def num_threads() -> int:
    """The thread count the process would run our kernels with now: ``RELAX_MLIR_NUM_THREADS``
    (default, or 0 or less: every core this process may run on), 1 when no OpenMP runtime is
    found (:func:`~relax_mlir.runtime.libraries.openmp_library`) or the value is not an integer. Compiled code does not
    depend on it (an executable reads it when it is created, see relax-omp-threads); it is
    the initial value of the module's count and the thread count of a tuning record."""
    n = env_threads()
    return n if n > 1 and openmp_library() else 1


#: The module's thread count (a public i32 global; see the module docstring).
THREADS_GLOBAL = THREADS_SYMBOL
#: A parallel region touching fewer bytes runs on one thread (unless its FLOPs reach
#: :data:`MIN_PARALLEL_FLOPS`).
MIN_PARALLEL_BYTES = 1 << 20
#: Kernel attribute (i64): FLOPs per element of the kernel's output (its last argument),
#: set by the schedules that know their work (the matmul family with a static K).
FLOPS_ATTR = "relax.flops_per_output"
#: FLOPs of a region's kernel from which it takes the run-time thread count whatever its bytes.
MIN_PARALLEL_FLOPS = 4_000_000


def load_threads() -> ir.Value:
    """The module's thread count as an i32 (at the current insertion point), at least 1."""
    i32 = ir.IntegerType.get_signless(32)
    t = memref.load(memref.get_global(ir.MemRefType.get([], i32), THREADS_GLOBAL), [])
    return arith.maxsi(t, arith.constant(i32, 1))


def _inside(op, region_op: ir.Operation) -> bool:
    while op is not None:
        if op.operation == region_op:
            return True
        op = op.operation.parent
    return False


def _defined_outside(v: ir.Value, region_op: ir.Operation) -> bool:
    owner = v.owner
    if isinstance(owner, ir.Block):
        owner = owner.owner
    return not _inside(owner, region_op)


def _captured_memrefs(par: ir.Operation) -> list[ir.Value]:
    """Distinct ranked memrefs used inside ``par`` and defined outside it, in use order."""
    seen: list[ir.Value] = []

    def visit(op):
        for v in op.operands:
            if isinstance(v.type, ir.MemRefType) and v not in seen and _defined_outside(v, par):
                seen.append(v)
        return ir.WalkResult.ADVANCE

    for region in par.regions:
        for block in region.blocks:
            for op in block.operations:
                op.operation.walk(visit)
    return seen


def _scaled_elements(v: ir.Value, scale: int) -> ir.Value:
    """``scale`` times the elements of the memref ``v``, as an index value (static dims folded
    into the constant)."""
    t = ir.MemRefType(v.type)
    idx = ir.IndexType.get()
    static, dyn = scale, []
    for i, d in enumerate(t.shape):
        if ir.ShapedType.is_dynamic_size(d):
            dyn.append(memref.dim(v, arith.constant(idx, i)))
        else:
            static *= d
    acc = arith.constant(idx, static)
    for d in dyn:
        acc = arith.muli(acc, d)
    return acc


def _bytes(v: ir.Value) -> Optional[ir.Value]:
    """Bytes of the memref ``v`` as an index value, or None for an element type of no known
    size."""
    width = getattr(ir.MemRefType(v.type).element_type, "width", None)
    return None if width is None else _scaled_elements(v, (width + 7) // 8)


def _num_threads_index(par: ir.Operation) -> Optional[int]:
    """Position of ``par``'s num_threads operand (segments: allocate, allocator, if,
    num_threads, private, reduction), None when it has none."""
    sizes = list(ir.DenseI32ArrayAttr(par.attributes["operandSegmentSizes"]))
    return sum(sizes[:3]) if sizes[3] == 1 else None


def _kernel_flops(par: ir.Operation) -> Optional[ir.Value]:
    """FLOPs of the kernel holding ``par`` (its :data:`FLOPS_ATTR` times the elements of its
    last argument, a memref) as an index value, or None when the kernel does not say."""
    fn = par.parent
    while fn is not None and fn.name != "func.func":
        fn = fn.parent
    if fn is None or FLOPS_ATTR not in fn.attributes:
        return None
    args = fn.regions[0].blocks[0].arguments
    if not len(args) or not isinstance(args[len(args) - 1].type, ir.MemRefType):
        return None
    return _scaled_elements(args[len(args) - 1], ir.IntegerAttr(fn.attributes[FLOPS_ATTR]).value)


def _trip_count(par: ir.Operation) -> Optional[ir.Value]:
    """Iterations of the ``omp.loop_nest`` that ``par`` runs (all its dims), as an index value
    computed before the region, or None (no loop nest, or bounds defined inside the region)."""
    nests: list[ir.Operation] = []

    def visit(op):
        if op.name == "omp.loop_nest":
            nests.append(op.operation)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    for region in par.regions:
        for block in region.blocks:
            for op in block.operations:
                if not nests:
                    op.operation.walk(visit)
    if not nests:
        return None
    nest = nests[0]
    ops = list(nest.operands)
    rank = len(nest.regions[0].blocks[0].arguments)
    if len(ops) != 3 * rank or any(not _defined_outside(v, par) for v in ops):
        return None
    trips = None
    for lb, ub, step in zip(ops[:rank], ops[rank:2 * rank], ops[2 * rank:]):
        t = arith.ceildivsi(arith.subi(ub, lb), step)
        trips = t if trips is None else arith.muli(trips, t)
    return trips


def set_run_time_threads(par: ir.Operation, min_bytes: int, min_flops: int = MIN_PARALLEL_FLOPS) -> None:
    """Give ``par`` (an ``omp.parallel`` with a num_threads operand) the run-time count."""
    at = _num_threads_index(par)
    if at is None:
        emit_error(par, "omp.parallel without num_threads: run convert-scf-to-openmp{num-threads=1} before "
                        "relax-omp-threads")
        return
    with ir.InsertionPoint(par), par.location:
        i32, idx = ir.IntegerType.get_signless(32), ir.IndexType.get()
        work = None
        for v in _captured_memrefs(par):
            b = _bytes(v)
            if b is not None:
                work = b if work is None else arith.addi(work, b)
        threads = load_threads()
        if work is None:
            n = threads
        else:
            big = arith.cmpi(arith.CmpIPredicate.uge, work, arith.constant(idx, min_bytes))
            flops = _kernel_flops(par)
            if flops is not None:
                big = arith.ori(big, arith.cmpi(arith.CmpIPredicate.uge, flops, arith.constant(idx, min_flops)))
            n = arith.select(big, threads, arith.constant(i32, 1))
        trips = _trip_count(par)
        if trips is not None:   # no more threads than iterations (a one-image task at batch 1: no fork)
            t = arith.index_cast(i32, arith.maxsi(trips, arith.constant(idx, 1)))
            n = arith.minsi(n, t)
    par.operands[at] = n


@register_pass("relax-omp-threads",
               "OpenMP parallel regions take the module's run-time thread count, one thread below a work threshold.",
               options=[Option("min-bytes", int, -1,
                               "regions touching fewer bytes of memrefs run on one thread "
                               "(-1: MIN_PARALLEL_BYTES, 1 MiB)"),
                        Option("min-flops", int, -1,
                               "regions of a kernel marked relax.flops_per_output whose FLOPs reach this run on "
                               "the run-time count whatever their bytes (-1: MIN_PARALLEL_FLOPS)")])
def relax_omp_threads(module: ir.Operation, opts) -> None:
    regions: list[ir.Operation] = []

    def visit(op):
        if op.name == "omp.parallel":
            regions.append(op.operation)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    if not regions:
        return
    try:
        threads = Target.for_module(module).threads
    except ValueError as e:
        emit_error(module, str(e))
        return
    ensure_threads_global(module, threads)
    min_bytes = MIN_PARALLEL_BYTES if opts.min_bytes < 0 else opts.min_bytes
    min_flops = MIN_PARALLEL_FLOPS if opts.min_flops < 0 else opts.min_flops
    for par in regions:
        set_run_time_threads(par, min_bytes, min_flops)
