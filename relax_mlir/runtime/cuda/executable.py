"""The cuda Executable, replays of a call without its host code (:class:`CudaFunction`), and
the target's runtime factory: the host code JIT-compiled (the one JIT factory,
:func:`relax_mlir.runtime.jit.jit_module`) with MLIR's CUDA runtime library, the driver's
entry points and the callbacks of :class:`~.launch.CudaRuntime` as symbols."""

from __future__ import annotations

import ctypes

from ... import config
from ..gpu_shared import DeviceArray, DeviceExecutable, StagedFunction, binaries
from ..marshal import _as_array
from .device import _bind_mlir_runtime, device
from .driver import mlir_cuda_library
from .launch import CudaRuntime, _Replay  # noqa: F401 (_Replay: annotations)

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
        with self._recording(session, arrays) as (rt, rec):
            execs = rt.graphs.get(self.name, {})
            if (rec.res is not entry.res or rec.res.arena is not entry.arena
                    or execs.get(entry.exec_key) is None or rt.versions.get(entry.exec_key) != entry.version):
                return None
            staged = [a for a in arrays if not isinstance(a, DeviceArray)]
            for a, address in zip(staged, entry.staged):
                rec.write(address, a.ctypes.data, a.nbytes)
            rec.replay(execs[entry.exec_key], entry)
            failed = rec.replay_checks(entry.checks) if entry.checks else None
            if failed is not None:   # a deferred index check: the results are discarded
                raise self.exe._failure(*failed)
            outs = self._read(rec, entry.views, entry.addresses)
            rt.count(rec, len(staged), sum(a.nbytes for a in staged))
            return outs


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
        replayed without running their host code), ``library_calls`` (cuBLAS matmuls: each also
        counted in ``launches``)."""
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
    from mlir import ir

    from ..cuda_launch import CONSTANTS_ATTR, DRIVER_SYMBOLS, link
    from ..jit import jit_module

    dev = device()
    lib = mlir_cuda_library()
    _bind_mlir_runtime(dev, lib)
    runtime = CudaRuntime(dev, binaries(module, erase=False), launch_kinds(module))
    attrs = module.operation.attributes
    constants = [tuple(ir.IntegerAttr(x).value for x in ir.ArrayAttr(c))
                 for c in ir.ArrayAttr(attrs[CONSTANTS_ATTR])] if CONSTANTS_ATTR in attrs else []
    library = link(module)     # the launch path, compiled with the host code
    symbols = dict(runtime.callbacks)
    if library:     # cuBLAS matmuls (relax-cuda-dispatch-library): the shim's entry point
        from .cublas import LIBRARY_ENTRY, entry_address, workspace_bytes
        symbols[LIBRARY_ENTRY] = ctypes.c_void_p(entry_address(dev))
        runtime.cublas = workspace_bytes(dev)
    symbols.update({name: ctypes.c_void_p(dev.drv.address(fn)) for name, fn in DRIVER_SYMBOLS.items()})
    # the global constructors load the PTX (mgpuModuleLoadJIT) in the device's context
    resolver = jit_module(module, options.opt_level, libraries, extra=[lib], callbacks=symbols,
                          initialize_in=dev.current())
    if runtime.load_errors:
        raise runtime.load_errors[0]
    runtime.bind(resolver.engine)
    runtime.upload_constants(resolver.engine, constants)
    return CudaExecutable(resolver, metadata, runtime, libraries=libraries)
