"""The CUDA runtime of the ``cuda`` target: PTX kernels, host code JIT-compiled, device memory.

::

    exe = relax_mlir.compile(src, target="cuda")   # PTX kernels + host code (JIT)
    y = exe(x, w)                                  # numpy in, numpy out, any valid shape
    w_dev = exe.upload(w)                          # a DeviceArray: stays in device memory
    y = exe(x, w_dev)                              # ... and is not copied again per call
    exe.cuda_call_stats                            # launches, copies, syncs, allocations, graphs

How a call runs. The graph function and the host halves of the kernels are host code
(the MLIR ExecutionEngine), so shape computation and the run-time checks are exactly
the cpu target's. Upstream's translation of ``gpu.launch_func`` embeds each kernel's PTX
(or cubin), loads it in a global constructor (``mgpuModuleLoadJIT`` / ``mgpuModuleLoad``:
callbacks of this module, so that a kernel the driver rejects is a :class:`PtxError` with
the driver's log, raised by ``compile()``) and launches through ``mgpuModuleGetFunction``,
``mgpuStreamCreate``, ``mgpuLaunchKernel``, ``mgpuStreamSynchronize``, ``mgpuStreamDestroy``.
Those five are defined in the host module itself (:mod:`.cuda_launch`, LLVM dialect): no
Python, no stream creation and no synchronization per launch; the launch checks the grid and
block against the device's limits, calls ``cuLaunchKernel`` on the call's stream and records
the first failure, which is raised as a :class:`CudaError` when the host function returns.
``RELAX_MLIR_CUDA_CHECK=1`` adds a Python check of every pointer parameter (debugging).

Per call (:class:`CallState`): the arguments are copied in (``cuMemcpyHtoDAsync``, one per
argument; DeviceArrays are not copied), the session's stream is captured into a CUDA graph
while the host code runs (``cuStreamBeginCapture``; ``RELAX_MLIR_CUDA_GRAPHS=0``: direct
launches), the graph is launched (the function's executable of the same *topology* updated
in place with ``cuGraphExecUpdate``, else instantiated), the stream is synchronized once
(``cuStreamQuery`` polled, at most ``RELAX_MLIR_CUDA_TIMEOUT_S`` seconds: a ``TimeoutError``,
never a hang), and each result is copied out (``cuMemcpyDtoH``). Why capture and update,
rather than replay one graph: sizes are symbolic (the KV length of a decode step changes
every step), so grids, scalar arguments and buffer addresses change between calls; an update
keeps the instantiated executable and replaces only node parameters. A call exactly like an
earlier one is replayed without its host code (:class:`CudaFunction`).

Memory: plain device memory (``cuMemAlloc``), which the host never dereferences. Buffers
come from a per-device pool in power-of-two size classes
(:class:`~relax_mlir.runtime.gpu_shared.BufferPool`): call buffers through the allocation
hooks of ``finalize-memref-to-llvm{use-generic-functions=true}`` (``_mlir_memref_to_llvm_alloc``,
back to the pool when the call ends), each session's workspace (relax-plan-memory's arenas)
and state buffers. relax-cuda-host makes the host code's own accesses host memory (shape
buffers on the stack) and its copies device copies (state writes; host constants uploaded
once per executable).

Device selection: ``RELAX_MLIR_CUDA_DEVICE`` (an index, or a substring of the device
name), else device 0 (``CUDA_VISIBLE_DEVICES`` applies as usual); one device per process
(the MLIR runtime library keeps one context). Errors are Python exceptions naming the
cause: :class:`CudaUnavailable` (no ``libcuda.so.1``, no device, a bad selector, no
``libmlir_cuda_runtime.so``), :class:`PtxError` (the driver rejects a kernel),
:class:`CudaError` (a failed launch or kernel, with the driver's error name; after a fault
such as an illegal address the CUDA context is unusable and every later call says so),
``MemoryError`` (out of device memory), ``TimeoutError``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
import weakref
from typing import Optional

from .. import config
from .marshal import _as_array
from .cuda_launch import ALLOC_HOOK, ARENA_ALIGN, CHECK_HOOK, COPY, LAUNCH, LIMIT, NSLOTS, SLOTS
from .gpu_shared import ALLOC_FN, BufferPool, DeviceArray, CallHooks, DeviceExecutable, StagedFunction, add_stats, binaries

LIBCUDA = "libcuda.so.1"

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_NOT_READY = 600
#: errors after which the context cannot be used again (a kernel faulted)
STICKY = {700, 702, 714, 715, 716, 717, 718, 719}

_ATTR = {"max_threads": 1, "shared_memory": 8, "warp_size": 10, "block_x": 2, "block_y": 3, "block_z": 4, "grid_x": 5, "grid_y": 6, "grid_z": 7,
         "cc_major": 75, "cc_minor": 76}
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
#: graph executables kept per graph function (one per topology: e.g. a kernel's vector or
#: scalar variant chosen by the sizes)
GRAPHS_PER_FUNCTION = 8


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


# -- the device ---------------------------------------------------------------------------

class DeviceBuffer:
    """One ``cuMemAlloc`` allocation (kept for the life of the process, pooled)."""

    __slots__ = ("address", "size")

    def __init__(self, address: int, size: int):
        self.address, self.size = address, size


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
    """One call of a cuda executable (one at a time per executable: the compiled launch path's
    state block is the executable's): its stream, buffers, pending graph and first failure.

    ``begin(session)`` takes the executable's call lock, the session's stream and clears the
    state block; arguments are staged with asynchronous copies on that stream; ``start`` begins
    capturing the stream (graphs on); the host function then launches and copies through the
    compiled path; ``stop`` ends the capture and reads the state block; ``submit`` launches the
    graph (updated in place when its topology is unchanged) and synchronizes the stream once;
    results are copied out; ``finish`` returns the buffers to the pool."""

    def __init__(self, rt: "CudaRuntime"):
        self.rt, self.dev = rt, rt.dev
        self.buffers: list[DeviceBuffer] = []
        self.error: Optional[BaseException] = None
        self.launches = 0
        self.timed_out = False
        self.stream = 0
        self.res: Optional[_SessionResources] = None
        self.counts: dict[str, int] = {}
        self._ctx = None
        self._graph = None
        self._name = ""
        self._capturing = False
        self._locked = False
        self.topology = 0

    def begin(self, session=None) -> None:
        if self.dev.broken:
            raise CudaError(self.dev.broken)
        self.rt.call_lock.acquire()
        self._locked = True
        self.error, self.launches, self.timed_out, self._graph = None, 0, False, None
        self.counts = dict.fromkeys(CALL_COUNTS, 0)
        self.staged, self.views, self.addresses, self.exec_key = [], [], [], None
        self._created = self.dev.created
        try:      # the caller runs finish() only once begin succeeded: on failure, undo here
            ctx = self.dev.current()
            ctx.__enter__()
            self._ctx = ctx
            self.res = self.rt.resources(session)
        except BaseException:
            self.finish()
            raise
        self.stream = self.res.stream
        slots = self.rt.slots
        for k in range(len(slots)):
            if k < SLOTS["max_gx"] or k > SLOTS["check"]:
                slots[k] = 0
        slots[SLOTS["stream"]] = self.stream
        if self.res.arena is not None:
            slots[SLOTS["arena"]], slots[SLOTS["arena_size"]] = self.res.arena.address, self.res.arena.size
        slots[SLOTS["check"]] = 1 if config.cuda_check_launches() else 0

    def alloc(self, nbytes: int) -> int:
        """A call buffer: from the session's arena as the compiled allocation does (staged
        arguments), else a pool buffer (what did not fit; also a fallback of the compiled one)."""
        address = self._alloc(nbytes)
        self.staged.append(address)
        return address

    def _alloc(self, nbytes: int) -> int:
        slots = self.rt.slots
        size = -(-max(int(nbytes), 1) // ARENA_ALIGN) * ARENA_ALIGN
        slots[SLOTS["arena_need"]] += size
        top = slots[SLOTS["arena_top"]]
        if slots[SLOTS["arena"]] and top + size <= slots[SLOTS["arena_size"]]:
            slots[SLOTS["arena_top"]] = top + size
            return slots[SLOTS["arena"]] + top
        return self.pool_alloc(nbytes)

    def pool_alloc(self, nbytes: int) -> int:
        buf = self.dev.alloc(nbytes)
        self.buffers.append(buf)
        self.counts["buffers"] += 1
        return buf.address

    def grow_arena(self) -> None:
        """The session's arena made as large as this call needed (the next call of the same
        sizes allocates nothing)."""
        try:
            self.res.reserve(self.rt.slots[SLOTS["arena_need"]])
        except MemoryError:
            pass    # the next call takes pool buffers again

    def write(self, address: int, host: int, nbytes: int) -> None:
        """An argument to the device: an asynchronous copy on the call's stream (the driver has
        read the pageable source when it returns)."""
        if nbytes > 0:
            r = self.dev.drv.cuMemcpyHtoDAsync(address, host, nbytes, self.stream)
            if r != CUDA_SUCCESS:
                raise self.dev.fail(r, f"cuMemcpyHtoDAsync({nbytes} bytes)")
            self.counts["copies_in"] += 1

    def start(self, name: str) -> None:
        """Before the host function: capture the stream into a graph (graphs on)."""
        self._name = name
        if self.dev.graphs and config.cuda_graphs():
            r = self.dev.drv.cuStreamBeginCapture(self.stream, _CAPTURE_RELAXED)
            if r != CUDA_SUCCESS:
                raise self.dev.fail(r, "cuStreamBeginCapture")
            self._capturing = True

    def stop(self) -> None:
        """After the host function: end the capture, raise what the compiled path recorded."""
        slots = self.rt.slots
        self.launches = slots[SLOTS["launches"]]
        self.topology = slots[SLOTS["topology"]]
        self.counts["device_copies"] += slots[SLOTS["copies"]]
        # a failed launch first: it is what invalidates a capture on a real driver
        if slots[SLOTS["error"]] and self.error is None:
            self.error = self.rt.recorded_error(slots)
        if self._capturing:
            self._capturing = False
            g = ctypes.c_void_p()
            r = self.dev.drv.cuStreamEndCapture(self.stream, ctypes.byref(g))
            if r != CUDA_SUCCESS and self.error is None:
                self.error = self.dev.fail(r, "cuStreamEndCapture")
            self._graph = g.value if r == CUDA_SUCCESS else None

    def reading(self, regions) -> list[int]:
        self.addresses = [address for address, _ in regions]
        return self.addresses

    def replayable(self) -> bool:
        """Whether the call that just ended can be replayed (see :class:`CudaFunction`)."""
        return (self.exec_key is not None and self.error is None and self.counts.get("buffers", 1) == 0
                and self.counts.get("graph_launches") == 1 and self.res is not None and self.res.arena is not None)

    def replay_entry(self) -> "_Replay":
        e = _Replay()
        e.res, e.arena, e.exec_key, e.version = self.res, self.res.arena, self.exec_key, self.rt.versions[self.exec_key]
        e.staged, e.views, e.addresses = list(self.staged), list(self.views), list(self.addresses)
        e.launches, e.copies = self.launches, self.counts["device_copies"]
        return e

    def replay(self, exec_: int, entry: "_Replay") -> None:
        """Launch a recorded call's graph executable as it is, then the one synchronization."""
        r = self.dev.drv.cuGraphLaunch(exec_, self.stream)
        if r != CUDA_SUCCESS:
            raise self.dev.fail(r, f"cuGraphLaunch (a replay of @{entry.exec_key[0]})")
        self.launches = entry.launches
        self.counts["device_copies"] = entry.copies
        self.counts["graph_launches"] = self.counts["replays"] = 1
        self._sync()

    def read(self, host: int, address: int, nbytes: int) -> None:
        if self.dev.lookup(address) is None:     # not device memory: a constant of the host code
            ctypes.memmove(host, address, nbytes)
        else:
            self.dev.to_host(host, address, nbytes)
            self.counts["copies_out"] += 1

    def submit(self) -> None:
        """Launch the captured graph, then the call's one synchronization."""
        if self._graph:
            graph, self._graph = self._graph, None
            try:
                if self.launches or self.counts["device_copies"]:
                    self.rt.launch_graph(self, graph)
            finally:
                self.dev.drv.cuGraphDestroy(graph)
        self._sync()

    def _sync(self) -> None:
        """Poll the stream until its work is done, at most RELAX_MLIR_CUDA_TIMEOUT_S seconds."""
        drv, timeout = self.dev.drv, _timeout_s()
        self.counts["syncs"] += 1
        start = time.monotonic()
        polls = 0
        while True:
            r = drv.cuStreamQuery(self.stream)
            if r == CUDA_SUCCESS:
                return
            if r != CUDA_ERROR_NOT_READY:
                raise self.dev.fail(r, "a kernel failed")
            if time.monotonic() - start > timeout:
                self.timed_out = True
                self.dev.broken = (f"a kernel on '{self.dev.name}' did not finish within {timeout} s and may "
                                   "still be running; restart the process")
                raise TimeoutError(f"the CUDA device did not finish a kernel within {timeout} s "
                                   "(RELAX_MLIR_CUDA_TIMEOUT_S)")
            polls += 1
            if polls > 2000:   # short kernels: spin; long ones: sleep a little
                time.sleep(min(0.005, 1e-5 * (polls - 2000)))

    def abandon(self) -> None:
        """After every call (a failed one included): stop capturing, drop a graph that was not
        launched (the staging copies of pageable memory are complete when they return)."""
        if self._capturing:
            self._capturing = False
            g = ctypes.c_void_p()
            if self.dev.drv.cuStreamEndCapture(self.stream, ctypes.byref(g)) == CUDA_SUCCESS and g.value:
                self.dev.drv.cuGraphDestroy(g.value)
        if self._graph:
            self.dev.drv.cuGraphDestroy(self._graph)
            self._graph = None

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
        if self._locked:
            self._locked = False
            self.rt.call_lock.release()


