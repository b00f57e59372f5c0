"""Runtime libraries: shared objects a compiled module links, requested by name.

A pass that emits ``relax.call_dps_library`` of a symbol living in a runtime library
records the library's name in the module attribute ``relax.libraries = ["relax_blas"]``;
:func:`relax_mlir.compile` resolves each name here to shared-object paths and hands
them to the ExecutionEngine (next to the ``libraries=`` given by the user).

Register your own::

    from relax_mlir.runtime.libraries import register_library
    register_library("mylib", lambda: ["/opt/mylib/libmylib.so"])

Built in: ``relax_blas`` -- the shim's C files, one job each (``blas_adapter.c``,
``blas_policy.c``, ``blas_gemm_avx512.c``, ``blas_attention.c``, ``blas_fork.c`` and their
header ``blas_shim.h``: the ``_mlir_ciface_relax_blas_*`` entry points over memref
descriptors) and ``quant_kernels.c`` (``_mlir_ciface_relax_qmatmul_*`` /
``relax_qtake_*``: products and lookups over weights in their GGUF storage formats,
docs/quantization.md), :func:`shim_sources`, compiled together once per BLAS provider with
the system ``cc`` into a per-user cache (``$RELAX_MLIR_CACHE``, else
``$XDG_CACHE_HOME/relax-mlir``, else ``~/.cache/relax-mlir``), keyed by a hash of every
source and the header, the provider, its version and the compiler command. Providers (:func:`blas_providers`):

* ``mkl`` -- Intel oneMKL from the PyPI ``mkl`` wheel (``libmkl_rt``, Intel threading layer on
  the libiomp5 of our kernels, :func:`_mkl_openmp`; GNU layer on libgomp with
  ``RELAX_BLAS_OPENMP=gomp`` or without intel-openmp), the default on Intel CPUs where it is
  installed (``pip install -e '.[mkl]'``, x86-64 Linux; ``make setup`` does);
* ``openblas`` -- ``scipy-openblas32`` (a required dependency), the default elsewhere; its
  quantized kernels run on libiomp5 too where intel-openmp is installed
  (:data:`QUANT_OPENMP_FLAGS`), else on one thread.

The default is a table keyed by the CPU's vendor and model
(:data:`relax_mlir.runtime.cpu.BLAS_BY_CPU`, documented in :mod:`relax_mlir.target`);
``RELAX_BLAS=openblas|mkl`` overrides the choice (:func:`blas_provider`); the executable
records it in ``exe.metadata["blas"]``. ONE provider per process for the JIT: every shim
library exports the same ``_mlir_ciface_relax_blas_*`` symbols and the first one loaded
wins symbol lookup, so once relax_blas is resolved for a module the provider is pinned,
and asking for another one later in the same process raises :class:`LibraryError` (run
it in another process).

Exported models (:mod:`relax_mlir.runtime.aot`) carry the shim inside (an object file,
:func:`blas_shim_object`, with private symbols) and need only the provider's BLAS library,
recorded by soname (:func:`blas_requirement`): ``relax_mlir.load`` finds it in the running
Python's installed wheel (``mkl`` or ``scipy-openblas32``), else on the library path
(:func:`load_blas`), and raises :class:`relax_mlir.LoadError` naming the package otherwise.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.metadata
import os
import platform
import stat
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from .. import config
from ..errors import CompileError
from .cbuild import LibraryError, _build_c, c_compiler, cache_dir  # noqa: F401 (re-exported)
from .openmp import (BLAS_POOL_COUNTERS, BLAS_POOL_SYMBOL, KMP_BLOCKTIME_DEFAULT, OPENMP_REQUIREMENT,  # noqa: F401
                     THREAD_CELL_CALLEES, THREADS_SYMBOL, ThreadCount, _iomp_link_args, adopt_blas_pool,
                     blas_pool_object, default_threads, dynamic_threads, env_threads, init_openmp, load_openmp,
                     openmp_library, openmp_link_args, openmp_wait_policy, share_blas_threads, takes_thread_cell)
from .wheels import _load_wheel_library, _wheel_handles, _wheel_library  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # the MLIR bindings are imported on use: relax_mlir.load() never needs them
    from mlir import ir

#: Module attribute listing the runtime libraries a module needs (array of strings).
LIBRARIES_ATTR = "relax.libraries"

_LIBS: dict[str, Callable[[], list[str]]] = {}
_UNCACHED: set[str] = set()
_resolved: dict[str, list[str]] = {}
_lock = threading.Lock()


def validate(libraries) -> list[str]:
    """The ``libraries=`` of :func:`relax_mlir.compile` as absolute paths of existing files.

    A single string or path is refused (it is not a list of paths: ``"abc"`` must never be
    read as the three names ``a``, ``b``, ``c``); a missing path, or one that is not a
    regular file, is a :class:`relax_mlir.CompileError` naming it."""
    if libraries is None:
        return []
    if isinstance(libraries, (str, bytes, os.PathLike)):
        raise CompileError(f"libraries= takes a list of shared-library paths, got the single "
                           f"{type(libraries).__name__} {os.fsdecode(libraries)!r} (write [{os.fsdecode(libraries)!r}])")
    try:
        items = list(libraries)
    except TypeError:
        raise CompileError(f"libraries= takes a list of shared-library paths, got {type(libraries).__name__}") from None
    out: list[str] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise CompileError(f"libraries=: {item!r} is not a path ({type(item).__name__})")
        p = os.path.abspath(os.fspath(item))
        try:
            st = os.stat(p)
        except OSError as e:
            raise CompileError(f"libraries=: cannot use {p}: {e.strerror or e}") from None
        if not stat.S_ISREG(st.st_mode):
            raise CompileError(f"libraries=: {p} is not a regular file (a shared library is expected)")
        if p not in out:
            out.append(p)
    return out


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


def library_paths(names: Iterable[str], blas: Optional[str] = None) -> list[str]:
    """Shared-object paths of the named runtime libraries (built on first use); ``blas``: the
    BLAS provider of relax_blas (the compile's :attr:`relax_mlir.target.Target.blas`;
    default :func:`blas_provider`)."""
    out: list[str] = []
    for n in names:
        if n not in _LIBS:
            raise LibraryError(f"unknown runtime library '{n}' (registered: {', '.join(sorted(_LIBS))})")
        with _lock:
            if n == "relax_blas" and blas and _LIBS[n] is _relax_blas_paths:
                paths = _relax_blas_paths(blas)
            elif n in _UNCACHED:
                paths = [str(p) for p in _LIBS[n]()]
            else:
                if n not in _resolved:
                    _resolved[n] = [str(p) for p in _LIBS[n]()]
                paths = _resolved[n]
        out += [p for p in paths if p not in out]
    return out


def request(module_op: "ir.Operation", name: str) -> None:
    """Record in ``module_op`` that it needs runtime library ``name``."""
    from mlir import ir

    names = module_libraries(module_op)
    if name not in names:
        module_op.attributes[LIBRARIES_ATTR] = ir.ArrayAttr.get(
            [ir.StringAttr.get(n) for n in names + [name]])


def module_libraries(module_op: "ir.Operation") -> list[str]:
    from mlir import ir

    if LIBRARIES_ATTR not in module_op.attributes:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(module_op.attributes[LIBRARIES_ATTR])]


# -- relax_blas ---------------------------------------------------------------------------

_HERE = Path(__file__).parent
#: The shim's C files, one job each (the CBLAS adapter, the dispatch policy, the packed
#: AVX-512 GEMM, fused attention, fork handling; ``blas_shim.h`` says which is which).
BLAS_SHIM_SOURCES = tuple(_HERE / f for f in ("blas_adapter.c", "blas_policy.c", "blas_gemm_avx512.c",
                                              "blas_attention.c", "blas_fork.c"))
#: Their shared header: hashed into the build key, its folder on the include path.
BLAS_SHIM_HEADER = _HERE / "blas_shim.h"
#: The quantized-weight kernels (GGUF formats), compiled into the same library as the shim.
QUANT_KERNELS = _HERE / "quant_kernels.c"


def shim_sources() -> list[Path]:
    """The C sources of the relax_blas library (the shim split by job), compiled together."""
    return [*BLAS_SHIM_SOURCES, QUANT_KERNELS]


def _include() -> list[str]:
    """The include path of the shim's sources: the folder of :data:`BLAS_SHIM_HEADER`."""
    return [f"-I{BLAS_SHIM_HEADER.parent}"]


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
    # The shim selects MKL's Intel threading layer on libiomp5 (:func:`_mkl_openmp`), else its GNU
    # layer (libgomp); MKL aborts the process when a layer's runtime cannot be loaded, so with
    # neither MKL is not offered (unless MKL_THREADING_LAYER names another layer).
    if (not config.mkl_threading_layer() and openmp_library() is None
            and ctypes.util.find_library("gomp") is None):
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
    """The provider relax_blas is built against now: ``$RELAX_BLAS`` if set, else the one the
    table of this CPU gives (:data:`relax_mlir.runtime.cpu.BLAS_BY_CPU`: MKL on Intel, OpenBLAS
    on AMD and on a CPU the table does not know) among :func:`blas_providers`."""
    from .cpu import cpu_model, cpu_vendor, preferred_blas

    want = config.blas_request()
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
    return preferred_blas(cpu_vendor(), cpu_model(), avail)


