"""Runtime libraries: shared objects a compiled module links, requested by name.

A pass that emits ``relax.call_dps_library`` of a symbol living in a runtime library
records the library's name in the module attribute ``relax.libraries = ["relax_blas"]``;
:func:`relax_mlir.compile` resolves each name here to shared-object paths and hands
them to the ExecutionEngine (next to the ``libraries=`` given by the user).

Register your own::

    from relax_mlir.runtime.libraries import register_library
    register_library("mylib", lambda: ["/opt/mylib/libmylib.so"])

Built in: ``relax_blas`` -- ``blas_shim.c`` (the ``_mlir_ciface_relax_blas_*`` entry
points over memref descriptors) compiled once per BLAS provider with the system ``cc``
into a per-user cache (``$RELAX_MLIR_CACHE``, else ``$XDG_CACHE_HOME/relax-mlir``, else
``~/.cache/relax-mlir``), keyed by a hash of the source, the provider, its version and
the compiler command. Providers (:func:`blas_providers`):

* ``mkl`` -- Intel oneMKL from the PyPI ``mkl`` wheel (``libmkl_rt``, GNU OpenMP
  threading layer: needs libgomp, as PyTorch does), the default where it is installed (``pip install -e '.[mkl]'``,
  x86-64 Linux; ``make setup`` does);
* ``openblas`` -- ``scipy-openblas32`` (a required dependency), the fallback.

``RELAX_BLAS=openblas|mkl`` overrides the choice (:func:`blas_provider`); the executable
records it in ``exe.metadata["blas"]``. ONE provider per process: every shim exports the
same ``_mlir_ciface_relax_blas_*`` symbols and the first one loaded wins symbol lookup
(JIT and dlopen alike), so once relax_blas is resolved for a module the provider is
pinned, and asking for another one later in the same process raises
:class:`LibraryError` (run it in another process). A model exported with one provider
and loaded where the other is already loaded runs on the loaded one.
"""

from __future__ import annotations

import ctypes.util
import functools
import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable, Optional

from mlir import ir

#: Module attribute listing the runtime libraries a module needs (array of strings).
LIBRARIES_ATTR = "relax.libraries"

_LIBS: dict[str, Callable[[], list[str]]] = {}
_UNCACHED: set[str] = set()
_resolved: dict[str, list[str]] = {}
_lock = threading.Lock()


class LibraryError(RuntimeError):
    """A runtime library is unknown or could not be built."""


def register_library(name: str, paths: Callable[[], list[str]], replace: bool = False,
                     cached: bool = True) -> None:
    """Register ``name``: ``paths()`` returns the shared objects to load (called once, lazily;
    every time with ``cached=False``, for a library whose paths depend on the environment)."""
    if name in _LIBS and not replace:
        raise ValueError(f"runtime library '{name}' registered twice")
    _LIBS[name] = paths
    _resolved.pop(name, None)
    _UNCACHED.discard(name)
    if not cached:
        _UNCACHED.add(name)


def library_paths(names: Iterable[str]) -> list[str]:
    """Shared-object paths of the named runtime libraries (built on first use)."""
    out: list[str] = []
    for n in names:
        if n not in _LIBS:
            raise LibraryError(f"unknown runtime library '{n}' (registered: {', '.join(sorted(_LIBS))})")
        with _lock:
            if n in _UNCACHED:
                paths = [str(p) for p in _LIBS[n]()]
            else:
                if n not in _resolved:
                    _resolved[n] = [str(p) for p in _LIBS[n]()]
                paths = _resolved[n]
        out += [p for p in paths if p not in out]
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


#: Provider preference when ``RELAX_BLAS`` is unset: the first available.
BLAS_PROVIDERS = ("mkl", "openblas")


@functools.lru_cache(maxsize=None)
def _mkl_rt() -> Optional[tuple[str, str]]:
    """(path of libmkl_rt.so*, version) of the installed PyPI ``mkl`` wheel, else None."""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return None
    try:
        dist = importlib.metadata.distribution("mkl")
    except importlib.metadata.PackageNotFoundError:
        return None
    libs = sorted(str(dist.locate_file(f)) for f in (dist.files or [])
                  if f.name.startswith("libmkl_rt.so"))
    libs = [os.path.realpath(p) for p in libs if os.path.exists(p)]
    # The shim selects MKL's GNU OpenMP threading layer (libgomp); MKL aborts the process
    # when a layer's runtime cannot be loaded, so without libgomp MKL is not offered
    # (unless MKL_THREADING_LAYER names another layer).
    if not os.environ.get("MKL_THREADING_LAYER") and ctypes.util.find_library("gomp") is None:
        return None
    return (libs[0], dist.version) if libs else None


