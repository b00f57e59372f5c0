"""Runtime libraries: shared objects a compiled module links, requested by name.

A pass that emits ``relax.call_dps_library`` of a symbol living in a runtime library
records the library's name in the module attribute ``relax.libraries = ["relax_blas"]``;
:func:`relax_mlir.compile` resolves each name here to shared-object paths and hands
them to the ExecutionEngine (next to the ``libraries=`` given by the user).

Register your own::

    from relax_mlir.runtime.libraries import register_library
    register_library("mylib", lambda: ["/opt/mylib/libmylib.so"])

Built in: ``relax_blas`` -- ``blas_shim.c`` (the ``_mlir_ciface_relax_blas_*`` entry
points over memref descriptors) and ``quant_kernels.c`` (``_mlir_ciface_relax_qmatmul_*`` /
``relax_qtake_*``: products and lookups over weights in their GGUF storage formats,
docs/quantization.md), :func:`shim_sources`, compiled together once per BLAS provider with
the system ``cc`` into a per-user cache (``$RELAX_MLIR_CACHE``, else
``$XDG_CACHE_HOME/relax-mlir``, else ``~/.cache/relax-mlir``), keyed by a hash of both
sources, the provider, its version and the compiler command. Providers (:func:`blas_providers`):

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

import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import importlib.metadata
import os
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from .. import config
from ..errors import CompileError, LoadError

if TYPE_CHECKING:  # the MLIR bindings are imported on use: relax_mlir.load() never needs them
    from mlir import ir

#: Module attribute listing the runtime libraries a module needs (array of strings).
LIBRARIES_ATTR = "relax.libraries"

_LIBS: dict[str, Callable[[], list[str]]] = {}
_UNCACHED: set[str] = set()
_resolved: dict[str, list[str]] = {}
_lock = threading.Lock()


class LibraryError(CompileError, RuntimeError):
    """A runtime library is unknown or could not be built (a :class:`relax_mlir.CompileError`;
    a ``RuntimeError`` too, as before)."""


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

BLAS_SHIM = Path(__file__).with_name("blas_shim.c")
#: The quantized-weight kernels (GGUF formats), compiled into the same library as the shim.
QUANT_KERNELS = Path(__file__).with_name("quant_kernels.c")


def shim_sources() -> list[Path]:
    """The C sources of the relax_blas library (the shim split by job), compiled together."""
    return [BLAS_SHIM, QUANT_KERNELS]


def cache_dir() -> Path:
    return config.cache_base()


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
#: (:func:`shim_openmp`), ``blas_shim.c`` without OpenMP as before, and the library (or the
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
    cmds = [c_compiler() + ["-O3", "-fopenmp-simd", "-c", "-fPIC", "-std=c11", *define,
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
    ``blas_shim.c``). One team of threads then runs our kernels, MKL and the shim's packed
    products, as it runs numpy's OpenBLAS jobs (:func:`share_blas_threads`), unless PyTorch's
    libgomp came first into the process's global scope (``blas_shim.c`` then takes MKL's GNU
    layer: Intel's would see libgomp's ``omp_get_thread_num``). With two runtimes
    (MKL on libgomp, our kernels on libiomp5) the spinning workers of one took the cores from
    the other whenever a model alternated generated kernels and BLAS calls (2 threads, the MLP
    at n = 1 with the measured dispatch policy: 1.74-1.83x the all-BLAS time, against
    0.93-1.13x on one runtime; bench/README.md). ``RELAX_BLAS_OPENMP=gomp``, or no libiomp5
    (the intel-openmp wheel), keeps libgomp."""
    omp = shim_openmp("mkl")
    return [] if omp is None else _iomp_link_args(omp, rpath)


def _iomp_link_args(omp: str, rpath: bool) -> list[str]:
    """Linker arguments putting code built with gcc's ``-fopenmp`` on the libiomp5 at ``omp``
    (its ``GOMP_*`` entry points) instead of libgomp, which ``--as-needed`` then leaves out."""
    d = os.path.dirname(omp)
    return ["-Wl,--as-needed", f"-L{d}", f"-l:{os.path.basename(omp)}"] + ([f"-Wl,-rpath,{d}"] if rpath else [])