#: MKL builds of the shim: its packed products (bound weights) split their panels over OpenMP
#: threads, and MKL runs on the same runtime (see :func:`_mkl_openmp`).
_MKL_SHIM_FLAGS = ["-DRELAX_BLAS_MKL", "-fopenmp"]


#: Environment variable: ``gomp`` builds the MKL shim on GNU OpenMP (libgomp, MKL's GNU
#: threading layer) instead of libiomp5 (see :func:`_mkl_openmp`).
BLAS_OPENMP_ENV = "RELAX_BLAS_OPENMP"


def shim_openmp(provider: Optional[str]) -> Optional[str]:
    """The libiomp5 a build of the shim for ``provider`` runs on: an MKL build's
    (:func:`_mkl_openmp`), an OpenBLAS build's quantized kernels' (:data:`QUANT_OPENMP_FLAGS`);
    else None (no libiomp5 installed, or an MKL build on libgomp)."""
    if provider == "openblas":
        return openmp_library()
    if provider != "mkl" or config.blas_on_gomp():
        return None
    return openmp_library()


#: OpenBLAS builds: ``quant_kernels.c`` alone is compiled with these where libiomp5 is installed
#: (:func:`shim_openmp`), the shim's own files without OpenMP as before, and the library (or the
#: exported model) is linked to libiomp5 (:func:`_iomp_link_args`, :func:`openmp_link_args`), so
#: that gcc's ``GOMP_*`` calls run on the one team of the generated kernels: the quantized
#: products split their rows over the shim's OpenBLAS thread count
#: (``scipy_openblas_get_num_threads``, ``relax_blas_set_num_threads``). Without libiomp5 they
#: are compiled without OpenMP: one thread, as before.
QUANT_OPENMP_FLAGS = ["-fopenmp", "-DRELAX_QUANT_OPENMP"]


