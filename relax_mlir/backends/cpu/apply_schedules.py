"""relax-apply-schedules: tile and vectorize each kernel with its transform-dialect schedule.

For every kernel (``func.func`` marked ``relax.kernel``, still on tensors: this pass runs
before the module's one-shot bufferization) :func:`relax_mlir.schedules.select` picks a
schedule from the kernel's recorded kind and its ops; the schedule is a transform script
built with the typed transform-dialect builders and run by the upstream transform
interpreter on a copy of the kernel. When it succeeds the copy replaces the kernel;
when it fails (a shape the schedule does not handle) the kernel is left as it was and
goes through plain loops, so a schedule can make code faster but never wrong or missing.

The schedules leave vector transfers, vector arithmetic and ``scf.forall`` loops on
tensors, which the module's one-shot bufferization handles like any other tensor code;
after it, :func:`scheduled_stage` adds what the cpu pipeline needs for them (canonicalize
+ CSE right after bufferization, ``scf.forall`` to loops or OpenMP, upstream
``convert-vector-to-scf`` / ``convert-vector-to-llvm``).

With ``threads`` (the cpu pipeline sets it when an OpenMP runtime is installed) the
``scf.forall`` loops become OpenMP parallel regions whose thread count is read at RUN time
(relax-omp-threads: the module global the executable sets from ``RELAX_MLIR_NUM_THREADS``
or ``exe.num_threads``), one thread for small work. The code is right for any count: row,
batch and panel loops have data-sized iterations that OpenMP's work-sharing deals out at
run time; a GEMV's column split is sized at run time, one chunk per thread (a fixed chunk
count ran as fast on one thread, measured, but leaves threads idle or unbalanced when the
count is not its divisor).

``f32`` ``math.exp`` in a scheduled kernel is expanded inline first (relax-expand-math: vector ``math.exp`` would
become libm calls), and horizontal reductions get ``fastmath<reassoc>`` (a tree, not
an ordered chain). ``RELAX_MLIR_DEBUG_SCHEDULES=1`` prints why a schedule failed.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from mlir import ir

from ... import config as relax_config
from . import schedules
from ...runtime.libraries import KMP_BLOCKTIME_DEFAULT, init_openmp, openmp_library, openmp_wait_policy  # noqa: F401
from ...target import Simd, Target, simd_named
from . import omp_threads  # noqa: F401 (registers relax-omp-threads)
from ...transforms.expand_math import relax_expand_math
from ...transforms.graph import top_ops
from .omp_threads import default_threads, ensure_threads_global, env_threads, num_threads  # noqa: F401 (re-exported)
from .prefetch import ATTR as PREFETCH_ATTR
from ...transforms.registry import Option, emit_error, register_pass

#: Upstream passes the cpu pipeline runs after bufferization for scheduled kernels
#: (after convert-linalg-to-loops: vector transfers to 1-D, vector ops to LLVM, ub.poison).
VECTOR_LOWERING_EARLY = ["scf-forall-to-for", "convert-vector-to-scf{full-unroll=true target-rank=1}"]
VECTOR_LOWERING_LATE = ["convert-vector-to-llvm", "convert-ub-to-llvm"]

SCHEDULED_ATTR = "relax.schedule"
CONFIG_ATTR = "relax.schedule_config"  # the tuned knob values a kernel was scheduled with


def threaded_codegen() -> bool:
    """Whether the cpu pipeline emits OpenMP parallel regions: an OpenMP runtime is installed
    (:func:`openmp_library`). Not the thread count: that is read at run time."""
    return openmp_library() is not None


def openmp_libraries(pipeline_options: dict) -> list[str]:
    """The OpenMP runtime a module compiled with these cpu pipeline options needs (the
    schedules on and :func:`threaded_codegen`), else nothing."""
    v = pipeline_options.get("schedules", True)
    on = v if isinstance(v, bool) else str(v).lower() not in ("false", "0", "off")
    if not (on and threaded_codegen()):
        return []
    init_openmp("a module with OpenMP-threaded kernels")
    return [openmp_library()]


def scheduled_stage(llvm_stage: list[str], threads=None) -> list[str]:
    """The cpu pipeline's bufferize-to-LLVM stage with the schedules: relax-apply-schedules
    first (tensor level), canonicalize + CSE right after bufferization (folds the loop-carried
    buffers and self-copies the tiled loops leave, so kernel results stay equivalent to
    their output arguments and no result copy is made), and the vector lowering.
    ``threads`` (default :func:`threaded_codegen`; an int: more than 1): the schedules'
    ``scf.forall`` loops become OpenMP parallel regions with the run-time thread count
    (relax-omp-threads; link :func:`openmp_library`); else plain loops."""
    if threads is None:
        threads = threaded_codegen()
    elif not isinstance(threads, bool):
        threads = threads > 1
    st = list(llvm_stage)
    st[1:1] = ["canonicalize", "cse"]
    i = st.index("convert-linalg-to-loops")
    early = list(VECTOR_LOWERING_EARLY)
    late = list(VECTOR_LOWERING_LATE)
    if threads:
        early[0:1] = ["scf-forall-to-parallel", "convert-scf-to-openmp{num-threads=1}", "relax-omp-threads",
                      "canonicalize"]
        late.append("convert-openmp-to-llvm")
    # a loop body's scratch buffers once per loop / per thread, not per iteration (relax-hoist-scratch);
    # software prefetch of B's rows in the matmul kernels' streaming loops (relax-prefetch)
    st[i + 1:i + 1] = early + ["relax-hoist-scratch", "relax-prefetch"]
    j = st.index("finalize-memref-to-llvm")
    st[j:j] = late
    return ["relax-apply-schedules{threads=true}" if threads else "relax-apply-schedules"] + st


def _reassoc_reductions(fn: ir.Operation) -> None:
    attr = ir.Attribute.parse("#arith.fastmath<reassoc>")

    def visit(op):
        op = op.operation
        if op.name in ("vector.reduction", "vector.multi_reduction"):
            op.attributes["fastmath"] = attr
        return ir.WalkResult.ADVANCE

    fn.walk(visit)


def schedule_kernel(fn: ir.Operation, target: Optional[Simd] = None,
                    config: Optional[dict] = None, threaded: Optional[bool] = None) -> Optional[str]:
    """Apply the kernel's schedule in place; the schedule's name, or None (left as is).
    ``config``: knob values overriding the schedule's defaults (a tuned config); it is
    recorded on the kernel as ``relax.schedule_config``. Raises ValueError for a config
    the schedule's knob space rejects. ``threaded`` (default :func:`threaded_codegen`, as
    the cpu pipeline): see :func:`relax_mlir.schedules.select` (the module gets
    relax-omp-threads' global when the schedule reads it)."""
    if threaded is None:
        threaded = threaded_codegen()
    sched = schedules.select(fn, target, config, threaded)
    if sched is None:
        if relax_config.debug_schedules() and any(o.name.startswith("linalg.") for o in schedules.payload_ops(fn)):
            print(f"relax-apply-schedules: no schedule takes {fn.attributes['sym_name']} (plain loops)",
                  file=sys.stderr)
        return None
    if sched.prepare is not None:   # the module's thread count starts at its target's
        ensure_threads_global(fn.parent, Target.for_module(fn.parent).threads)
    copy = fn.clone(ir.InsertionPoint(fn))
    relax_expand_math(copy, _ENABLED)
    try:
        if sched.prepare is not None:
            sched.prepare(copy)
        schedules.apply(copy, sched.body)
        if sched.finish is not None:
            sched.finish(copy)
        ok = copy.verify()
    except (ir.MLIRError, ValueError) as e:  # the interpreter reports a failed transform as ValueError
        if relax_config.debug_schedules():
            print(f"relax-apply-schedules: {sched.name} failed on {copy.attributes['sym_name']}: {e}",
                  file=sys.stderr)
        ok = False
    if not ok:
        copy.erase()
        return None
    _reassoc_reductions(copy)
    copy.attributes[SCHEDULED_ATTR] = ir.StringAttr.get(sched.name)
    if sched.prefetch:  # relax-prefetch, after the vector lowering
        copy.attributes[PREFETCH_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), sched.prefetch)
    if config is not None:
        i64 = ir.IntegerType.get_signless(64)
        copy.attributes[CONFIG_ATTR] = ir.DictAttr.get({k: ir.IntegerAttr.get(i64, v) for k, v in sorted(config.items())})
    fn.erase()
    return sched.name


