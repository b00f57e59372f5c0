"""The tunable kernels of a program: each scheduled kernel as relax-apply-schedules will
see it, with what it takes to run it alone.

:func:`extract_tasks` runs the cpu pipeline's ``graph`` stage (reading each kernel's
arguments' symbolic shapes off its first ``relax.call_tir``), then the ``host`` stage
(the kernels as the codegen stage gets them, whose structural hash keys the database),
and keeps the kernels a schedule fits. Symbols are bound to the module's
:func:`~relax_mlir.tuning.database.representative_sizes`.

With library dispatch on (the pipeline's default ``dispatch``), the graph stage runs
``relax-dispatch-library{mark-candidates=true}``: the matches BLAS could take stay
generated code, and each kernel holding one carries ``relax.dispatch_candidate``, read
into :attr:`Task.dispatch` (the dispatch key, the library symbol and the call's
arguments) so that the search can time the library call against the tuned kernel. The
mark is left out of the kernel's structural hash: a compile that keeps the match
generated builds the same kernel without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mlir import ir

from ..target import Simd
from .space import SPACES, family


@dataclass
class Task:
    name: str  # the kernel's symbol
    key: str  # structural hash
    schedule: str  # the schedule select() picks
    kernel_text: str  # a module holding only the kernel
    args: list  # {"kind": "tensor", "shape": [int | expr], "dtype"} or {"kind": "index", "expr"}
    n_outputs: int
    n_index: int
    bindings: list  # symbol -> value, one dict per representative size
    sizes: list  # the representative sizes
    bucket: str
    fn: ir.Operation = field(repr=False)  # the kernel (for select(config=...) checks)
    module: ir.Module = field(repr=False)
    #: A match relax-dispatch-library could send to the library (see the module docstring):
    #: {"key", "callee", "library", "args" (as ``args``, the output last), "m" (the row
    #: count: an int or an expression)}; None: not one.
    dispatch: Optional[dict] = None

    def library_request(self, min_time: float = 0.05) -> Optional[dict]:
        """A :mod:`.worker` request timing the library call of :attr:`dispatch`."""
        if self.dispatch is None:
            return None
        return {"op": "library", "library": self.dispatch["library"], "callee": self.dispatch["callee"],
                "args": self.dispatch["args"], "bindings": self.bindings, "min_time": min_time}

    def ms(self) -> list:
        """The dispatch match's row count at each representative size."""
        from ..shapes import Dim
        m = Dim.of(self.dispatch["m"])
        return [m.evaluate(b) if not m.is_static else m.value for b in self.bindings]

    def request(self, config, min_time: float = 0.05, cutoff: Optional[list] = None) -> dict:
        """A :mod:`.worker` request measuring this kernel with ``config``; ``cutoff``: per
        size, a time beyond which one call is enough (a hopeless candidate)."""
        return {"key": self.key, "kernel": self.kernel_text, "name": self.name, "args": self.args,
                "n_outputs": self.n_outputs, "n_index": self.n_index, "bindings": self.bindings,
                "config": config, "min_time": min_time, "cutoff": cutoff}

    def accepts(self, config: dict, target: Simd) -> bool:
        """Whether select() takes ``config`` for this kernel (the knob space's rule, with
        the kernel's extents)."""
        from ..backends.cpu import schedules
        try:
            return schedules.select(self.fn, target, config) is not None
        except ValueError:
            return False


def _dims(t: ir.Type) -> Optional[list]:
    from ..shapes import UNKNOWN, read_tensor_type
    shape = read_tensor_type(t).shape
    if any(d is UNKNOWN for d in shape):
        return None
    return [d.value if d.is_static else str(d) for d in shape]


def _call_sites(module: ir.Module) -> dict:
    """kernel name -> (argument specs, outputs, index args), from its first call_tir."""
    from ..shapes import Shape

    sites: dict = {}

    def visit(op):
        op = op.operation
        if op.name != "relax.call_tir":
            return ir.WalkResult.ADVANCE
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if callee in sites:
            return ir.WalkResult.ADVANCE
        dests = list(ir.DenseI64ArrayAttr(op.attributes["dests"])) if "dests" in op.attributes else []
        operands = list(op.operands)
        if dests:
            operands = operands[:len(operands) - len(dests)]
        args = []
        for v in operands + list(op.results):
            if not isinstance(v.type, ir.RankedTensorType) or (d := _dims(v.type)) is None:
                sites[callee] = None
                return ir.WalkResult.ADVANCE
            args.append({"kind": "tensor", "shape": d, "dtype": str(ir.RankedTensorType(v.type).element_type)})
        tir = Shape.from_attr(op.attributes["tir_vars"]) if "tir_vars" in op.attributes else Shape([])
        args += [{"kind": "index", "expr": d.value if d.is_static else str(d)} for d in tir]
        sites[callee] = (args, len(op.results), tir.rank)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return sites


