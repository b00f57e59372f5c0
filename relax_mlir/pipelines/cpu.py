"""The ``cpu`` pipeline: relax IR -> LLVM dialect, ready for the ExecutionEngine.

Stages (each a plain pipeline string, pasteable into ``relax-opt --pass-pipeline``):

:func:`stages` names them for the compile driver (``graph``, ``host``, ``codegen``).

* :func:`graph_stage`: ``relax-infer-shapes``, ``relax-fold-batch-norm``, ``relax-cse``, ``relax-dce``, ``relax-dispatch-library`` (matmul [+ bias]
  to BLAS; it records the runtime library in ``relax.libraries``, which compile() links),
  ``relax-legalize`` (when registered),
  ``relax-lower-host`` (see its docstring for the calling convention);
* :func:`llvm_stage`: upstream only: one-shot bufferization across function boundaries
  (identity layouts, so numpy's C-contiguous arrays are the arguments), ownership-based
  buffer deallocation (intermediates freed; every returned buffer is owned by the
  caller, who frees it), linalg -> loops, then everything to the LLVM dialect.
  Graph functions carry ``llvm.emit_c_interface`` (set by relax-lower-host).
"""

from __future__ import annotations

from typing import Optional

from ..target import DISPATCH_POLICIES, DISPATCH_POLICY_DEFAULT, resolve_dispatch_policy  # noqa: F401
from ..transforms.registry import PASSES, Option, PipelineError, register_pipeline


#: Operator fusion (relax-fuse-ops + relax-fuse-kernels) in the cpu pipeline by default;
#: ``cpu{fusion=false}`` or ``graph_stage(fusion=False)`` switch it off for comparisons.
FUSION_DEFAULT = True

#: Memory planning (relax-plan-memory) in the cpu pipeline by default; ``cpu{plan-memory=false}``
#: or ``graph_stage(plan_memory=False)`` switch it off for comparisons.
PLAN_MEMORY_DEFAULT = True

#: Library dispatch (relax-dispatch-library: matmul / matmul + bias -> BLAS) by default;
#: ``cpu{dispatch=false}``, ``graph_stage(dispatch=False)`` or
#: ``relax_mlir.compile(src, options={"dispatch": False})`` switch it off.
DISPATCH_DEFAULT = True
DISPATCH_MIN_FLOPS = 4096

#: relax-conv-gemm's GEMM for groups-1 convolutions in the cpu pipeline: ``generated``
#: (the scheduled matmul; needs the schedules), ``auto`` (the same, BLAS for 1x1 expansions;
#: ``generated`` when dispatch is off) or ``blas`` (relax_blas_conv_gemm; needs library
#: dispatch). With schedules off the pipeline takes ``blas`` (dispatch on) or leaves the
#: convolutions to the direct kernel. ``generated`` since MobileNetV2 at 2 threads ran 2.8-3.4x
#: faster with it than with ``auto`` (batch 1 and 8, one process, bench/README.md); per
#: shape: bench_conv.py.
CONV_GEMM_DEFAULT = "generated"
#: relax-conv-gemm's ``direct`` option with the generated GEMM: which groups-1 convolutions
#: take the direct kernel instead of im2col + GEMM (``off``, ``all``, ``auto``; docs/conv.md).
CONV_DIRECT_DEFAULT = "auto"
#: relax-conv-gemm's ``pointwise`` option with the generated GEMM: 1x1 stride-1 unpadded
#: convolutions as one batch matmul with the weight shared (``on``) or by the rules above
#: (``off``); docs/conv.md.
CONV_POINTWISE_DEFAULT = "on"

#: relax-convert-layout in the cpu pipeline: "" or "NCHW" (off, the default: NCHW between layers) or
#: "NHWC" (``cpu{layout=NHWC}``, ``options={"layout": "NHWC"}``): convs and pools run
#: channels-last, transposes only at a chain's ends; measured slower on MobileNetV2 and
#: ResNet-18 (docs/conv.md, "Layouts"), so off.
LAYOUT_DEFAULT = ""

