"""Runtime libraries: shared objects a compiled module links, requested by name.

A pass that emits ``relax.call_dps_library`` of a symbol living in a runtime library
records the library's name in the module attribute ``relax.libraries = ["relax_blas"]``;
:func:`relax_mlir.compile` resolves each name here to shared-object paths and hands
them to the ExecutionEngine (next to the ``libraries=`` given by the user).

Register your own::

    from relax_mlir.runtime.libraries import register_library
    register_library("mylib", lambda: ["/opt/mylib/libmylib.so"])

Built in: ``relax_blas`` -- ``blas_shim.c`` (the ``_mlir_ciface_relax_blas_*`` entry
points over memref descriptors) compiled once with the system ``cc`` against
``scipy-openblas32`` into a per-user cache (``$RELAX_MLIR_CACHE``, else
``$XDG_CACHE_HOME/relax-mlir``, else ``~/.cache/relax-mlir``), keyed by a hash of the
source, the OpenBLAS version and the compiler command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable

from mlir import ir

#: Module attribute listing the runtime libraries a module needs (array of strings).
LIBRARIES_ATTR = "relax.libraries"

_LIBS: dict[str, Callable[[], list[str]]] = {}
_resolved: dict[str, list[str]] = {}
_lock = threading.Lock()


class LibraryError(RuntimeError):
    """A runtime library is unknown or could not be built."""


def register_library(name: str, paths: Callable[[], list[str]], replace: bool = False) -> None:
    """Register ``name``: ``paths()`` returns the shared objects to load (called once, lazily)."""
    if name in _LIBS and not replace:
        raise ValueError(f"runtime library '{name}' registered twice")
    _LIBS[name] = paths
    _resolved.pop(name, None)


def library_paths(names: Iterable[str]) -> list[str]:
    """Shared-object paths of the named runtime libraries (built on first use)."""
    out: list[str] = []
    for n in names:
        if n not in _LIBS:
            raise LibraryError(f"unknown runtime library '{n}' (registered: {', '.join(sorted(_LIBS))})")
        with _lock:
            if n not in _resolved:
                _resolved[n] = [str(p) for p in _LIBS[n]()]
        out += [p for p in _resolved[n] if p not in out]
    return out


def request(module_op: ir.Operation, name: str) -> None:
    """Record in ``module_op`` that it needs runtime library ``name``."""
    names = module_libraries(module_op)
    if name not in names:
        module_op.attributes[LIBRARIES_ATTR] = ir.ArrayAttr.get(
            [ir.StringAttr.get(n) for n in names + [name]])


def module_libraries(module_op: ir.Operation) -> list[str]:
    if LIBRARIES_ATTR not in module_op.attributes:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(module_op.attributes[LIBRARIES_ATTR])]


# -- relax_blas ---------------------------------------------------------------------------

BLAS_SHIM = Path(__file__).with_name("blas_shim.c")


def cache_dir() -> Path:
    base = os.environ.get("RELAX_MLIR_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "relax-mlir"


def blas_shim_command(src: str, out: str) -> list[str]:
    import scipy_openblas32 as ob

    cc = os.environ.get("CC") or shutil.which("cc") or "cc"
    lib_dir = ob.get_lib_dir()
    return [cc, "-O3", "-shared", "-fPIC", "-std=c11", "-o", out, src, f"-I{ob.get_include_dir()}",
            f"-L{lib_dir}", f"-l{ob.get_library()}", f"-Wl,-rpath,{lib_dir}"]


def build_blas_shim() -> list[str]:
    """Compile ``blas_shim.c`` once per (source, OpenBLAS, command); returns [path]."""
    try:
        import scipy_openblas32 as ob
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise LibraryError("relax_blas needs the PyPI package scipy-openblas32") from e
    src = BLAS_SHIM.read_bytes()
    cmd = blas_shim_command("SRC", "OUT")
    key = hashlib.sha256(src + repr((ob.__version__, cmd)).encode()).hexdigest()[:16]
    d = cache_dir()
    out = d / f"librelax_blas-{key}.so"
    if out.exists():
        return [str(out)]
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".librelax_blas-", suffix=".so", dir=d)
    os.close(fd)
    try:
        r = subprocess.run(blas_shim_command(str(BLAS_SHIM), tmp), capture_output=True, text=True)
        if r.returncode != 0:
            raise LibraryError(f"building the BLAS shim failed ({' '.join(cmd)}):\n{r.stderr}")
        os.replace(tmp, out)  # atomic: concurrent builders race harmlessly
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return [str(out)]


register_library("relax_blas", build_blas_shim)
