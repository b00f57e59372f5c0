"""What the GPU runtimes (:mod:`.vulkan`, :mod:`.cuda`) share.

Both run the host code (graph functions, the host halves of kernels) on the CPU through
the MLIR ExecutionEngine and keep every buffer a kernel touches in device buffers of a
pool (Vulkan: persistently mapped host-visible buffers; CUDA: device memory the host never
dereferences, moved by driver copies). So the calling side is the same:

* :class:`BufferPool`: a device's buffers in power-of-two size classes, reused across
  calls, and the map from an address back to its buffer (kernel arguments arrive as
  addresses);
* :class:`DeviceArray`: an array kept in a device buffer across calls (``exe.upload``,
  the arrays bound by ``bind_params``);
* :class:`StagedFunction`: one call = copy the arguments into device buffers, run the
  host function while the runtime's callbacks record or launch the kernels, then read
  the results back with a host copy. The runtime provides a per-thread *call state*
  (``rt.recorder()``) with ``begin(session) / alloc(n) / submit() / abandon() / finish()`` and
  ``error`` (the first failure of a callback: exceptions cannot cross JIT-compiled
  frames, so callbacks never raise; it is raised once the host function returns), and
  ``count(rec, uploads, upload_bytes)``, which adds a call to its stats;
* :class:`DeviceSession`: a session whose state buffers (``relax.state``) are device
  buffers, allocated once per session; ``sess.state[name]`` reads one back as numpy;
* :class:`DeviceExecutable`: ``exe.upload(w)``, the function and session classes.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import threading
import weakref
from collections.abc import Mapping

import numpy as np

from .. import config
from .executable import Executable, Function, Session, _as_array, _c_contiguous, descriptor_class

_MIN_BUFFER = 256

#: the allocation functions of ``finalize-memref-to-llvm{use-generic-functions=true}``
ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)
FREE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class BufferPool:
    """Mixin of a device: ``alloc`` / ``release`` / ``find`` over its buffers.

    The device sets ``name``, ``lock``, ``max_alloc`` (bytes), ``pool_kind`` (for
    messages), ``pool_error`` (the exception class of a foreign address), calls
    :meth:`_init_pool` and implements ``_new_buffer(size)`` (an object with ``address``
    and ``size``; raises ``MemoryError`` when the device cannot allocate it)."""

    pool_kind = "device"
    pool_error: type = RuntimeError

    def _init_pool(self) -> None:
        self._free: dict[int, list] = {}
        self._live: dict[int, object] = {}
        self._starts: list[int] = []
        #: buffers made (``_new_buffer``) so far: a pool miss each
        self.created = 0

    def _new_buffer(self, size: int):
        raise NotImplementedError

    def alloc(self, nbytes: int):
        """A buffer of at least ``nbytes`` (sizes rounded to powers of two, reused)."""
        if nbytes > self.max_alloc:
            raise MemoryError(f"{nbytes} bytes exceed the {self.pool_kind} device's buffer limit of "
                              f"{self.max_alloc} bytes ({self.name})")
        size = max(_MIN_BUFFER, 1 << max(0, int(nbytes) - 1).bit_length())
        size = min(size, max(self.max_alloc, nbytes))
        with self.lock:
            free = self._free.get(size)
            if free:
                return free.pop()
        buf = self._new_buffer(size)
        with self.lock:
            self.created += 1
            self._live[buf.address] = buf
            bisect.insort(self._starts, buf.address)
        return buf

    def release(self, buf) -> None:
        with self.lock:
            self._free.setdefault(buf.size, []).append(buf)

    def trim(self, destroy) -> int:
        """Destroy every pooled buffer no call holds (``destroy(buf)``); returns how many:
        a device that runs out of memory gives its cached size classes back first."""
        with self.lock:
            free = [b for bufs in self._free.values() for b in bufs]
            self._free = {}
            for b in free:
                del self._live[b.address]
            dead = {b.address for b in free}
            self._starts = [a for a in self._starts if a not in dead]
        for b in free:
            destroy(b)
        return len(free)

    def lookup(self, address: int):
        """(buffer, offset) of ``address``, or None when no buffer of the pool holds it."""
        with self.lock:
            k = bisect.bisect_right(self._starts, address) - 1
            if k >= 0:
                buf = self._live[self._starts[k]]
                if address < buf.address + buf.size:
                    return buf, address - buf.address
        return None

    def upload(self, buf, host: int, nbytes: int) -> None:
        """Copy ``nbytes`` from host memory into ``buf`` (exe.upload)."""
        ctypes.memmove(buf.address, host, nbytes)

    def download(self, host: int, buf, nbytes: int) -> None:
        """Copy ``nbytes`` of ``buf`` to host memory (DeviceArray.numpy)."""
        ctypes.memmove(host, buf.address, nbytes)

    def zero(self, buf, nbytes: int) -> None:
        """Zero the first ``nbytes`` of ``buf`` (state buffers): an upload of zeros unless
        the device fills on its own (the staged Vulkan path: vkCmdFillBuffer)."""
        z = np.zeros(nbytes, np.uint8)
        self.upload(buf, z.ctypes.data, nbytes)

    def find(self, address: int):
        """The buffer holding ``address`` and the offset in it."""
        found = self.lookup(address)
        if found is None:
            raise self.pool_error(f"address {address:#x} is not in a {self.pool_kind} buffer of this runtime")
        return found


class CallHooks:
    """How a runtime's per-call state moves data between numpy and its buffers (host copies
    by default: the buffers are host-addressable), and what it does around the host
    function (``start(name)`` before, ``stop()`` after it: nothing by default)."""

    def start(self, name: str) -> None:
        """Right before the host function of graph function ``name`` runs."""

    def stop(self) -> None:
        """Right after the host function returned (also when a callback failed)."""

    def write(self, address: int, host: int, nbytes: int) -> None:
        """Copy an argument from host memory ``host`` into the buffer at ``address``."""
        ctypes.memmove(address, host, nbytes)

    def reading(self, regions) -> list[int]:
        """Called before ``submit`` with the results' ``(address, nbytes)`` regions: the
        addresses to :meth:`read` them from after the submit (default: the same)."""
        return [address for address, _ in regions]

    def read(self, host: int, address: int, nbytes: int) -> None:
        """Copy a result from ``address`` (as returned by :meth:`reading`) to ``host``."""
        ctypes.memmove(host, address, nbytes)


class DeferredFailure(Exception):
    """A deferred check failed (status, details): the function raises its check's error."""


