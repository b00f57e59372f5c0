"""Diagnostics of relax IR: locations as ``file:line:col`` and :class:`SourceError`, the error
parsing and pipelines raise. Below both the parser (:mod:`.source`) and the pass driver
(:mod:`relax_mlir.transforms.pipeline`), which use it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from mlir import ir

from ..errors import CompileError


@dataclass
class Diagnostic:
    """A diagnostic shaped like ``ir.DiagnosticInfo`` (location, message, severity, notes)."""

    location: ir.Location
    message: str
    severity: object = None
    notes: list = field(default_factory=list)


class SourceError(CompileError, ir.MLIRError):
    """Parsing or a pipeline failed: a :class:`relax_mlir.CompileError` that is also an
    ``ir.MLIRError`` (``error_diagnostics`` as MLIR gives them), so callers catching
    either keep working. ``diagnostics`` holds ``(file:line:col, message)`` pairs."""

    def __init__(self, message: str, error_diagnostics, source_name: str = "-"):
        ir.MLIRError.__init__(self, message, list(error_diagnostics))
        self.diagnostics = [(location_text(d.location, source_name), d.message) for d in self.error_diagnostics]
        self.source_name = source_name

    def __str__(self) -> str:
        lines = [self.message + (":" if self.diagnostics else "")]
        lines += [f"{where}: error: {msg}" if where else f"error: {msg}" for where, msg in self.diagnostics]
        return "\n".join(lines)


def file_line_col(loc: ir.Location) -> tuple[Optional[str], Optional[int], Optional[int]]:
    """The first file location inside ``loc`` (through name, callsite and fused locations)."""
    try:
        if loc.is_a_file():
            return loc.filename, loc.start_line, loc.start_col
        if loc.is_a_name():
            return file_line_col(loc.child_loc)
        if loc.is_a_callsite():
            return file_line_col(loc.callee)
        if loc.is_a_fused():
            for sub in loc.locations:
                got = file_line_col(sub)
                if got[1] is not None:
                    return got
    except (AttributeError, ValueError):
        pass
    return None, None, None


def location_text(loc: ir.Location, source_name: str = "-") -> str:
    """``file:line:col`` (``-``, the name MLIR gives parsed text, replaced by ``source_name``)."""
    f, line, col = file_line_col(loc)
    if line is None:
        return ""
    if f in (None, "-", ""):
        f = source_name
    return f"{f}:{line}:{col}"


def single_threaded(ctx: ir.Context) -> ir.Context:
    """Turn MLIR's multithreading off in ``ctx`` (and return it) before parsing into it or
    running passes on it. A multithreaded context verifies (after parsing, after each pass,
    ``Operation.verify``) and runs nested pass pipelines on worker threads, and a diagnostic
    emitted there reaches the Python bindings' error capture, which builds Python objects
    without holding the GIL: nanobind aborts the process ("attempted to change the reference
    count of a Python object while the GIL was not held", upstream llvm/llvm-project#215781).
    The fuzzer's mutation seeds 1000306 and 1000383 hit it with a ``gpu.func`` (isolated from
    above) that returns a value defined outside it or lacks its terminator."""
    ctx.enable_multithreading(False)
    return ctx
