"""Running mlir-opt-style pipeline strings that mix relax (Python) and upstream passes.

``builtin.module(relax-verify, canonicalize, func.func(cse), relax-foo{x=1}, cpu)``:
top-level elements naming a relax pass become Python passes, named pipelines
(``cpu``) expand to their text, everything else goes to MLIR's own textual
pipeline parser, all in ONE PassManager (so ``--mlir-print-ir-after-all`` and
timing see every pass).
"""

from __future__ import annotations

import sys
import traceback
from typing import Optional

from mlir import ir, passmanager

from .registry import PASSES, PIPELINES, PipelineError, emit_error, error_count, split_top_level

def _name_and_options(element: str) -> tuple[str, str, str]:
    """``relax-foo{a=1}`` -> (name, options text, nested text)."""
    name = element
    opts = nested = ""
    if "{" in element and (("(" not in element) or element.index("{") < element.index("(")):
        name, _, rest = element.partition("{")
        if not rest.endswith("}"):
            raise PipelineError(f"malformed options in '{element}'")
        opts = rest[:-1]
    elif "(" in element:
        name, _, rest = element.partition("(")
        if not rest.endswith(")"):
            raise PipelineError(f"malformed nested pipeline in '{element}'")
        nested = rest[:-1]
    return name.strip(), opts, nested


def strip_anchor(pipeline: str) -> str:
    """``builtin.module(a, b)`` -> ``a, b``; a bare list is accepted too."""
    p = pipeline.strip()
    if p.startswith("builtin.module(") and p.endswith(")"):
        return p[len("builtin.module("):-1]
    return p


def expand(pipeline: str) -> list[tuple[str, object]]:
    """Top-level elements as ("relax", (PassInfo, options)) or ("mlir", text), pipelines expanded."""
    items: list[tuple[str, object]] = []
    for el in split_top_level(strip_anchor(pipeline)):
        name, opts, nested = _name_and_options(el)
        if name in PASSES:
            if nested:
                raise PipelineError(f"relax pass '{name}' runs on the module; it takes no nested pipeline")
            info = PASSES[name]
            items.append(("relax", (info, info.parse_options(opts))))
        elif name in PIPELINES:
            info = PIPELINES[name]
            items.extend(expand(info.build(info.parse_options(opts))))
        else:
            items.append(("mlir", el))
    return items


def _python_pass(info, options):
    def run(op, pass_):
        before = error_count()
        try:
            with op.context, ir.Location.unknown(op.context):
                info.run(op, options)
        except Exception as e:  # a bug in a pass must not become a crash
            emit_error(op, f"internal error in pass '{info.name}': {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stderr)
        if error_count() != before:
            pass_.signal_pass_failure()

    run.__name__ = info.name.replace("-", "_")
    return run


def build_pass_manager(pipeline: str, context: Optional[ir.Context] = None,
                       print_ir_after_all: bool = False, timing: bool = False,
                       verify: bool = True) -> passmanager.PassManager:
    ctx = context or ir.Context.current
    pm = passmanager.PassManager("builtin.module", context=ctx)
    pm.enable_verifier(verify)
    pending: list[str] = []

    def flush():
        if pending:
            text = ",".join(pending)
            try:
                pm.add(text)
            except ValueError as e:
                raise PipelineError(_unknown_pass_message(text, str(e))) from None
            pending.clear()

    for kind, item in expand(pipeline):
        if kind == "mlir":
            pending.append(item)  # type: ignore[arg-type]
        else:
            flush()
            info, opts = item  # type: ignore[misc]
            pm.add(_python_pass(info, opts), name=info.name, argument=info.name, description=info.summary)
    flush()
    if print_ir_after_all:
        ctx.enable_multithreading(False)  # MLIR refuses IR printing with threads on
        pm.enable_ir_printing(print_after_all=True, print_module_scope=True)
    if timing:
        pm.enable_timing()
    return pm


def _unknown_pass_message(text: str, detail: str) -> str:
    msg = detail.strip().splitlines()
    tail = msg[-1] if msg else detail
    return f"invalid pass pipeline '{text}': {tail}"


def run_pipeline(module, pipeline: str, print_ir_after_all: bool = False, timing: bool = False):
    """Run ``pipeline`` on ``module`` exactly as ``relax-opt --pass-pipeline=...`` does.

    Raises ``ir.MLIRError`` carrying the diagnostics when a pass fails, and
    :class:`PipelineError` for a malformed pipeline string.
    """
    op = module.operation if hasattr(module, "operation") else module
    pm = build_pass_manager(pipeline, op.context, print_ir_after_all=print_ir_after_all, timing=timing)
    pm.run(op)
    return module