class DeferredChecks:
    """Mixin of a call state: ``relax.check_indices`` checked after a synchronization
    (``relax_gpu_check_indices``, see relax-lower-host's ``defer_check_indices``).

    ``defer(...)`` snapshots the indices with a device copy recorded in program order (a
    later kernel may reuse their buffer) and keeps the details the host passed;
    ``regions()`` are the copies to read after the synchronization, ``failure(addresses)``
    the (status, details) of the first check that fails, or None. The call state provides
    ``alloc(nbytes)`` and ``device_copy(src, dst, nbytes)``."""

    def reset_checks(self) -> None:
        self.deferred: list[tuple] = []

    def defer(self, check_id: int, src: int, count: int, code: int, size: int, details: int, ndetails: int,
              slot: int) -> None:
        det = list((ctypes.c_int64 * ndetails).from_address(details)) if ndetails else []
        dtype = np.dtype(f"{'u' if code & 1 else 'i'}{max(1, (code >> 1) // 8)}")
        if count <= 0:
            return          # no index: nothing to check (as the cpu target's min/max loop)
        nbytes = count * dtype.itemsize
        dst = self.alloc(max(nbytes, 4))
        self.device_copy(src, dst, nbytes)
        self.deferred.append((check_id, dst, count, dtype, size, det, slot))

    def regions(self) -> list[tuple[int, int]]:
        return [(dst, count * dtype.itemsize) for _, dst, count, dtype, _, _, _ in self.deferred]

    def failure(self, addresses: list[int]) -> "tuple[int, list[int]] | None":
        """Read the copies (at ``addresses``, after the synchronization) and check them in
        program order; clears the pending checks."""
        pending, self.deferred = self.deferred, []
        for (cid, _, count, dtype, size, det, slot), address in zip(pending, addresses):
            a = np.empty(count, dtype)
            self.read(a.ctypes.data, address, a.nbytes)
            lo, hi = int(a.min()), int(a.max())
            low = 0 if dtype.kind == "u" else -size
            if lo < low or hi >= size:
                det = list(det)
                worst = hi if lo >= low else lo
                det[slot] = worst - 2 ** 64 if worst >= 2 ** 63 else worst   # as the i64 detail slot
                return cid, det
        return None


