"""relax-opt: an mlir-opt look-alike that knows the relax dialect and relax passes.

    relax-opt input.mlir -pass-pipeline='builtin.module(relax-infer-shapes, canonicalize)'
    relax-opt input.mlir --relax-infer-shapes --canonicalize --relax-legalize
    relax-opt - --split-input-file --verify-diagnostics < errors.mlir
    relax-opt --list-passes | --list-ops | --emit-irdl | --version

Like mlir-opt, options take one dash or two; every pass (relax or upstream) is also a
flag (``--name`` or ``--name=options``), run in command-line order; the input is
verified after parsing (the MLIR verifier plus relax-verify; ``--no-implicit-verify``
skips the latter); segment-size attributes left out of relax ops are filled in.
Diagnostics print as ``file:line:col: error: message``; failures exit non-zero.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import Optional
from .. import config

SPLIT_MARKER = re.compile(r"^// -----\s*$", re.M)
EXPECTED = re.compile(r"//\s*expected-(error|warning|remark|note)\s*(?:@(above|below|[+-]\d+))?\s*\{\{(.*?)\}\}")


@dataclass
class Diag:
    severity: str
    line: Optional[int]
    col: Optional[int]
    message: str


@dataclass
class Expected:
    severity: str
    line: int
    text: str
    at: int  # line of the comment
    matched: bool = False


def _loc_line_col(loc) -> tuple[Optional[int], Optional[int]]:
    """The first file location inside ``loc`` (through name, callsite and fused locs)."""
    from relax_mlir.dialects.source import file_line_col

    _, line, col = file_line_col(loc)
    return line, col


def _collect(err) -> list[Diag]:
    from mlir import ir

    out = []
    sev = {ir.DiagnosticSeverity.ERROR: "error", ir.DiagnosticSeverity.WARNING: "warning",
           ir.DiagnosticSeverity.NOTE: "note", ir.DiagnosticSeverity.REMARK: "remark", None: "error"}
    for d in err.error_diagnostics:
        line, col = _loc_line_col(d.location)
        out.append(Diag(sev.get(d.severity, "error"), line, col, d.message))
        for n in d.notes:
            nl, nc = _loc_line_col(n.location)
            out.append(Diag("note", nl, nc, n.message))
    return out


def _expectations(chunk: str, offset: int) -> list[Expected]:
    exps = []
    for i, line in enumerate(chunk.splitlines()):
        for m in EXPECTED.finditer(line):
            sev, rel, text = m.groups()
            target = i + 1
            if rel == "above":
                target -= 1
            elif rel == "below":
                target += 1
            elif rel:
                target += int(rel)
            exps.append(Expected(sev, target + offset, text, i + 1 + offset))
    return exps


def _split(text: str, split: bool) -> list[tuple[str, int]]:
    """Chunks with the number of lines before each (so diagnostics keep file line numbers)."""
    if not split:
        return [(text, 0)]
    chunks, start_line, pos = [], 0, 0
    for m in SPLIT_MARKER.finditer(text):
        chunks.append((text[pos:m.start()], start_line))
        start_line += text[pos:m.end()].count("\n")
        pos = m.end()
    chunks.append((text[pos:], start_line))
    return chunks


def _process(chunk: str, offset: int, args, fname: str, pipeline: str) -> tuple[bool, list[Diag], Optional[str]]:
    """Parse + verify + run the pipeline on one chunk. Returns (ok, diagnostics, printed IR).

    The chunk is parsed after ``offset`` blank lines so that locations (and diagnostics)
    carry the line numbers of the whole file."""
    from mlir import ir

    import relax_mlir
    from relax_mlir.dialects.source import parse_module
    from relax_mlir.transforms.pipeline import run_pipeline

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        try:
            module = parse_module("\n" * offset + chunk, ctx, source_name=fname)
        except ir.MLIRError as e:
            return False, _collect(e), None
        except relax_mlir.CompileError as e:   # no MLIR diagnostic to show (e.g. not UTF-8)
            return False, [Diag("error", None, None, m) for _, m in e.diagnostics], None
        try:
            if not args.no_implicit_verify:
                run_pipeline(module, "builtin.module(relax-verify)", source_name=fname, precheck=False)
            if pipeline:
                run_pipeline(module, pipeline, print_ir_after_all=args.mlir_print_ir_after_all,
                             timing=args.mlir_timing, source_name=fname, precheck=args.no_implicit_verify)
        except ir.MLIRError as e:
            return False, _collect(e), None
        text = module.operation.get_asm(print_generic_op_form=args.mlir_print_op_generic,
                                        enable_debug_info=args.mlir_print_debuginfo)
        return True, [], text.rstrip("\n") + "\n\n"  # exactly as mlir-opt prints


def _format(fname: str, d: Diag) -> str:
    where = f"{fname}:{d.line}:{d.col}: " if d.line is not None else f"{fname}: "
    return f"{where}{d.severity}: {d.message}"


def _verify(diags: list[Diag], exps: list[Expected], fname: str) -> list[str]:
    problems = []
    for d in diags:
        if d.severity == "note":
            if not any(e.severity == "note" for e in exps):
                continue  # notes are checked only where a test expects some
        hit = next((e for e in exps if not e.matched and e.severity == d.severity
                    and e.line == d.line and e.text in d.message), None)
        if hit:
            hit.matched = True
        else:
            problems.append(f"{_format(fname, d)}\n{fname}:{d.line}: error: unexpected {d.severity}: {d.message}")
    for e in exps:
        if not e.matched:
            problems.append(f"{fname}:{e.at}: error: expected {e.severity} \"{e.text}\" was not produced")
    return problems


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="relax-opt", description="Optimizer driver for relax-mlir (mlir-opt look-alike). "
                                "Every relax or upstream pass is also a flag: --relax-infer-shapes, --canonicalize, "
                                "--relax-fuse-ops='max-ops=8', run in command-line order.")
    p.add_argument("input", nargs="?", default="-", help="input file, or - for stdin (default)")
    p.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    p.add_argument("--pass-pipeline", default="", help="e.g. 'builtin.module(relax-infer-shapes, canonicalize)'")
    p.add_argument("--split-input-file", action="store_true", help="split the input at '// -----' lines")
    p.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against expected-* comments")
    p.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    p.add_argument("--mlir-timing", action="store_true", help="print pass timing (stderr)")
    p.add_argument("--mlir-print-op-generic", action="store_true", help="print ops in generic form")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    p.add_argument("--no-implicit-verify", action="store_true", help="do not run relax-verify after parsing")
    p.add_argument("--list-passes", action="store_true", help="list relax passes and pipelines, then exit")
    p.add_argument("--list-ops", nargs="?", const="text", choices=["text", "markdown"],
                   help="list the relax ops (signature, attributes, shape rule; =markdown: docs/ops.md), then exit")
    p.add_argument("--emit-irdl", action="store_true", help="print the relax dialect in IRDL, then exit")
    p.add_argument("--version", action="store_true", help="print the relax-mlir and MLIR versions, then exit")
    return p


def _normalize_argv(argv: list[str]) -> list[str]:
    """mlir-opt spelling: ``-pass-pipeline=...``, ``-split-input-file``: one dash or two."""
    out = []
    for a in argv:
        if a.startswith("-") and not a.startswith("--") and len(a) > 2 and a[1].isalpha():
            a = "-" + a
        out.append(a)
    return out


def parse_args(argv: list[str]):
    """Known options, plus every other ``--flag[=options]`` as a pass, in order."""
    parser = build_parser()
    args, rest = parser.parse_known_args(_normalize_argv(argv))
    passes = []
    for r in rest:
        if not r.startswith("--") or len(r) == 2:
            parser.error(f"unrecognized argument '{r}'")
        name, eq, opts = r[2:].partition("=")
        if opts.startswith(("'", '"')) and opts.endswith(opts[0]):
            opts = opts[1:-1]
        passes.append(f"{name}{{{opts}}}" if eq else name)
    if passes and args.pass_pipeline:
        parser.error("pass flags and --pass-pipeline cannot be used together")
    args.pass_flags = passes
    return args


def list_passes() -> str:
    from relax_mlir.transforms.registry import PASSES, PIPELINES

    lines = ["Relax passes (upstream MLIR passes may be mixed in the same pipeline):"]
    for name in sorted(PASSES):
        info = PASSES[name]
        lines.append(f"  {name:<28} {info.summary}")
        for o in info.options:
            lines.append(f"      {o.name}={o.type.__name__} (default {o.default}): {o.help}")
    lines.append("Pipelines:")
    for name in sorted(PIPELINES):
        info = PIPELINES[name]
        lines.append(f"  {name:<28} {info.summary}")
        for o in info.options:
            lines.append(f"      {o.name}={o.type.__name__} (default {o.default}): {o.help}")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return _main(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # never a traceback for users
        if config.debug():
            raise
        print(f"relax-opt: internal error: {e}", file=sys.stderr)
        return 1


def version_text() -> str:
    import relax_mlir

    try:
        from importlib.metadata import version
        mlir = version("xtc-mlir-python-bindings")
    except Exception:  # the package metadata is optional
        mlir = "unknown"
    return f"relax-opt (relax-mlir) {relax_mlir.__version__}\nMLIR Python bindings {mlir}\n"


def _main(args) -> int:
    from relax_mlir.transforms.pipeline import PipelineError, expand

    if args.version:
        return _write(args.output, version_text())
    if args.emit_irdl:
        from relax_mlir.dialects.relax import irdl_text
        return _write(args.output, irdl_text())
    if args.list_passes:
        return _write(args.output, list_passes())
    if args.list_ops:
        from relax_mlir.ops.reference import list_ops, ops_markdown
        return _write(args.output, ops_markdown() if args.list_ops == "markdown" else list_ops())
    pipeline = args.pass_pipeline or (f"builtin.module({', '.join(args.pass_flags)})" if args.pass_flags else "")
    if pipeline:
        try:
            import relax_mlir
            from relax_mlir.transforms.pipeline import build_pass_manager
            expand(pipeline)
            build_pass_manager(pipeline, relax_mlir.make_context())  # unknown upstream names fail here
        except PipelineError as e:
            print(f"relax-opt: error: {e}", file=sys.stderr)
            return 1
    fname = "<stdin>" if args.input == "-" else args.input
    try:
        if args.input == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(args.input, "rb") as f:
                raw = f.read()
    except OSError as e:
        print(f"relax-opt: error: cannot read '{args.input}': {e.strerror}", file=sys.stderr)
        return 1
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        print(f"{fname}:{line}:{col}: error: the input is not valid UTF-8 (byte 0x{raw[e.start]:02x})",
              file=sys.stderr)
        return 1

    outputs, failed, problems = [], False, []
    for chunk, offset in _split(text, args.split_input_file):
        try:
            ok, diags, printed = _process(chunk, offset, args, fname, pipeline)
        except PipelineError as e:
            print(f"relax-opt: error: {e}", file=sys.stderr)
            return 1
        if args.verify_diagnostics:
            problems += _verify(diags, _expectations(chunk, offset), fname)
        else:
            for d in diags:
                print(_format(fname, d), file=sys.stderr)
            failed |= not ok
        if printed is not None:
            outputs.append(printed)
    rc = _write(args.output, "// -----\n".join(outputs))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 1 if failed else rc


def _write(path: str, text: str) -> int:
    try:
        if path == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as e:
        where = "standard output" if path == "-" else f"'{path}'"
        print(f"relax-opt: error: cannot write {where}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