def _object_commands(srcs: list, out: str, provider: str, define: list[str]) -> tuple[list[list[str]], list[str]]:
    """Commands compiling each of :func:`shim_sources` (``srcs``, in that order) to a
    position-independent object ``out.<i>.o`` for ``provider``, and those objects' paths."""
    quant = shim_sources().index(QUANT_KERNELS)
    omp = provider == "openblas" and shim_openmp(provider) is not None
    objs = [f"{out}.{i}.o" for i in range(len(srcs))]
    cmds = [c_compiler() + ["-O3", "-fopenmp-simd", "-c", "-fPIC", "-std=c11", *_include(), *define,
                            *(QUANT_OPENMP_FLAGS if omp and i == quant else []), "-o", obj, str(s)]
            for i, (s, obj) in enumerate(zip(srcs, objs))]
    return cmds, objs


def _mkl_defines() -> list[str]:
    """Compiler flags of an MKL build of the shim (``RELAX_BLAS_IOMP``: MKL's Intel threading layer)."""
    return _MKL_SHIM_FLAGS + (["-DRELAX_BLAS_IOMP"] if shim_openmp("mkl") else [])


def _mkl_openmp(rpath: bool) -> list[str]:
    """Linker arguments putting an MKL build of the shim on libiomp5, the OpenMP
    runtime of our generated kernels: gcc's ``-fopenmp`` calls (``GOMP_*``) resolve in
    libiomp5, which implements them, so ``-lgomp`` (added by gcc, as needed only) is not
    recorded, and the shim selects MKL's Intel threading layer (:func:`_mkl_defines`,
    ``blas_policy.c``). One team of threads then runs our kernels, MKL and the shim's packed
    products, as it runs numpy's OpenBLAS jobs (:func:`share_blas_threads`), unless PyTorch's
    libgomp came first into the process's global scope (``blas_policy.c`` then takes MKL's GNU
    layer: Intel's would see libgomp's ``omp_get_thread_num``). With two runtimes
    (MKL on libgomp, our kernels on libiomp5) the spinning workers of one took the cores from
    the other whenever a model alternated generated kernels and BLAS calls (2 threads, the MLP
    at n = 1 with the measured dispatch policy: 1.74-1.83x the all-BLAS time, against
    0.93-1.13x on one runtime; bench/README.md). ``RELAX_BLAS_OPENMP=gomp``, or no libiomp5
    (the intel-openmp wheel), keeps libgomp."""
    omp = shim_openmp("mkl")
    return [] if omp is None else _iomp_link_args(omp, rpath)


