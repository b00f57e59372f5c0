"""relax-mlir: an end-to-end compiler for dynamic-shape ML workloads on upstream MLIR.

Public API::

    ctx = relax_mlir.make_context()          # a Context with the relax dialect loaded
    mod = relax_mlir.parse(text, ctx)        # parse relax IR (diagnostics with locations)
    relax_mlir.run_pipeline(mod, "builtin.module(relax-infer-shapes, canonicalize)")
    exe = relax_mlir.compile(mod)            # or compile(text, options=CompileOptions(...))
    y = exe(x); sess = exe.session(); y = sess["main"](x)
    exe.export("model.so")
    exe = relax_mlir.load("model.so")        # another process: no compiler, no MLIR bindings
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .errors import CompileError, IndexOutOfRangeError, LoadError, ShapeError

if TYPE_CHECKING:
    from mlir import ir

__version__ = "0.1.0"

# The compiler side (MLIR bindings, passes, pipelines) is imported on first use, so that
# `relax_mlir.load(...)` and calling a loaded library never import the MLIR bindings.
_COMPILER_NAMES = ("PASSES", "PIPELINES", "PipelineError", "run_pipeline")
_DRIVER_NAMES = ("CompileOptions", "Backend", "BACKENDS", "register_backend", "Target", "TARGETS", "register_target",
                 "InternalCompilerError")


def __getattr__(name: str):
    if name in _DRIVER_NAMES:
        from . import compiler
        if name == "Target":   # the former name of a backend registration (relax_mlir.Backend);
            return compiler.Backend   # what code is compiled for is relax_mlir.target.Target
        return getattr(compiler, name)
    if name in _COMPILER_NAMES:
        from . import pipelines  # noqa: F401  (registers the named pipelines: cpu)
        from .transforms import PASSES, PIPELINES
        from .transforms.pipeline import PipelineError, run_pipeline
        globals().update(PASSES=PASSES, PIPELINES=PIPELINES, PipelineError=PipelineError,
                         run_pipeline=run_pipeline)
        return globals()[name]
    raise AttributeError(f"module 'relax_mlir' has no attribute '{name}'")


def make_context() -> "ir.Context":
    """A new MLIR Context with the relax dialect (IRDL) and upstream dialects loaded;
    single-threaded (see :func:`relax_mlir.dialects.diagnostics.single_threaded`)."""
    from mlir import ir

    from . import transforms  # noqa: F401  (registers every pass and pipeline)
    from .dialects import relax
    from .dialects.diagnostics import single_threaded

    ctx = single_threaded(ir.Context())
    relax.load_into(ctx)
    return ctx


def parse(text: str, context: Optional["ir.Context"] = None, source_name: str = "-") -> "ir.Module":
    """Parse relax IR text into a Module; locations name ``source_name``.

    Segment-size attributes of variadic relax ops are filled in when left out. Raises
    :class:`CompileError` (also an ``ir.MLIRError``) carrying the diagnostics.
    """
    from mlir import ir

    from .dialects.source import parse_module

    ctx = context or (ir.Context.current if _has_current() else make_context())
    with ctx, ir.Location.unknown():
        return parse_module(text, ctx, source_name)


def compile(src, target: Optional[str] = None, libraries=None, options=None,
            tuning_db: Optional[str] = None) -> "Executable":
    """Compile relax IR (MLIR text, a path or a Module) once; returns an :class:`Executable`.

    ``target``: a registered backend's name (``"cpu"``, ``"vulkan"``, ``"cuda"``) or a
    :class:`relax_mlir.target.Target` (what to compile for: ``Target.detect()`` with fields
    replaced; it is recorded on the module as ``relax.target`` and read by the passes). ``libraries``: shared libraries
    providing the ``relax.call_dps_library`` callees (``_mlir_ciface_<name>``).
    ``options``: a :class:`CompileOptions`, or a dict of the target pipeline's options, e.g.
    ``{"dispatch": False}`` or ``{"fusion": False}``. ``tuning_db``: a database written by
    ``relax-mlir tune`` (tuned schedules). Raises :class:`CompileError`
    (diagnostics with file:line:col). See :mod:`relax_mlir.compiler`.
    """
    from .compiler import compile as _compile

    return _compile(src, target=target, libraries=libraries, options=options, tuning_db=tuning_db)


def _has_current() -> bool:
    from mlir import ir

    try:
        return ir.Context.current is not None  # MLIR 22 returns None outside `with ctx`
    except ValueError:
        return False


from .runtime.executable import Executable, Session  # noqa: E402
from .runtime.aot import load  # noqa: E402

__all__ = ["make_context", "parse", "compile", "CompileOptions", "CompileError", "InternalCompilerError",
           "Backend", "BACKENDS", "register_backend", "Target", "TARGETS", "register_target", "Executable", "Session", "run_pipeline", "PipelineError",
           "ShapeError", "IndexOutOfRangeError", "load", "LoadError", "__version__"]
