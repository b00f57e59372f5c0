"""The CUDA runtime of the ``cuda`` target: PTX kernels, host code JIT-compiled, managed memory.

::

    exe = relax_mlir.compile(src, target="cuda")   # PTX kernels + host code (JIT)
    y = exe(x, w)                                  # numpy in, numpy out, any valid shape
    w_dev = exe.upload(w)                          # a DeviceArray: stays in device memory
    y = exe(x, w_dev)                              # ... and is not copied again per call

How a call runs. The graph function and the host halves of the kernels are host code
(the MLIR ExecutionEngine), so shape computation and the run-time checks are exactly
the cpu target's. The ``cuda`` pipeline lowers ``gpu.launch_func`` with upstream
``gpu-to-llvm``: the translated host code embeds each kernel's PTX (or cubin), loads it in
a global constructor (``mgpuModuleLoadJIT``; ``mgpuModuleLoad`` for a cubin) and launches a kernel as ``mgpuModuleGetFunction``,
``mgpuStreamCreate``, ``mgpuLaunchKernel``, ``mgpuStreamSynchronize``,
``mgpuStreamDestroy``: MLIR's CUDA runtime wrappers (the wheel's
``libmlir_cuda_runtime.so``, linked into the engine; cuBLAS-free). Five of those symbols
are provided by this module instead (ctypes callbacks registered with the engine, which
resolves them before the library), because the library prints a failed driver call to
stderr and carries on (a rejected launch would be a silently wrong result) and its
synchronize cannot time out:

* ``mgpuModuleLoadJIT`` / ``mgpuModuleLoad``: the driver JIT-compiles the PTX (or loads
  the cubin) with an error log; a rejected kernel is a :class:`PtxError` carrying the
  log, raised by ``compile()``;
* ``mgpuModuleGetFunction``: remembers which kernel each function handle is;
* ``mgpuLaunchKernel``: checks the grid and block against the device's limits and that
  every pointer argument lies in this runtime's device memory (a host pointer would
  fault the device and poison the CUDA context for the whole process), then
  ``cuLaunchKernel``; its error code becomes a :class:`CudaError`;
* ``mgpuStreamSynchronize``: polls ``cuStreamQuery`` until the kernel is done, at most
  ``RELAX_MLIR_CUDA_TIMEOUT_S`` seconds (default 60): a ``TimeoutError``, never a hang.

The library keeps the stream creation and module unloading; its primary-context
handling is pinned to the selected device (``mgpuSetDefaultDevice``) when the first
executable is built.

Memory: managed memory (``cuMemAllocManaged``), through the allocation hooks of
``finalize-memref-to-llvm{use-generic-functions=true}`` (``_mlir_memref_to_llvm_alloc`` /
``_free``), the same hooks as the vulkan runtime. Why managed rather than device memory
with explicit copies, or ``gpu.alloc host_shared``: the host code reads and writes its
buffers as ordinary pointers (memref descriptors, ``memref.copy`` lowered to ``memcpy``,
results read back by Python), so a buffer must be addressable from both sides with one
address; managed memory is exactly that, needs no change to the host lowering, and
migrates pages to the GPU on first touch there. Every launch is synchronized before
the host code continues (upstream's lowering of a launch without an async token), so
the host never touches a page the GPU is using. Buffers come from a per-device pool in
power-of-two size classes (:class:`~relax_mlir.runtime.gpu_shared.BufferPool`) and
return to it when the call ends; arguments are copied into them, results copied out.

Device selection: ``RELAX_MLIR_CUDA_DEVICE`` (an index, or a substring of the device
name), else device 0 (``CUDA_VISIBLE_DEVICES`` applies as usual); one device per process
(the MLIR runtime library keeps one context). Errors are Python exceptions naming the
cause: :class:`CudaUnavailable` (no ``libcuda.so.1``, no device, no managed memory, a bad
selector, no ``libmlir_cuda_runtime.so``), :class:`PtxError` (the driver rejects a
kernel), :class:`CudaError` (a failed launch or kernel, with the driver's error name; after
a fault such as an illegal address the CUDA context is unusable and every later call
says so), ``MemoryError`` (out of device memory), ``TimeoutError``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
from typing import Optional

from .. import config
from .gpu_shared import ALLOC_FN, FREE_FN, BufferPool, CallHooks, DeviceExecutable, StagedFunction, add_stats, binaries

LIBCUDA = "libcuda.so.1"

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_NOT_READY = 600
#: errors after which the context cannot be used again (a kernel faulted)
STICKY = {700, 702, 714, 715, 716, 717, 718, 719}

_ATTR = {"max_threads": 1, "shared_memory": 8, "warp_size": 10, "block_x": 2, "block_y": 3, "block_z": 4, "grid_x": 5, "grid_y": 6, "grid_z": 7,
         "cc_major": 75, "cc_minor": 76, "managed": 83}
_CU_JIT_ERROR_LOG_BUFFER = 5
_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_CU_MEM_ATTACH_GLOBAL = 1
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
    "cuMemAllocManaged": [_P(ctypes.c_uint64), ctypes.c_size_t, _U],
    "cuMemFree_v2": [ctypes.c_uint64],
    "cuModuleLoadDataEx": [_P(ctypes.c_void_p), ctypes.c_void_p, _U, _P(ctypes.c_int), _P(ctypes.c_void_p)],
    "cuModuleGetFunction": [_P(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p],
    "cuModuleUnload": [ctypes.c_void_p],
    "cuLaunchKernel": [ctypes.c_void_p, _U, _U, _U, _U, _U, _U, _U, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_void_p],
    "cuStreamQuery": [ctypes.c_void_p],
    "cuMemcpyHtoD_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t],
    "cuMemcpyDtoH_v2": [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
}
#: entry points the runtime uses when the driver has them (migration hints: none changes a result)
_OPTIONAL = {
    "cuMemPrefetchAsync": [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p],
}
#: CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: prefetching managed memory needs it
_ATTR_CONCURRENT_MANAGED = 89


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
            setattr(self, name, fn)

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


# -- the device ---------------------------------------------------------------------------

class ManagedBuffer:
    """One ``cuMemAllocManaged`` allocation (kept for the life of the process, pooled)."""

    __slots__ = ("address", "size")

    def __init__(self, address: int, size: int):
        self.address, self.size = address, size


class CudaDevice(BufferPool):
    """One CUDA device: its primary context, limits and managed-memory buffer pool."""

    pool_kind = "CUDA"
    pool_error = CudaError

    def __init__(self, selector: Optional[str] = None, driver: Optional[Driver] = None):
        drv = self.drv = driver or Driver()
        drv.check(drv.cuInit(0), "cuInit", CudaUnavailable)
        count = drv.out("cuDeviceGetCount", ctypes.c_int, exc=CudaUnavailable)
        if count == 0:
            raise CudaUnavailable("the CUDA driver found no device")
        names = []
        for k in range(count):
            buf = ctypes.create_string_buffer(256)
            drv.check(drv.cuDeviceGetName(buf, 256, drv.out("cuDeviceGet", ctypes.c_int, k)), "cuDeviceGetName")
            names.append(buf.value.decode(errors="replace"))
        self.ordinal = self._select(selector, names)
        self.name = names[self.ordinal]
        self.handle = drv.out("cuDeviceGet", ctypes.c_int, self.ordinal)
        attrs = {key: drv.out("cuDeviceGetAttribute", ctypes.c_int, code, self.handle) for key, code in _ATTR.items()}
        if not attrs["managed"]:
            raise CudaUnavailable(f"device '{self.name}' does not support managed memory (cuMemAllocManaged), "
                                  "which the cuda target's buffers live in")
        self.compute_capability = (attrs["cc_major"], attrs["cc_minor"])
        self.max_grid = (attrs["grid_x"], attrs["grid_y"], attrs["grid_z"])
        self.max_block = (attrs["block_x"], attrs["block_y"], attrs["block_z"])
        self.max_threads = attrs["max_threads"]
        #: shared memory per block (bytes, without opting in to more) and the warp width
        self.shared_memory, self.warp_size = attrs["shared_memory"], attrs["warp_size"]
        self.max_alloc = drv.out("cuDeviceTotalMem", ctypes.c_size_t, self.handle)
        self.context = drv.out("cuDevicePrimaryCtxRetain", ctypes.c_void_p, self.handle, exc=CudaUnavailable)
        concurrent = ctypes.c_int(0)
        drv.cuDeviceGetAttribute(ctypes.byref(concurrent), _ATTR_CONCURRENT_MANAGED, self.handle)
        #: move managed pages in bulk (cuMemPrefetchAsync) before the side that uses them
        #: touches them, instead of page fault by page fault; RELAX_MLIR_CUDA_PREFETCH=0 turns it off
        self.prefetching = (drv.cuMemPrefetchAsync is not None and concurrent.value == 1
                            and config.cuda_prefetch())
        self.lock = threading.Lock()
        #: why the context cannot be used any more (a kernel faulted or timed out), else None
        self.broken: Optional[str] = None
        self._init_pool()

    @staticmethod
    def _select(selector: Optional[str], names: list[str]) -> int:
        if not selector:
            return 0
        if selector.isdigit():
            k = int(selector)
            if k >= len(names):
                raise CudaUnavailable(f"RELAX_MLIR_CUDA_DEVICE={selector}: only {len(names)} device(s): "
                                      f"{', '.join(names)}")
            return k
        for k, n in enumerate(names):
            if selector.lower() in n.lower():
                return k
        raise CudaUnavailable(f"RELAX_MLIR_CUDA_DEVICE={selector!r} names no device (devices: {', '.join(names)})")

    @contextlib.contextmanager
    def current(self):
        """The device's primary context current on this thread for the block."""
        self.drv.check(self.drv.cuCtxPushCurrent(self.context), "cuCtxPushCurrent")
        try:
            yield
        finally:
            self.drv.cuCtxPopCurrent(ctypes.byref(ctypes.c_void_p()))

    def fail(self, code: int, what: str) -> CudaError:
        """The error of a failed driver call; a sticky one marks the context unusable."""
        msg = f"{what}: {self.drv.describe(code)}"
        if code in STICKY:
            self.broken = (f"the CUDA context of '{self.name}' is unusable after an earlier error ({msg}); "
                           "restart the process")
        return CudaError(msg, code)

    def _new_buffer(self, size: int) -> ManagedBuffer:
        ptr = ctypes.c_uint64()
        with self.current():
            r = self.drv.cuMemAllocManaged(ctypes.byref(ptr), size, _CU_MEM_ATTACH_GLOBAL)
            if r == CUDA_ERROR_OUT_OF_MEMORY and self.trim(self._free_buffer):
                r = self.drv.cuMemAllocManaged(ctypes.byref(ptr), size, _CU_MEM_ATTACH_GLOBAL)
        if r == CUDA_ERROR_OUT_OF_MEMORY:
            raise MemoryError(f"the CUDA device cannot allocate {size} bytes ({self.name}): "
                              f"{self.drv.describe(r)}")
        self.drv.check(r, f"cuMemAllocManaged({size})")
        return ManagedBuffer(ptr.value, size)

    def prefetch(self, address: int, nbytes: int) -> None:
        """Migrate a region of managed memory to the device (asynchronous) before kernels
        write it: a hint only, page faults would move the same pages one by one."""
        if self.prefetching and nbytes > 0:
            if self.drv.cuMemPrefetchAsync(address, nbytes, self.handle, None) != CUDA_SUCCESS:
                self.prefetching = False   # e.g. a device without the capability: stop hinting

    # Copies between numpy and managed memory go through the driver (DMA to wherever the
    # pages are): a host memmove would fault every page back to the host, and the next
    # kernel would fault them back to the device.
    def to_device(self, address: int, host: int, nbytes: int) -> None:
        if nbytes > 0:
            self.drv.check(self.drv.cuMemcpyHtoD(address, host, nbytes), f"cuMemcpyHtoD({nbytes} bytes)")

    def to_host(self, host: int, address: int, nbytes: int) -> None:
        if nbytes > 0:
            r = self.drv.cuMemcpyDtoH(host, address, nbytes)
            if r != CUDA_SUCCESS:
                raise self.fail(r, f"cuMemcpyDtoH({nbytes} bytes)")

    def upload(self, buf, host: int, nbytes: int) -> None:
        with self.current():
            self.to_device(buf.address, host, nbytes)

    def download(self, host: int, buf, nbytes: int) -> None:
        with self.current():
            self.to_host(host, buf.address, nbytes)

    def _free_buffer(self, buf: ManagedBuffer) -> None:
        self.drv.check(self.drv.cuMemFree(buf.address), "cuMemFree")

    def load_image(self, image: bytes, label: str) -> int:
        """A CUmodule of a kernel image: PTX (JIT-compiled by the driver) or a cubin; a
        :class:`PtxError` with the driver's log when it is rejected."""
        log = ctypes.create_string_buffer(_LOG_BYTES)
        opts = (ctypes.c_int * 2)(_CU_JIT_ERROR_LOG_BUFFER, _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), _LOG_BYTES)
        cubin = image.startswith(_ELF)
        ptx = image if cubin else image.rstrip(b"\0")
        data = ctypes.create_string_buffer(ptx + (b"" if cubin else b"\0"), len(ptx) + (0 if cubin else 1))
        module = ctypes.c_void_p()
        with self.current():
            r = self.drv.cuModuleLoadDataEx(ctypes.byref(module), data, 2, opts, vals)
        if r != CUDA_SUCCESS:
            detail = log.value.decode(errors="replace").strip()
            hint = ""
            target = None if cubin else _ptx_target(ptx)
            cc = "sm_%d%d" % self.compute_capability
            if target and int(target[3:].rstrip("af") or 0) > int(cc[3:]):
                hint = f"; the PTX targets {target}, the device is {cc}: compile with pipeline_options={{'chip': '{cc}'}}"
            raise PtxError(f"kernel {label}: the CUDA driver rejected the {'cubin' if cubin else 'PTX'}: "
                           f"{self.drv.describe(r)}"
                           f"{': ' + detail if detail else ''}{hint}", r)
        return module.value