#: relax-dispatch-library's policy in the cpu pipeline: ``measured`` (the calibration table of
#: this CPU model and thread count decides BLAS or generated code per M range, split at run
#: time where both win; no table for this machine: the min-flops rule, and the module says
#: why in ``relax.dispatch_note``). ``cpu{dispatch-policy=flops}``,
#: ``options={"dispatch_policy": "flops"}`` or ``RELAX_MLIR_DISPATCH_POLICY=flops`` give the
#: fixed rule. Without schedules (plain loops, never calibrated) the rule is ``flops``.
def dispatch_policy(policy: Optional[str], schedules: Optional[bool]) -> str:
    """The policy the pipeline gives relax-dispatch-library (and compile() records in the
    target): ``policy`` when given, else ``$RELAX_MLIR_DISPATCH_POLICY``, else
    :data:`DISPATCH_POLICY_DEFAULT` (``flops`` without schedules); see
    :func:`relax_mlir.target.resolve_dispatch_policy`."""
    try:
        return resolve_dispatch_policy(policy, SCHEDULES_DEFAULT if schedules is None else schedules)
    except ValueError as e:
        raise PipelineError(str(e)) from None


def graph_stage(fusion: Optional[bool] = None, plan_memory: Optional[bool] = None,
                dispatch: Optional[bool] = None, dispatch_min_flops: Optional[int] = None,
                legalize_target: Optional[str] = None, host_target: Optional[str] = None,
                policy: Optional[str] = None, schedules: Optional[bool] = None,
                layout: Optional[str] = None) -> list[str]:
    """The graph passes, ending with relax-lower-host and its tail (see :func:`stages` for them split)."""
    graph, host = _graph_and_host(fusion, plan_memory, dispatch, dispatch_min_flops, legalize_target, host_target,
                                  dispatch_policy(policy, schedules), conv_gemm(dispatch, schedules), layout)
    return _cpu_graph(graph) + host + _host_tail()


def _cpu_graph(graph: list[str], widen: str = "relax-widen-bf16-matmul") -> list[str]:
    """The graph passes of the cpu target alone (not the GPU targets', which share the rest):
    relax-widen-bf16-matmul after shape inference and relax-fold-batch-norm (which matches a
    conv2d by its dtype-agnostic pattern), so that relax-conv-gemm, library dispatch and the
    f32 matmul / conv schedules see the widened products (``widen``: the pass with its options;
    the vulkan target's f32 matmul rule takes them too)."""
    if "relax-widen-bf16-matmul" not in PASSES:
        return graph
    after = [p for p in ("relax-fold-batch-norm", "relax-infer-shapes") if p in graph]
    at = graph.index(after[0]) + 1 if after else 0
    return graph[:at] + [widen] + graph[at:]


def _host_tail() -> list[str]:
    """The cpu kernels' last rewrite on tensors, in the host stage (so the tuner's tasks, taken
    after it, are the kernels codegen schedules): a fused matmul's product computed in its
    epilogue's destination (relax-epilogue-in-place: no M x N temporary)."""
    return [p for p in ("relax-epilogue-in-place",) if p in PASSES]


def stages(fusion: Optional[bool] = None, plan_memory: Optional[bool] = None,
           dispatch: Optional[bool] = None, dispatch_min_flops: Optional[int] = None,
           legalize_target: Optional[str] = None, host_target: Optional[str] = None,
           schedules: Optional[bool] = None, policy: Optional[str] = None,
           layout: Optional[str] = None) -> list[tuple[str, list[str]]]:
    """The named stages of the cpu pipeline, as the compile driver runs them (and dumps the IR
    after each): ``graph`` (relax to relax: shapes, dispatch, legalize, fusion, planning),
    ``host`` (relax-lower-host, then relax-epilogue-in-place), ``codegen`` (relax-apply-schedules, then upstream MLIR to
    the LLVM dialect)."""
    graph, host = _graph_and_host(fusion, plan_memory, dispatch, dispatch_min_flops, legalize_target, host_target,
                                  dispatch_policy(policy, schedules), conv_gemm(dispatch, schedules), layout)
    return [("graph", _cpu_graph(graph)), ("host", host + _host_tail()), ("codegen", llvm_stage(schedules))]


def _with_option(name: str, option: str, value: Optional[str]) -> str:
    """``name{option=value}`` when the pass declares that option (and a value is given)."""
    info = PASSES.get(name)
    if value is None or info is None or option not in {o.name for o in info.options}:
        return name
    return f"{name}{{{option}={value}}}"