def blas_shim_command(src, out: str, provider: str = "openblas") -> list:
    """The command building the JIT's shim library ``out`` from ``src`` (a path, or the list of
    :func:`shim_sources`) for ``provider``; for OpenBLAS over libiomp5 (:func:`shim_openmp`), the
    commands: each source compiled on its own (:data:`QUANT_OPENMP_FLAGS`), then linked."""
    srcs = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    base = c_compiler() + ["-O3", "-fopenmp-simd", "-shared", "-fPIC", "-std=c11", "-o", out] + [str(p) for p in srcs]
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
    cache, once per key: a hash of every source's bytes, the provider and its version, and the
    command (so an edit to either source, another compiler or another BLAS is rebuilt)."""
    info = {"mkl": _mkl_rt, "openblas": _openblas}[provider]()
    if info is None:
        raise LibraryError(f"BLAS provider '{provider}' is not installed")
    return _build_c(shim_sources(), f"librelax_blas-{provider}", (kind, provider, info), cmd_of, suffix, "the BLAS shim")


def _build_c(src, stem: str, key_info, cmd_of: Callable, suffix: str, label: str) -> str:
    """Build the C source ``src`` (a path, or a list of paths compiled together) with
    ``cmd_of(src, out)`` (a path or a list of paths, as given, as strings) into the cache as
    ``<stem>-<key><suffix>``, once per key: a hash of the sources' bytes, ``key_info`` and the
    command. ``cmd_of`` returns one command, or a list of commands run in order (the last
    writes ``out``; intermediates named ``out + ".<i>.o"`` are removed). Concurrent builders
    race harmlessly (atomic rename)."""
    many = not isinstance(src, (str, os.PathLike))
    srcs = [Path(p) for p in (src if many else [src])]
    digest = hashlib.sha256()
    for p in srcs:
        data = p.read_bytes()
        digest.update(hashlib.sha256(p.name.encode()).digest() + hashlib.sha256(data).digest())
    data = digest.digest() if many else hashlib.sha256(srcs[0].read_bytes()).digest()
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


def _wheel_library(package: str, soname: str) -> Optional[str]:
    """The file ``soname`` of the installed distribution ``package`` in the running Python."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == soname:
            p = str(dist.locate_file(f))
            if os.path.exists(p):
                return os.path.realpath(p)
    return None


_wheel_handles: dict[str, ctypes.CDLL] = {}


def _load_wheel_library(package: str, soname: str, what: str, label: str) -> None:
    """Make ``soname`` of the PyPI ``package`` loaded in this process (the running Python's
    installed wheel first, then the library path), so that the dynamic loader resolves a
    model's dependency on that soname to it. Raises :class:`relax_mlir.LoadError` naming
    the package."""
    if soname in _wheel_handles:
        return
    path = _wheel_library(package, soname)
    errors = []
    for candidate in ([path] if path else []) + [soname]:
        try:
            _wheel_handles[soname] = ctypes.CDLL(candidate, mode=ctypes.RTLD_LOCAL)
            return
        except OSError as e:
            errors.append(str(e))
    raise LoadError(f"{what} needs {label} ({soname}), which is not installed in this Python "
                    f"({sys.executable}): pip install {package} (or put {soname} on LD_LIBRARY_PATH)"
                    + (f" [{'; '.join(errors)}]" if path else ""))


def load_blas(requirement: dict, what: str) -> None:
    """Make the BLAS library of ``requirement`` (:func:`blas_requirement`) loaded in this
    process, before a model that needs it is opened."""
    _load_wheel_library(requirement["package"], requirement["soname"], what,
                        f"the '{requirement['provider']}' BLAS")


#: The OpenMP runtime that threaded kernels call (``__kmpc_*``): Intel's libiomp5 of the PyPI
#: ``intel-openmp`` wheel (installed with ``mkl``). An exported model depends on it by soname.
OPENMP_REQUIREMENT = {"package": "intel-openmp", "soname": "libiomp5.so"}