def _ptx_target(ptx: bytes) -> Optional[str]:
    for line in ptx.decode(errors="replace").splitlines():
        if line.startswith(".target "):
            return line.split()[1].rstrip(",")
    return None


_DEVICES: dict[str, CudaDevice] = {}
_DEVICES_LOCK = threading.Lock()


def device() -> CudaDevice:
    """The process's device for ``RELAX_MLIR_CUDA_DEVICE`` (created once)."""
    sel = config.device_selection("cuda")
    with _DEVICES_LOCK:
        if sel not in _DEVICES:
            _DEVICES[sel] = CudaDevice(sel or None)
        return _DEVICES[sel]


def available() -> tuple[bool, str]:
    """(True, device name) when a CUDA device can be used, else (False, why)."""
    try:
        dev = device()
        mlir_cuda_library()
        return True, dev.name
    except CudaError as e:
        return False, str(e)


def mlir_cuda_library() -> str:
    """The path of the wheel's ``libmlir_cuda_runtime.so`` (MLIR's CUDA runtime wrappers)."""
    import mlir
    for base in mlir.__path__:
        p = os.path.join(base, "lib", "libmlir_cuda_runtime.so")
        if os.path.exists(p):
            return p
    raise CudaUnavailable("the MLIR wheel has no lib/libmlir_cuda_runtime.so (MLIR's CUDA runtime wrappers)")


