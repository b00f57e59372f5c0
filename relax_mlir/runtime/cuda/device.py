"""The CUDA device: selection (``RELAX_MLIR_CUDA_DEVICE``), its primary context, limits,
streams, synchronous copies and kernel images; the device is the pool of its buffers
(:mod:`.memory`). One per selector per process (:func:`device`), and MLIR's CUDA runtime
library bound to it (:func:`_bind_mlir_runtime`)."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Optional

from ..gpu_shared import BufferPool, DeviceCache
from .driver import (_CU_JIT_ERROR_LOG_BUFFER, _CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, _ATTR, _ELF, _LOG_BYTES,
                     _STREAM_NON_BLOCKING, CUDA_ERROR_OUT_OF_MEMORY, CUDA_SUCCESS, STICKY, CudaError,
                     CudaUnavailable, Driver, PtxError, mlir_cuda_library)
from .memory import DeviceBuffer


class CudaDevice(BufferPool):
    """One CUDA device: its primary context, limits and device-memory buffer pool."""

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
        self.compute_capability = (attrs["cc_major"], attrs["cc_minor"])
        self.max_grid = (attrs["grid_x"], attrs["grid_y"], attrs["grid_z"])
        self.max_block = (attrs["block_x"], attrs["block_y"], attrs["block_z"])
        self.max_threads = attrs["max_threads"]
        #: shared memory per block (bytes, without opting in to more) and the warp width
        self.shared_memory, self.warp_size = attrs["shared_memory"], attrs["warp_size"]
        #: streaming multiprocessors (what flash-decoding's split count is sized from)
        self.multiprocessors = attrs["multiprocessors"] or None
        self.max_alloc = drv.out("cuDeviceTotalMem", ctypes.c_size_t, self.handle)
        self.context = drv.out("cuDevicePrimaryCtxRetain", ctypes.c_void_p, self.handle, exc=CudaUnavailable)
        #: whether the driver has the graph entry points (CUDA 12); calls use them unless
        #: RELAX_MLIR_CUDA_GRAPHS=0
        self.graphs = drv.cuGraphExecUpdate is not None and drv.cuStreamBeginCapture is not None
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

    def _new_buffer(self, size: int) -> DeviceBuffer:
        ptr = ctypes.c_uint64()
        with self.current():
            r = self.drv.cuMemAlloc(ctypes.byref(ptr), size)
            if r == CUDA_ERROR_OUT_OF_MEMORY and self.trim(self._free_buffer):
                r = self.drv.cuMemAlloc(ctypes.byref(ptr), size)
        if r == CUDA_ERROR_OUT_OF_MEMORY:
            raise MemoryError(f"the CUDA device cannot allocate {size} bytes ({self.name}): "
                              f"{self.drv.describe(r)}")
        self.drv.check(r, f"cuMemAlloc({size})")
        return DeviceBuffer(ptr.value, size)

    def new_stream(self) -> int:
        """A stream of its own (non-blocking: it does not wait for the legacy stream)."""
        s = ctypes.c_void_p()
        with self.current():
            self.drv.check(self.drv.cuStreamCreate(ctypes.byref(s), _STREAM_NON_BLOCKING), "cuStreamCreate")
        return s.value

    def destroy_stream(self, stream: int) -> None:
        try:
            with self.current():
                self.drv.cuStreamDestroy(stream)
        except BaseException:  # noqa: BLE001 - from finalizers
            pass

    # Copies between numpy and device memory (synchronous: no call is running on the device
    # when these run).
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

    def _free_buffer(self, buf: DeviceBuffer) -> None:
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


#: ``device()``: the process's device for ``RELAX_MLIR_CUDA_DEVICE`` (created once).
device = DeviceCache("cuda", CudaDevice)


def available() -> tuple[bool, str]:
    """(True, device name) when a CUDA device can be used, else (False, why)."""
    try:
        dev = device()
        mlir_cuda_library()
        return True, dev.name
    except CudaError as e:
        return False, str(e)


_BOUND: dict[str, object] = {}
_BOUND_LOCK = threading.Lock()


def _bind_mlir_runtime(dev: CudaDevice, path: str) -> None:
    """Pin the MLIR runtime library's context to ``dev``: its device ordinal is a
    thread-local read once, by the first call that needs the context, so set it and make
    that first call here (a stream created and destroyed). Once per process."""
    with _BOUND_LOCK:
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
