"""Vulkan memory: buffers mapped for their whole life, the pool of host-cached read-back
buffers, and the sizes of a call's scalar arena (:class:`~.launch.Recorder`). The device
itself is the pool of its buffers (:class:`~.device.Device`, a
:class:`~relax_mlir.runtime.gpu_shared.BufferPool`)."""

from __future__ import annotations

import threading
from typing import Optional

from ..gpu_shared import BufferPool
from .driver import VulkanError

#: bytes of one scalar slot in the per-call scalar arena (covers i64 / f64)
_SCALAR_BYTES = 8
_ARENA_BYTES = 1 << 16


class Buffer:
    """One VkBuffer with its own memory, mapped for the whole of its life."""

    __slots__ = ("handle", "memory", "size", "address", "_map")

    def __init__(self, dev, size: int, memory_type: Optional[int] = None):  # dev: a device.Device
        vk = dev.vk
        memory_type = dev.memory_type if memory_type is None else memory_type
        self.size = size
        self.handle = vk.vkCreateBuffer(dev.device, vk.VkBufferCreateInfo(
            size=size, usage=(vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                              | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT),
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        req = vk.vkGetBufferMemoryRequirements(dev.device, self.handle)
        if not req.memoryTypeBits & (1 << memory_type):
            vk.vkDestroyBuffer(dev.device, self.handle, None)
            raise VulkanError("the buffer cannot live in the selected host-visible memory type")
        try:
            self.memory = vk.vkAllocateMemory(dev.device, vk.VkMemoryAllocateInfo(
                allocationSize=req.size, memoryTypeIndex=memory_type), None)
        except vk.VkError:
            vk.vkDestroyBuffer(dev.device, self.handle, None)
            raise MemoryError(f"the Vulkan device cannot allocate {size} bytes") from None
        vk.vkBindBufferMemory(dev.device, self.handle, self.memory, 0)
        self._map = vk.vkMapMemory(dev.device, self.memory, 0, size, 0)
        self.address = int(vk.ffi.cast("uintptr_t", vk.ffi.from_buffer(self._map)))

    def destroy(self, dev) -> None:
        vk = dev.vk
        vk.vkUnmapMemory(dev.device, self.memory)
        vk.vkDestroyBuffer(dev.device, self.handle, None)
        vk.vkFreeMemory(dev.device, self.memory, None)


class _ReadbackPool(BufferPool):
    """Host-cached buffers the results of a call are copied into before the host reads them."""

    pool_kind = "Vulkan readback"
    pool_error = VulkanError

    def __init__(self, dev, memory_type: int):  # dev: a device.Device
        self.dev, self.memory_type = dev, memory_type
        self.name, self.max_alloc = dev.name, dev.max_range
        self.lock = threading.Lock()
        self._init_pool()

    def _new_buffer(self, size: int) -> Buffer:
        return Buffer(self.dev, size, self.memory_type)
