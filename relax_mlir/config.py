"""Configuration from the environment: the one module that reads (or sets) environment
variables. Everything else asks a function here, so a variable is documented, parsed and
defaulted in one place (a contract test checks that no other module touches ``os.environ``).

Compiler and runtime
=================================  ==========================================================
``RELAX_MLIR_CACHE``               base directory of built artifacts (the BLAS shim, the
                                   MiniLM weights); default ``$XDG_CACHE_HOME/relax-mlir``,
                                   else ``~/.cache/relax-mlir``
``RELAX_MLIR_CACHE_DIR``           the compile cache (:mod:`relax_mlir.compile_cache`);
                                   default ``<RELAX_MLIR_CACHE>/compiled``; ``off``/``0``: none
``RELAX_MLIR_NUM_THREADS``         threads of generated code (unset, 0: every core of the
                                   process's affinity)
``RELAX_MLIR_DYNAMIC_THREADS``     ``1``: libiomp5's dynamic team sizes (a busy machine)
``RELAX_MLIR_KEEP_HEAP``           ``0``: leave glibc's malloc thresholds alone (default: freed
                                   kernel scratch stays in the heap, :mod:`relax_mlir.runtime.heap`)
``RELAX_BLAS``                     BLAS provider of relax_blas: ``mkl`` or ``openblas``
                                   (default: by the CPU, :mod:`relax_mlir.target`)
``RELAX_BLAS_OPENMP``              ``gomp``: the MKL shim on libgomp instead of libiomp5
``RELAX_BLAS_NUM_THREADS``         BLAS threads of a tuning worker (set for its subprocess)
``RELAX_MLIR_DISPATCH_POLICY``     relax-dispatch-library's policy: ``measured`` or ``flops``
                                   (these three: defaults of the compile's Target, which the
                                   passes read from the module's ``relax.target``)
``RELAX_MLIR_DISPATCH_TABLE``      the calibration table (JSON) of the measured policy
``RELAX_MLIR_DISPATCH_ATTENTION``  ``0``: no fused library attention
``RELAX_MLIR_DEBUG_SCHEDULES``     print why a schedule was not applied
``RELAX_DEBUG``                    relax-opt re-raises internal errors (a traceback)
``CC``                             the C compiler (may carry arguments); default cc/gcc/clang
``MKL_THREADING_LAYER``            read: a layer the user chose for MKL
=================================  ==========================================================

Devices
=================================  ==========================================================
``RELAX_MLIR_CUDA_DEVICE``         the CUDA device (ordinal); ``RELAX_MLIR_VULKAN_DEVICE``:
                                   the Vulkan device (index or name substring)
``RELAX_MLIR_CUDA_TIMEOUT_S``,     seconds a device call may take (default 60)
``RELAX_MLIR_VULKAN_TIMEOUT_S``
``RELAX_MLIR_VULKAN_STAGING``      vulkan device buffers: ``auto`` (default: device-only memory
                                   + staging copies where the device has a DEVICE_LOCAL type
                                   that is not HOST_VISIBLE), ``1`` (always), ``0`` (never)
``RELAX_MLIR_CUDA_GRAPHS``         ``0``: launch kernels directly, no CUDA graph per call
``RELAX_MLIR_CUDA_CHECK``          ``1``: check each launch's pointers in Python (debugging)
``RELAX_MLIR_CUBLAS``              cuda matmuls to cuBLAS: ``auto`` (default), ``on``, ``off``
``RELAX_MLIR_CUBLAS_LIBRARY``      the libcublas.so to load (default: the PyPI wheel's, else the system's)
``RELAX_MLIR_CUBLAS_TF32``         ``1``: cuBLAS f32 matmuls in TF32 (``CUBLAS_COMPUTE_32F_FAST_TF32``)
=================================  ==========================================================

Set for libraries that read the environment once, at their initialization:
``KMP_BLOCKTIME`` (default 1 ms), ``KMP_DYNAMIC_MODE``, ``OMP_DYNAMIC`` (libiomp5),
``HF_HUB_OFFLINE`` (transformers, while loading bundled weights).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Optional

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "none")


def get(name: str, default: str = "") -> str:
    """The variable's value, stripped; ``default`` when unset or empty."""
    return os.environ.get(name, "").strip() or default


def flag(name: str, default: bool) -> bool:
    """A yes/no variable: 1/true/yes/on or 0/false/no/off, else ``default``."""
    v = get(name).lower()
    return True if v in _TRUE else False if v in _FALSE else default


def is_set(name: str) -> bool:
    return name in os.environ


def set_default(name: str, value: str) -> None:
    """Set ``name`` for a library that reads it at its initialization, unless the user did."""
    os.environ.setdefault(name, value)


@contextlib.contextmanager
def temporarily(name: str, value: str) -> Iterator[None]:
    """``name=value`` while the block runs (a library initializing), unless the user set it."""
    here = name not in os.environ
    if here:
        os.environ[name] = value
    try:
        yield
    finally:
        if here:
            os.environ.pop(name, None)