#: How long (ms) our OpenMP workers spin after a parallel region before they sleep, unless
#: ``KMP_BLOCKTIME`` is set. libiomp5's default, 200 ms, keeps both cores busy for 200 ms after
#: every call of ours: a numpy (OpenBLAS) or PyTorch matmul called next shares the cores
#: with two spinning workers. 1 ms keeps the workers warm across the back-to-back kernels of
#: one model call and frees the cores right after it (bench/bench_contention.py).
KMP_BLOCKTIME_DEFAULT = "1"


def openmp_wait_policy() -> None:
    """Set the OpenMP runtime's spin time before it is loaded (it reads ``KMP_BLOCKTIME`` once,
    at initialization); a value the user set is kept."""
    config.set_default("KMP_BLOCKTIME", KMP_BLOCKTIME_DEFAULT)


#: Environment variable that turns on libiomp5's dynamic team sizes (see :func:`init_openmp`).
DYNAMIC_THREADS_ENV = "RELAX_MLIR_DYNAMIC_THREADS"


def dynamic_threads() -> bool:
    """Whether parallel regions get dynamic team sizes (``RELAX_MLIR_DYNAMIC_THREADS=1``)."""
    return config.dynamic_threads()


def init_openmp(what: str, share: bool = True) -> None:
    """Load and initialize the OpenMP runtime (:data:`OPENMP_REQUIREMENT`) once, before code that
    calls it, with our wait policy (:func:`openmp_wait_policy`).

    Team sizes are fixed by default: a region runs on ``exe.num_threads`` threads (fewer when it
    is below relax-omp-threads' work threshold), as PyTorch's and ONNX Runtime's pools do.
    ``RELAX_MLIR_DYNAMIC_THREADS=1`` turns on libiomp5's dynamic team sizes
    (``KMP_DYNAMIC_MODE=load_balance``): a region gets only the cores no other thread of the
    machine ran on at libiomp5's last sample of /proc (at most once a second). That is the
    setting for a machine that other processes keep busy: with a process spinning on one of
    two cores, a 2-thread GEMV took 1.0-1.1x the 1-thread time with it and 1.2-6.7x without
    (``bench/bench_contention.py --sweep --busy``). On a quiet machine it costs: a sample that
    saw a passing thread (our own spinning worker included) keeps every region on one thread
    for the next second; generated matmuls at M = 128-512 then took up to 1.5x their
    fixed-team time, at random (``bench/bench_kernels.py``, session 5). libgomp (PyTorch, MKL)
    reads ``OMP_DYNAMIC`` too, so it is set only while libiomp5 reads its environment (forced
    here by one call), then removed; an ``OMP_DYNAMIC`` the user set is kept either way."""
    if OPENMP_REQUIREMENT["soname"] in _wheel_handles:
        return   # shared when first loaded; libraries loaded since: after each JIT load (compiler.py)
    openmp_wait_policy()
    dynamic = dynamic_threads()
    if dynamic:
        config.set_default("KMP_DYNAMIC_MODE", "load_balance")
    _load_wheel_library(OPENMP_REQUIREMENT["package"], OPENMP_REQUIREMENT["soname"], what, "an OpenMP runtime")
    with config.temporarily("OMP_DYNAMIC", "true") if dynamic else contextlib.nullcontext():
        _wheel_handles[OPENMP_REQUIREMENT["soname"]].omp_get_max_threads()   # initializes: reads the environment
    if share:
        share_blas_threads()


#: Environment variable: ``0`` keeps OpenBLAS's own worker threads (see :func:`share_blas_threads`).
SHARE_BLAS_THREADS_ENV = "RELAX_MLIR_SHARE_BLAS_THREADS"
BLAS_POOL = Path(__file__).with_name("blas_pool.c")
#: the names OpenBLAS builds give ``openblas_set_threads_callback_function`` (numpy's and
#: scipy's wheels prefix ``scipy_`` and, for 64-bit integers, suffix ``64_``)
_CALLBACK_SETTERS = ("scipy_openblas_set_threads_callback_function64_", "scipy_openblas_set_threads_callback_function",
                     "openblas_set_threads_callback_function64_", "openblas_set_threads_callback_function")