class _SessionResources:
    """What one session's calls use on the device: a stream and the call arena."""

    def __init__(self, dev: CudaDevice):
        self.dev = dev
        self.stream = dev.new_stream()
        self.arena: Optional[DeviceBuffer] = None

    def reserve(self, nbytes: int) -> None:
        """An arena of at least ``nbytes`` (a pool buffer: sizes in powers of two)."""
        if nbytes and (self.arena is None or self.arena.size < nbytes):
            old, self.arena = self.arena, None
            if old is not None:
                self.dev.release(old)
            self.arena = self.dev.alloc(nbytes)

    def close(self) -> None:
        if self.arena is not None:
            self.dev.release(self.arena)
            self.arena = None
        self.dev.destroy_stream(self.stream)


#: what a call counts (added to ``exe.cuda_stats``; ``exe.cuda_call_stats`` is the last call's)
CALL_COUNTS = ("copies_in", "copies_out", "device_copies", "syncs", "allocations", "buffers", "graph_launches",
               "graph_builds", "graph_updates", "replays")


class _Replay:
    """A call that can run again without its host code: its graph executable (at the version
    its capture left it), where its arguments were staged and its results are."""

    __slots__ = ("res", "arena", "exec_key", "version", "staged", "views", "addresses", "launches", "copies")


