"""The pass registry: relax passes (Python) registered under their pipeline names.

A pass is a function ``run(module: ir.Module-op, options) -> None`` that reports
problems with :func:`emit_error` (an MLIR diagnostic at an op's location) and
returns normally; the pass fails when it emitted any error. Register it with::

    @register_pass("relax-foo", "One-line summary.",
                   options=[Option("max-depth", int, 4, "how deep to look")])
    def foo(module: ir.Operation, opts) -> None: ...

``relax-foo{max-depth=8}`` in a pipeline string sets ``opts.max_depth``.
A pass whose work is local to one function (it only looks inside the op it is given)
is registered with ``nestable=True``: it may then also appear nested,
``func.func(relax-foo)``, and runs on each function in turn.
Named pipelines (e.g. ``cpu``) are registered the same way with
:func:`register_pipeline`: a function from options to a pipeline string.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Optional

from mlir import ir

from ..errors import CompileError


@dataclass(frozen=True)
class Option:
    name: str
    type: type
    default: Any
    help: str = ""


@dataclass
class PassInfo:
    name: str
    summary: str
    run: Callable[[ir.Operation, Any], None]
    options: list[Option] = field(default_factory=list)
    nestable: bool = False

    def parse_options(self, text: str) -> SimpleNamespace:
        """``"max-depth=4 flag=true"`` (mlir-opt syntax) -> namespace with defaults filled."""
        values = {o.name.replace("-", "_"): o.default for o in self.options}
        by_name = {o.name: o for o in self.options}
        for item in split_top_level(text, " ,\t"):
            key, eq, val = item.partition("=")
            key = key.strip()
            if key not in by_name:
                known = ", ".join(by_name) or "none"
                raise PipelineError(f"pass '{self.name}' has no option '{key}' (options: {known})")
            o = by_name[key]
            if not eq:
                if o.type is bool:
                    val = "true"
                else:
                    raise PipelineError(f"option '{key}' of pass '{self.name}' needs a value")
            values[key.replace("-", "_")] = _convert(o, val.strip(), self.name)
        return SimpleNamespace(**values)


@dataclass
class PipelineInfo:
    name: str
    summary: str
    build: Callable[[Any], str]
    options: list[Option] = field(default_factory=list)

    parse_options = PassInfo.parse_options


class PipelineError(CompileError):
    """A malformed pipeline string or an unknown pass/option (a CompileError, so a ValueError)."""


class CompileOptionsError(PipelineError):
    """An unknown target, stage or pipeline option (a :class:`~relax_mlir.CompileError`; also
    the :class:`PipelineError` that pipeline strings raise for the same mistake)."""


PASSES: dict[str, PassInfo] = {}
PIPELINES: dict[str, PipelineInfo] = {}


def register_pass(name: str, summary: str, options: Optional[list[Option]] = None, nestable: bool = False):
    def deco(fn):
        if name in PASSES:
            raise ValueError(f"pass '{name}' registered twice")
        PASSES[name] = PassInfo(name, summary, fn, list(options or []), nestable)
        return fn

    return deco


def register_pipeline(name: str, summary: str, options: Optional[list[Option]] = None):
    def deco(fn):
        if name in PIPELINES:
            raise ValueError(f"pipeline '{name}' registered twice")
        PIPELINES[name] = PipelineInfo(name, summary, fn, list(options or []))
        return fn

    return deco


_errors = threading.local()


def emit_error(op_or_loc, message: str) -> None:
    """Report an error at an op (or location) as an MLIR diagnostic; the running pass fails."""
    loc = op_or_loc if isinstance(op_or_loc, ir.Location) else op_or_loc.location
    loc.emit_error(message)
    _errors.n = error_count() + 1


def error_count() -> int:
    """Errors emitted so far on this thread (a pass fails when it emitted any)."""
    return getattr(_errors, "n", 0)


def split_top_level(text: str, separators: str = ",") -> list[str]:
    """Split at ``separators`` outside brackets: ``a, b{x=1,y=2}, func.func(c, d)``."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced brackets in pipeline '{text}'")
        if ch in separators and depth == 0:
            if cur.strip():
                out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pipeline '{text}'")
    if cur.strip():
        out.append(cur.strip())
    return out


def _convert(o: Option, val: str, pname: str):
    try:
        if o.type is bool:
            if val.lower() in ("true", "1", "on"):
                return True
            if val.lower() in ("false", "0", "off"):
                return False
            raise ValueError(val)
        return o.type(val)
    except ValueError:
        raise PipelineError(f"option '{o.name}' of pass '{pname}' expects {o.type.__name__}, got '{val}'") from None
