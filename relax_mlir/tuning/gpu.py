"""The GPU tuner: the knobs of relax-gpu-schedule's rules, measured on the device.

:func:`extract_gpu_tasks` runs the target's pipeline (vulkan or cuda) up to
relax-gpu-schedule and keeps every kernel a rule takes (GEMM / GEMV, quantized matmul,
rows, elementwise, decode attention: each rule's :class:`~relax_mlir.tuning.space.Space`
has knobs). A task's key is what relax-gpu-schedule{tuning-db=...} looks up: the kernel's
structural hash at that point, :func:`~relax_mlir.backends.gpu.rules.target_key` and the
module's size bucket. Each kernel is measured alone: a module holding the kernel (as the
graph stage left it) and a graph function calling it once (static state reads, the decode
attention's zero-filled counters, stay state reads; the other operands become arguments),
compiled from the host stage on (``start_after="graph"``), the candidate's knobs set as the
kernel's ``relax.schedule_config`` (which the rule checks: an invalid config is a failed
trial). That module reaches relax-gpu-schedule with the same structural hash (a test checks
it). It runs at the module's :func:`~relax_mlir.tuning.database.representative_sizes` (every
symbol at each size, but those ``fixed`` gives, or both) on seeded inputs kept in device memory; a
call's time includes its submission and the read-back of the output (the same for every
candidate). The first candidate measured is the default (the rule's untuned knobs); every
other one is checked against its outputs. Candidates compile and run in this process (not
the cpu tuner's subprocess): the rules check a config before they build anything.

The search itself is the cpu tuner's (:func:`~relax_mlir.tuning.search.tune_task`: random,
then mutations, then the best confirmed against the default, best of two). A record is
written only when the confirmed best beats the default by ``min_speedup`` (geometric mean
over the sizes): within noise the defaults stay.

On a device that computes nothing (the fake CUDA driver of the tests: device name "Fake
GPU ...") the candidates are compiled and launched (the host path) but no numerics are
checked and nothing is recorded: its times are not a GPU's.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import numpy as np
from mlir import ir

from ..target import Target
from .space import Config, Space
from .tasks import _dims

#: a candidate must beat the default by this factor (geometric mean over the sizes) to be recorded
MIN_SPEEDUP = 1.03

GPU_KINDS = ("vulkan", "cuda")


class NoDevice(RuntimeError):
    """No device of the target's kind to time kernels on."""


@dataclass
class GpuTask:
    """One kernel a GPU rule takes, with what it takes to compile and run it alone (the
    :class:`~relax_mlir.tuning.tasks.Task` interface tune_task uses)."""

    name: str  # the kernel's symbol
    key: str  # structural hash at relax-gpu-schedule
    schedule: str  # the rule's knob space: gpu_<rule>
    dtype: str
    default: Config  # the rule's untuned knobs for this kernel and target
    space: Space = field(repr=False)
    kernel_text: str = field(repr=False)  # the kernel alone with a graph function @main calling it
    args: list = field(default_factory=list)  # @main's tensors, {"kind": "tensor", "shape", "dtype"}
    bindings: list = field(default_factory=list)  # symbol -> value per representative size
    sizes: list = field(default_factory=list)
    bucket: str = "static"
    fn: ir.Operation = field(default=None, repr=False)  # the kernel at relax-gpu-schedule
    module: ir.Module = field(default=None, repr=False)
    dispatch: Optional[dict] = None  # always None: no library comparison on GPUs (a cpu tuner step)

    def request(self, config, min_time: float = 0.05, cutoff: Optional[list] = None) -> dict:
        return {"config": config, "min_time": min_time, "cutoff": cutoff}

    def accepts(self, config: Config, target: Target) -> bool:
        """Whether relax-gpu-schedule's selection takes ``config`` for this kernel."""
        from ..backends.gpu.rules import select
        try:
            with self.fn.context:
                return bool(select(self.fn, target, config=config))
        except ValueError:
            return False


def gpu_target(target: Union[str, Target], options: Optional[dict] = None) -> Target:
    """The Target a compile for ``target`` (a kind or a Target) would record."""
    from ..compiler import TARGETS, CompileOptions, pipeline_options_text
    from ..transforms.registry import PIPELINES

    if isinstance(target, Target):
        return target
    tgt = TARGETS[target]
    popts = PIPELINES[tgt.pipeline_name].parse_options(pipeline_options_text(options or {}))
    return (tgt.make_target or (lambda _, o: Target.from_options(o)))(popts, CompileOptions(target=target))