#: replayable calls kept per executable
REPLAYS = 64


class CudaFunction(StagedFunction):
    """A graph function of a cuda executable: arguments staged into device memory, the
    device work launched from the compiled host code (a CUDA graph per call), one
    synchronization, results copied back.

    A call exactly like an earlier one (the same session, argument shapes and dtypes, the
    same DeviceArrays) whose graph executable no other call has updated since, and whose
    buffers all came from the session's arena, is *replayed*: the host code does not run
    (it would compute the same sizes, launches and addresses: the host code reads no device
    data and the arena hands out the same addresses in the same order); the arguments are
    copied to the addresses they had, the executable is launched, the results read where
    they were."""

    target_name = "cuda"

    def _call(self, session, args):
        rt = self.exe._runtime
        if len(args) != self.nparams or not (rt.dev.graphs and config.cuda_graphs()):
            return super()._call(session, args)
        arrays = [a if isinstance(a, DeviceArray) else _as_array(a) for a in args]
        key = (self.name, id(session), tuple((a.buffer.address, a.shape, a.dtype.str) if isinstance(a, DeviceArray)
                                             else (a.shape, a.dtype.str) for a in arrays))
        entry = rt.replays.get(key)
        if entry is not None:
            out = self._replay(session, arrays, entry)
            if out is not None:
                return out[0] if len(out) == 1 else tuple(out)
            rt.replays.pop(key, None)
        out = super()._call(session, arrays)
        rec = rt.recorder()
        if rec.replayable():
            if len(rt.replays) >= REPLAYS:
                rt.replays.pop(next(iter(rt.replays)))
            rt.replays[key] = rec.replay_entry()
        return out

    def _result_views(self, res) -> list[tuple]:
        views = super()._result_views(res)
        self.exe._runtime.recorder().views = views
        return views

    def _replay(self, session, arrays, entry: "_Replay"):
        """The outputs of replaying ``entry``, or None when it no longer applies."""
        self.checker.check(arrays)
        if not session._busy.acquire(False):
            raise self._busy_error()
        rt = self.exe._runtime
        try:
            rec = rt.recorder()
            rec.begin(session)
            try:
                execs = rt.graphs.get(self.name, {})
                if (rec.res is not entry.res or rec.res.arena is not entry.arena
                        or execs.get(entry.exec_key) is None or rt.versions.get(entry.exec_key) != entry.version):
                    return None
                staged = [a for a in arrays if not isinstance(a, DeviceArray)]
                for a, address in zip(staged, entry.staged):
                    rec.write(address, a.ctypes.data, a.nbytes)
                rec.replay(execs[entry.exec_key], entry)
                outs = self._read(rec, entry.views, entry.addresses)
                rt.count(rec, len(staged), sum(a.nbytes for a in staged))
                return outs
            finally:
                rec.abandon()
                rec.finish()
        finally:
            session._busy.release()


