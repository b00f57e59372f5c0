"""The CUDA driver API through ctypes (``libcuda.so.1``, or another library in tests), the
runtime's errors and wait timeout, and the path of MLIR's CUDA runtime library."""

from __future__ import annotations

import ctypes
import os
from typing import Optional

from ... import config

LIBCUDA = "libcuda.so.1"

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_NOT_READY = 600
#: errors after which the context cannot be used again (a kernel faulted)
STICKY = {700, 702, 714, 715, 716, 717, 718, 719}

_ATTR = {"max_threads": 1, "shared_memory": 8, "warp_size": 10, "block_x": 2, "block_y": 3, "block_z": 4, "grid_x": 5, "grid_y": 6, "grid_z": 7,
         "cc_major": 75, "cc_minor": 76, "multiprocessors": 16}
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_LOG_BYTES = 1 << 14
_ELF = b"\x7fELF"


class CudaError(RuntimeError):
    """A CUDA runtime failure; ``code`` is the driver's CUresult when one caused it."""

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.code = code


class CudaUnavailable(CudaError):
    """No CUDA driver library, no (selected) device, or a device the runtime cannot use."""


class PtxError(CudaError):
    """The CUDA driver rejected a kernel's PTX (JIT compilation or module load)."""


def _timeout_s() -> float:
    return config.device_timeout_s("cuda")

# -- the driver API through ctypes -------------------------------------------------------

_P = ctypes.POINTER
_U = ctypes.c_uint
#: the driver entry points used, with their argument types (all return a CUresult)
_PROTOTYPES = {
    "cuGetErrorName": [ctypes.c_int, _P(ctypes.c_char_p)],
    "cuGetErrorString": [ctypes.c_int, _P(ctypes.c_char_p)],
    "cuInit": [_U],
    "cuDeviceGetCount": [_P(ctypes.c_int)],
    "cuDeviceGet": [_P(ctypes.c_int), ctypes.c_int],
    "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceGetAttribute": [_P(ctypes.c_int), ctypes.c_int, ctypes.c_int],
    "cuDeviceTotalMem_v2": [_P(ctypes.c_size_t), ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [_P(ctypes.c_void_p), ctypes.c_int],
    "cuCtxPushCurrent_v2": [ctypes.c_void_p],
    "cuCtxPopCurrent_v2": [_P(ctypes.c_void_p)],
    "cuCtxSynchronize": [],
    "cuMemAlloc_v2": [_P(ctypes.c_uint64), ctypes.c_size_t],
    "cuMemFree_v2": [ctypes.c_uint64],
    "cuModuleLoadDataEx": [_P(ctypes.c_void_p), ctypes.c_void_p, _U, _P(ctypes.c_int), _P(ctypes.c_void_p)],
    "cuModuleGetFunction": [_P(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p],
    "cuModuleUnload": [ctypes.c_void_p],
    "cuLaunchKernel": [ctypes.c_void_p, _U, _U, _U, _U, _U, _U, _U, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_void_p],
    "cuStreamCreate": [_P(ctypes.c_void_p), _U],
    "cuStreamDestroy_v2": [ctypes.c_void_p],
    "cuStreamQuery": [ctypes.c_void_p],
    "cuMemcpyHtoD_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t],
    "cuMemcpyDtoH_v2": [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
    "cuMemcpyHtoDAsync_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
    "cuMemcpyDtoDAsync_v2": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p],
}
#: entry points the runtime uses when the driver has them: CUDA graphs (CUDA 12)
_OPTIONAL = {
    "cuStreamBeginCapture_v2": [ctypes.c_void_p, ctypes.c_int],
    "cuStreamEndCapture": [ctypes.c_void_p, _P(ctypes.c_void_p)],
    "cuGraphInstantiateWithFlags": [_P(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_ulonglong],
    "cuGraphExecUpdate_v2": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p],
    "cuGraphLaunch": [ctypes.c_void_p, ctypes.c_void_p],
    "cuGraphDestroy": [ctypes.c_void_p],
    "cuGraphExecDestroy": [ctypes.c_void_p],
}
#: CU_STREAM_NON_BLOCKING; CU_STREAM_CAPTURE_MODE_RELAXED (the pool may cuMemAlloc while a
#: call's stream is captured)
_STREAM_NON_BLOCKING = 1
_CAPTURE_RELAXED = 2


class Driver:
    """The CUDA driver API entry points the runtime needs (``libcuda.so.1`` by default;
    ``path`` names another library, e.g. in tests)."""

    def __init__(self, path: Optional[str] = None):
        self.path = path or LIBCUDA
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise CudaUnavailable(f"cannot load the CUDA driver library {self.path}: {e} "
                                  "(no NVIDIA driver on this machine)") from None
        for name, args in _PROTOTYPES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                raise CudaUnavailable(f"{self.path} has no {name}: not a CUDA driver library "
                                      "(or one older than CUDA 11)") from None
            fn.argtypes, fn.restype = args, ctypes.c_int
            setattr(self, name.replace("_v2", ""), fn)
        for name, args in _OPTIONAL.items():
            fn = getattr(self.lib, name, None)
            if fn is not None:
                fn.argtypes, fn.restype = args, ctypes.c_int
            setattr(self, name.replace("_v2", ""), fn)

    def address(self, name: str) -> int:
        """The address of the driver entry point ``name`` (for compiled code to call)."""
        return ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value

    def describe(self, code: int) -> str:
        """``CUDA_ERROR_<NAME> (<the driver's sentence>)`` for a CUresult."""
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if self.cuGetErrorName(code, ctypes.byref(name)) != CUDA_SUCCESS or not name.value:
            return f"CUDA error {code} (unknown to the driver)"
        self.cuGetErrorString(code, ctypes.byref(text))
        out = name.value.decode(errors="replace")
        return f"{out} ({text.value.decode(errors='replace')})" if text.value else out

    def check(self, code: int, what: str, exc: type = CudaError) -> None:
        if code != CUDA_SUCCESS:
            raise exc(f"{what} failed: {self.describe(code)}", code)

    def out(self, fn: str, ctype, *args, exc: type = CudaError):
        """Call ``fn(&value, *args)`` and return the value."""
        v = ctype()
        self.check(getattr(self, fn)(ctypes.byref(v), *args), fn, exc)
        return v.value


def mlir_cuda_library() -> str:
    """The path of the wheel's ``libmlir_cuda_runtime.so`` (MLIR's CUDA runtime wrappers)."""
    import mlir
    for base in mlir.__path__:
        p = os.path.join(base, "lib", "libmlir_cuda_runtime.so")
        if os.path.exists(p):
            return p
    raise CudaUnavailable("the MLIR wheel has no lib/libmlir_cuda_runtime.so (MLIR's CUDA runtime wrappers)")
