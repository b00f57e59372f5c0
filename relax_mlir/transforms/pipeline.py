"""Running mlir-opt-style pipeline strings that mix relax (Python) and upstream passes.

``builtin.module(relax-verify, canonicalize, func.func(cse, relax-expand-math), relax-foo{x=1}, cpu)``:
top-level elements naming a relax pass become Python passes, named pipelines
(``cpu``) expand to their text, everything else goes to MLIR's own textual
pipeline parser, all in ONE PassManager (so ``--mlir-print-ir-after-all`` and
timing see every pass). A relax pass registered ``nestable`` may sit inside
``func.func(...)``: it then runs on each function in turn (the Python bindings
cannot nest a Python pass, so it is a module pass that visits the functions).
"""

from __future__ import annotations

import sys
import traceback
from typing import Optional

from mlir import ir, passmanager

from ..dialects.diagnostics import single_threaded
from .registry import PASSES, PIPELINES, PipelineError, emit_error, error_count, split_top_level

#: The anchor under which nestable relax passes may appear.
FUNCTION_ANCHOR = "func.func"


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
    """Top-level elements as ("relax", (PassInfo, options, anchor)) or ("mlir", text), pipelines
    expanded; ``anchor`` is None for a module pass and "func.func" for a nested one."""
    items: list[tuple[str, object]] = []
    for el in split_top_level(strip_anchor(pipeline)):
        name, opts, nested = _name_and_options(el)
        if name in PASSES:
            if nested:
                raise PipelineError(f"relax pass '{name}' runs on the module; it takes no nested pipeline")
            info = PASSES[name]
            items.append(("relax", (info, info.parse_options(opts), None)))
        elif name in PIPELINES:
            info = PIPELINES[name]
            items.extend(expand(info.build(info.parse_options(opts))))
        elif name == FUNCTION_ANCHOR and nested:
            items.extend(_expand_nested(nested))
        else:
            items.append(("mlir", el))
    return items


def _expand_nested(nested: str) -> list[tuple[str, object]]:
    """``func.func(cse, relax-expand-math, canonicalize)``: runs of upstream passes stay nested
    text, nestable relax passes run per function in between."""
    items: list[tuple[str, object]] = []
    pending: list[str] = []

    def flush():
        if pending:
            items.append(("mlir", f"{FUNCTION_ANCHOR}({', '.join(pending)})"))
            pending.clear()

    for el in split_top_level(nested):
        name, opts, sub = _name_and_options(el)
        if name in PIPELINES:
            raise PipelineError(f"pipeline '{name}' runs on the module; it cannot be nested under {FUNCTION_ANCHOR}")
        if name not in PASSES:
            pending.append(el)
            continue
        info = PASSES[name]
        if not info.nestable or sub:
            nestable = ", ".join(sorted(n for n, p in PASSES.items() if p.nestable)) or "none"
            raise PipelineError(f"relax pass '{name}' runs on the whole module; it cannot be nested under "
                                f"{FUNCTION_ANCHOR} (relax passes that can: {nestable})")
        flush()
        items.append(("relax", (info, info.parse_options(opts), FUNCTION_ANCHOR)))
    flush()
    return items