#: OpenBLAS libraries whose parallel jobs run on our OpenMP team: path -> the setter's name
shared_blas_pools: dict[str, str] = {}
#: why nothing was shared (the pool could not be built), else None
share_blas_threads_error: Optional[str] = None
_blas_pool: list = []


#: The pool's entry point (``blas_pool.c``), exported by the JIT's pool library and by exported
#: models with OpenMP-threaded kernels (relax_mlir.runtime.aot).
BLAS_POOL_SYMBOL = "relax_blas_pool_run"
#: ... and its counters (calls run, jobs given threads of their own), read by the tests
BLAS_POOL_COUNTERS = ("relax_blas_pool_calls", "relax_blas_pool_extra_threads")


def blas_pool_object() -> str:
    """``blas_pool.c`` as a position-independent object (cached), linked into exported models
    with OpenMP-threaded kernels, so that loading one shares OpenBLAS's threads without a
    compiler (:func:`adopt_blas_pool`)."""
    return _build_c(BLAS_POOL, "librelax_blas_pool", "object",
                    lambda src, out: c_compiler() + ["-O2", "-fPIC", "-fopenmp", "-c", "-o", out, src], ".o",
                    "the BLAS thread pool")


def adopt_blas_pool(lib: ctypes.CDLL) -> dict[str, str]:
    """A loaded model's copy of the pool (:func:`blas_pool_object`; ``lib`` must stay loaded for
    the process's life) becomes the process's pool unless one is in use, then OpenBLAS's jobs
    move to it (:func:`share_blas_threads`). A model exported without it changes nothing."""
    if not _blas_pool:
        if not hasattr(lib, BLAS_POOL_SYMBOL):
            return shared_blas_pools   # (building one here would need a compiler: loading builds nothing)
        _blas_pool.append(lib)
    return share_blas_threads()