def _tuned_configs(module: ir.Operation, kernels: list[ir.Operation], db_path: str, target: Simd,
                   host: bool, threads: int) -> list[Optional[dict]]:
    """Per kernel, its tuned config from the tuning database at ``db_path`` (None for all
    when the file does not exist), keyed like ``relax-mlir tune`` records them: structural
    hash, target key, the module's size bucket. A range variant (relax-specialize-ranges)
    is looked up as the kernel it was cloned from, which is what the tuner measured (its
    variants included). Raises sqlite3.Error for a bad file."""
    from ...tuning.database import Database, module_bucket, target_key
    from ...transforms.kernel_hash import structural_hash

    if not os.path.exists(db_path):
        return [None] * len(kernels)
    key, bucket = target_key(target, threads, host), module_bucket(module)
    with Database(db_path) as db:
        recs = [db.lookup(structural_hash(fn, ignore=(schedules.RANGE_ATTR,)), key, bucket) for fn in kernels]
    return [r.config if r is not None else None for r in recs]


class _Enabled:
    enable = True


_ENABLED = _Enabled()


@register_pass("relax-apply-schedules",
               "Tile and vectorize kernels with transform-dialect schedules chosen by kernel kind.",
               options=[Option("enable", bool, True, "apply the schedules (false: plain loops)"),
                        Option("target", str, "host", "SIMD unit the tiles are sized for: host (the module's "
                                                      "relax.target, else detected), avx512, avx2, sse, neon"),
                        Option("tuning-db", str, "", "a tuning database (relax-mlir tune): kernels found there "
                                                     "get their tuned knob values, the others the defaults"),
                        Option("threads", bool, False, "the parallel loops will run on OpenMP threads "
                                                       "(relax-omp-threads): GEMVs split their columns per thread")])
def relax_apply_schedules(module: ir.Operation, opts) -> None:
    if not opts.enable:
        return
    threaded = opts.threads
    try:
        tgt = Target.for_module(module)
        target = tgt.simd if opts.target == "host" else simd_named(opts.target)
    except ValueError as e:
        emit_error(module, str(e))
        return
    kernels = [fn for fn in top_ops(module)
               if fn.name == "func.func" and "relax.kernel" in fn.attributes and fn.regions[0].blocks]
    configs: list[Optional[dict]] = [None] * len(kernels)
    if opts.tuning_db:
        import sqlite3
        try:
            configs = _tuned_configs(module, kernels, opts.tuning_db, target, opts.target == "host", tgt.threads)
        except sqlite3.Error as e:
            emit_error(module, f"tuning database '{opts.tuning_db}': {e}")
            return
    for fn, config in zip(kernels, configs):
        if config is not None:
            try:
                if schedule_kernel(fn, target, config, threaded) is not None:
                    continue
            except ValueError as e:  # a record from an older knob space: the defaults instead
                if relax_config.debug_schedules():
                    print(f"relax-apply-schedules: tuned config rejected: {e}", file=sys.stderr)
        schedule_kernel(fn, target, threaded=threaded)