def conv_gemm(dispatch: Optional[bool], schedules: Optional[bool]) -> Optional[str]:
    """relax-conv-gemm's ``gemm`` option in the cpu pipeline (None: the pass does not run);
    see :data:`CONV_GEMM_DEFAULT`."""
    dispatch = DISPATCH_DEFAULT if dispatch is None else dispatch
    schedules = SCHEDULES_DEFAULT if schedules is None else schedules
    gemm = CONV_GEMM_DEFAULT if schedules else "blas"
    if gemm == "auto" and not dispatch:
        gemm = "generated"
    return None if (gemm == "blas" and not dispatch) else gemm


def _graph_and_host(fusion, plan_memory, dispatch, dispatch_min_flops, legalize_target, host_target,
                    policy: str = "flops", conv_gemm: Optional[str] = None, layout: Optional[str] = None):
    if fusion is None:
        fusion = FUSION_DEFAULT
    if plan_memory is None:
        plan_memory = PLAN_MEMORY_DEFAULT
    if dispatch is None:
        dispatch = DISPATCH_DEFAULT
    if dispatch_min_flops is None:
        dispatch_min_flops = DISPATCH_MIN_FLOPS
    passes = ["relax-infer-shapes"]
    # conv2d -> per-channel scale/shift (inference BatchNorm) folded into the conv's weight and bias
    passes += [p for p in ("relax-fold-batch-norm",) if p in PASSES]
    # after shape inference (a dead op's run-time check is already its own relax.assert)
    passes += [p for p in ("relax-cse", "relax-dce") if p in PASSES]
    layout = LAYOUT_DEFAULT if layout is None else layout
    if layout and layout != "NCHW" and "relax-convert-layout" in PASSES:   # (NCHW: as is)
        passes.append(f"relax-convert-layout{{layout={layout}}}")   # convs and pools channels-last
    if conv_gemm is not None and "relax-conv-gemm" in PASSES:
        pointwise = f" pointwise={CONV_POINTWISE_DEFAULT}" if conv_gemm != "blas" else ""
        passes.append(f"relax-conv-gemm{{gemm={conv_gemm} direct={CONV_DIRECT_DEFAULT}{pointwise} "
                      f"min-flops={int(dispatch_min_flops)}}}")
    if dispatch and "relax-dispatch-library" in PASSES:
        passes.append(f"relax-dispatch-library{{min-flops={int(dispatch_min_flops)} policy={policy}}}")
    if "relax-legalize" in PASSES:
        passes.append(_with_option("relax-legalize", "target", legalize_target))
    # weight-only bindings (folded BatchNorm, conv weight packing, transposes) into
    # <f>_transform_params: after the passes that create them, before fusion (which would
    # merge them into input kernels) and memory planning (which plans each function alone)
    if "relax-lift-params" in PASSES:
        passes.append("relax-lift-params")
    # every kernel's kind (relax.kernel_kind), fused or not: fusion reads it, and so do the
    # cpu schedules (relax-apply-schedules, relax-specialize-ranges), which without it leave
    # an unfused kernel to plain loops
    if "relax-annotate-kernel-kinds" in PASSES:
        passes.append("relax-annotate-kernel-kinds")
    if fusion and "relax-fuse-ops" in PASSES:
        passes += ["relax-fuse-ops", "relax-fuse-kernels"]
    if plan_memory and "relax-plan-memory" in PASSES:
        passes.append("relax-plan-memory")
    return passes, [_with_option("relax-lower-host", "target", host_target)]


#: Transform-dialect schedules (relax-apply-schedules: tiled, vectorized kernels) by default;
#: ``cpu{schedules=false}`` or ``options={"schedules": False}`` give plain
#: convert-linalg-to-loops kernels. Their parallel loops run on OpenMP threads when an OpenMP
#: runtime is installed, as many as the executable says at run time (relax-omp-threads).
SCHEDULES_DEFAULT = True


def llvm_stage(schedules: Optional[bool] = None) -> list[str]:
    """Bufferize, deallocate, lower to the LLVM dialect; with ``schedules`` (default
    :data:`SCHEDULES_DEFAULT`) the kernels are scheduled first (relax-apply-schedules) and
    the stage gains the vector / OpenMP lowering (apply_schedules.scheduled_stage)."""
    if schedules is None:
        schedules = SCHEDULES_DEFAULT
    if not schedules:
        return _llvm_stage()
    from ..backends.cpu.apply_schedules import scheduled_stage
    st = scheduled_stage(_llvm_stage())
    # relax-specialize-ranges' dispatchers return a variant's result through scf.if: once the
    # variants' (equivalent) results are dropped, canonicalize folds it to the output argument
    # and a second drop removes it; a last canonicalize folds @main's guard (its scf.if then
    # yields the result buffer in both branches). Else ownership-based deallocation copies the
    # result on every call: with N and K static, a malloc + M*N*4-byte copy + free per call
    # (8-10 % of a 512x512x2048 matmul, measured; the copy is a byte loop in exported code).
    i = st.index("drop-equivalent-buffer-results")
    st[i + 2:i + 2] = ["drop-equivalent-buffer-results", "canonicalize"]
    # the library variants of relax.dispatch_split kernels call BLAS once bufferized
    st.insert(st.index(_llvm_stage()[0]) + 1, "relax-library-variants")
    return ["relax-specialize-ranges"] + st