def blas_shim_command(src, out: str, provider: str = "openblas") -> list:
    """The command building the JIT's shim library ``out`` from ``src`` (a path, or the list of
    :func:`shim_sources`) for ``provider``; for OpenBLAS over libiomp5 (:func:`shim_openmp`), the
    commands: each source compiled on its own (:data:`QUANT_OPENMP_FLAGS`), then linked."""
    srcs = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    base = c_compiler() + ["-O3", "-fopenmp-simd", "-shared", "-fPIC", "-std=c11", *_include(), "-o", out] + [
        str(p) for p in srcs]
    if provider == "mkl":
        lib, _ = _mkl_rt()
        # By path (the wheel ships only libmkl_rt.so.N, no unversioned link); the soname
        # is recorded, the rpath finds it.
        return base + _mkl_defines() + [lib, f"-Wl,-rpath,{os.path.dirname(lib)}"] + _mkl_openmp(True) + [
            "-ldl", "-lpthread", "-lm"]
    import scipy_openblas32 as ob

    lib_dir = ob.get_lib_dir()
    link = [f"-L{lib_dir}", f"-l{ob.get_library()}", f"-Wl,-rpath,{lib_dir}", "-ldl", "-lpthread", "-lm"]
    omp = shim_openmp(provider)
    if omp is None or len(srcs) != len(shim_sources()):
        return base + link
    cmds, objs = _object_commands(srcs, out, provider, [])
    return cmds + [c_compiler() + ["-shared", "-fPIC", "-o", out] + objs + link + _iomp_link_args(omp, True)]


def _cached_build(kind: str, provider: str, cmd_of: Callable, suffix: str) -> str:
    """Build the shim's sources (:func:`shim_sources`) with ``cmd_of(srcs, out)`` into the
    cache, once per key: a hash of every source's and the header's bytes, the provider and its
    version, and the command (so an edit to any of them, another compiler or another BLAS is
    rebuilt)."""
    info = {"mkl": _mkl_rt, "openblas": _openblas}[provider]()
    if info is None:
        raise LibraryError(f"BLAS provider '{provider}' is not installed")
    return _build_c(shim_sources(), f"librelax_blas-{provider}", (kind, provider, info), cmd_of, suffix, "the BLAS shim",
                    deps=[BLAS_SHIM_HEADER])