@functools.lru_cache(maxsize=None)
def _openblas() -> Optional[tuple[str, str]]:
    try:
        import scipy_openblas32 as ob
    except ImportError:
        return None
    return ob.get_lib_dir(), ob.__version__


def blas_providers() -> list[str]:
    """The BLAS providers installed here, preferred first."""
    found = {"mkl": _mkl_rt, "openblas": _openblas}
    return [p for p in BLAS_PROVIDERS if found[p]() is not None]


def blas_provider() -> str:
    """The provider relax_blas is built against now: ``$RELAX_BLAS`` if set, else the first
    of :func:`blas_providers`."""
    want = os.environ.get("RELAX_BLAS", "").strip().lower()
    avail = blas_providers()
    if want:
        if want not in BLAS_PROVIDERS:
            raise LibraryError(f"RELAX_BLAS={want!r}: unknown BLAS provider (known: {', '.join(BLAS_PROVIDERS)})")
        if want not in avail:
            hint = ("pip install -e '.[mkl]' (x86-64 Linux only)" if want == "mkl"
                    else "pip install scipy-openblas32")
            raise LibraryError(f"RELAX_BLAS={want}: provider not installed ({hint})")
        return want
    if not avail:  # pragma: no cover - scipy-openblas32 is a declared dependency
        raise LibraryError("relax_blas needs a BLAS: the PyPI package scipy-openblas32 (or mkl)")
    return avail[0]


def blas_shim_command(src: str, out: str, provider: str = "openblas") -> list[str]:
    cc = os.environ.get("CC") or shutil.which("cc") or "cc"
    base = [cc, "-O3", "-shared", "-fPIC", "-std=c11", "-o", out, src]
    if provider == "mkl":
        lib, _ = _mkl_rt()
        # By path (the wheel ships only libmkl_rt.so.N, no unversioned link); the soname
        # is recorded, the rpath finds it.
        return base + ["-DRELAX_BLAS_MKL", lib, f"-Wl,-rpath,{os.path.dirname(lib)}"]
    import scipy_openblas32 as ob

    lib_dir = ob.get_lib_dir()
    return base + [f"-L{lib_dir}", f"-l{ob.get_library()}", f"-Wl,-rpath,{lib_dir}"]


def build_blas_shim(provider: Optional[str] = None) -> list[str]:
    """Compile ``blas_shim.c`` once per (source, provider + version, command); returns [path].
    ``provider``: ``"mkl"`` or ``"openblas"``, else :func:`blas_provider`."""
    provider = provider or blas_provider()
    if provider in _shims and os.path.exists(_shims[provider]):
        return [_shims[provider]]
    info = {"mkl": _mkl_rt, "openblas": _openblas}[provider]()
    if info is None:
        raise LibraryError(f"BLAS provider '{provider}' is not installed")
    src = BLAS_SHIM.read_bytes()
    cmd = blas_shim_command("SRC", "OUT", provider)
    key = hashlib.sha256(src + repr((provider, info, cmd)).encode()).hexdigest()[:16]
    d = cache_dir()
    out = d / f"librelax_blas-{provider}-{key}.so"
    if out.exists():
        _shims[provider] = str(out)
        return [str(out)]
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".librelax_blas-", suffix=".so", dir=d)
    os.close(fd)
    try:
        r = subprocess.run(blas_shim_command(str(BLAS_SHIM), tmp, provider), capture_output=True, text=True)
        if r.returncode != 0:
            raise LibraryError(f"building the BLAS shim failed ({' '.join(cmd)}):\n{r.stderr}")
        os.replace(tmp, out)  # atomic: concurrent builders race harmlessly
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    _shims[provider] = str(out)
    return [str(out)]


_shims: dict[str, str] = {}
_pinned: Optional[str] = None


def _relax_blas_paths() -> list[str]:
    """relax_blas for a module about to be linked: pins the process to one provider."""
    global _pinned
    provider = blas_provider()
    if _pinned is not None and provider != _pinned:
        raise LibraryError(f"relax_blas is already loaded over '{_pinned}' in this process; the BLAS "
                           f"provider ('{provider}' requested, RELAX_BLAS={os.environ.get('RELAX_BLAS', '')!r}) "
                           "can only be chosen once per process")
    paths = build_blas_shim(provider)
    _pinned = provider
    return paths


def library_metadata(names: Iterable[str]) -> dict:
    """What an executable records about its runtime libraries (``exe.metadata``):
    ``{"blas": provider}`` when it links relax_blas."""
    return {"blas": _pinned or blas_provider()} if "relax_blas" in names else {}


register_library("relax_blas", _relax_blas_paths, cached=False)
