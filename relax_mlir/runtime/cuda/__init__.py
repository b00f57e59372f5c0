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
callbacks of this package, so that a kernel the driver rejects is a :class:`PtxError` with
the driver's log, raised by ``compile()``) and launches through ``mgpuModuleGetFunction``,
``mgpuStreamCreate``, ``mgpuLaunchKernel``, ``mgpuStreamSynchronize``, ``mgpuStreamDestroy``.
Those five are defined in the host module itself (:mod:`relax_mlir.runtime.cuda_launch`, LLVM dialect): no
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

The package, by job: :mod:`.driver` (the driver API through ctypes, errors, MLIR's CUDA
runtime library), :mod:`.device` (device selection, context, limits, copies, kernel images;
the buffer pool), :mod:`.memory` (device buffers, a session's stream and call arena),
:mod:`.launch` (one call's state, graphs, the callbacks the host code calls) and
:mod:`.executable` (the Executable, replays and the runtime factory); the launch path
compiled into the host module is :mod:`relax_mlir.runtime.cuda_launch`.
"""

from __future__ import annotations

from ..gpu_shared import DeviceArray
from .device import CudaDevice, available, device
from .driver import CudaError, CudaUnavailable, Driver, PtxError, mlir_cuda_library
from .executable import _KEPT_ENGINES, CudaExecutable, CudaFunction, cuda_runtime, launch_kinds  # noqa: F401
from .launch import CALL_COUNTS, CallState, CudaRuntime
from .memory import DeviceBuffer

__all__ = ["CudaError", "CudaUnavailable", "PtxError", "CudaExecutable", "Driver", "available", "device",
           "cuda_runtime", "CudaDevice", "DeviceArray", "DeviceBuffer", "CallState", "CudaRuntime", "CudaFunction",
           "CALL_COUNTS", "launch_kinds", "mlir_cuda_library"]