class DeviceArray:
    """An array kept in a device buffer across calls (weights): pass it where a numpy
    array of the same shape and dtype is expected; ``.numpy()`` reads it back."""

    def __init__(self, dev: BufferPool, a: np.ndarray, zero: bool = False):
        """A device copy of ``a``; ``zero``: of zeros of ``a``'s shape and dtype (``a`` may
        then be a broadcast view: its data is not read)."""
        self.dev = dev
        self.shape, self.dtype, self.ndim = a.shape, a.dtype, a.ndim
        self.nbytes = a.size * a.dtype.itemsize
        self.buffer = dev.alloc(max(self.nbytes, 4))
        if zero:
            self.zero()
        else:
            self.write(a)

    def zero(self) -> None:
        """Fill the device buffer with zeros."""
        self.dev.zero(self.buffer, self.nbytes)

    def write(self, a: np.ndarray) -> None:
        """Copy ``a`` (this array's shape and dtype, C-contiguous) into the device buffer."""
        self.dev.upload(self.buffer, a.ctypes.data, a.nbytes)

    def numpy(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self.dev.download(out.ctypes.data, self.buffer, self.nbytes)
        return out

    def __repr__(self) -> str:
        return f"<relax_mlir DeviceArray {self.shape} {self.dtype} on {self.dev.name}>"

    def __del__(self):
        buf, self.buffer = getattr(self, "buffer", None), None
        if buf is not None:
            self.dev.release(buf)


class DeviceCache:
    """A GPU runtime's devices, one per device selection (``config.device_selection(kind)``:
    ``RELAX_MLIR_<KIND>_DEVICE``), each created once per process by ``factory(selection or None)``."""

    def __init__(self, kind: str, factory):
        self.kind, self.factory = kind, factory
        self._devices: dict = {}
        self._lock = threading.Lock()

    def __call__(self):
        sel = config.device_selection(self.kind)
        with self._lock:
            if sel not in self._devices:
                self._devices[sel] = self.factory(sel or None)
            return self._devices[sel]


class StagedFunction(Function):
    """A graph function of a GPU executable: arguments staged into device buffers, the
    host function run with the runtime's call state current, results read back."""

    #: the target's name in messages
    target_name = "gpu"

    @contextlib.contextmanager
    def _recording(self, session, arrays):
        """The prologue and epilogue every call shares: the arguments checked, the session
        held (a concurrent call is an error), a recorder begun on it; on exit the recorder's
        unsubmitted work dropped and the session released. Yields (runtime, recorder)."""
        self.checker.check(arrays)
        if not session._busy.acquire(False):
            raise self._busy_error()
        rt = self.exe._runtime
        try:
            rec = rt.recorder()
            rec.begin(session)
            try:
                yield rt, rec
            finally:
                rec.abandon()
                rec.finish()
        finally:
            session._busy.release()

    def _call(self, session, args):
        if len(args) != self.nparams:
            raise TypeError(f"@{self.name} takes {self.nparams} argument(s), got {len(args)}")
        arrays = [a if isinstance(a, DeviceArray) else _as_array(a) for a in args]
        with self._recording(session, arrays) as (rt, rec):
            descs = [ctypes.byref(self._stage(rec, a)) for a in arrays]
            staged = [a.nbytes for a in arrays if not isinstance(a, DeviceArray)]
            res = self.result_class()
            rt.local.rec = rec
            try:   # the workspace and the session's state buffers, then the arguments
                rec.start(self.name)
                if self.single_scalar:
                    res.status = self._fn(*session._buffers, *descs)
                else:
                    self._fn(ctypes.byref(res), *session._buffers, *descs)
            finally:
                rt.local.rec = None
                rec.stop()
            if rec.error is not None:
                rec.abandon()
                if isinstance(rec.error, DeferredFailure):
                    raise self.exe._failure(*rec.error.args)
                raise rec.error
            if res.status != 0:
                rec.abandon()
                raise self.exe._failure(res.status, [getattr(res, f"d{i}") for i in range(self.D)])
            views = self._result_views(res)
            checks = rec.regions() if isinstance(rec, DeferredChecks) else []
            addresses = rec.reading(checks + [(v[3], v[4] * v[1].itemsize) for v in views])
            rec.submit()
            failed = rec.failure(addresses[:len(checks)]) if checks else None
            if failed is not None:   # a deferred index check: the results are discarded
                raise self.exe._failure(*failed)
            outs = self._read(rec, views, addresses[len(checks):])
            rt.count(rec, len(staged), sum(staged))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _on_device(self, a) -> bool:
        return isinstance(a, DeviceArray)

    def _bind(self, arrays: list) -> tuple:
        """The arrays a PreparedCall binds, uploaded once (as ``exe.upload``): every call
        passes these DeviceArrays, so the weights are not copied again per call."""
        return tuple(a if isinstance(a, DeviceArray) else self.exe.upload(a) for a in arrays)

    def _stage(self, rec, a):
        """A memref descriptor of ``a`` in device memory (copied unless a DeviceArray)."""
        d = descriptor_class(a.ndim)()
        if isinstance(a, DeviceArray):
            addr = a.buffer.address
        else:
            addr = rec.alloc(max(a.nbytes, 4))
            rec.write(addr, a.ctypes.data, a.nbytes)
        d.allocated = d.aligned = addr
        d.offset = 0
        stride = 1
        for k in reversed(range(a.ndim)):
            d.sizes[k] = a.shape[k]
            d.strides[k] = stride
            stride *= a.shape[k]
        return d

    def _result_views(self, res) -> list[tuple]:
        """(shape, dtype, strides, address, span in elements) of each result."""
        views = []
        for i, (rank, dt) in enumerate(zip(self.result_ranks, self.result_dtypes)):
            d = getattr(res, f"r{i}")
            shape = tuple(d.sizes[:rank]) if rank else ()
            dtype = np.dtype(dt)
            strides = [d.strides[k] for k in range(rank)]
            span = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
            views.append((shape, dtype, strides, d.aligned + d.offset * dtype.itemsize, span))
        return views

    @staticmethod
    def _read(rec, views, addresses) -> list[np.ndarray]:
        """The results as numpy arrays, read from ``addresses`` (one per view)."""
        outs = []
        for (shape, dtype, strides, _, span), base in zip(views, addresses):
            out = np.empty(shape, dtype)
            if out.size:
                if _c_contiguous(shape, strides):
                    rec.read(out.ctypes.data, base, out.nbytes)
                else:
                    flat = np.empty(span, dtype)
                    rec.read(flat.ctypes.data, base, span * dtype.itemsize)
                    out[...] = np.lib.stride_tricks.as_strided(
                        flat, shape, [st * dtype.itemsize for st in strides])
            outs.append(out)
        return outs


class DeviceState(Mapping):
    """``sess.state`` of a :class:`DeviceSession`: name -> the state buffer read back from the
    device as a numpy array (a copy: the buffer itself stays in device memory);
    ``sess.state[name] = a`` copies ``a`` (broadcast to the state's shape) into it."""

    def __init__(self):
        self.buffers: dict[str, DeviceArray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.buffers[name].numpy()

    def __setitem__(self, name: str, value) -> None:
        buf = self.buffers[name]
        buf.write(np.ascontiguousarray(np.broadcast_to(np.asarray(value, buf.dtype), buf.shape)))

    def __iter__(self):
        return iter(self.buffers)

    def __len__(self) -> int:
        return len(self.buffers)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.buffers.items()) + "}"


class DeviceSession(Session):
    """A session of a device executable: its state buffers are device buffers, allocated
    (zero-filled) once per session and passed to every call in place, so state_read views
    and state_write rows stay on the device; ``sess.state`` is a :class:`DeviceState`."""

    def _state_mapping(self) -> DeviceState:
        return DeviceState()

    def _new_workspace(self, nbytes: int) -> int:
        """The workspace (relax-plan-memory's arenas) is a device buffer of the pool, not
        initialized (calls write their intermediates before reading them)."""
        if not nbytes:
            return 0
        dev = self.exe._runtime.dev
        buf = dev.alloc(nbytes)
        weakref.finalize(self, dev.release, buf)
        return buf.address

    def _new_state(self, name: str, shape: tuple, dtype: np.dtype, nbytes: int) -> int:
        z = np.broadcast_to(np.zeros((), dtype), shape)
        buf = self.state.buffers[name] = DeviceArray(self.exe._runtime.dev, z, zero=True)
        return buf.buffer.address

    def reset_state(self) -> None:
        """Zero every state buffer on the device (the buffers stay the same)."""
        for buf in self.state.buffers.values():
            buf.zero()


class DeviceExecutable(Executable):
    """An Executable whose functions run on a device through ``runtime`` (which has a
    ``dev``, the :class:`BufferPool`, and ``stats``)."""

    function_class: type = StagedFunction
    session_class: type = DeviceSession

    def __init__(self, resolver, metadata: dict, runtime, **kw):
        self._runtime = runtime
        self._runtime_callbacks = runtime.callbacks  # outlive the engine's code
        super().__init__(resolver, metadata, **kw)

    def _new_function(self, name: str) -> Function:
        return self.function_class(self, name, self._meta.functions[name])

    def upload(self, array) -> DeviceArray:
        """Copy ``array`` to the device once; pass the result instead of the array in later
        calls (e.g. the weights) so that it is not staged again per call."""
        a = _as_array(array)
        out = DeviceArray(self._runtime.dev, a)
        add_stats(self._runtime, uploads=1, upload_bytes=a.nbytes)
        return out


def add_stats(rt, **counts: int) -> None:
    """Add ``counts`` to a runtime's ``stats`` (under its ``_stats_lock``)."""
    with rt._stats_lock:
        for k, v in counts.items():
            rt.stats[k] += v


def attr_py(a):
    """An MLIR attribute (integer, string, array, dictionary) as a Python value."""
    from mlir import ir
    if isinstance(a, ir.IntegerAttr):
        return a.value
    if isinstance(a, ir.StringAttr):
        return a.value
    if isinstance(a, ir.ArrayAttr):
        return [attr_py(x) for x in a]
    if isinstance(a, ir.DictAttr):
        return {a[k].name: attr_py(a[k].attr) for k in range(len(a))}
    return str(a)


def binaries(module, erase: bool) -> dict[str, bytes]:
    """The object of each ``gpu.binary`` of a lowered module (SPIR-V, PTX) by its name;
    ``erase``: remove the ops (the vulkan host code no longer refers to them)."""
    from mlir import ir
    from mlir.dialects import gpu

    out: dict[str, bytes] = {}
    for o in list(module.operation.regions[0].blocks[0].operations):
        o = o.operation
        if o.name != "gpu.binary":
            continue
        objects = ir.ArrayAttr(o.attributes["objects"])
        out[ir.StringAttr(o.attributes["sym_name"]).value] = gpu.ObjectAttr(objects[0]).object
        if erase:
            o.erase()
    return out


__all__ = ["ALLOC_FN", "FREE_FN", "BufferPool", "DeferredChecks", "DeferredFailure", "DeviceArray", "DeviceExecutable", "DeviceSession", "DeviceState",
           "StagedFunction", "add_stats", "attr_py", "binaries"]
