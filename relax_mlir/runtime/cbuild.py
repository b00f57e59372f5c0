"""The C build cache: the C compiler and the per-user cache of libraries built from C sources.

relax_blas (the shim's files, their header ``blas_shim.h``, ``quant_kernels.c``), the BLAS
thread pool (``blas_pool.c``) and exported models are built with the system C compiler
(:func:`c_compiler`) into :func:`cache_dir`, each once per key (a hash of the sources, the
command and what the caller adds), by :func:`_build_c`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from .. import config
from ..errors import CompileError


class LibraryError(CompileError, RuntimeError):
    """A runtime library is unknown or could not be built (a :class:`relax_mlir.CompileError`;
    a ``RuntimeError`` too, as before)."""


def c_compiler() -> list[str]:
    """The C compiler command: ``$CC`` (may carry arguments), else ``cc``, ``gcc`` or ``clang``
    on ``PATH``. Raises :class:`LibraryError` naming ``cc`` / ``$CC`` when there is none."""
    env = config.c_compiler()
    if env:
        cmd = shlex.split(env)
        if not cmd or shutil.which(cmd[0]) is None:
            raise LibraryError(f"CC={env!r}: C compiler {cmd[0] if cmd else env!r} not found (relax-mlir builds "
                               "its BLAS shim and links exported libraries with a C compiler: fix $CC or unset it "
                               "to use cc)")
        return cmd
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    raise LibraryError("no C compiler: relax-mlir builds its BLAS shim and links exported libraries with `cc` "
                       "(not found on PATH, nor gcc or clang): install one (e.g. apt install gcc) or set $CC")


def cache_dir() -> Path:
    return config.cache_base()


def _build_c(src, stem: str, key_info, cmd_of: Callable, suffix: str, label: str,
             deps: Sequence = ()) -> str:
    """Build the C source ``src`` (a path, or a list of paths compiled together) with
    ``cmd_of(src, out)`` (a path or a list of paths, as given, as strings) into the cache as
    ``<stem>-<key><suffix>``, once per key: a hash of the sources' bytes, of ``deps`` (files
    the sources include, not compiled themselves), ``key_info`` and the command. ``cmd_of``
    returns one command, or a list of commands run in order (the last writes ``out``;
    intermediates named ``out + ".<i>.o"`` are removed). Concurrent builders race harmlessly
    (atomic rename)."""
    many = not isinstance(src, (str, os.PathLike))
    srcs = [Path(p) for p in (src if many else [src])]
    digest = hashlib.sha256()
    for p in srcs:
        data = p.read_bytes()
        digest.update(hashlib.sha256(p.name.encode()).digest() + hashlib.sha256(data).digest())
    data = digest.digest() if many else hashlib.sha256(srcs[0].read_bytes()).digest()
    for p in map(Path, deps):   # (no deps: the key of a build from before deps existed)
        data += hashlib.sha256(p.name.encode() + b"\0" + p.read_bytes()).digest()
    placeholders = [f"SRC{i}" for i in range(len(srcs))] if many else "SRC"
    cmd = cmd_of(placeholders, "OUT")
    key = hashlib.sha256(data + repr((key_info, cmd)).encode()).hexdigest()[:16]
    d = cache_dir()
    out = d / f"{stem}-{key}{suffix}"
    if out.exists():
        return str(out)
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=suffix, dir=d)
    os.close(fd)
    cmds = cmd_of([str(p) for p in srcs] if many else str(srcs[0]), tmp)
    if cmds and isinstance(cmds[0], str):
        cmds = [cmds]
    try:
        for c in cmds:
            try:
                r = subprocess.run(c, capture_output=True, text=True)
            except OSError as e:
                raise LibraryError(f"building {label}: cannot run the C compiler {c[0]!r} ($CC or cc): "
                                   f"{e.strerror or e}") from None
            if r.returncode != 0:
                raise LibraryError(f"building {label} failed ({' '.join(c)}):\n{r.stderr}")
        os.replace(tmp, out)
    finally:
        for p in [tmp] + [f"{tmp}.{i}.o" for i in range(len(srcs))]:
            if os.path.exists(p):
                os.unlink(p)
    return str(out)