def subprocess_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a child process, with ``extra`` set where not already."""
    env = dict(os.environ)
    for k, v in extra.items():
        if not env.get(k):
            env[k] = v
    return env


# -- directories ----------------------------------------------------------------------------

def cache_base() -> Path:
    """``RELAX_MLIR_CACHE``, else ``$XDG_CACHE_HOME/relax-mlir``, else ``~/.cache/relax-mlir``."""
    base = get("RELAX_MLIR_CACHE")
    if base:
        return Path(base).expanduser()
    xdg = get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "relax-mlir"


def cache_dir() -> Optional[Path]:
    """The compile cache's directory, or None when ``RELAX_MLIR_CACHE_DIR`` turns it off."""
    raw = get("RELAX_MLIR_CACHE_DIR")
    if raw.lower() in _FALSE:
        return None
    return Path(raw).expanduser() if raw else cache_base() / "compiled"


def compile_environment() -> dict[str, str]:
    """The ``RELAX_*`` variables in effect (they may change what a compile produces), less
    the caches' locations and the fuzzers' settings."""
    skip = ("RELAX_MLIR_CACHE_DIR", "RELAX_MLIR_CACHE")
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("RELAX_") and k not in skip and not k.startswith("RELAX_FUZZ")}


# -- threads, BLAS, OpenMP ----------------------------------------------------------------------

def num_threads() -> int:
    """``RELAX_MLIR_NUM_THREADS``: unset, empty, 0 or less: 0 (every core); not an integer: 1."""
    raw = get("RELAX_MLIR_NUM_THREADS")
    try:
        n = int(raw) if raw else 0
    except ValueError:
        return 1
    return max(n, 0)


def dynamic_threads() -> bool:
    return flag("RELAX_MLIR_DYNAMIC_THREADS", False)


def keep_heap() -> bool:
    """``RELAX_MLIR_KEEP_HEAP`` (default on): :func:`relax_mlir.runtime.heap.keep_heap`."""
    return flag("RELAX_MLIR_KEEP_HEAP", True)


def blas_request() -> str:
    """``RELAX_BLAS`` lower-cased ('' when unset)."""
    return get("RELAX_BLAS").lower()


def blas_on_gomp() -> bool:
    """``RELAX_BLAS_OPENMP=gomp``: the MKL shim on libgomp."""
    return get("RELAX_BLAS_OPENMP").lower() == "gomp"


def mkl_threading_layer() -> str:
    return get("MKL_THREADING_LAYER")


def c_compiler() -> str:
    return get("CC")


# -- passes ----------------------------------------------------------------------------------

def dispatch_policy() -> str:
    return get("RELAX_MLIR_DISPATCH_POLICY")


def dispatch_table() -> str:
    return get("RELAX_MLIR_DISPATCH_TABLE")


def dispatch_attention() -> bool:
    return get("RELAX_MLIR_DISPATCH_ATTENTION", "1") != "0"


def debug_schedules() -> bool:
    return bool(get("RELAX_MLIR_DEBUG_SCHEDULES"))


def debug() -> bool:
    return bool(get("RELAX_DEBUG"))


# -- devices -----------------------------------------------------------------------------------

def device_selection(kind: str) -> str:
    """``RELAX_MLIR_<KIND>_DEVICE`` ('' for the default device)."""
    return os.environ.get(f"RELAX_MLIR_{kind.upper()}_DEVICE", "")


def device_timeout_s(kind: str) -> float:
    return float(get(f"RELAX_MLIR_{kind.upper()}_TIMEOUT_S", "60"))


def vulkan_staging() -> str:
    """``RELAX_MLIR_VULKAN_STAGING``: ``auto`` (default), ``on`` or ``off`` (``1``/``0`` and the
    other boolean spellings accepted): whether the vulkan runtime keeps its buffers in
    device-only memory and moves data through host-visible staging buffers."""
    v = get("RELAX_MLIR_VULKAN_STAGING", "auto").strip().lower()
    if v in _TRUE:
        return "on"
    if v in _FALSE:
        return "off"
    if v in ("", "auto"):
        return "auto"
    raise ValueError(f"RELAX_MLIR_VULKAN_STAGING={v!r}: expected auto, 1 or 0")


def cuda_graphs() -> bool:
    """``RELAX_MLIR_CUDA_GRAPHS=0``: launch every kernel directly instead of capturing each
    call's device work as a CUDA graph."""
    return get("RELAX_MLIR_CUDA_GRAPHS", "1") != "0"


def cuda_cublas() -> str:
    """``RELAX_MLIR_CUBLAS``: the cuda target's cuBLAS policy when the compile's options do not
    say (``auto``: the provisional rule where a cuBLAS library is found; ``on``; ``off``)."""
    return get("RELAX_MLIR_CUBLAS", "auto").lower()


def cublas_library() -> str:
    """``RELAX_MLIR_CUBLAS_LIBRARY``: the cuBLAS library to load ('' : search for one)."""
    return get("RELAX_MLIR_CUBLAS_LIBRARY")


def cublas_tf32() -> bool:
    """``RELAX_MLIR_CUBLAS_TF32=1``: cuBLAS computes f32 matmuls with TF32 tensor cores."""
    return get("RELAX_MLIR_CUBLAS_TF32", "0") == "1"


def cuda_check_launches() -> bool:
    """``RELAX_MLIR_CUDA_CHECK=1``: check every launch's parameters in Python (each pointer in
    the runtime's device memory, the parameter count): a debugging aid, slow."""
    return get("RELAX_MLIR_CUDA_CHECK", "0") == "1"
