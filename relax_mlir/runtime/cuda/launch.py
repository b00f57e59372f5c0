"""CUDA launches: one call's state (:class:`CallState`: staging, graph capture, the one
synchronization), the graphs per function and topology, and the callbacks the host code calls
(:class:`CudaRuntime`: module loads, allocations, the debugging launch check). The launches
themselves run in the compiled launch path (:mod:`relax_mlir.runtime.cuda_launch`)."""

from __future__ import annotations

import ctypes
import threading
import time
import weakref
from typing import Optional

from ... import config
from ..cuda_launch import ALLOC_HOOK, ARENA_ALIGN, CHECK_HOOK, COPY, LAUNCH, LIBRARY, LIMIT, NSLOTS, SLOTS
from ..gpu_shared import ALLOC_FN, CallHooks, DeferredChecks, add_stats
from .device import CudaDevice
from .driver import _CAPTURE_RELAXED, _ELF, CUDA_ERROR_NOT_READY, CUDA_SUCCESS, CudaError, _timeout_s
from .memory import DeviceBuffer, _SessionResources

#: relax-lower-host's deferred index check (its callback's name, as the vulkan runtime's)
CHECK_INDICES_FN = "relax_gpu_check_indices"
#: graph executables kept per graph function (one per topology: e.g. a kernel's vector or
#: scalar variant chosen by the sizes)
GRAPHS_PER_FUNCTION = 8


class CallState(DeferredChecks, CallHooks):
    """One call of a cuda executable (one at a time per executable: the compiled launch path's
    state block is the executable's): its stream, buffers, pending graph and first failure.

    ``begin(session)`` takes the executable's call lock, the session's stream and clears the
    state block; arguments are staged with asynchronous copies on that stream; ``start`` begins
    capturing the stream (graphs on); the host function then launches and copies through the
    compiled path; ``stop`` ends the capture and reads the state block; ``submit`` launches the
    graph (updated in place when its topology is unchanged) and synchronizes the stream once;
    results are copied out; ``finish`` returns the buffers to the pool. ``relax.take``'s index
    checks are deferred (:class:`~relax_mlir.runtime.gpu_shared.DeferredChecks`): the host code
    snapshots the indices with a device copy on the stream (a node of the call's graph) into a
    buffer of the session's arena, and the copy is read after the synchronization; a replayed
    call checks the same snapshots again (:meth:`replay_checks`)."""

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
        self.reset_checks()
        self.checks: list = []
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
        if self.rt.cublas:      # the session's cuBLAS workspace (relax_mlir/runtime/cuda/cublas.py)
            ws = self.res.cublas_workspace(self.rt.cublas)
            slots[SLOTS["cublas_ws"]], slots[SLOTS["cublas_ws_size"]] = ws.address, self.rt.cublas

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

    def device_copy(self, src: int, dst: int, nbytes: int) -> None:
        """A deferred check's snapshot of its indices: a device copy in stream order (captured
        into the call's graph while capturing)."""
        r = self.dev.drv.cuMemcpyDtoDAsync(dst, src, nbytes, self.stream)
        if r != CUDA_SUCCESS:
            raise self.dev.fail(r, f"cuMemcpyDtoDAsync({nbytes} bytes) of an index check")
        self.counts["device_copies"] += 1

    def regions(self) -> list[tuple[int, int]]:
        self.checks = list(self.deferred)      # kept for replays of this call
        return super().regions()

    def replay_checks(self, checks: list) -> "tuple[int, list[int]] | None":
        """After a replay's synchronization: the recorded call's checks on the snapshots its
        graph copied again (same addresses: the arena's)."""
        self.deferred = list(checks)
        return self.failure([dst for _, dst, *_ in checks])

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
        # the index checks' snapshot copies are graph nodes the compiled path does not hash
        self.topology = slots[SLOTS["topology"]] ^ (len(self.deferred) * 0x9E3779B97F4A7C15 & 0x7FFFFFFFFFFFFFFF)
        self.counts["device_copies"] += slots[SLOTS["copies"]]
        self.counts["library_calls"] = slots[SLOTS["library_calls"]]
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
        e.launches, e.copies, e.checks = self.launches, self.counts["device_copies"], list(self.checks)
        e.library_calls = self.counts["library_calls"]
        return e

    def replay(self, exec_: int, entry: "_Replay") -> None:
        """Launch a recorded call's graph executable as it is, then the one synchronization."""
        r = self.dev.drv.cuGraphLaunch(exec_, self.stream)
        if r != CUDA_SUCCESS:
            raise self.dev.fail(r, f"cuGraphLaunch (a replay of @{entry.exec_key[0]})")
        self.launches = entry.launches
        self.counts["device_copies"] = entry.copies
        self.counts["library_calls"] = entry.library_calls
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


#: what a call counts (added to ``exe.cuda_stats``; ``exe.cuda_call_stats`` is the last call's)
CALL_COUNTS = ("copies_in", "copies_out", "device_copies", "syncs", "allocations", "buffers", "graph_launches",
               "graph_builds", "graph_updates", "replays", "library_calls")


class _Replay:
    """A call that can run again without its host code: its graph executable (at the version
    its capture left it), where its arguments were staged and its results are."""

    __slots__ = ("res", "arena", "exec_key", "version", "staged", "views", "addresses", "launches", "copies", "checks",
                 "library_calls")


_LOAD = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_LOAD_IMAGE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_CHECK_INDICES = ctypes.CFUNCTYPE(None, *([ctypes.c_int64] * 8))
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
        #: bytes of each session's cuBLAS workspace when the host code calls cuBLAS, else 0
        self.cublas = 0
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
            CHECK_INDICES_FN: _CHECK_INDICES(self._check_indices),
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
        from ..cuda_launch import STATE
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
        from ..cuda_launch import CONST_PREFIX, SLOT_PREFIX
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
        if kind == LIBRARY:
            from .cublas import describe
            return CudaError(f"cuBLAS matmul failed: {describe(code)}", code)
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

    def _check_indices(self, *args) -> None:
        """relax-lower-host's deferred ``relax.check_indices``: snapshot the indices (a device
        copy on the stream), checked after the call's synchronization."""
        st = self._current()
        try:
            if st is None:
                raise CudaError(f"{CHECK_INDICES_FN} called outside a call")
            if st.error is None:
                st.defer(*args)
        except BaseException as e:  # noqa: BLE001
            self._fail(st, e)

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