def _stages(target: Target, options: Optional[dict]) -> dict:
    from .. import transforms  # noqa: F401  (registers the passes)
    from ..compiler import TARGETS, pipeline_options_text
    from ..transforms.registry import PIPELINES

    tgt = TARGETS[target.kind]
    popts = PIPELINES[tgt.pipeline_name].parse_options(pipeline_options_text(options or {}))
    popts.target = target
    return dict(tgt.stages(popts, tgt))


def _before_schedule(codegen: list[str]) -> list[str]:
    i = next(i for i, p in enumerate(codegen) if p.split("{")[0] == "relax-gpu-schedule")
    return codegen[:i]


def _alone(module: ir.Module, kernel: str) -> Optional[tuple[str, list]]:
    """(a module holding kernel ``kernel`` and a graph function @main calling it as the first
    relax.call_tir of it does, @main's tensor arguments), from the graph stage's output; None
    when the call takes or gives anything but tensors of known rank, or its results have sizes
    its arguments do not bind."""
    from ..transforms.graph import set_function_type

    call, caller = None, None
    for op in module.body.operations:
        f = op.operation
        if f.name != "func.func" or "relax.function" not in f.attributes or call is not None:
            continue
        for o in f.regions[0].blocks[0].operations:
            o = o.operation
            if o.name == "relax.call_tir" and ir.FlatSymbolRefAttr(o.attributes["callee"]).value == kernel:
                call, caller = o, f
                break
    if call is None:
        return None
    kfn = next(op.operation for op in module.body.operations if op.operation.name == "func.func"
               and ir.StringAttr(op.operation.attributes["sym_name"]).value == kernel)
    operands = list(call.operands)
    values = operands + list(call.results)
    if not all(isinstance(v.type, ir.RankedTensorType) and _dims(v.type) is not None for v in values):
        return None
    bound = {x for v in operands for d in _dims(v.type) if isinstance(d, str) for x in _symbols(d)}
    needed = [d for r in call.results for d in _dims(r.type) if isinstance(d, str)]
    if "tir_vars" in call.attributes:
        from ..shapes import Shape
        needed += [str(d) for d in Shape.from_attr(call.attributes["tir_vars"]) if not d.is_static]
    if any(not _symbols(d) <= bound for d in needed):
        return None   # a size the arguments do not give (an arange's length)
    # static state reads (the decode attention's zero-filled row counters) stay reads of the
    # session's state; everything else becomes an argument of @main
    reads = [i for i, v in enumerate(operands) if isinstance(v, ir.OpResult) and v.owner.name == "relax.state_read"
             and ir.RankedTensorType(v.type).has_static_shape]
    params = [v for i, v in enumerate(operands) if i not in reads]
    m = ir.Module.create()
    for k in list(module.operation.attributes):
        if k != "relax.state":
            m.operation.attributes[k] = module.operation.attributes[k]
    if reads:
        states = ir.DictAttr(module.operation.attributes["relax.state"])
        used = {ir.StringAttr(operands[i].owner.attributes["state"]).value for i in reads}
        m.operation.attributes["relax.state"] = ir.DictAttr.get({n: states[n] for n in sorted(used)})
    ftype = ir.FunctionType.get([v.type for v in params], [r.type for r in call.results])
    main = ir.Operation.create("func.func", regions=1, attributes={
        "sym_name": ir.StringAttr.get("main"), "function_type": ir.TypeAttr.get(ftype),
        "relax.function": ir.UnitAttr.get()})
    if "relax.upper_bounds" in caller.attributes:
        main.attributes["relax.upper_bounds"] = caller.attributes["relax.upper_bounds"]
    block = main.regions[0].blocks.append(*[v.type for v in params])
    with ir.InsertionPoint(block):
        args_in = iter(block.arguments)
        values = [ir.Operation.create("relax.state_read", results=[v.type], attributes={
                      a: v.owner.attributes[a] for a in list(v.owner.attributes)}).result if i in reads
                  else next(args_in) for i, v in enumerate(operands)]
        new = ir.Operation.create("relax.call_tir", results=[r.type for r in call.results], operands=values,
                                  attributes={a: call.attributes[a] for a in list(call.attributes)})
        ir.Operation.create("func.return", operands=list(new.results))
    m.body.append(main)
    set_function_type(main, [v.type for v in params], [r.type for r in call.results])
    m.body.append(kfn.clone(ip=False))
    args = [{"kind": "tensor", "shape": _dims(v.type), "dtype": str(ir.RankedTensorType(v.type).element_type)}
            for v in params]
    return str(m), args


