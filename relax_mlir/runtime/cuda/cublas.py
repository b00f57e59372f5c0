"""cuBLAS for the cuda target: where the library is, the C shim calling it, the workspace.

The library (:func:`find`): ``$RELAX_MLIR_CUBLAS_LIBRARY``, else the PyPI wheel
``nvidia-cublas-cu12`` (``site-packages/nvidia/cublas/lib/libcublas.so.12``, what a CUDA
build of torch installs), else the system's ``libcublas.so.12`` / ``libcublas.so``; none:
the cuda target compiles every matmul as before (relax-cuda-dispatch-library does not run).

The shim (``cublas_shim.c``, built once per user with the system C compiler, registered as
the runtime library ``relax_cublas``): one C entry point, ``relax_cublas_matmul(rt, code,
A, B, C, E)`` (E: a cuBLASLt epilogue's residual or bias, else null), which the compiled host code calls for each ``relax_cublas_matmul_*`` callee
(the host module defines the ``_mlir_ciface_`` functions: relax_mlir/runtime/cuda_launch.py),
so no Python runs per library call. It sets the call's stream and the session's workspace on
the handle, issues ``cublasGemmEx`` / ``cublasGemmStridedBatchedEx`` / ``cublasLtMatmul`` (captured into the
call's CUDA graph like any launch), counts a launch and a library call in the state block
and folds the callee into the call's topology.

The workspace: cuBLAS allocates its default workspace on ``cublasSetStream``, which a stream
under capture does not allow, so each session gets one from the device pool
(:data:`WORKSPACE_BYTES`: NVIDIA's recommendation, 32 MiB on Hopper, 4 MiB before) the first
time a call of an executable that uses cuBLAS runs in it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import site
import sys
import threading
from pathlib import Path
from typing import Optional

from ... import config
from ..cbuild import LibraryError, _build_c, c_compiler
from ..cuda_launch import LIBRARY_ENTRY, LIBRARY_NAME as LIBRARY  # noqa: F401 (the runtime library, its C entry)
from ..libraries import register_library
from .driver import CudaUnavailable

#: the shim's source
SHIM = Path(__file__).with_name("cublas_shim.c")
#: bytes of a session's cuBLAS workspace by compute capability major (cuBLAS docs: 32 MiB
#: for Hopper, 4 MiB otherwise)
WORKSPACE_BYTES = {9: 32 << 20}
WORKSPACE_DEFAULT = 4 << 20
SONAMES = ("libcublas.so.12", "libcublas.so.13", "libcublas.so")


def _wheel_dirs() -> list[str]:
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:
        pass
    return [d for d in dict.fromkeys(dirs) if d]


def find() -> Optional[str]:
    """The cuBLAS library to load (see the module docstring), or None."""
    env = config.cublas_library()
    if env:
        return env if os.path.exists(env) else None
    for d in _wheel_dirs():
        for so in sorted(glob.glob(os.path.join(d, "nvidia", "cublas", "lib", "libcublas.so.*"))):
            return so
    for so in SONAMES:
        try:
            ctypes.CDLL(so)
            return so
        except OSError:
            continue
    name = ctypes.util.find_library("cublas")
    return name


def policy(option: str = "") -> str:
    """The compile's cuBLAS policy: ``option`` (the cuda pipeline's ``cublas``), else
    ``$RELAX_MLIR_CUBLAS``; ``auto`` becomes ``off`` where no library is found or no C compiler
    can build the shim."""
    p = (option or config.cuda_cublas()).lower()
    if p not in ("auto", "on", "off"):
        raise ValueError(f"cublas must be auto, on or off, got '{p}'")
    if p == "auto" and find() is None:
        return "off"
    if p == "auto":
        try:
            c_compiler()
        except LibraryError:
            return "off"
    return p


def _slot_flags() -> list[str]:
    from ..cuda_launch import LIBRARY as KIND, SLOTS
    names = {"SLOT_ERROR": "error", "SLOT_CODE": "code", "SLOT_STREAM": "stream", "SLOT_WS": "cublas_ws",
             "SLOT_WS_SIZE": "cublas_ws_size", "SLOT_LAUNCHES": "launches", "SLOT_LIBRARY_CALLS": "library_calls",
             "SLOT_TOPOLOGY": "topology"}
    return [f"-D{k}={SLOTS[v]}" for k, v in names.items()] + [f"-DRELAX_KIND_LIBRARY={KIND}"]


def shim_path() -> str:
    """The built shim (cached per user, keyed by its source, the slots and the compiler)."""
    flags = _slot_flags()
    return str(_build_c(SHIM, "relax_cublas", "cublas", lambda src, out: c_compiler() + [
        "-shared", "-fPIC", "-O2", *flags, "-o", out, src, "-ldl", "-lpthread"], ".so", "the cuBLAS shim"))


register_library(LIBRARY, lambda: [shim_path()])

_LOADED: dict[str, object] = {}
_LOCK = threading.Lock()


def load(dev) -> ctypes.CDLL:
    """The shim with cuBLAS loaded and its handle created (in ``dev``'s context), once per
    process; :class:`CudaUnavailable` naming what is missing."""
    with _LOCK:
        if "shim" in _LOADED:
            return _LOADED["shim"]
        path = find()
        if path is None:
            raise CudaUnavailable("the module calls cuBLAS (relax-cuda-dispatch-library) but no cuBLAS library was "
                                  "found: pip install nvidia-cublas-cu12, set RELAX_MLIR_CUBLAS_LIBRARY, or compile "
                                  "with options={'cublas': 'off'}")
        # cuBLAS needs cuBLASLt: the wheel's lies beside it (loaded first, in case the library's
        # run path does not find it)
        lt = sorted(glob.glob(os.path.join(os.path.dirname(path), "libcublasLt.so.*")))[:1]
        for so in lt:
            try:
                ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
        shim = ctypes.CDLL(shim_path())
        shim.relax_cublas_load.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
        shim.relax_cublas_error.restype = ctypes.c_char_p
        with dev.current():
            # cuBLASLt (the epilogues): the wheel's beside cuBLAS, else its usual name, else cuBLAS's
            # own library (the tests' fake)
            r = shim.relax_cublas_load(path.encode(), 1 if config.cublas_tf32() else 0, (lt[0] if lt else "").encode())
        if r != 0:
            why = {-1: f"dlopen: {(shim.relax_cublas_error() or b'').decode(errors='replace')}",
                   -2: "an entry point is missing (cublasGemmEx, cublasSetWorkspace_v2, ...: cuBLAS 11 or later)"}
            raise CudaUnavailable(f"cannot use cuBLAS {path}: {why.get(r, f'cublasCreate returned {-1000 - r}')}")
        _LOADED["shim"], _LOADED["path"] = shim, path
        return shim


def entry_address(dev) -> int:
    """The address of the shim's ``relax_cublas_matmul`` (bound into the host code)."""
    return ctypes.cast(load(dev).relax_cublas_matmul, ctypes.c_void_p).value


def workspace_bytes(dev) -> int:
    return WORKSPACE_BYTES.get(dev.compute_capability[0], WORKSPACE_DEFAULT)


STATUS = {1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
          8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
          14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}


def describe(status: int) -> str:
    return f"{STATUS.get(status, 'cuBLAS status')} ({status})"
