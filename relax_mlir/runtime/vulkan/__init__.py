"""The Vulkan host runtime of the ``vulkan`` target (PyPI ``vulkan``: cffi bindings of the loader).

::

    exe = relax_mlir.compile(src, target="vulkan")   # SPIR-V kernels + host code (JIT)
    y = exe(x, w)                                    # numpy in, numpy out, any valid shape
    w_dev = exe.upload(w)                            # a DeviceArray: stays on the device
    y = exe(x, w_dev)                                # ... and is not copied again per call

How a call runs. The graph function and the host halves of the kernels are host code
(the MLIR ExecutionEngine), so shape computation and the run-time checks are exactly
the cpu target's. That code calls back into this package (ctypes callbacks registered as
symbols of the engine):

* ``_mlir_memref_to_llvm_alloc`` / ``_free`` (``finalize-memref-to-llvm
  {use-generic-functions=true}``): every buffer is a Vulkan buffer, handed to the host
  code as its address (direct: its persistent mapping; staged: a reserved range naming it);
  a request beyond the device's limits returns NULL, which the compiled allocation check
  reports as a ``MemoryError``;
* ``relax_vk_launch_<id>(gx, gy, gz, args...)``: RECORDS a dispatch (pipeline, one
  descriptor set: set 0, binding i = argument i, a scalar as its own small storage
  buffer, MLIR's SPIR-V ABI) followed by a memory barrier into the call's ONE command
  buffer; ``relax_vk_copy(src, dst, bytes)``: records a buffer copy.

After the host function returns, the command buffer is submitted once and waited for
on a fence with a timeout (``RELAX_MLIR_VULKAN_TIMEOUT_S``, default 60 s: a
``TimeoutError``, never a hang); results are copied to numpy arrays, and every buffer of
the call goes back to a per-device pool (nothing is freed while commands may use it).
A call that fails a run-time check submits nothing.

Memory (``RELAX_MLIR_VULKAN_STAGING``: ``auto``, ``1``, ``0``; docs/gpu.md). Direct: buffers
are allocated from a memory type that is HOST_VISIBLE and HOST_COHERENT (DEVICE_LOCAL too where
the device has one, as lavapipe, integrated GPUs and resizable BAR do), mapped once; arguments
are copied into them by the host. Results are read back from them, or, where that memory is
not HOST_CACHED (a discrete GPU's BAR: the host reads it at tens of MB/s), from host-cached
buffers the call's command buffer copies them into. Staged (``auto`` where the device has a
DEVICE_LOCAL type that is not HOST_VISIBLE; ``1`` anywhere): buffers, state and uploaded
weights live in DEVICE_LOCAL memory that is never mapped; arguments are written into
host-visible staging buffers and copied in by ``vkCmdCopyBuffer`` at the start of the call's
command buffer, results copied out into host-cached read-back buffers; uploads, state reads
and writes are such copies too, zeroing a ``vkCmdFillBuffer``. Every pool keeps its buffers
across calls.

Device selection: ``RELAX_MLIR_VULKAN_DEVICE`` (an index into the physical devices or a
substring of the device name); else the first GPU, else the first device (lavapipe
``llvmpipe``). Errors are Python exceptions naming the cause: :class:`VulkanUnavailable`
(no loader, package or device), :class:`SpirvError` (the driver rejects a kernel),
``MemoryError`` (a buffer beyond the device's limits), ``TimeoutError``.

The package, by job: :mod:`.driver` (the ``vulkan`` package and loader, errors, the
timeout), :mod:`.device` (device selection, limits, queue; the buffer pool),
:mod:`.memory` (buffers, the read-back / staging pools, the scalar arena's sizes),
:mod:`.launch` (pipelines, the per-call command buffer, the callbacks the host code
calls) and :mod:`.executable` (the Executable and the runtime factory).
"""

from __future__ import annotations

from ..gpu_shared import DeviceArray
from .device import Device, available, choose_subgroup_size, device  # noqa: F401
from .driver import SpirvError, VulkanError, VulkanUnavailable
from .executable import LAUNCHES_ATTR, VulkanExecutable, VulkanFunction, take_kernels, vulkan_runtime
from .launch import (Kernel, Recorder, ShaderModule, VulkanRuntime, _shader_module,  # noqa: F401 (tests wrap it)
                     spirv_facts)
from .memory import Buffer, _ReadbackPool  # noqa: F401

__all__ = ["VulkanError", "VulkanUnavailable", "SpirvError", "DeviceArray", "VulkanExecutable", "available",
           "device", "vulkan_runtime", "Device", "Buffer", "Kernel", "Recorder", "VulkanRuntime", "VulkanFunction",
           "LAUNCHES_ATTR", "take_kernels"]