_LOAD = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_LOAD_IMAGE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_CHECK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                          ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)


class CudaRuntime:
    """What one executable's host code calls back into Python (module loads at build time,
    allocations, the debugging launch check), its state block, graphs and statistics."""

    def __init__(self, dev: CudaDevice, ptx: dict[str, bytes], kinds: dict[tuple[str, str], list[str]]):
        self.dev = dev
        self.local = threading.local()
        self.kinds = kinds
        self._by_image = {code if code.startswith(_ELF) else code.rstrip(b"\0"): name for name, code in ptx.items()}
        self.modules: dict[int, str] = {}                         # CUmodule -> gpu.binary name
        self.functions: dict[int, tuple[str, list[str]]] = {}     # CUfunction -> (label, parameter kinds)
        #: failures of the global constructors (module loads), raised by the factory
        self.load_errors: list[BaseException] = []
        #: calls, kernel launches, arrays copied from the host into device buffers (arguments
        #: staged per call, exe.upload, bind_params) and their bytes, and CALL_COUNTS
        self.stats = {"calls": 0, "launches": 0, "uploads": 0, "upload_bytes": 0, **dict.fromkeys(CALL_COUNTS, 0)}
        #: the counts of the last call
        self.last: dict[str, int] = {}
        self._stats_lock = threading.Lock()
        #: one call at a time per executable (the state block is the executable's)
        self.call_lock = threading.RLock()
        #: the state block of the compiled launch path (set once the engine is built)
        self.slots = (ctypes.c_int64 * NSLOTS)()
        #: graph function -> {(function, topology): graph executable}, least recently used first
        self.graphs: dict[str, dict[tuple[str, int], int]] = {}
        self.constants: list = []
        #: (function, topology) -> how many times its executable was made or updated
        self.versions: dict[tuple[str, int], int] = {}
        #: call key -> a call that can be replayed (CudaFunction)
        self.replays: dict[tuple, _Replay] = {}
        self._default: Optional[_SessionResources] = None
        self.callbacks: dict[str, object] = {
            ALLOC_HOOK: ALLOC_FN(self._alloc),
            "mgpuModuleLoadJIT": _LOAD(self._load_ptx),
            "mgpuModuleLoad": _LOAD_IMAGE(self._load_cubin),
            CHECK_HOOK: _CHECK(self._check_hook),
        }

    def recorder(self) -> CallState:
        st = getattr(self.local, "state", None)
        if st is None:
            st = self.local.state = CallState(self)
        return st

    def resources(self, session) -> "_SessionResources":
        """The session's stream and call arena (made on its first call, released with it)."""
        if session is None:
            if self._default is None:
                self._default = _SessionResources(self.dev)
            return self._default
        res = getattr(session, "_cuda_resources", None)
        if res is None:
            res = session._cuda_resources = _SessionResources(self.dev)
            weakref.finalize(session, res.close)
        return res

    def count(self, st: CallState, uploads: int, upload_bytes: int) -> None:
        st.grow_arena()
        st.counts["allocations"] = self.dev.created - st._created
        self.last = {"launches": st.launches, **st.counts}
        add_stats(self, calls=1, launches=st.launches, uploads=uploads, upload_bytes=upload_bytes, **st.counts)

    def bind(self, engine) -> None:
        """After the engine is built: the state block, the device limits, the kernels' handles
        (for messages) and the host constants uploaded (their slots filled)."""
        from .cuda_launch import STATE
        addr = engine.raw_lookup(STATE[len("_mlir_"):])
        if not addr:
            raise CudaError(f"the compiled host code has no {STATE}")
        self.slots = (ctypes.c_int64 * NSLOTS).from_address(addr)
        dev = self.dev
        for k, v in zip(("max_gx", "max_gy", "max_gz", "max_bx", "max_by", "max_bz", "max_threads"),
                        (*dev.max_grid, *dev.max_block, dev.max_threads)):
            self.slots[SLOTS[k]] = v
        with dev.current():
            for module, binary in self.modules.items():
                for (b, entry), kinds in self.kinds.items():
                    if b != binary:
                        continue
                    f = ctypes.c_void_p()
                    if dev.drv.cuModuleGetFunction(ctypes.byref(f), module, entry.encode()) == CUDA_SUCCESS:
                        self.functions[f.value] = (f"@{binary}::@{entry}", kinds)

    def upload_constants(self, engine, constants: list[tuple[int, int]]) -> None:
        """Each host constant the host code copies (relax-cuda-host) to the device once; its
        slot holds the device address."""
        from .cuda_launch import CONST_PREFIX, SLOT_PREFIX
        for k, nbytes in constants:
            host = engine.raw_lookup(f"{CONST_PREFIX}{k}"[len("_mlir_"):])
            slot = engine.raw_lookup(f"{SLOT_PREFIX}{k}"[len("_mlir_"):])
            if not host or not slot:
                raise CudaError(f"the compiled host code has no constant #{k}")
            buf = self.dev.alloc(max(nbytes, 4))
            self.dev.upload(buf, host, nbytes)
            self.constants.append(buf)
            ctypes.c_int64.from_address(slot).value = buf.address

    def label(self, function: int) -> str:
        found = self.functions.get(function or 0)
        return found[0] if found else f"(kernel handle {function:#x})"

    def recorded_error(self, slots) -> BaseException:
        """The failure the compiled launch path recorded in the state block."""
        kind, code = slots[SLOTS["error"]], slots[SLOTS["code"]]
        grid = tuple(slots[SLOTS[k]] for k in ("gx", "gy", "gz"))
        block = tuple(slots[SLOTS[k]] for k in ("bx", "by", "bz"))
        label = self.label(slots[SLOTS["function"]])
        if kind == LIMIT:
            return self._limit_error(label, grid, block)
        if kind == LAUNCH:
            return self.dev.fail(code, f"kernel {label}: cuLaunchKernel (grid {grid}, block {block})")
        if kind == COPY:
            return self.dev.fail(code, f"cuMemcpyDtoDAsync({grid[0]} bytes, {grid[1]:#x} -> {grid[2]:#x}) of the "
                                       "host code")
        return self.dev.fail(code, "cuModuleGetFunction")

    def _limit_error(self, label: str, grid, block) -> CudaError:
        dev = self.dev
        for what, got, limit in (("grid", grid, dev.max_grid), ("block", block, dev.max_block)):
            if any(g > m for g, m in zip(got, limit)):
                return CudaError(f"kernel {label}: a {what} of {tuple(got)} exceeds the device's limit "
                                 f"{tuple(limit)} ({dev.name})")
        return CudaError(f"kernel {label}: {block} threads per block exceed the device's {dev.max_threads}")

    def launch_graph(self, st: CallState, graph: int) -> None:
        """Launch a call's captured graph. Its executable is the one of the same graph function
        and topology (the kernels and copies issued, in order, hashed by the compiled path):
        updated in place (``cuGraphExecUpdate``: only sizes, grids and pointers differ), else
        instantiated (the first call of a topology, or an update the driver refused)."""
        drv = self.dev.drv
        key = (st._name, st.topology)
        execs = self.graphs.setdefault(st._name, {})
        chosen = execs.pop(key, None)
        if chosen is not None:
            info = (ctypes.c_int64 * 4)()
            if drv.cuGraphExecUpdate(chosen, graph, info) == CUDA_SUCCESS:
                st.counts["graph_updates"] += 1
            else:
                drv.cuGraphExecDestroy(chosen)
                chosen = None
        if chosen is None:
            e = ctypes.c_void_p()
            r = drv.cuGraphInstantiateWithFlags(ctypes.byref(e), graph, 0)
            if r != CUDA_SUCCESS:
                raise self.dev.fail(r, f"cuGraphInstantiate (@{st._name})")
            chosen = e.value
            st.counts["graph_builds"] += 1
            if len(execs) >= GRAPHS_PER_FUNCTION:      # the least recently used one goes
                drv.cuGraphExecDestroy(execs.pop(next(iter(execs))))
        execs[key] = chosen
        self.versions[key] = self.versions.get(key, 0) + 1
        st.exec_key = key
        r = drv.cuGraphLaunch(chosen, st.stream)
        if r != CUDA_SUCCESS:
            raise self.dev.fail(r, f"cuGraphLaunch (@{st._name})")
        st.counts["graph_launches"] += 1

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
            return st.pool_alloc(max(int(nbytes), 4))
        except MemoryError:
            return 0  # the compiled allocation check reports it as a MemoryError
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)
            return 0

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

    def _check_hook(self, function, gx, gy, gz, bx, by, bz, params, nparams) -> int:
        """RELAX_MLIR_CUDA_CHECK=1: a launch's parameters checked before it is issued."""
        st = self._current()
        try:
            found = self.functions.get(function or 0)
            if found is None:
                raise CudaError("a launch of a kernel this runtime did not load")
            label, kinds = found
            if nparams != len(kinds):
                raise CudaError(f"kernel {label}: launched with {nparams} parameters, its launch site has "
                                f"{len(kinds)}")
            slots = (ctypes.c_void_p * nparams).from_address(params) if nparams else []
            for i in _dereferenced(kinds):
                value = ctypes.c_uint64.from_address(slots[i]).value
                if self.dev.lookup(value) is None:
                    raise CudaError(f"kernel {label}: parameter #{i} ({value:#x}) is not in this runtime's CUDA "
                                    "memory (a host buffer?); launching it would fault the device")
            return 0
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)
            return 1


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
        """Counts so far: ``calls``, kernel ``launches`` (direct or as graph nodes), ``uploads`` /
        ``upload_bytes`` (arrays copied host to device: staged arguments, exe.upload,
        bind_params), per call ``copies_in`` (argument copies), ``copies_out`` (result copies),
        ``device_copies`` (device-to-device copies of the host code: state writes, constants),
        ``syncs`` (stream synchronizations), ``allocations`` (``cuMemAlloc``: the pool had no
        free buffer, the arena grown), ``buffers`` (call buffers from the pool: what did not fit the
        session's arena), ``graph_launches``, ``graph_builds``
        (instantiations), ``graph_updates`` (executables updated in place), ``replays`` (calls
        replayed without running their host code)."""
        return dict(self._runtime.stats)

    @property
    def cuda_call_stats(self) -> dict:
        """The counts of the last call (the per-call keys of :attr:`cuda_stats`)."""
        return dict(self._runtime.last)

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