def _blas_pool_library() -> ctypes.CDLL:
    """``blas_pool.c`` built against the loaded libiomp5 (cached), loaded once."""
    if not _blas_pool:
        omp = openmp_library()
        cmd = lambda src, out: (c_compiler() + ["-O2", "-fPIC", "-fopenmp", "-shared", "-o", out, src]  # noqa: E731
                                + _iomp_link_args(omp, True))
        _blas_pool.append(ctypes.CDLL(_build_c(BLAS_POOL, "librelax_blas_pool", omp, cmd, ".so",
                                               "the BLAS thread pool"), mode=ctypes.RTLD_LOCAL))
    return _blas_pool[0]


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries mapped in this process (numpy's, scipy's, ours)."""
    out: list[str] = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                name = os.path.basename(path).lower()
                if "openblas" in name and ".so" in name and path.startswith("/") and path not in out:
                    out.append(path)
    except OSError:   # no /proc (not Linux): nothing found, nothing shared
        pass
    return out


def share_blas_threads() -> dict[str, str]:
    """Hand the parallel jobs of every OpenBLAS loaded in this process to our OpenMP team
    (``blas_pool.c``, through OpenBLAS's ``openblas_set_threads_callback_function``), so that
    the process has one pool of threads: OpenBLAS's own workers, which spin ~0.1 s after each
    threaded call, then stay asleep. Without it our 2-thread kernels called right after a numpy
    matmul shared a core with a spinning OpenBLAS worker: 2.2-2.5x their time
    (``bench/bench_contention.py``). OpenBLAS runs the same kernels on as many threads as
    before (its own thread count: ``OPENBLAS_NUM_THREADS``, threadpoolctl), so results are the
    same. Called when the OpenMP runtime is initialized (:func:`init_openmp`); again after a
    library loaded later. ``RELAX_MLIR_SHARE_BLAS_THREADS=0`` turns it off. Returns
    :data:`shared_blas_pools` (a path mapped to "": that OpenBLAS has no such function, i.e.
    is older than 0.3.27, and keeps its workers). Without a C compiler nothing is shared
    (:data:`share_blas_threads_error` says why)."""
    if not config.flag(SHARE_BLAS_THREADS_ENV, True) or OPENMP_REQUIREMENT["soname"] not in _wheel_handles:
        return shared_blas_pools
    for path in _loaded_openblas():
        if path in shared_blas_pools:
            continue
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | ctypes.RTLD_LOCAL)
        except OSError:
            continue
        setter = next((n for n in _CALLBACK_SETTERS if hasattr(lib, n)), None)
        if setter is None:
            shared_blas_pools[path] = ""
            continue
        try:
            pool = _blas_pool_library()
        except LibraryError as e:   # no C compiler: OpenBLAS keeps its workers (compile() must not fail)
            global share_blas_threads_error
            share_blas_threads_error = str(e)
            return shared_blas_pools
        fn = getattr(lib, setter)
        fn.argtypes, fn.restype = [ctypes.c_void_p], None
        fn(ctypes.cast(getattr(pool, BLAS_POOL_SYMBOL), ctypes.c_void_p))
        shared_blas_pools[path] = setter
    return shared_blas_pools


def openmp_library() -> Optional[str]:
    """The OpenMP runtime (:data:`OPENMP_REQUIREMENT`) installed in the running Python, or None."""
    for d in (os.path.join(sys.prefix, "lib"), os.path.join(sys.base_prefix, "lib")):
        p = os.path.join(d, OPENMP_REQUIREMENT["soname"])
        if os.path.exists(p):
            return p
    return _wheel_library(OPENMP_REQUIREMENT["package"], OPENMP_REQUIREMENT["soname"])


def openmp_link_args() -> list[str]:
    """Linker arguments making the OpenMP runtime a dependency of an exported model by soname
    only (no rpath: :func:`load_openmp` provides it at load)."""
    path = openmp_library()
    if path is None:
        raise LoadError(f"no OpenMP runtime ({OPENMP_REQUIREMENT['soname']}) in this Python: "
                        f"pip install {OPENMP_REQUIREMENT['package']}")
    return [f"-L{os.path.dirname(path)}", "-l" + OPENMP_REQUIREMENT["soname"][3:-3]]


def load_openmp(what: str) -> None:
    """Load the OpenMP runtime a threaded exported model needs (:func:`init_openmp`). Loading
    builds nothing: OpenBLAS's jobs move to our team once the model is open, through the copy
    of the pool linked into it (:func:`adopt_blas_pool`)."""
    init_openmp(what, share=False)


#: A module's run-time thread count: the i32 global that relax-omp-threads declares and every
#: OpenMP parallel region of the module reads (relax_mlir.transforms.omp_threads.THREADS_GLOBAL).
THREADS_SYMBOL = "_mlir_relax_num_threads"
#: Library functions (name prefixes) that take the calling module's thread count: relax-lower-host
#: appends the module's :data:`THREADS_SYMBOL` cell (a ``memref<i32>``) to their arguments, so
#: they run on ``exe.num_threads`` threads like the generated kernels (docs/quantization.md).
THREAD_CELL_CALLEES = ("relax_qmatmul_",)


def takes_thread_cell(callee: str) -> bool:
    return callee.startswith(THREAD_CELL_CALLEES)


def default_threads() -> int:
    """The cores this process may run on (its CPU affinity), the default thread count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def env_threads() -> int:
    """``RELAX_MLIR_NUM_THREADS`` now: unset, empty, 0 or less: every core of this process's
    affinity (:func:`default_threads`); not an integer: 1."""
    n = config.num_threads()
    return n if n > 0 else default_threads()


class ThreadCount:
    """The run-time thread count of one executable's code (JIT engine or loaded library):
    its :data:`THREADS_SYMBOL` cell, set from ``RELAX_MLIR_NUM_THREADS`` when created.
    Code without parallel regions has no cell: its count is 1 and setting it does nothing.
    Two ``load()`` of one file share their code, hence their count."""

    def __init__(self, resolver):
        self.cell: Optional[ctypes.c_int32] = None
        engine, lib = getattr(resolver, "engine", None), getattr(resolver, "lib", None)
        if engine is not None:
            addr = engine.raw_lookup(THREADS_SYMBOL[len("_mlir_"):])   # raw_lookup prefixes "_mlir_"
            if addr:
                self.cell = ctypes.c_int32.from_address(addr)
        elif lib is not None:
            try:
                self.cell = ctypes.c_int32.in_dll(lib, THREADS_SYMBOL)
            except ValueError:
                self.cell = None
        if self.cell is not None:
            self.cell.value = env_threads()

    def get(self) -> int:
        return self.cell.value if self.cell is not None else 1

    def set(self, n: Optional[int]) -> None:
        """``n`` threads from the next call on; None: ``RELAX_MLIR_NUM_THREADS`` as set now;
        0 or less: every core of this process's affinity."""
        if n is None:
            n = env_threads()
        elif isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"num_threads: an int or None, got {n!r}")
        elif n <= 0:
            n = default_threads()
        if self.cell is not None:
            self.cell.value = min(n, 1 << 16)


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


