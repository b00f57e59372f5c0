"""relax-mlir: the user-facing command line (compile, run, ...).

    relax-mlir compile model.mlir -o model.so          # relax IR -> one shared library
    relax-mlir compile model.pt2 -o model.so           # a saved torch.export program (+ model.params.npz)
    relax-mlir run model.so --input x.npy --input w.npy [-o out.npz]
    relax-mlir run model.pt2 --input ids.npy           # compile in memory, then run

Subcommands live in :data:`SUBCOMMANDS`; another module adds one with
:func:`register_subcommand` (modules listed in :data:`PLUGINS` are imported when present,
so ``relax_mlir/llm/cli.py`` can register ``llm`` without touching this file).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]   # adds the subcommand's arguments
    run: Callable[[argparse.Namespace], int]                # returns the exit status
    description: str = ""


#: name -> Subcommand, in the order ``--help`` lists them
SUBCOMMANDS: dict[str, Subcommand] = {}

#: subcommands other modules provide: name -> (module, help). The module defines
#: ``add_arguments(parser)`` and ``run(args) -> int`` (or calls :func:`register_subcommand`
#: itself); it is imported when the parser is built, and skipped when it is not installed.
PLUGINS: dict[str, tuple[str, str]] = {
    "llm": ("relax_mlir.llm.cli", "generate tokens from a random-init Llama of a named size or a local "
                                  "model directory, printing tokens/s"),
}


def register_subcommand(name: str, help: str, configure, run, description: str = "") -> None:
    """Add ``relax-mlir <name>``: ``configure(parser)`` declares its arguments,
    ``run(args) -> int`` runs it (raise :class:`CommandError` for a user error)."""
    SUBCOMMANDS[name] = Subcommand(name, help, configure, run, description or help)


class CommandError(Exception):
    """A user error: printed as ``relax-mlir <cmd>: error: ...`` with exit status 1."""


PARAMS_SUFFIX = ".params.npz"


def params_path(library: Path) -> Path:
    """Where ``compile`` writes the weights of an imported torch program: ``model.params.npz``
    beside ``model.so`` (the library holds code only); ``run`` appends them to the inputs."""
    return library.with_name(library.name[:-len(library.suffix)] + PARAMS_SUFFIX if library.suffix
                             else library.name + PARAMS_SUFFIX)


# -- compile ---------------------------------------------------------------------------------

def _parse_options(items: Sequence[str]) -> dict:
    out = {}
    for item in items or ():
        if "=" not in item:
            raise CommandError(f"--option expects key=value, got '{item}'")
        k, v = item.split("=", 1)
        low = v.strip().lower()
        out[k.strip()] = True if low == "true" else False if low == "false" else int(v) if v.strip().isdigit() else v
    return out


def _compile_source(path: Path, target: str, options: dict, decompositions: str):
    """(Executable, params) for a .mlir file or a saved torch.export program."""
    import relax_mlir

    if not path.exists():
        raise CommandError(f"no such file: {path}")
    if path.suffix in (".pt2", ".pt", ".ep"):
        try:
            import torch
        except ImportError as e:
            raise CommandError("compiling a torch.export program needs PyTorch (pip install 'relax-mlir[torch]')") from e
        from ..frontend.torch import import_program

        ep = torch.export.load(str(path))
        prog = import_program(ep, decompositions=None if decompositions == "none" else decompositions)
        exe = relax_mlir.compile(prog.module, target=target, options=options)
        return exe, prog.params
    text = path.read_text()
    ctx = relax_mlir.make_context()
    from mlir import ir

    try:
        module = relax_mlir.parse(text, ctx)
    except ir.MLIRError as e:
        raise CommandError(f"{path}: {e}") from e
    return relax_mlir.compile(module, target=target, options=options), []


def _configure_compile(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", type=Path, help="relax IR (.mlir) or a saved torch.export program (.pt2, torch.export.save)")
    p.add_argument("-o", "--output", type=Path, help="the shared library to write (default: INPUT with .so)")
    p.add_argument("--target", default="cpu", help="compile target (default: cpu)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a pipeline option, e.g. --option dispatch=false --option fusion=false (see relax-opt --list-passes)")
    p.add_argument("--decompositions", default="default", choices=["default", "core", "none"],
                   help="for .pt2: ATen decompositions before import (default: functional ATen; core: torch's core ATen table)")


def _run_compile(args) -> int:
    out = args.output or args.input.with_suffix(".so")
    t0 = time.perf_counter()
    exe, params = _compile_source(args.input, args.target, _parse_options(args.option), args.decompositions)
    exe.export(str(out))
    msg = f"wrote {out} (compiled in {time.perf_counter() - t0:.1f} s"
    if params:
        pp = params_path(out)
        np.savez(pp, **{f"p{i:04d}": a for i, a in enumerate(params)})
        msg += f"; {len(params)} parameter arrays in {pp}, appended to the inputs by `relax-mlir run`"
    print(msg + ")")
    return 0


# -- run -----------------------------------------------------------------------------------------

def _load_inputs(paths: Sequence[str]) -> list[np.ndarray]:
    arrays = []
    for p in paths or ():
        if not os.path.exists(p):
            raise CommandError(f"no such input file: {p}")
        a = np.load(p, allow_pickle=False)
        if isinstance(a, np.lib.npyio.NpzFile):
            arrays.extend(a[k] for k in a.files)
        else:
            arrays.append(a)
    return arrays


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", type=Path, help="a library from `relax-mlir compile` (.so), or a .mlir / .pt2 "
                                            "file to compile in memory first")
    p.add_argument("-i", "--input", action="append", default=[], metavar="FILE",
                   help="an input array (.npy; a .npz adds all its arrays in order); repeat in argument order")
    p.add_argument("-f", "--function", default="main", help="graph function to call (default: main)")
    p.add_argument("--params", type=Path, help="parameter arrays (.npz) appended to the inputs "
                                                "(default: MODEL.params.npz when it exists)")
    p.add_argument("--no-params", action="store_true", help="do not append parameter arrays")
    p.add_argument("-o", "--output", type=Path, help="save the results (.npy for one result, else .npz r0, r1, ...)")
    p.add_argument("--repeat", type=int, default=1, help="call N times and print the median time")
    p.add_argument("--quiet", action="store_true", help="do not print the results")


def _run_run(args) -> int:
    import relax_mlir

    path = args.model
    params: list[np.ndarray] = []
    if path.suffix in (".mlir", ".pt2", ".pt", ".ep"):
        exe, params = _compile_source(path, "cpu", {}, "default")
    else:
        if not path.exists():
            raise CommandError(f"no such file: {path}")
        exe = relax_mlir.load(str(path))
        pp = args.params or params_path(path)
        if not args.no_params and (args.params or pp.exists()):
            params = _load_inputs([str(pp)])
    if args.no_params:
        params = []
    inputs = _load_inputs(args.input) + list(params)
    fn = exe[args.function]
    times = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        outs = fn(*inputs)
        times.append(time.perf_counter() - t0)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    if not args.quiet:
        for i, o in enumerate(outs):
            print(f"result #{i}: shape {tuple(o.shape)} dtype {o.dtype}")
            print(np.array2string(o, threshold=20, edgeitems=3, precision=6))
    if args.repeat > 1:
        print(f"median time over {args.repeat} calls: {1e3 * float(np.median(times)):.3f} ms")
    if args.output is not None:
        if args.output.suffix == ".npy" and len(outs) == 1:
            np.save(args.output, outs[0])
        else:
            np.savez(args.output, **{f"r{i}": o for i, o in enumerate(outs)})
        print(f"wrote {args.output}")
    return 0


register_subcommand(
    "compile", "compile a .mlir file or a saved torch.export program to a shared library", _configure_compile,
    _run_compile,
    "Compile once for every shape the program's symbolic dims allow, and write one .so that "
    "relax_mlir.load() and `relax-mlir run` use without the compiler. A torch program's weights "
    "go to MODEL.params.npz beside it.")
register_subcommand(
    "run", "run a compiled library (or a .mlir / .pt2 file) on .npy inputs", _configure_run, _run_run,
    "Call a graph function on arrays loaded from .npy/.npz files, print the results and "
    "optionally save them. Shape errors name the argument and the expected symbolic shape.")


# -- main ---------------------------------------------------------------------------------------

def _load_plugins() -> None:
    """Register the PLUGINS subcommands. A plugin that is not installed is left out; one that
    fails to import still shows in --help and reports its import error when run (the other
    subcommands keep working)."""
    for name, (mod, help) in PLUGINS.items():
        if name in SUBCOMMANDS:
            continue
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name is not None and mod.startswith(e.name):
                continue   # not installed
            _register_broken(name, help, mod, e)
            continue
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break the CLI
            _register_broken(name, help, mod, e)
            continue
        if name not in SUBCOMMANDS and hasattr(m, "add_arguments") and hasattr(m, "run"):
            register_subcommand(name, help, m.add_arguments, m.run)


def _register_broken(name: str, help: str, mod: str, err: Exception) -> None:
    def configure(p: argparse.ArgumentParser) -> None:
        p.set_defaults(_any_arguments=True)   # report the import error whatever the arguments

    def run(args) -> int:
        raise CommandError(f"unavailable: importing {mod} failed: {type(err).__name__}: {err}")

    register_subcommand(name, help + " (unavailable)", configure, run)


def build_parser() -> argparse.ArgumentParser:
    _load_plugins()
    parser = argparse.ArgumentParser(
        prog="relax-mlir",
        description="relax-mlir: compile dynamic-shape models (relax IR, PyTorch) once and run them at any shape.",
        epilog="Run `relax-mlir <command> --help` for a command's options.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"relax-mlir {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for sc in SUBCOMMANDS.values():
        p = sub.add_parser(sc.name, help=sc.help, description=sc.description)
        sc.configure(p)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "_any_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not args.command:
        parser.print_help()
        return 2
    from ..errors import CompileError, LoadError, ShapeError

    try:
        return int(SUBCOMMANDS[args.command].run(args) or 0)
    except (CommandError, CompileError, LoadError, ShapeError, TypeError) as e:
        print(f"relax-mlir {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