_BOUND: dict[str, object] = {}


def _bind_mlir_runtime(dev: CudaDevice, path: str) -> None:
    """Pin the MLIR runtime library's context to ``dev``: its device ordinal is a
    thread-local read once, by the first call that needs the context, so set it and make
    that first call here (a stream created and destroyed). Once per process."""
    with _DEVICES_LOCK:
        if "device" in _BOUND:
            if _BOUND["device"] is not dev and _BOUND["device"].ordinal != dev.ordinal:
                raise CudaUnavailable(f"this process already runs CUDA code on device {_BOUND['device'].ordinal} "
                                      f"('{_BOUND['device'].name}'): one CUDA device per process "
                                      "(RELAX_MLIR_CUDA_DEVICE)")
            return
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise CudaUnavailable(f"cannot load {path}: {e}") from None
        lib.mgpuSetDefaultDevice.argtypes = [ctypes.c_int32]
        lib.mgpuStreamCreate.restype = ctypes.c_void_p
        lib.mgpuStreamDestroy.argtypes = [ctypes.c_void_p]
        lib.mgpuSetDefaultDevice(dev.ordinal)
        stream = lib.mgpuStreamCreate()
        if not stream:
            raise CudaUnavailable(f"the MLIR CUDA runtime could not create a stream on '{dev.name}' "
                                  "(see its message on stderr)")
        lib.mgpuStreamDestroy(stream)
        _BOUND["device"], _BOUND["lib"] = dev, lib