def _llvm_stage() -> list[str]:
    return [
        # allow-return-allocs-from-loops: relax.repeat's loop carries the values its calls return
        "one-shot-bufferize{bufferize-function-boundaries=true allow-return-allocs-from-loops=true "
        "function-boundary-type-conversion=identity-layout-map unknown-type-conversion=identity-layout-map}",
        "drop-equivalent-buffer-results",
        "canonicalize",
        "ownership-based-buffer-deallocation",
        "canonicalize",
        "buffer-deallocation-simplification",
        "bufferization-lower-deallocations",
        "convert-bufferization-to-memref",
        "cse",
        "canonicalize",
        "relax-kernel-noalias",
        "relax-expand-math",
        "relax-kernel-fastmath",
        "convert-linalg-to-loops",
        "relax-widen-bool-memrefs",
        # bf16 arithmetic as f32 ops between extf and truncf, each truncf as integer rounding:
        # the same bits in scalar and vector code, on any CPU (relax-bf16-casts)
        "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}",
        "relax-bf16-casts",
    ] + to_llvm()


def to_llvm(memref_pass: str = "finalize-memref-to-llvm", before_casts: tuple = ()) -> list[str]:
    """Host code (affine, scf, math, memref, arith, index, cf, func) to the LLVM dialect:
    the tail every target's pipeline ends with (``memref_pass``: the memref lowering, e.g.
    with a device runtime's allocation functions; ``before_casts``: further conversions,
    e.g. ``gpu-to-llvm``)."""
    return ["expand-strided-metadata", "lower-affine", "convert-scf-to-cf", "convert-math-to-llvm",
            "convert-math-to-libm", memref_pass, "convert-arith-to-llvm", "convert-index-to-llvm",
            "convert-cf-to-llvm", "convert-func-to-llvm", *before_casts, "reconcile-unrealized-casts",
            "relax-packed-entries", "relax-internalize-graph-functions", "relax-host-optnone",
            "relax-strip-attributes"]


@register_pipeline("cpu", "relax IR to the LLVM dialect for the CPU: shapes, legalize, fusion, "
                          "host lowering, bufferize, deallocate, loops, LLVM.",
                   options=[Option("fusion", bool, FUSION_DEFAULT,
                                   "fuse call_tir kernels (relax-fuse-ops, relax-fuse-kernels)"),
                            Option("plan-memory", bool, PLAN_MEMORY_DEFAULT,
                                   "plan intermediates into reused storage (relax-plan-memory)"),
                            Option("dispatch", bool, DISPATCH_DEFAULT,
                                   "offload matmul (+ bias) to BLAS (relax-dispatch-library)"),
                            Option("dispatch-min-flops", int, DISPATCH_MIN_FLOPS,
                                   "relax-dispatch-library{min-flops=...}"),
                            Option("dispatch-policy", str, "",
                                   "relax-dispatch-library{policy=...}: measured (the calibration table "
                                   "of this machine, the default with schedules) or flops (the min-flops "
                                   "rule); default: $RELAX_MLIR_DISPATCH_POLICY, else measured"),
                            Option("schedules", bool, SCHEDULES_DEFAULT,
                                   "tile and vectorize kernels (relax-apply-schedules)"),
                            Option("layout", str, LAYOUT_DEFAULT,
                                   "relax-convert-layout{layout=...}: NHWC runs convs and pools channels-last "
                                   "(default: off, NCHW)")])
def cpu(opts) -> str:
    return ", ".join(graph_stage(opts.fusion, opts.plan_memory, opts.dispatch, opts.dispatch_min_flops,
                                 policy=opts.dispatch_policy, schedules=opts.schedules, layout=opts.layout)
                     + llvm_stage(opts.schedules))