def extract_gpu_tasks(src, target: Target, options: Optional[dict] = None,
                      fixed: Optional[dict] = None, also_free: bool = False) -> list[GpuTask]:
    """The distinct kernels of ``src`` (MLIR text, a path or an ir.Module) that a rule of
    relax-gpu-schedule takes on ``target``, keyed as relax-gpu-schedule looks them up, in
    program order (a kernel whose call takes anything but tensors of known rank is left out).
    Every symbol is bound to each representative size, except those ``fixed`` gives (a decode
    step: ``{"s": 1}``, one new token against KV lengths of the representative sizes);
    ``also_free``: the bindings without ``fixed`` measured too (their sizes labelled ``n``,
    the fixed ones ``"n:s=1"``), so that a record is measured on both regimes."""
    from ..backends.gpu.launch_builder import kernels
    from ..backends.gpu.rules import CONFIG_ATTR, select
    from ..compiler import _module
    from ..transforms.kernel_hash import structural_hash
    from ..transforms.pipeline import run_pipeline
    from .database import module_bound, module_bucket, representative_sizes

    stages = _stages(target, options)
    module = _module(src)
    tasks: list[GpuTask] = []
    with module.context, ir.Location.unknown():
        target.record(module.operation)
        bound, symbolic = module_bound(module.operation)
        sizes = representative_sizes(bound) if symbolic else [0]
        run_pipeline(module, "builtin.module(" + ", ".join(stages["graph"]) + ")")
        graph = ir.Module.parse(str(module))
        run_pipeline(module, "builtin.module(" + ", ".join(stages["host"] + _before_schedule(stages["codegen"])) + ")")
        bucket = module_bucket(module.operation)
        seen = set()
        from ..pipelines.gpu import WORKGROUP_SIZE
        hints = {"workgroup_size": int((options or {}).get("workgroup_size", WORKGROUP_SIZE))}   # as the pass
        for fn in kernels(module.operation):
            chosen = select(fn, target, **hints)
            if not chosen:
                continue   # the generic fallback: no knobs
            key = structural_hash(fn, ignore=(CONFIG_ATTR,))
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            alone = _alone(graph, name) if key not in seen else None
            if alone is None:
                continue
            seen.add(key)
            text, args = alone
            syms = sorted({d for a in args for d in a["shape"] if isinstance(d, str) for d in _symbols(d)})
            kmod = ir.Module.create()
            kmod.body.append(fn.clone(ip=False))
            kfn = list(kmod.body.operations)[0].operation
            s = chosen[0]
            bindings, kept = [], []
            label = ",".join(f"{k}={v}" for k, v in sorted((fixed or {}).items()) if k in syms)
            regimes = ([{}] if also_free and fixed else []) + [fixed or {}]
            for fix in regimes:
                for n in sizes:
                    b = {x: fix.get(x, n) for x in syms}
                    if b not in bindings:
                        bindings.append(b)
                        kept.append(f"{n}:{label}" if fix and label and also_free else n)
            tasks.append(GpuTask(name, key, f"gpu_{s.rule.name}", s.dtype, s.config, s.rule.space(target), text, args,
                                 bindings, kept, bucket, kfn, kmod))
    return tasks


def _symbols(expr: str) -> set:
    from ..shapes import parse_dim
    return set(parse_dim(expr).symbols)