# -- one call -----------------------------------------------------------------------------

class CallState(CallHooks):
    """The state of one call on one thread: its buffers, launches and first failure."""

    def __init__(self, dev: CudaDevice):
        self.dev = dev
        self.buffers: list[ManagedBuffer] = []
        self.error: Optional[BaseException] = None
        self.launches = 0
        self.timed_out = False
        self._ctx = None

    def begin(self) -> None:
        if self.dev.broken:
            raise CudaError(self.dev.broken)
        self.error, self.launches, self.timed_out = None, 0, False
        self._ctx = self.dev.current()
        self._ctx.__enter__()

    def alloc(self, nbytes: int) -> int:
        buf = self.dev.alloc(nbytes)
        self.buffers.append(buf)
        # kernels write it next: its pages to the device now (once on the device, a
        # buffer stays there: the host copies in and out through the driver)
        self.dev.prefetch(buf.address, nbytes)
        return buf.address

    def write(self, address: int, host: int, nbytes: int) -> None:
        self.dev.to_device(address, host, nbytes)

    def read(self, host: int, address: int, nbytes: int) -> None:
        if self.dev.lookup(address) is None:     # not managed memory: a constant of the host code
            ctypes.memmove(host, address, nbytes)
        else:
            self.dev.to_host(host, address, nbytes)

    def submit(self) -> None:
        """Every launch was synchronized already; one last context synchronize reports
        what a kernel may have left (an asynchronous fault)."""
        if self.launches:
            r = self.dev.drv.cuCtxSynchronize()
            if r != CUDA_SUCCESS:
                raise self.dev.fail(r, "cuCtxSynchronize after the call")

    def abandon(self) -> None:
        return None

    def finish(self) -> None:
        """The call's buffers back to the pool, unless a kernel may still be using them
        (a timeout: they are left allocated)."""
        if not self.timed_out:
            for b in self.buffers:
                self.dev.release(b)
        self.buffers = []
        if self._ctx is not None:
            ctx, self._ctx = self._ctx, None
            ctx.__exit__(None, None, None)