def build_blas_shim(provider: Optional[str] = None) -> list[str]:
    """The JIT's shim library for ``provider`` (``"mkl"`` or ``"openblas"``, else
    :func:`blas_provider`), built on first use; returns [path]."""
    provider = provider or blas_provider()
    out = _cached_build("library", provider, lambda src, o: blas_shim_command(src, o, provider), ".so")
    if shim_openmp(provider):   # loaded with our settings before the shim pulls it in
        init_openmp(f"the {provider} BLAS shim")
    _shim_paths.add(out)
    return [out]


def blas_shim_object(provider: str) -> str:
    """The shim as a position-independent object for ``provider``, linked into exported models:
    each of :func:`shim_sources` compiled, then joined into one relocatable object (``cc -r``,
    without ``-fopenmp``: that would pull a static libgomp in). Its ``GOMP_*`` calls (MKL
    builds; OpenBLAS builds' quantized kernels, :data:`QUANT_OPENMP_FLAGS`) resolve in the libiomp5
    that the model links by soname (``aot.py``: :func:`shim_openmp`, :func:`openmp_link_args`)."""
    define = _mkl_defines() if provider == "mkl" else []

    def commands(srcs: list[str], o: str) -> list[list[str]]:
        cmds, objs = _object_commands(srcs, o, provider, define)
        return cmds + [c_compiler() + ["-r", "-nostdlib", "-o", o] + objs]
    return _cached_build("object", provider, commands, ".o")


#: provider -> (PyPI package, BLAS library soname the shim links against)
BLAS_PACKAGES = {"mkl": ("mkl", "libmkl_rt.so.3"), "openblas": ("scipy-openblas32", "libscipy_openblas.so")}


def blas_requirement(provider: str) -> dict:
    """What an exported model records about its BLAS: provider, PyPI package and soname."""
    package, soname = BLAS_PACKAGES[provider]
    if provider == "mkl":
        soname = os.path.basename(_mkl_rt()[0])
    return {"provider": provider, "package": package, "soname": soname}


def blas_link_args(provider: str) -> list[str]:
    """Linker arguments making the BLAS a dependency of an exported model by soname only:
    no path and no rpath into this machine's venv (:func:`load_blas` provides it at load)."""
    if provider == "mkl":
        return [_mkl_rt()[0], "-fopenmp"] + _mkl_openmp(False) + ["-ldl", "-lpthread", "-lm"]
    import scipy_openblas32 as ob

    return [f"-L{ob.get_lib_dir()}", f"-l{ob.get_library()}", "-ldl", "-lpthread", "-lm"]


def is_shim(path: str) -> bool:
    """Whether ``path`` is a shim library built here (export links the shim object instead)."""
    return path in _shim_paths


def load_blas(requirement: dict, what: str) -> None:
    """Make the BLAS library of ``requirement`` (:func:`blas_requirement`) loaded in this
    process, before a model that needs it is opened."""
    _load_wheel_library(requirement["package"], requirement["soname"], what,
                        f"the '{requirement['provider']}' BLAS")


_shim_paths: set[str] = set()
_pinned: Optional[str] = None


def _relax_blas_paths(provider: Optional[str] = None) -> list[str]:
    """relax_blas over ``provider`` (default :func:`blas_provider`) for a module about to be
    linked: pins the process to one provider."""
    global _pinned
    provider = provider or blas_provider()
    if _pinned is not None and provider != _pinned:
        raise LibraryError(f"relax_blas is already loaded over '{_pinned}' in this process; the BLAS "
                           f"provider ('{provider}' requested, RELAX_BLAS={config.blas_request()!r}) "
                           "can only be chosen once per process")
    paths = build_blas_shim(provider)
    _pinned = provider
    return paths


def library_metadata(names: Iterable[str]) -> dict:
    """What an executable records about its runtime libraries (``exe.metadata``):
    ``{"blas": provider}`` when it links relax_blas."""
    return {"blas": _pinned or blas_provider()} if "relax_blas" in names else {}


register_library("relax_blas", _relax_blas_paths, cached=False)
