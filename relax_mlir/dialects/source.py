"""Reading relax IR text: locations named after the user's file, segment sizes filled in.

Upstream ``Module.parse`` names every location ``-`` and the IRDL verifier insists on
``operandSegmentSizes`` / ``resultSegmentSizes`` for relax ops with a variadic group,
attributes nobody wants to write by hand. :func:`parse_module` parses as
``mlir-opt`` would, and when the only trouble is a missing (or, from an older slot
count, differently sized) segment attribute it computes the attribute from the operand
and result types: the text is parsed once more in a context where relax ops are
unregistered (so nothing verifies them), the attributes are set, and the module is
printed with its locations and parsed for real (locations unchanged).
"""

from __future__ import annotations

import re

from typing import Optional

from mlir import ir

from ..errors import CompileError
from ..ops.registry import OPS
from .diagnostics import Diagnostic, SourceError, file_line_col, location_text, single_threaded  # noqa: F401 (re-exported)

SEGMENT_ATTRS = ("operandSegmentSizes", "resultSegmentSizes")


def parse_module(text: str, context: Optional[ir.Context] = None, source_name: str = "-") -> ir.Module:
    """Parse relax IR (segment sizes filled in where missing); locations name ``source_name``.

    Raises :class:`SourceError` (a ``CompileError`` and an ``ir.MLIRError``) with the
    diagnostics when the text does not parse. relax-verify is a pass
    (``relax_mlir.transforms.pipeline.run_pipeline(module, "builtin.module(relax-verify)")``,
    as relax-opt and ``compile()`` run it after parsing): the dialect layer runs no passes.
    """
    ctx = context or ir.Context.current
    module = _parse_filled(text, ctx, source_name)
    _readable_attributes(module, source_name)
    return module


def _readable_attributes(module: ir.Module, source_name: str) -> None:
    """Every attribute parsed must be readable through the Python bindings: MLIR parses, for
    example, ``array<i864: 2, 1>`` (a dense array of 864-bit integers), but the bindings raise
    a TypeError when a pass reads it (long fuzz mutation seed 43000121). Such an attribute is
    an error at its op here, before any pass runs."""
    problems = []
    for op in _walk(module.operation):
        attrs = op.attributes
        for i in range(len(attrs)):
            try:   # by name: NamedAttribute.attr aborts the process on the same attribute
                attrs[attrs[i].name]
            except (TypeError, ValueError) as e:
                problems.append(Diagnostic(op.location, f"'{op.name}' has an attribute of a type this compiler "
                                                        f"cannot read ({e})"))
    if problems:
        raise SourceError("relax IR does not parse", problems, source_name)


#: ``permutation = [...]`` / ``dimensions = [...]`` of linalg's custom op syntax (transpose,
#: broadcast, reduce), and what must follow: an integer list
_LINALG_LIST = re.compile(r"\b(permutation|dimensions)\s*=\s*(?!array\s*<)")
_INT_LIST = re.compile(r"\[\s*(?:-?\d+(?:\s*,\s*-?\d+)*)?\s*\]")


def _linalg_list_check(text: str, source_name: str, ctx: ir.Context) -> None:
    """MLIR 22's parsers of ``linalg.transpose`` and ``linalg.broadcast`` assert (abort the
    process, mlir-opt too) on a malformed ``permutation = [...]`` / ``dimensions = [...]``
    list, e.g. ``[, 0]`` (long fuzz mutation seed 43000221): such a list is an error here,
    before MLIR parses the text."""
    for m in _LINALG_LIST.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "//" in text[line_start:m.start()]:
            continue   # in a comment
        if _INT_LIST.match(text, m.end()):
            continue
        line = text.count("\n", 0, m.start()) + 1
        col = m.end() - line_start + 1
        loc = ir.Location.file(source_name if source_name not in ("", "-") else "-", line, col, context=ctx)
        raise SourceError("relax IR does not parse",
                          [Diagnostic(loc, f"expected a list of integers after '{m.group(1)} =' "
                                           "(such as [1, 0])")], source_name)