class DeviceMeasurer:
    """Compiles a task's kernel alone under a config and times it on the device (in this
    process: the rules check a config before building anything). Answers
    :meth:`~relax_mlir.tuning.search.tune_task`'s requests as the cpu
    :class:`~relax_mlir.tuning.worker.Worker` does."""

    def __init__(self, task: GpuTask, target: Target, options: Optional[dict] = None):
        self.task, self.target, self.options = task, target, dict(options or {})
        self.reference: Optional[list] = None   # the default's outputs per size
        self.fake = False

    def compile(self, config: Optional[Config]):
        import relax_mlir
        from ..backends.gpu.rules import CONFIG_ATTR

        ctx = relax_mlir.make_context()
        with ctx, ir.Location.unknown():
            m = relax_mlir.parse(self.task.kernel_text, ctx)
            if config is not None:
                fn = next(op.operation for op in m.body.operations
                          if ir.StringAttr(op.operation.attributes["sym_name"]).value == self.task.name)
                fn.attributes[CONFIG_ATTR] = ir.DictAttr.get(
                    {k: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for k, v in config.items()})
        return relax_mlir.compile(m, target=self.target, options={**self.options, "start_after": "graph"})

    def request(self, req: dict, timeout_s: float = 0.0) -> dict:
        from .worker import _inputs
        try:
            exe = self.compile(req["config"])
            self.fake = self.fake or "fake" in str(getattr(exe, "device_name", "")).lower()
            times, outs = [], []
            for i, b in enumerate(self.task.bindings):
                arrays = [exe.upload(a) for a in _inputs(self.task.args, b, 1000 + i)]
                y = exe(*arrays)   # warm-up (pipelines created) and the outputs checked
                outs.append([np.asarray(o) for o in (y if isinstance(y, tuple) else (y,))])
                best, spent, n = float("inf"), 0.0, 0
                cutoff = req["cutoff"][i] if req.get("cutoff") else None
                while n < 3 or spent < req["min_time"]:
                    t0 = time.perf_counter()
                    exe(*arrays)
                    dt = time.perf_counter() - t0
                    best, spent, n = min(best, dt), spent + dt, n + 1
                    if cutoff is not None and dt > cutoff:
                        break   # hopeless
                times.append(best)
        except Exception as e:  # noqa: BLE001 - a candidate the rule or the compile refuses is a failed trial
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            return {"ok": False, "error": f"{type(e).__name__}: {' '.join(lines[:2])}"}
        if req["config"] is None and self.reference is None:
            self.reference = outs
        elif self.reference is not None and not self.fake:
            for i, (got, ref) in enumerate(zip(outs, self.reference)):
                for g, r in zip(got, ref):
                    tol = 1e-3 * max(1.0, float(np.max(np.abs(r.astype(np.float64)))) if r.size else 1.0)
                    if g.shape != r.shape or not np.allclose(g.astype(np.float64), r.astype(np.float64),
                                                             rtol=1e-3, atol=tol, equal_nan=True):
                        at = ", ".join(f"{k}={v}" for k, v in self.task.bindings[i].items()) or "the static shapes"
                        return {"ok": False, "error": f"wrong result at {at}"}
        return {"ok": True, "times": times}


def task_rng(seed: int, task: GpuTask) -> random.Random:
    """The search's random draws for ``task``: seeded by the kernel, so that they do not depend
    on the other kernels' times."""
    return random.Random(f"{seed}:{task.key}")


def tune_gpu(src, db_path: str, target: Union[str, Target] = "vulkan", budget_s: float = 60.0, max_trials: int = 64,
             options: Optional[dict] = None, log: Callable[[str], None] = print, seed: int = 0,
             min_time: float = 0.05, min_speedup: float = MIN_SPEEDUP, fixed: Optional[dict] = None,
             also_free: bool = False) -> list:
    """Tune the GPU rules' knobs of every kernel of ``src`` on ``target``'s device within
    ``budget_s`` seconds (shared evenly among the kernels not yet tuned); a config that beats
    the default by ``min_speedup`` is recorded in ``db_path`` (see the module docstring).
    ``fixed``, ``also_free``: symbol values kept at every size, and whether the sizes without
    them are measured too (:func:`extract_gpu_tasks`)."""
    from ..backends.gpu.rules import target_key
    from .database import Database
    from .search import each_task, record_best, tune_task

    import importlib

    t0 = time.monotonic()
    dev = gpu_target(target, options)
    ok, why = importlib.import_module(f"relax_mlir.runtime.{dev.kind}").available()
    if not ok:
        raise NoDevice(f"no {dev.kind} device to time kernels on: {why}")
    tasks = extract_gpu_tasks(src, dev, options, fixed, also_free)
    key = target_key(dev)
    log(f"tuning {len(tasks)} GPU kernel(s) on {key}, budget {budget_s:.0f} s, at most {max_trials} trials each")
    results = []
    with Database(db_path) as db:
        for task, prefix, share in each_task(tasks, budget_s, t0, log):
            m = DeviceMeasurer(task, dev, options)
            rng = task_rng(seed, task)
            r = tune_task(task, m, dev, share, max_trials, rng, log, min_time, prefix,
                          space=task.space, base_cfg=task.default)
            if r is None:
                continue
            if m.fake:
                log(f"{prefix} a device that computes nothing ({key}): nothing recorded")
            elif r.best is not None and r.best.config != task.default and r.speedup >= min_speedup:
                record_best(db, key, r, log, prefix)
            else:
                log(f"{prefix} the default stays ({r.speedup:.2f}x, a record needs {min_speedup:.2f}x)")
            results.append(r)
    log(f"done in {time.monotonic() - t0:.0f} s; database {db_path}")
    return results
