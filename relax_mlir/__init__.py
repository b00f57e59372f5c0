"""relax-mlir: an end-to-end compiler for dynamic-shape ML workloads on upstream MLIR.

Public API::

    ctx = relax_mlir.make_context()          # a Context with the relax dialect loaded
    mod = relax_mlir.parse(text, ctx)        # parse relax IR (diagnostics with locations)
    relax_mlir.run_pipeline(mod, "builtin.module(relax-infer-shapes, canonicalize)")
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from .errors import ShapeError
from .transforms import PASSES, PIPELINES  # noqa: F401  (registers every pass)
from .transforms.pipeline import PipelineError, run_pipeline

__version__ = "0.1.0"


def make_context() -> ir.Context:
    """A new MLIR Context with the relax dialect (IRDL) and upstream dialects loaded."""
    from .dialects import relax

    ctx = ir.Context()
    relax.load_into(ctx)
    return ctx


def parse(text: str, context: Optional[ir.Context] = None) -> ir.Module:
    """Parse relax IR text into a Module (raises ``ir.MLIRError`` with diagnostics)."""
    ctx = context or (ir.Context.current if _has_current() else make_context())
    with ctx, ir.Location.unknown():
        return ir.Module.parse(text)


def _has_current() -> bool:
    try:
        ir.Context.current
        return True
    except ValueError:
        return False


__all__ = ["make_context", "parse", "run_pipeline", "PipelineError", "ShapeError", "__version__"]