class CudaFunction(StagedFunction):
    """A graph function of a cuda executable: arguments staged into managed memory, every
    launch checked and synchronized, results read back."""

    target_name = "cuda"


_LOAD = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_LOAD_IMAGE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_GET_FUNCTION = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                           ctypes.c_int64, ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_int64)
_SYNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class CudaRuntime:
    """The callbacks one executable's host code calls (see the module docstring)."""

    def __init__(self, dev: CudaDevice, ptx: dict[str, bytes], kinds: dict[tuple[str, str], list[str]]):
        self.dev = dev
        self.local = threading.local()
        self.kinds = kinds
        self._by_image = {code if code.startswith(_ELF) else code.rstrip(b"\0"): name for name, code in ptx.items()}
        self.modules: dict[int, str] = {}                         # CUmodule -> gpu.binary name
        self.functions: dict[int, tuple[str, list[str]]] = {}     # CUfunction -> (label, parameter kinds)
        self._handles: dict[tuple[int, int], int] = {}
        #: failures of the global constructors (module loads), raised by the factory
        self.load_errors: list[BaseException] = []
        #: calls, kernel launches, arrays copied from the host into device buffers (arguments
        #: staged per call, exe.upload, bind_params) and their bytes
        self.stats = {"calls": 0, "launches": 0, "uploads": 0, "upload_bytes": 0}
        self._stats_lock = threading.Lock()
        self.callbacks: dict[str, object] = {
            "_mlir_memref_to_llvm_alloc": ALLOC_FN(self._alloc),
            "_mlir_memref_to_llvm_free": FREE_FN(self._free),
            "mgpuModuleLoadJIT": _LOAD(self._load_ptx),
            "mgpuModuleLoad": _LOAD_IMAGE(self._load_cubin),
            "mgpuModuleGetFunction": _GET_FUNCTION(self._get_function),
            "mgpuLaunchKernel": _LAUNCH(self._launch),
            "mgpuStreamSynchronize": _SYNC(self._sync),
        }

    def recorder(self) -> CallState:
        st = getattr(self.local, "state", None)
        if st is None:
            st = self.local.state = CallState(self.dev)
        return st

    def count(self, st: CallState, uploads: int, upload_bytes: int) -> None:
        add_stats(self, calls=1, launches=st.launches, uploads=uploads, upload_bytes=upload_bytes)

    def _current(self) -> Optional[CallState]:
        return getattr(self.local, "rec", None)

    def _fail(self, st: Optional[CallState], e: BaseException) -> None:
        if st is None:
            self.load_errors.append(e)
        elif st.error is None:
            st.error = e

    # Callbacks never raise (an exception cannot cross the JIT-compiled frames): the
    # first failure is kept and raised when the host function returns.
    def _alloc(self, nbytes: int) -> int:
        st = self._current()
        if st is None:
            return 0
        try:
            return st.alloc(max(int(nbytes), 4))
        except MemoryError:
            return 0  # the compiled allocation check reports it as a MemoryError
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)
            return 0

    def _free(self, ptr) -> None:
        return None  # the call's buffers go back to the pool when the call ends

    def _load_ptx(self, data, opt_level) -> int:
        return self._load(lambda: ctypes.string_at(data))

    def _load_cubin(self, data, size) -> int:
        return self._load(lambda: ctypes.string_at(data, size))

    def _load(self, read) -> int:
        try:
            image = read()
            name = self._by_image.get(image)
            label = f"@{name}" if name else "(unknown kernel image)"
            module = self.dev.load_image(image, label)
            self.modules[module] = name or "?"
            return module
        except BaseException as e:  # noqa: BLE001
            self._fail(self._current(), e)
            return 0

    def _get_function(self, module, name_ptr) -> int:
        key = (module or 0, name_ptr or 0)
        handle = self._handles.get(key)
        if handle:
            return handle
        st = self._current()
        try:
            entry = ctypes.string_at(name_ptr).decode()
            binary = self.modules.get(module or 0)
            label = f"@{binary}::@{entry}"
            if binary is None:
                raise PtxError(f"kernel {label}: its module was not loaded")
            f = ctypes.c_void_p()
            r = self.dev.drv.cuModuleGetFunction(ctypes.byref(f), module, entry.encode())
            if r != CUDA_SUCCESS:
                raise self.dev.fail(r, f"cuModuleGetFunction({label})")
            self.functions[f.value] = (label, self.kinds.get((binary, entry), []))
            self._handles[key] = f.value
            return f.value
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)
            return 0

    def _launch(self, function, gx, gy, gz, bx, by, bz, smem, stream, params, extra, nparams) -> None:
        st = self._current()
        try:
            if st is None:
                raise CudaError("a kernel launch outside a call")
            if st.error is not None:
                return
            grid, block = (gx, gy, gz), (bx, by, bz)
            if min(grid) <= 0:
                return  # an empty grid: nothing to compute
            found = self.functions.get(function or 0)
            if found is None:
                raise CudaError("a launch of a kernel this runtime did not load")
            label, kinds = found
            self._check_launch(label, kinds, grid, block, params, nparams)
            r = self.dev.drv.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra)
            if r != CUDA_SUCCESS:
                raise self.dev.fail(r, f"kernel {label}: cuLaunchKernel (grid {grid}, block {block})")
            st.launches += 1
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)

    def _check_launch(self, label: str, kinds: list[str], grid, block, params, nparams: int) -> None:
        dev = self.dev
        if nparams != len(kinds):
            raise CudaError(f"kernel {label}: launched with {nparams} parameters, its launch site has {len(kinds)}")
        for what, got, limit in (("grid", grid, dev.max_grid), ("block", block, dev.max_block)):
            if any(g > m for g, m in zip(got, limit)):
                raise CudaError(f"kernel {label}: a {what} of {tuple(got)} exceeds the device's limit "
                                f"{tuple(limit)} ({dev.name})")
        if block[0] * block[1] * block[2] > dev.max_threads:
            raise CudaError(f"kernel {label}: {block} threads per block exceed the device's {dev.max_threads}")
        slots = (ctypes.c_void_p * nparams).from_address(params) if nparams else []
        for i in _dereferenced(kinds):
            value = ctypes.c_uint64.from_address(slots[i]).value
            if dev.lookup(value) is None:
                raise CudaError(f"kernel {label}: parameter #{i} ({value:#x}) is not in this runtime's CUDA "
                                "memory (a host buffer?); launching it would fault the device")

    def _sync(self, stream) -> None:
        st = self._current()
        try:
            if st is None or st.error is not None:
                return
            drv, timeout = self.dev.drv, _timeout_s()
            start = time.monotonic()
            polls = 0
            while True:
                r = drv.cuStreamQuery(stream)
                if r == CUDA_SUCCESS:
                    return
                if r != CUDA_ERROR_NOT_READY:
                    raise self.dev.fail(r, "a kernel failed")
                if time.monotonic() - start > timeout:
                    st.timed_out = True
                    self.dev.broken = (f"a kernel on '{self.dev.name}' did not finish within {timeout} s and may "
                                       "still be running; restart the process")
                    raise TimeoutError(f"the CUDA device did not finish a kernel within {timeout} s "
                                       "(RELAX_MLIR_CUDA_TIMEOUT_S)")
                polls += 1
                if polls > 2000:   # short kernels: spin; long ones: sleep a little
                    time.sleep(min(0.005, 1e-5 * (polls - 2000)))
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)