# -- bound weights: the shim's packed copies -----------------------------------------------

#: The shim's registry functions a :class:`WeightPacker` calls, and its statistics (tests): an
#: exported model exports them.
WEIGHT_PACKER_SYMBOLS = ("relax_blas_pack_register", "relax_blas_pack_release", "relax_blas_pack_invalidate",
                         "relax_blas_pack_stats")


class WeightPacker:
    """The registry of constant regions of one loaded shim (``relax_blas_pack_*`` in
    ``blas_shim.c``): an f32 product whose B operand lies in a registered region packs B
    once and reuses the packed copy (MKL builds on AVX-512 CPUs; elsewhere registering is a
    no-op). :meth:`hold` is called by ``bind_params`` for the arrays it binds."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        lib.relax_blas_pack_register.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        lib.relax_blas_pack_register.restype = ctypes.c_int
        for name in ("relax_blas_pack_release", "relax_blas_pack_invalidate"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int64]
            getattr(lib, name).restype = None

    def hold(self, arrays) -> list[tuple[int, int]]:
        """Register every f32 array of rank >= 2 in ``arrays`` (C-contiguous numpy arrays that
        the caller keeps alive and unchanged until :meth:`release`): the (address, bytes)
        registered, empty where this shim never packs."""
        held = []
        for a in arrays:
            if a.dtype == "float32" and a.ndim >= 2 and a.nbytes > 0:
                region = (a.ctypes.data, a.nbytes)
                if not self.lib.relax_blas_pack_register(*region):
                    return held     # this build or CPU does not pack: nothing more to record
                held.append(region)
        return held

    def release(self, held: list[tuple[int, int]], _arrays=None) -> None:
        """Let go of regions from :meth:`hold` (the last holder frees the packed copies).
        ``_arrays``: the arrays themselves, kept alive by a finalizer until this runs."""
        for region in held:
            self.lib.relax_blas_pack_release(*region)

    def invalidate(self, held: list[tuple[int, int]]) -> None:
        """The held arrays changed in place: drop their packed copies (rebuilt on next use)."""
        for region in held:
            self.lib.relax_blas_pack_invalidate(*region)


_packers: dict[str, WeightPacker] = {}


def weight_packer(paths: Iterable[str], lib: Optional[ctypes.CDLL] = None) -> Optional[WeightPacker]:
    """The :class:`WeightPacker` of an executable: the JIT's shim among its library ``paths``,
    else ``lib`` (an exported model, whose copy of the shim exports the registry); None when
    it links no shim."""
    for p in paths:
        if is_shim(p):
            with _lock:
                if p not in _packers:
                    _packers[p] = WeightPacker(ctypes.CDLL(p))   # the copy the JIT loaded
                return _packers[p]
    if lib is not None and hasattr(lib, "relax_blas_pack_register"):
        return WeightPacker(lib)
    return None
