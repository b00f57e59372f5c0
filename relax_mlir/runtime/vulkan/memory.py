"""Vulkan memory: buffers (mapped for their whole life, or, with staging, device-only and
never mapped), the pools of host-visible buffers (read-back, staging), and the sizes of a
call's scalar arena (:class:`~.launch.Recorder`). The device itself is the pool of its
buffers (:class:`~.device.Device`, a :class:`~relax_mlir.runtime.gpu_shared.BufferPool`)."""

from __future__ import annotations

import ctypes
import threading
from typing import Optional

from ..gpu_shared import BufferPool
from .driver import VulkanError

#: bytes of one scalar slot in the per-call scalar arena (covers i64 / f64)
_SCALAR_BYTES = 8
_ARENA_BYTES = 1 << 16


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_PROT_READ, _PROT_WRITE, _MAP_PRIVATE, _MAP_ANONYMOUS, _MAP_NORESERVE = 1, 2, 0x02, 0x20, 0x4000


def reserve_addresses(size: int) -> int:
    """A range of ``size`` bytes of the process's address space (anonymous, MAP_NORESERVE:
    no memory behind it until touched) that names an unmapped device buffer for the host
    code. It never collides with host memory (the runtime tells host constants from buffers
    by address) and no Vulkan memory is mapped there. It is readable and writable because
    the host code allocates its own scratch through the same function as kernel buffers:
    the small index / flag arrays of bufferization's dealloc helper
    (``bufferization-lower-deallocations``), written and read by the host only, land in
    it; kernel data never does (the numerics would see the range's zeros)."""
    addr = _libc.mmap(None, size, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise MemoryError(f"cannot reserve {size} bytes of address space (errno {ctypes.get_errno()})")
    return addr


class Buffer:
    """One VkBuffer with its own memory: ``mapped`` (host-visible memory, mapped for the whole
    of its life, ``address`` = the mapping) or not (device-only memory of the staged path:
    ``address`` = a reserved range that names it, see :func:`reserve_addresses`)."""

    __slots__ = ("handle", "memory", "size", "address", "_map")

    def __init__(self, dev, size: int, memory_type: Optional[int] = None,
                 mapped: bool = True):  # dev: a device.Device
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
            raise VulkanError(f"the buffer cannot live in the selected memory type {memory_type}")
        try:
            self.memory = vk.vkAllocateMemory(dev.device, vk.VkMemoryAllocateInfo(
                allocationSize=req.size, memoryTypeIndex=memory_type), None)
        except vk.VkError:
            vk.vkDestroyBuffer(dev.device, self.handle, None)
            raise MemoryError(f"the Vulkan device cannot allocate {size} bytes") from None
        vk.vkBindBufferMemory(dev.device, self.handle, self.memory, 0)
        if mapped:
            self._map = vk.vkMapMemory(dev.device, self.memory, 0, size, 0)
            self.address = int(vk.ffi.cast("uintptr_t", vk.ffi.from_buffer(self._map)))
        else:
            self._map = None
            self.address = reserve_addresses(size)

    def destroy(self, dev) -> None:
        vk = dev.vk
        if self._map is not None:
            vk.vkUnmapMemory(dev.device, self.memory)
        else:
            _libc.munmap(self.address, self.size)
        vk.vkDestroyBuffer(dev.device, self.handle, None)
        vk.vkFreeMemory(dev.device, self.memory, None)


class _ReadbackPool(BufferPool):
    """Host-visible buffers of one memory type, mapped: the host-cached ones the results of a
    call are copied into before the host reads them (``Device.readback``), and, with staging,
    those the host writes arguments, uploads and scalars into for the device to copy from
    (``Device.staging``)."""

    pool_kind = "Vulkan readback"
    pool_error = VulkanError

    def __init__(self, dev, memory_type: int, kind: str = "Vulkan readback"):  # dev: a device.Device
        self.dev, self.memory_type, self.pool_kind = dev, memory_type, kind
        self.name, self.max_alloc = dev.name, dev.max_range
        self.lock = threading.Lock()
        self._init_pool()

    def _new_buffer(self, size: int) -> Buffer:
        return Buffer(self.dev, size, self.memory_type)
