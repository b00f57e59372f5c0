"""The compile driver: targets, typed options, named stages, diagnostics.

::

    exe = relax_mlir.compile(src)                                   # target "cpu", defaults
    exe = relax_mlir.compile(src, options={"dispatch": False})      # a dict still works
    opts = CompileOptions(target="cpu", pipeline_options={"fusion": False}, opt_level=2,
                          dump_ir="/tmp/ir")                        # IR after each stage
    exe = relax_mlir.compile(module, options=opts)

``src`` is MLIR text, a path (``pathlib.Path``: locations name the file) or an
``ir.Module``, compiled in ITS OWN context from a clone (never printed and re-parsed, so
diagnostics and run-time messages point at the user's source locations; the user's module
is left as it was).

A :class:`~relax_mlir.backends.Backend` (``relax_mlir/backends/<kind>/``, registered in
:data:`TARGETS` under its name, ``cpu``, ``vulkan``, ``cuda``) names its stages (``cpu``: ``graph`` -> ``host`` -> ``codegen``), its
legalization and host-lowering hooks (``relax-legalize{target=...}``,
``relax-lower-host{target=...}``: per-backend legalizations and the hooks that turn
``call_tir`` into kernel calls and allocations into the backend's), the runtime libraries
it always links, and a runtime factory that turns the lowered module into an
:class:`~relax_mlir.runtime.executable.Executable`.

The compile's :class:`relax_mlir.target.Target` (what the code runs on: ISA, threads, device
limits, BLAS provider, dispatch policy) is made from the options
(:meth:`Target.from_options`, the backend's ``make_target``), or given as
``target=Target(...)``, and recorded on the module as ``relax.target`` before the first
stage runs: the passes read it there instead of the environment or the host. ``CompileOptions.pipeline`` replaces
the stages before ``codegen`` by a custom pipeline; ``start_after="host"`` compiles a
module already lowered by relax-lower-host (e.g. the output of ``relax-opt``).

Every failure caused by the input or the options raises :class:`relax_mlir.CompileError`
(a ``ValueError``) carrying the MLIR diagnostics as ``(file:line:col, message)`` pairs; a
bug of a pass raises :class:`InternalCompilerError`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Sequence, Union

from .backends import BACKENDS, Backend, Stage, register_backend  # noqa: F401 (re-exported)
from .backends.cpu import llvm_text
from .errors import CompileError
from .target import Target
from .runtime.aot import export_library
from .transforms.registry import CompileOptionsError, PipelineError  # noqa: F401 (re-exported)


class InternalCompilerError(RuntimeError):
    """A bug in relax-mlir (a pass raised); not something the input can fix."""


@dataclass
class CompileOptions:
    """How to compile. ``pipeline_options``: the target pipeline's options (``cpu``:
    ``fusion``, ``plan_memory``, ``dispatch``, ``dispatch_min_flops``, ``dispatch_policy``,
    ``schedules``; see ``relax-opt
    --list-passes``). ``libraries``: shared libraries providing ``relax.call_dps_library``
    callees. ``opt_level``: LLVM optimization level (0-3). ``target_cpu`` /
    ``target_features``: for ahead-of-time code (``llc -mcpu/-mattr``; the JIT uses the
    host). ``dump_ir``: a directory that receives the IR after each stage.
    ``pipeline``: a custom pass pipeline replacing the stages before ``codegen``;
    ``start_after``: the stage the input already went through. ``tuning_db``: a tuning
    database (``relax-mlir tune``) whose configs relax-apply-schedules uses for the kernels
    it holds (the default schedules for the others), and whose dispatch decisions (BLAS or
    generated code per size) relax-dispatch-library follows (its policy for the others).
    ``timing``: print MLIR's pass timing report of each stage to stderr (as ``relax-opt
    --mlir-timing``; relax passes included). Whatever it is, ``exe.compile_phases`` holds
    the seconds of each stage and of the runtime's construction (for the cpu target:
    ``jit-optimize``, LLVM translation + optimization, and ``jit-codegen``, machine code
    for the whole module on the first symbol lookup). ``cache``: the cpu target reuses the
    library an earlier compile of the same module exported into the compile cache
    (:mod:`relax_mlir.compile_cache`, ``RELAX_MLIR_CACHE_DIR``), else compiles, exports
    into it and loads that (``exe.cache_hit`` says which); other targets ignore it."""

    target: Union[str, "Target"] = "cpu"
    pipeline_options: dict = field(default_factory=dict)
    libraries: Sequence[str] = ()
    opt_level: int = 3
    target_cpu: Optional[str] = None
    target_features: Optional[str] = None
    dump_ir: Optional[str] = None
    pipeline: Optional[str] = None
    start_after: Optional[str] = None
    tuning_db: Optional[str] = None
    timing: bool = False
    cache: bool = False

    @staticmethod
    def of(options: Union[None, dict, "CompileOptions"]) -> "CompileOptions":
        """Options from a :class:`CompileOptions`, ``None`` or a dict (the old form: the
        pipeline's options, e.g. ``{"dispatch": False}``; CompileOptions field names too)."""
        if options is None:
            return CompileOptions()
        if isinstance(options, CompileOptions):
            return replace(options)
        if not isinstance(options, dict):
            raise CompileOptionsError(f"options must be a CompileOptions or a dict, not {type(options).__name__}")
        own = {f.name for f in fields(CompileOptions)}
        kw = {k: v for k, v in options.items() if k in own}
        rest = {k: v for k, v in options.items() if k not in own}
        kw["pipeline_options"] = {**dict(kw.get("pipeline_options") or {}), **rest}
        return CompileOptions(**kw)


# The backends (relax_mlir/backends/<kind>/) register themselves on import.
TARGETS = BACKENDS
register_target = register_backend


# -- the driver ---------------------------------------------------------------------------

def pipeline_options_text(options: dict) -> str:
    """``{"fusion": False, "plan_memory": True}`` as a pipeline's option text
    (``fusion=false plan-memory=true``)."""
    return " ".join(f"{k.replace('_', '-')}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in options.items())


def _location(loc) -> str:
    from .transforms.lower_host.common import file_location
    return file_location(loc) or str(loc)


def _diagnostics(err) -> list[tuple[str, str]]:
    out = []
    for d in err.error_diagnostics:
        out.append((_location(d.location), d.message))
        out.extend((_location(n.location), n.message) for n in d.notes)
    return out


def _raise_mlir(err, what: str):
    diags = _diagnostics(err)
    internal = [m for _, m in diags if m.startswith("internal error in pass")]
    if internal:
        raise InternalCompilerError(f"{what}: {internal[0]}") from None
    text = "\n".join(f"{loc}: error: {msg}" for loc, msg in diags) or str(err)
    raise CompileError(f"{what} failed:\n{text}", diags) from None


def _module(src):
    """A module the compile owns, in the context of ``src`` when it is a Module."""
    from mlir import ir

    from . import make_context

    if isinstance(src, ir.Module):
        clone = src.operation.clone()
        with src.context, src.operation.location:
            m = ir.Module.create(src.operation.location)
            for k in list(clone.attributes):
                m.operation.attributes[k.name if hasattr(k, "name") else k] = clone.attributes[k]
            for op in list(clone.regions[0].blocks[0].operations):
                m.body.append(op.operation)
            clone.erase()
        return m
    from .dialects.source import parse_module
    from .transforms.pipeline import run_pipeline

    if not isinstance(src, (str, os.PathLike)):
        raise CompileError(f"cannot compile a {type(src).__name__}: give MLIR text, a path or an ir.Module")
    ctx = make_context()
    with ctx, ir.Location.unknown():
        # segment sizes filled in, relax-verify run: a CompileError with the diagnostics
        name = "-"
        if isinstance(src, os.PathLike):
            name = os.fspath(src)
            with open(src, encoding="utf-8") as f:
                src = f.read()
        module = parse_module(src, ctx, name)
        run_pipeline(module, "builtin.module(relax-verify)", source_name=name, precheck=False)
        return module


def _with_tuning_db(stages: list[Stage], path) -> list[Stage]:
    """The stages with relax-apply-schedules and relax-gpu-schedule (tuned configs) and
    relax-dispatch-library (BLAS or generated code) reading the tuning database at ``path``."""
    path = os.path.abspath(os.fspath(path))
    if any(c in path for c in " \t,{}"):
        raise CompileOptionsError(f"tuning_db: a path without spaces, commas or braces, got '{path}'")
    def with_db(p: str) -> str:
        for name in ("relax-apply-schedules", "relax-dispatch-library",   # tuned configs, dispatch decisions
                     "relax-gpu-schedule"):                                # tuned GPU rule knobs
            if p == name:
                return f"{name}{{tuning-db={path}}}"
            if p.startswith(name + "{"):   # e.g. {threads=true}
                return f"{p[:-1]} tuning-db={path}}}"
        return p

    return [(name, [with_db(p) for p in passes]) for name, passes in stages]


def _dump(directory: str, k: int, stage: str, module) -> None:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{k:02d}-{stage}.mlir"), "w") as f:
        f.write(str(module))


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector off for the duration (on again after, if it was on).
    A compile makes hundreds of thousands of short-lived Python objects (MLIR op, value and
    attribute wrappers), almost none in cycles; the collector walked them at every young
    pass and the whole heap (sympy's caches, torch when imported: 0.19 s a full pass) at
    every old one: 4-7 % of a transformer-block compile's CPU samples (perf). The young
    generations are collected first (~2 ms): an Executable dropped since the last compile
    sits there in a cycle with its engine, and left for the rare full collection, 40
    compiles in a loop grew RSS by 21 MB (test_compile_in_a_loop_reaches_flat_rss)."""
    if not gc.isenabled():
        yield
        return
    gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _cached_runtime(key: str, module, meta_json: dict, libs: list[str], opts: CompileOptions):
    """Export the lowered module into the compile cache and load it (no JIT); None when the
    entry cannot be written or read back."""
    from . import compile_cache

    ts = time.perf_counter()
    path = compile_cache.store(key, llvm_text(module), meta_json, libs, opts)
    if path is None:
        return None
    exe = compile_cache.lookup(key)
    if exe is not None:
        exe.cache_hit = False
        exe.compile_phases = {"export": time.perf_counter() - ts}
    return exe


def compile(src, target: Optional[str] = None, libraries=None,
            options: Union[None, dict, CompileOptions] = None, tuning_db: Optional[str] = None):
    """Compile relax IR once for ``target``; returns an Executable (see the module docstring).
    ``tuning_db``: as :attr:`CompileOptions.tuning_db`."""
    with _gc_paused():
        return _compile(src, target, libraries, options, tuning_db)


def _compile(src, target, libraries, options, tuning_db):
    from mlir import ir

    from . import transforms  # noqa: F401  (registers passes and pipelines)
    from .runtime.libraries import library_metadata, library_paths, module_libraries
    from .runtime.libraries import validate as validate_libraries
    from .transforms.lower_host import host_metadata
    from .transforms.pipeline import run_pipeline
    from .transforms.registry import PIPELINES
    from .transforms.verify import check_library_callees

    t0 = time.perf_counter()
    opts = CompileOptions.of(options)
    if target is not None:
        opts.target = target
    if tuning_db is not None:
        opts.tuning_db = tuning_db
    kind = opts.target.kind if isinstance(opts.target, Target) else opts.target
    tgt = TARGETS.get(kind)
    if tgt is None:
        raise CompileOptionsError(f"unknown target '{kind}' (targets: {', '.join(sorted(TARGETS))})")
    if opts.opt_level not in (0, 1, 2, 3):
        raise CompileOptionsError(f"opt_level must be 0, 1, 2 or 3, got {opts.opt_level!r}")
    user_libs = validate_libraries(list(opts.libraries)) + validate_libraries(libraries)
    text = pipeline_options_text(opts.pipeline_options)
    try:
        popts = PIPELINES[tgt.pipeline_name].parse_options(text)
    except PipelineError as e:
        raise CompileOptionsError(f"target '{tgt.name}': {e}") from None
    try:
        device = (tgt.make_target or (lambda _, o: Target.from_options(o)))(popts, opts)
    except ValueError as e:   # a bad dispatch policy, thread count...
        raise CompileOptionsError(f"target '{tgt.name}': {e}") from None
    if hasattr(popts, "dispatch_policy") and device.dispatch_policy in ("measured", "flops"):
        popts.dispatch_policy = device.dispatch_policy   # an explicit Target's policy wins
    popts.target = device   # for stages built from the target (the cuda block size cap)
    stages = tgt.stages(popts, tgt)
    if opts.tuning_db:
        stages = _with_tuning_db(stages, opts.tuning_db)
    names = [n for n, _ in stages]
    if opts.pipeline is not None:
        stages = [("custom", [opts.pipeline])] + [s for s in stages if s[0] == "codegen"]
        names = ["custom", "codegen"]
    if opts.start_after is not None:
        if opts.start_after not in names[:-1]:
            raise CompileOptionsError(f"start_after='{opts.start_after}': stages of target '{tgt.name}' "
                                      f"that can be skipped: {', '.join(names[:-1])}")
        stages = stages[names.index(opts.start_after) + 1:]

    module = _module(src)
    cache_key = None
    if opts.cache and tgt.name == "cpu" and opts.dump_ir is None:
        from . import compile_cache

        cache_key = compile_cache.key(module.operation.get_asm(enable_debug_info=True), tgt.name, opts,
                                      user_libs, repr(stages))
        exe = compile_cache.lookup(cache_key)
        if exe is not None:
            exe.compile_options, exe.cache_hit = opts, True
            exe.compile_phases = {"cache": time.perf_counter() - t0}
            return exe
    with module.context, ir.Location.unknown():
        device.record(module.operation)   # relax.target: what every pass reads (not the host)
        check_library_callees(module.operation, user_libs + library_paths(module_libraries(module.operation),
                                                                          blas=device.blas))
        if opts.dump_ir:
            _dump(opts.dump_ir, 0, "input", module)
        metadata = None
        phases: dict[str, float] = {"prepare": time.perf_counter() - t0}
        for k, (stage, passes) in enumerate(stages, 1):
            ts = time.perf_counter()
            if stage == "codegen":   # read before codegen: relax-strip-attributes drops them
                metadata = host_metadata(module.operation, tgt.name)
                names_needed = module_libraries(module.operation)
                if not metadata.functions:
                    raise CompileError("no lowered graph function: the module needs relax-lower-host "
                                       "(a graph function marked relax.function, or start_after='host' "
                                       "on a lowered module)")
            pipeline = passes[0] if stage == "custom" else "builtin.module(" + ", ".join(passes) + ")"
            try:
                run_pipeline(module, pipeline, timing=opts.timing, verify_each=False)
            except ir.MLIRError as e:
                _raise_mlir(e, f"stage '{stage}'")
            except PipelineError as e:
                raise CompileError(f"stage '{stage}': {e}") from None
            if opts.dump_ir:
                _dump(opts.dump_ir, k, stage, module)
            phases[stage] = time.perf_counter() - ts
        libs = tgt.libraries() + user_libs + library_paths(names_needed, blas=device.blas)
    meta_json = metadata.to_json()
    meta_json.update(library_metadata(names_needed))
    ts = time.perf_counter()
    exe = _cached_runtime(cache_key, module, meta_json, libs, opts) if cache_key else None
    if exe is None:
        exe = tgt.runtime(module, meta_json, libs, opts)
    runtime_phases = exe.compile_phases or {"runtime": time.perf_counter() - ts}
    exe.compile_phases = {**phases, **runtime_phases}
    exe.exporter = export_library
    exe.compile_options = opts
    exe.compile_time_s = time.perf_counter() - t0
    exe.metadata["compile_time_s"] = exe.compile_time_s
    return exe