def _candidate(fn: ir.Operation) -> Optional[dict]:
    """The kernel's ``relax.dispatch_candidate`` as :attr:`Task.dispatch`, else None."""
    from ..transforms.dispatch_split import CANDIDATE_ATTR
    if CANDIDATE_ATTR not in fn.attributes:
        return None
    d = ir.DictAttr(fn.attributes[CANDIDATE_ATTR])
    types = [ir.TypeAttr(t).value for t in ir.ArrayAttr(d["types"])]
    dims = [_dims(t) for t in types]
    if any(x is None for x in dims) or len(dims[-1]) < 2:
        return None
    return {"key": ir.StringAttr(d["key"]).value, "callee": ir.StringAttr(d["callee"]).value,
            "library": ir.StringAttr(d["library"]).value, "m": dims[-1][-2],
            "args": [{"kind": "tensor", "shape": x, "dtype": str(ir.RankedTensorType(t).element_type)}
                     for x, t in zip(dims, types)]}


def _mark_candidates(passes: list[str]) -> list[str]:
    """The graph stage with relax-dispatch-library marking candidates instead of dispatching."""
    out = []
    for p in passes:
        if p == "relax-dispatch-library":
            p = "relax-dispatch-library{mark-candidates=true}"
        elif p.startswith("relax-dispatch-library{"):
            p = p[:-1] + " mark-candidates=true}"
        out.append(p)
    return out


def _cpu_stages(options: dict):
    from .. import transforms  # noqa: F401  (registers the passes)
    from ..compiler import TARGETS, pipeline_options_text
    from ..transforms.registry import PIPELINES

    tgt = TARGETS["cpu"]
    return dict(tgt.stages(PIPELINES[tgt.pipeline_name].parse_options(pipeline_options_text(options)), tgt))


def extract_tasks(src, target: Simd, options: Optional[dict] = None, dispatch: bool = True) -> list[Task]:
    """The distinct scheduled kernels of ``src`` (MLIR text, a path or an ir.Module) compiled
    with the cpu pipeline ``options``, in program order. ``dispatch``: where the options
    dispatch to the library, keep the matches generated and record them as
    :attr:`Task.dispatch` (see the module docstring)."""
    from ..backends.cpu import schedules
    from ..compiler import _module
    from ..transforms.kernel_hash import structural_hash
    from ..transforms.pipeline import run_pipeline
    from .database import module_bound, representative_sizes, size_bucket

    from ..transforms.dispatch_split import CANDIDATE_ATTR

    stages = _cpu_stages(dict(options or {}))
    if dispatch:
        stages["graph"] = _mark_candidates(stages["graph"])
    module = _module(src)
    tasks: list[Task] = []
    with module.context, ir.Location.unknown():
        bound, symbolic = module_bound(module.operation)
        run_pipeline(module, "builtin.module(" + ", ".join(stages["graph"]) + ")")
        sites = _call_sites(module)
        run_pipeline(module, "builtin.module(" + ", ".join(stages["host"]) + ")")
        sizes = representative_sizes(bound) if symbolic else [0]
        seen = set()
        for op in module.body.operations:
            fn = op.operation
            if fn.name != "func.func" or "relax.kernel" not in fn.attributes or not fn.regions[0].blocks:
                continue
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            sched = schedules.select(fn, target)
            if sched is None or not sites.get(name) or family(sched.name) not in SPACES:
                continue  # no schedule, not called, or no knobs to tune (gemv, contraction)
            key = structural_hash(fn, ignore=(CANDIDATE_ATTR,))
            if key in seen:
                continue
            seen.add(key)
            args, n_out, n_index = sites[name]
            cand = _candidate(fn)
            syms = sorted({s for a in args + (cand["args"] if cand else []) for s in _symbols(a)})
            bindings = [{s: n for s in syms} for n in sizes]
            kmod = ir.Module.create()
            kmod.body.append(fn.clone(ip=False))
            kfn = list(kmod.body.operations)[0].operation
            tasks.append(Task(name, key, sched.name, str(kmod), args, n_out, n_index, bindings, sizes,
                              size_bucket(bound, symbolic), kfn, kmod, cand))
    return tasks


def _symbols(arg: dict) -> set:
    from ..shapes import parse_dim
    dims = arg["shape"] if arg["kind"] == "tensor" else [arg["expr"]]
    out: set = set()
    for d in dims:
        if not isinstance(d, int):
            out |= set(parse_dim(d).symbols)
    return out