def cuda_runtime(module, metadata: dict, libraries: list[str], options):
    """The cuda target's runtime factory: the host code JIT-compiled with MLIR's CUDA
    runtime library and this module's callbacks; the kernels' PTX is loaded (JIT-compiled
    by the driver) now, so a rejected kernel is a :class:`PtxError` at compile time."""
    from .executable import runtime_libraries
    from .jit import EngineResolver, build_engine

    from mlir import ir
    from .cuda_launch import CONSTANTS_ATTR
    from .cuda_launch import DRIVER_SYMBOLS, link

    dev = device()
    lib = mlir_cuda_library()
    _bind_mlir_runtime(dev, lib)
    runtime = CudaRuntime(dev, binaries(module, erase=False), launch_kinds(module))
    attrs = module.operation.attributes
    constants = [tuple(ir.IntegerAttr(x).value for x in ir.ArrayAttr(c))
                 for c in ir.ArrayAttr(attrs[CONSTANTS_ATTR])] if CONSTANTS_ATTR in attrs else []
    link(module)     # the launch path, compiled with the host code
    symbols = dict(runtime.callbacks)
    symbols.update({name: ctypes.c_void_p(dev.drv.address(fn)) for name, fn in DRIVER_SYMBOLS.items()})
    # the global constructors load the PTX (mgpuModuleLoadJIT) in the device's context
    engine = build_engine(module, options.opt_level, runtime_libraries() + [lib] + list(libraries),
                          symbols, initialize_in=dev.current())
    if runtime.load_errors:
        raise runtime.load_errors[0]
    runtime.bind(engine)
    runtime.upload_constants(engine, constants)
    exe = CudaExecutable(EngineResolver(engine, module.context, module), metadata, runtime, libraries=libraries)
    exe._runtime_callbacks = runtime.callbacks  # outlive the engine's code
    return exe


__all__ = ["CudaError", "CudaUnavailable", "PtxError", "CudaExecutable", "Driver", "available", "device",
           "cuda_runtime"]
