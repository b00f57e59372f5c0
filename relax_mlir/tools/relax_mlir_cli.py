"""relax-mlir: the user-facing command line (compile, run, ...).

    relax-mlir compile model.mlir -o model.so          # relax IR -> one shared library
    relax-mlir compile model.pt2 -o model.so           # a saved torch.export program (+ model.params.npz)
    relax-mlir run model.so --input x.npy --input w.npy [-o out.npz]
    relax-mlir run model.pt2 --input ids.npy           # compile in memory, then run
    relax-mlir tune model.mlir --db tune.db --budget 60s   # search schedule knobs per kernel
    relax-mlir compile model.mlir --tuning-db tune.db  # ... and compile with the tuned configs
    relax-mlir tune model.mlir --target vulkan --db tune.db  # the GPU rules' knobs, timed on the device

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


def _compile_source(path: Path, target: str, options: dict, decompositions: str,
                    tuning_db: Optional[str] = None):
    """(Executable, params) for a .mlir file or a saved torch.export program."""
    import relax_mlir

    if not path.exists():
        raise CommandError(f"no such file: {path}")
    if path.suffix in (".pt2", ".pt", ".ep"):
        try:
            import torch
        except ImportError as e:
            raise CommandError("compiling a torch.export program needs PyTorch (pip install 'relax-mlir[torch]')") from e
        from ..frontend.torch import import_program, load

        ep = load(path)   # imports the modules of its pytree types (transformers' ModelOutput)
        prog = import_program(ep, decompositions=None if decompositions == "none" else decompositions)
        exe = relax_mlir.compile(prog.module, target=target, options=options, tuning_db=tuning_db)
        return exe, prog.params
    text = path.read_text()
    ctx = relax_mlir.make_context()
    from mlir import ir

    try:
        module = relax_mlir.parse(text, ctx)
    except ir.MLIRError as e:
        raise CommandError(f"{path}: {e}") from e
    return relax_mlir.compile(module, target=target, options=options, tuning_db=tuning_db), []


def _configure_compile(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", type=Path, help="relax IR (.mlir) or a saved torch.export program (.pt2, torch.export.save)")
    p.add_argument("-o", "--output", type=Path, help="the shared library to write (default: INPUT with .so)")
    p.add_argument("--target", default="cpu", help="compile target (default: cpu)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a pipeline option, e.g. --option dispatch=false --option fusion=false (see relax-opt --list-passes)")
    p.add_argument("--decompositions", default="default", choices=["default", "core", "none"],
                   help="for .pt2: ATen decompositions before import (default: functional ATen; core: torch's core ATen table)")
    _add_tuning_db(p)


def _add_tuning_db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tuning-db", type=Path, metavar="DB",
                   help="schedule the kernels with the configs `relax-mlir tune` recorded in DB, and "
                        "dispatch matmuls to BLAS or generated code as it decided")


def _tuning_db(args) -> Optional[str]:
    db = getattr(args, "tuning_db", None)
    if db is not None and not db.exists():
        raise CommandError(f"no such tuning database: {db}")
    return None if db is None else str(db)


def _run_compile(args) -> int:
    out = args.output or args.input.with_suffix(".so")
    t0 = time.perf_counter()
    exe, params = _compile_source(args.input, args.target, _parse_options(args.option), args.decompositions,
                                  _tuning_db(args))
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
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="for .mlir / .pt2: a pipeline option of the in-memory compile (as for `compile`)")
    _add_tuning_db(p)


def _run_run(args) -> int:
    import relax_mlir

    path = args.model
    params: list[np.ndarray] = []
    if path.suffix in (".mlir", ".pt2", ".pt", ".ep"):
        exe, params = _compile_source(path, "cpu", _parse_options(args.option), "default", _tuning_db(args))
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


# -- tune ------------------------------------------------------------------------------------------

def _parse_budget(text: str) -> float:
    """``60``, ``60s``, ``2m``, ``1.5h`` -> seconds."""
    t = text.strip().lower()
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(t[-1:], None)
    try:
        v = float(t[:-1] if scale else t) * (scale or 1.0)
    except ValueError:
        raise CommandError(f"--budget expects seconds such as 60s, 2m or 90, got '{text}'") from None
    if v <= 0:
        raise CommandError(f"--budget must be positive, got '{text}'")
    return v


def _configure_tune(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", type=Path, help="relax IR (.mlir)")
    p.add_argument("--db", type=Path, required=True, help="the tuning database (SQLite; created when missing)")
    p.add_argument("--budget", default="60s", help="time for the whole search, e.g. 60s, 5m (default 60s)")
    p.add_argument("--trials", type=int, default=64, help="at most N candidates per kernel (default 64)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a pipeline option, as for `compile` (use the same ones when compiling). With "
                        "dispatch on (the default) the matmuls BLAS could take are tuned too, then timed "
                        "against the library call: the winner per size is recorded; --option "
                        "dispatch=false tunes them as generated code only, no decision")
    p.add_argument("--target", default="cpu", choices=("cpu", "vulkan", "cuda"),
                   help="cpu: the cpu schedules' knobs (default); vulkan, cuda: the GPU rules' knobs "
                        "(relax-gpu-schedule), each kernel timed alone on that device, a config recorded "
                        "when it beats the default by --min-speedup (docs/gpu.md, Tuning hook)")
    p.add_argument("--min-speedup", type=float, default=None,
                   help="GPU targets: the factor over the default a config needs to be recorded (default 1.03)")
    p.add_argument("--fix", action="append", default=[], metavar="SYMBOL=VALUE",
                   help="GPU targets: keep a symbol at one value at every size (a decode step: --fix s=1)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the search")
    p.add_argument("--min-time", type=float, default=0.05, help="seconds of calls per size and candidate (default 0.05)")


def _run_tune(args) -> int:
    import relax_mlir
    from mlir import ir

    from ..tuning import tune
    from ..tuning.gpu import NoDevice

    if not args.input.exists():
        raise CommandError(f"no such file: {args.input}")
    if args.trials < 1:
        raise CommandError("--trials must be at least 1")
    ctx = relax_mlir.make_context()
    try:
        module = relax_mlir.parse(args.input.read_text(), ctx)
    except ir.MLIRError as e:
        raise CommandError(f"{args.input}: {e}") from e
    fixed = {}
    for item in args.fix:
        name, eq, value = item.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit():
            raise CommandError(f"--fix expects SYMBOL=VALUE (a non-negative integer), got '{item}'")
        fixed[name.strip()] = int(value)
    if fixed and args.target == "cpu":
        raise CommandError("--fix applies to the GPU targets (--target vulkan or cuda)")
    try:
        results = tune(module, str(args.db), _parse_budget(args.budget), args.trials, _parse_options(args.option),
                       log=lambda s: print(s, flush=True), seed=args.seed, min_time=args.min_time,
                       target=None if args.target == "cpu" else args.target, min_speedup=args.min_speedup,
                       fixed=fixed or None)
    except NoDevice as e:
        raise CommandError(str(e)) from None
    print(f"{'kernel':32} {'schedule':22} {'default ms':>12} {'tuned ms':>12} {'speedup':>8}  (geometric mean over the sizes)")
    for r in results:
        best = sum(r.best.times) if r.best else sum(r.default.times)
        print(f"{r.task.name[:32]:32} {r.task.schedule:22} {1e3 * sum(r.default.times):12.3f} {1e3 * best:12.3f} "
              f"{r.speedup:8.2f}")
    decided = [r for r in results if r.decision is not None]
    if decided:
        print("\ndispatch decisions (relax-dispatch-library follows them with --tuning-db):")
        print(f"{'kernel':32} {'bucket':8} {'n':>6} {'M':>6} {'library ms':>11} {'generated ms':>13}  winner")
        for r in decided:
            d = r.decision
            for i, (n, m, lib, gen, w) in enumerate(zip(d.sizes, d.ms, d.library_s, d.generated_s, d.winners)):
                name = r.task.name[:32] if i == 0 else ""
                gen_ms = f"{1e3 * gen:13.3f}" if gen is not None else f"{'failed':>13}"
                print(f"{name:32} {d.bucket if i == 0 else '':8} {n:6} {m:6} {1e3 * lib:11.3f} {gen_ms}  {w}")
    return 0


register_subcommand(
    "tune", "search the schedules' knobs of each kernel of a .mlir program, recording the best in a database",
    _configure_tune, _run_tune,
    "MetaSchedule's idea over the transform-dialect schedules: for every scheduled kernel, measure the "
    "default schedule, then random and evolved knob configs (tile sizes, vector widths, the thread split) "
    "at representative sizes of the symbols, each checked against the unscheduled kernel, and record the "
    "fastest per (kernel, CPU, size bucket) in an SQLite database that `compile --tuning-db` reads. "
    "A matmul (+ bias) that BLAS could take is also timed as the library call: the faster of BLAS and the "
    "tuned kernel at each size is recorded, and `compile --tuning-db` dispatches by it. --target vulkan / cuda: "
    "the GPU rules' knobs, each kernel timed alone on that device (compile(..., target=..., tuning_db=...)).")


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