#: ``linalg.generic {... iterator_types = VALUE ...}`` in linalg's custom syntax (the generic form,
#: ``"linalg.generic"(...) <{...}>``, verifies the property cleanly): VALUE, or the alias it names
_GENERIC_ITERATORS = re.compile(r'(?<!")\blinalg\.generic\s*\{[^{}]*?\biterator_types\s*=\s*')
_ALIAS = re.compile(r"#[\w.$-]+")
_STRING_LIST = re.compile(r'\[\s*(?:"[^"\n]*"(?:\s*,\s*"[^"\n]*")*)?\s*\]')


def _linalg_iterators_check(text: str, source_name: str, ctx: ir.Context) -> None:
    """MLIR 22's parser of ``linalg.generic`` casts every element of ``iterator_types`` to a
    string attribute and asserts (aborts the process, mlir-opt's too) on anything else, e.g.
    ``[-9223372036854775808, "parallel"]`` (long fuzz mutation seed 1000047) or
    ``[#linalg.iterator_type<parallel>]``: a list that is not all strings (directly or
    through an attribute alias) is an error here, before MLIR parses the text. A value that
    is not a list at all is left to the parser (it reports it)."""
    for m in _GENERIC_ITERATORS.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "//" in text[line_start:m.start()]:
            continue   # in a comment
        value = text[m.end():]
        alias = _ALIAS.match(value)
        if alias and not value.startswith("#linalg."):
            d = re.search(r"^\s*" + re.escape(alias.group(0)) + r"\s*=\s*", text, flags=re.M)
            value = text[d.end():] if d else ""
        if not value.lstrip().startswith("[") or _STRING_LIST.match(value.lstrip()):
            continue
        line = text.count("\n", 0, m.end()) + 1
        col = m.end() - text.rfind("\n", 0, m.end())
        loc = ir.Location.file(source_name if source_name not in ("", "-") else "-", line, col, context=ctx)
        raise SourceError("relax IR does not parse",
                          [Diagnostic(loc, "expected 'iterator_types' of linalg.generic to be a list of "
                                           'strings (such as ["parallel", "reduction"])')], source_name)


def _syntax_check(text: str, source_name: str) -> None:
    """Parse ``text`` once in a bare context (relax unregistered: its ops and attributes
    stay opaque) so that a SYNTAX error is reported as an ir.MLIRError. MLIR 22's bindings
    abort the process (an ErrorCapture assertion) when the parser fails inside an IRDL
    attribute's parameters, e.g. ``tensor<?xf32, #relax.shape<["n"]>@>`` (long fuzz
    mutation seed 42000403); the bare parse fails cleanly on the same text."""
    bare = ir.Context()
    bare.allow_unregistered_dialects = True
    try:
        with bare:
            _parse(text, bare, source_name)
    except ir.MLIRError as e:
        if all(any(a in d.message for a in _BARE_ONLY) for d in e.error_diagnostics):
            return  # not a syntax error: the real parse reports it properly
        raise


#: errors of the bare parse that come from relax being unknown there, not from the syntax
_BARE_ONLY = ("unsupported memory space Attribute", "Dialect `relax' not found",
              "expects different type than prior uses")


def _parse_filled(text: str, ctx: ir.Context, source_name: str) -> ir.Module:
    _linalg_list_check(text, source_name, ctx)
    _linalg_iterators_check(text, source_name, ctx)
    try:
        _syntax_check(text, source_name)
        with ctx:
            return _parse(text, ctx, source_name)
    except ir.MLIRError as e:
        fixed, problems = fill_segment_sizes(text, source_name)
        if problems:
            raise SourceError("relax IR does not parse", problems, source_name) from None
        if fixed is None:
            raise SourceError("relax IR does not parse", e.error_diagnostics, source_name) from None
        try:
            with ctx:
                return _parse(fixed, ctx, source_name)
        except ir.MLIRError as e2:
            raise SourceError("relax IR does not parse", e2.error_diagnostics, source_name) from None
    except RuntimeError as e:
        # the bindings cannot turn a diagnostic holding non-UTF-8 bytes into a str
        if "conversion error" not in str(e):
            raise
        msg = ("the input does not parse, and its diagnostic holds bytes that are not UTF-8 "
               "(an escape such as \\ca inside a quoted name?)")
        raise CompileError(f"relax IR does not parse: {msg}", [(source_name, msg)]) from None