def _python_pass(info, options, anchor: Optional[str], verify: bool = False):
    """The pass manager's callback for a relax pass; ``verify``: verify the module after it
    (when the pass manager's own verifier is off, see :func:`build_pass_manager`)."""
    def run(op, pass_):
        before = error_count()
        try:
            with op.context, ir.Location.unknown(op.context):
                if anchor is None:
                    info.run(op, options)
                else:
                    for f in [o.operation for o in op.regions[0].blocks[0].operations]:
                        if f.name == anchor:
                            info.run(f, options)
                if verify and error_count() == before:
                    op.verify()   # raises ir.MLIRError: the pass made invalid IR (a bug)
        except (RecursionError, MemoryError) as e:
            emit_error(op, f"pass '{info.name}': the IR is too large or too deeply nested "
                           f"({type(e).__name__})")
        except Exception as e:  # a bug in a pass must not become a crash
            emit_error(op, f"internal error in pass '{info.name}': {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stderr)
        if error_count() != before:
            pass_.signal_pass_failure()

    run.__name__ = info.name.replace("-", "_")
    return run


def build_pass_manager(pipeline: str, context: Optional[ir.Context] = None,
                       print_ir_after_all: bool = False, timing: bool = False,
                       verify: bool = True, verify_each: bool = True) -> passmanager.PassManager:
    """One PassManager for ``pipeline``. ``verify``: the module is verified (MLIR's verifier
    after every pass with ``verify_each``, as ``mlir-opt``; without it only after each relax
    pass: Python code is where a bug making invalid IR would come from; the caller verifies
    the result, see :func:`run_pipeline`)."""
    ctx = single_threaded(context or ir.Context.current)   # no diagnostics from worker threads
    pm = passmanager.PassManager("builtin.module", context=ctx)
    pm.enable_verifier(verify and verify_each)
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
            info, opts, anchor = item  # type: ignore[misc]
            name = info.name if anchor is None else f"{anchor}({info.name})"
            pm.add(_python_pass(info, opts, anchor, verify and not verify_each), name=name, argument=info.name, description=info.summary)
    flush()
    if print_ir_after_all:
        pm.enable_ir_printing(print_after_all=True, print_module_scope=True)
    if timing:
        pm.enable_timing()
    return pm


def _unknown_pass_message(text: str, detail: str) -> str:
    """MLIR's whole message (location, reason, the pipeline text and its caret line)."""
    return f"invalid pass pipeline '{text}': {detail.rstrip()}"


def _precheck_pass(op, pass_):
    from .verify import precheck

    before = error_count()
    with op.context, ir.Location.unknown(op.context):
        precheck(op)
    if error_count() != before:
        pass_.signal_pass_failure()


def check_structure(op: ir.Operation) -> None:
    """Run :func:`relax_mlir.transforms.verify.precheck` (raises ``ir.MLIRError``): IR that
    would crash an upstream pass (``#relax.shape`` on a memref, a bodiless graph function)
    is refused before any pass sees it."""
    pm = passmanager.PassManager("builtin.module", context=single_threaded(op.context))
    pm.add(_precheck_pass, name="relax-precheck", argument="relax-precheck",
           description="structural checks before a pipeline")
    pm.run(op)


def run_pipeline(module, pipeline: str, print_ir_after_all: bool = False, timing: bool = False,
                 source_name: str = "-", precheck: bool = True, verify_each: bool = True):
    """Run ``pipeline`` on ``module`` exactly as ``relax-opt --pass-pipeline=...`` does.

    ``verify_each=False`` (the compile driver): MLIR's verifier runs after each relax pass
    and once at the end, not after every upstream pass. On the transformer block's codegen
    stage (45 passes over a module that grows to 1.4 MB of LLVM dialect) verifying after
    every pass was 0.4 of its 2.0 s of CPU (measured, load 5); the IR is the same.

    Raises :class:`relax_mlir.CompileError` when a pass fails (also an ``ir.MLIRError``
    carrying the diagnostics) and :class:`PipelineError` (a ``CompileError``) for a
    malformed pipeline string. ``source_name`` names the file in the error's locations.
    """
    from ..dialects.diagnostics import SourceError

    op = module.operation if hasattr(module, "operation") else module
    pm = build_pass_manager(pipeline, op.context, print_ir_after_all=print_ir_after_all, timing=timing,
                            verify_each=verify_each)
    try:
        if precheck:
            check_structure(op)
        pm.run(op)
        if not verify_each:
            with op.context:
                op.verify()
    except SourceError:
        raise
    except ir.MLIRError as e:
        raise SourceError(f"pipeline failed: {e.message}", e.error_diagnostics, source_name) from None
    return module