def _dereferenced(kinds: list[str]) -> list[int]:
    """The pointer parameters a kernel reads or writes: of a memref descriptor's pair
    (allocated, aligned) only the aligned one (the allocated one of a global is a
    placeholder)."""
    out, i = [], 0
    while i < len(kinds):
        if kinds[i] == "ptr" and i + 1 < len(kinds) and kinds[i + 1] == "ptr":
            out.append(i + 1)
            i += 2
        else:
            if kinds[i] == "ptr":
                out.append(i)
            i += 1
    return out


#: engines of dropped cuda executables, kept (see :meth:`CudaExecutable.__del__`): how many
_KEPT_ENGINES = [0]


class CudaExecutable(DeviceExecutable):
    """An Executable whose functions run on a CUDA device (see the module docstring)."""

    function_class = CudaFunction

    @property
    def cuda_stats(self) -> dict:
        """Calls and kernel launches so far."""
        return dict(self._runtime.stats)

    @property
    def device_name(self) -> str:
        return self._runtime.dev.name

    def __del__(self):
        """Unload the kernels' modules (``cuModuleUnload`` with the device's context pushed)
        and keep the host code's engine for the rest of the process (:data:`_KEPT_ENGINES`).

        Destroying the ExecutionEngine of a cuda executable corrupts the heap now and then:
        on an H100 (2026-11-27, ``test_cuda.py`` + ``test_gpu_state.py`` under ``-n 8``) 5-7
        workers per run crashed in a later compile's MLIR calls, whether the engine's global
        destructors unloaded the modules, an ``mgpuModuleUnload`` of ours unloaded them, or
        nothing did; with the engines kept, 0 in 3 runs, and freeing the MLIR module and
        context made no difference. So the fault lies in the JIT's teardown itself (LLVM
        ORC's deinitialize of a module with global constructors), which we cannot fix here.
        The cost: a dropped executable's host code (a few MB at most) stays mapped."""
        res, rt = getattr(self, "_resolver", None), getattr(self, "_runtime", None)
        if res is None or rt is None or getattr(res, "engine", None) is None:
            return
        try:
            with rt.dev.current():
                for module in list(rt.modules):
                    rt.dev.drv.cuModuleUnload(module)
                    del rt.modules[module]
        except BaseException:  # noqa: BLE001 - never raise from a finalizer (a broken context)
            pass
        # never destroyed, not even at interpreter exit (its destructors would unload the
        # modules again): one reference the process never gives back
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(res.engine))
        _KEPT_ENGINES[0] += 1
        res.engine = None

    def export(self, path) -> str:
        raise NotImplementedError("export() of a cuda executable is not supported yet (the PTX would have to "
                                  "travel in the library and the runtime callbacks be linked in)")

    def __repr__(self) -> str:
        return f"<relax_mlir Executable (cuda: {self.device_name}): {', '.join('@' + f for f in self.functions)}>"


