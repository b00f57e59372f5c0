"""The vulkan Executable and the target's runtime factory: the host code JIT-compiled (the one
JIT factory, :func:`relax_mlir.runtime.jit.jit_module`) with the callbacks of
:class:`~.launch.VulkanRuntime` as symbols."""

from __future__ import annotations

from ..gpu_shared import DeviceExecutable, StagedFunction, attr_py, binaries
from .device import device
from .launch import VulkanRuntime


class VulkanFunction(StagedFunction):
    """A graph function of a vulkan executable: arguments staged into device buffers, one
    command buffer per call, results read back."""

    target_name = "vulkan"


class VulkanExecutable(DeviceExecutable):
    """An Executable whose functions run on a Vulkan device (see the module docstring)."""

    function_class = VulkanFunction

    @property
    def vulkan_stats(self) -> dict:
        """Calls, command-buffer submissions (one per call that launched anything),
        dispatches and buffer copies recorded so far."""
        return dict(self._runtime.stats)

    @property
    def vulkan_pipelines(self) -> dict:
        """Compute pipelines (one per launch site), those created with the device's subgroup
        size required (kernels with subgroup operations on a device with
        VK_EXT_subgroup_size_control) and those of them also requiring full subgroups."""
        rt = self._runtime
        return {"pipelines": len(rt.kernels), "required_subgroup_size": rt.required_subgroup_pipelines,
                "full_subgroups": rt.full_subgroup_pipelines}

    @property
    def device_name(self) -> str:
        return self._runtime.dev.name

    def export(self, path) -> str:
        raise NotImplementedError("export() of a vulkan executable is not supported yet (the SPIR-V and the "
                                  "launch table would have to travel in the library)")

    def __repr__(self) -> str:
        return f"<relax_mlir Executable (vulkan: {self.device_name}): {', '.join('@' + f for f in self.functions)}>"


LAUNCHES_ATTR = "vulkan.launches"


def take_kernels(module) -> tuple[list[dict], dict[str, bytes]]:
    """Remove the launch table and the ``gpu.binary`` ops from a lowered module; returns
    (launches, SPIR-V per binary name)."""
    op = module.operation
    launches = attr_py(op.attributes[LAUNCHES_ATTR]) if LAUNCHES_ATTR in op.attributes else []
    if LAUNCHES_ATTR in op.attributes:
        del op.attributes[LAUNCHES_ATTR]
    return launches, binaries(module, erase=True)


def vulkan_runtime(module, metadata: dict, libraries: list[str], options):
    """The vulkan target's runtime factory: the host code JIT-compiled with the Vulkan
    callbacks as symbols, the SPIR-V turned into pipelines now (a rejected kernel is a
    :class:`SpirvError` at compile time)."""
    from ..jit import jit_module

    dev = device()
    launches, binaries = take_kernels(module)
    runtime = VulkanRuntime(dev, launches, binaries)
    resolver = jit_module(module, options.opt_level, libraries, callbacks=runtime.callbacks)
    return VulkanExecutable(resolver, metadata, runtime, libraries=libraries)
