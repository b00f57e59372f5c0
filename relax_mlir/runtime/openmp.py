"""The OpenMP runtime and thread counts: one team of threads for our kernels and the BLAS.

Threaded kernels call Intel's libiomp5 (the ``intel-openmp`` wheel), loaded once with our wait
policy (:func:`init_openmp`); OpenBLAS's parallel jobs run on the same team
(:func:`share_blas_threads`, ``blas_pool.c``); a module's run-time thread count is one i32
cell (:data:`THREADS_SYMBOL`) set through :class:`ThreadCount` (``exe.num_threads``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import Optional

from .. import config
from ..errors import LoadError
from .cbuild import LibraryError, _build_c, c_compiler
from .wheels import _load_wheel_library, _wheel_handles, _wheel_library


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
#: OpenMP parallel region of the module reads (relax_mlir.backends.cpu.omp_threads.THREADS_GLOBAL).
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


def _iomp_link_args(omp: str, rpath: bool) -> list[str]:
    """Linker arguments putting code built with gcc's ``-fopenmp`` on the libiomp5 at ``omp``
    (its ``GOMP_*`` entry points) instead of libgomp, which ``--as-needed`` then leaves out."""
    d = os.path.dirname(omp)
    return ["-Wl,--as-needed", f"-L{d}", f"-l:{os.path.basename(omp)}"] + ([f"-Wl,-rpath,{d}"] if rpath else [])