def launch_kinds(module) -> dict[tuple[str, str], list[str]]:
    """(gpu.binary name, kernel name) -> the kind of each launch parameter (``"ptr"`` or
    the LLVM type), from the ``gpu.launch_func`` ops of a module lowered to LLVM."""
    from mlir import ir

    out: dict[tuple[str, str], list[str]] = {}

    def visit(op):
        o = op.operation
        if o.name == "gpu.launch_func":
            ref = ir.SymbolRefAttr(o.attributes["kernel"])
            key = (ref.value[0], ref.value[-1])
            out[key] = ["ptr" if str(v.type).startswith("!llvm.ptr") else str(v.type) for v in o.opview.kernelOperands]
            return ir.WalkResult.ADVANCE
        return ir.WalkResult.SKIP if o.name == "gpu.binary" else ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out


def check_module(metadata: dict) -> None:
    """Refuse what the cuda runtime cannot run yet, before looking for a device."""
    from ..errors import CompileError
    from .abi import ExecutableMetadata

    meta = ExecutableMetadata.from_json(metadata)
    if meta.total_workspace():
        raise CompileError("the cuda target cannot run a planned workspace (relax-plan-memory): its arena "
                           "would be host memory the kernels cannot reach")


def cuda_runtime(module, metadata: dict, libraries: list[str], options):
    """The cuda target's runtime factory: the host code JIT-compiled with MLIR's CUDA
    runtime library and this module's callbacks; the kernels' PTX is loaded (JIT-compiled
    by the driver) now, so a rejected kernel is a :class:`PtxError` at compile time."""
    from .executable import runtime_libraries
    from .jit import EngineResolver, build_engine

    check_module(metadata)
    dev = device()
    lib = mlir_cuda_library()
    _bind_mlir_runtime(dev, lib)
    runtime = CudaRuntime(dev, binaries(module, erase=False), launch_kinds(module))
    # the global constructors load the PTX (mgpuModuleLoadJIT) in the device's context
    engine = build_engine(module, options.opt_level, runtime_libraries() + [lib] + list(libraries),
                          runtime.callbacks, initialize_in=dev.current())
    if runtime.load_errors:
        raise runtime.load_errors[0]
    exe = CudaExecutable(EngineResolver(engine, module.context, module), metadata, runtime, libraries=libraries)
    exe._runtime_callbacks = runtime.callbacks  # outlive the engine's code
    return exe


__all__ = ["CudaError", "CudaUnavailable", "PtxError", "CudaExecutable", "Driver", "available", "device",
           "cuda_runtime"]