def _parse(text: str, ctx: ir.Context, source_name: str) -> ir.Module:
    """``Module.parse`` with the parser's locations naming ``source_name``.

    Text holding one top-level op (a printed module, one function) is parsed with that
    name; text with several (hand-written functions) is parsed as a module whose ``-``
    locations are renamed afterwards (explicit ``loc(...)`` in such text are rare). The
    context is made single-threaded first (the parser's verifier must not report from a
    worker thread, see :func:`single_threaded`)."""
    single_threaded(ctx)
    if source_name in ("-", ""):
        return ir.Module.parse(text, ctx)
    try:
        op = ir.Operation.parse(text, source_name=source_name, context=ctx).operation
    except ir.MLIRError as e:
        if not any("single top-level operation" in d.message for d in e.error_diagnostics):
            raise
        module = ir.Module.parse(text, ctx)
        rename_locations(module.operation, source_name)
        return module
    if op.name == "builtin.module":
        module = ir.Module.create(loc=op.location)
        for i in range(len(op.attributes)):
            na = op.attributes[i]
            module.operation.attributes[na.name] = na.attr
        for child in list(op.regions[0].blocks[0].operations):
            module.body.append(child.operation)
        return module
    module = ir.Module.create(loc=ir.Location.file(source_name, 0, 0, context=ctx))
    module.body.append(op)
    return module


def rename_locations(op: ir.Operation, source_name: str) -> None:
    """Give every ``-`` file location under ``op`` (ops and block arguments) ``source_name``."""

    def fix(loc: ir.Location) -> Optional[ir.Location]:
        if loc.is_a_file() and loc.filename == "-":
            return ir.Location.file(source_name, loc.start_line, loc.start_col, loc.end_line, loc.end_col,
                                    context=loc.context)
        return None

    def visit(o: ir.Operation) -> None:
        new = fix(o.location)
        if new is not None:
            o.location = new
        for region in o.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    new = fix(arg.location)
                    if new is not None:
                        arg.set_location(new)
                for child in block.operations:
                    visit(child.operation)

    visit(op)


def fill_segment_sizes(text: str, source_name: str = "-") -> tuple[Optional[str], list[Diagnostic]]:
    """Text with the segment attributes of relax ops filled in from their types.

    Returns (new text, []) when some op was missing them (or had an attribute sized
    for another slot count), (None, []) when nothing needed filling, and
    (None, diagnostics) when an op's attribute cannot be made to fit (the diagnostic
    shows the attribute its types call for).
    """
    from ._core import segment_attrs

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    try:
        with ctx, ir.Location.unknown():
            module = _parse(text, ctx, source_name)
            changed, problems = False, []
            for op in _walk(module.operation):
                opdef = OPS.get(op.name[len("relax."):]) if op.name.startswith("relax.") else None
                if opdef is None:
                    continue
                try:
                    want = segment_attrs(opdef, [v.type for v in op.operands], [r.type for r in op.results])
                except TypeError as e:
                    problems.append(Diagnostic(op.location, f"'{op.name}' {e}"))
                    continue
                for name, value in want.items():
                    have = op.attributes[name] if name in op.attributes else None
                    if have is None or len(ir.DenseI32ArrayAttr(have)) != len(ir.DenseI32ArrayAttr(value)):
                        op.attributes[name] = value
                        changed = True
                    elif have != value:
                        problems.append(Diagnostic(
                            op.location, f"'{op.name}' {name} = {have} does not fit its types; "
                                         f"expected {name} = {value} (or leave it out)"))
            if problems:
                return None, problems
            if not changed:
                return None, []
            return module.operation.get_asm(enable_debug_info=True), []
    except (ir.MLIRError, ValueError, TypeError):
        return None, []


def _walk(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield child.operation
                yield from _walk(child.operation)
