"""The Vulkan binding of the ``vulkan`` target's runtime: the PyPI ``vulkan`` package (cffi
bindings of the loader, opened on first use), the runtime's errors and its wait timeout."""

from __future__ import annotations

from ... import config

#: VkResult VK_ERROR_OUT_OF_POOL_MEMORY (the ``vulkan`` package's constant has the wrong sign)
_VK_ERROR_OUT_OF_POOL_MEMORY = -1000069000


class VulkanError(RuntimeError):
    """A Vulkan runtime failure."""


class VulkanUnavailable(VulkanError):
    """No Vulkan loader, no ``vulkan`` Python package, or no (selected) device."""


class SpirvError(VulkanError):
    """The driver rejected a kernel's SPIR-V (shader module or pipeline creation)."""


def _vk():
    try:
        import vulkan as vk  # the loader is opened at import time
    except ImportError as e:
        raise VulkanUnavailable(f"the Python package 'vulkan' is missing ({e}); "
                                "pip install vulkan==1.3.275.1") from None
    except OSError as e:
        raise VulkanUnavailable(f"no Vulkan loader (libvulkan.so.1): {e}; on Debian: "
                                "apt-get install mesa-vulkan-drivers libvulkan1") from None
    return vk


def _timeout_s() -> float:
    return config.device_timeout_s("vulkan")
