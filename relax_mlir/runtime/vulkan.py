"""The Vulkan host runtime of the ``vulkan`` target (PyPI ``vulkan``: cffi bindings of the loader).

::

    exe = relax_mlir.compile(src, target="vulkan")   # SPIR-V kernels + host code (JIT)
    y = exe(x, w)                                    # numpy in, numpy out, any valid shape
    w_dev = exe.upload(w)                            # a DeviceArray: stays on the device
    y = exe(x, w_dev)                                # ... and is not copied again per call

How a call runs. The graph function and the host halves of the kernels are host code
(the MLIR ExecutionEngine), so shape computation and the run-time checks are exactly
the cpu target's. That code calls back into this module (ctypes callbacks registered as
symbols of the engine):

* ``_mlir_memref_to_llvm_alloc`` / ``_free`` (``finalize-memref-to-llvm
  {use-generic-functions=true}``): every buffer is a Vulkan buffer, handed to the host
  code as its persistently mapped address; a request beyond the device's limits returns
  NULL, which the compiled allocation check reports as a ``MemoryError``;
* ``relax_vk_launch_<id>(gx, gy, gz, args...)``: RECORDS a dispatch (pipeline, one
  descriptor set: set 0, binding i = argument i, a scalar as its own small storage
  buffer, MLIR's SPIR-V ABI) followed by a memory barrier into the call's ONE command
  buffer; ``relax_vk_copy(src, dst, bytes)``: records a buffer copy.

After the host function returns, the command buffer is submitted once and waited for
on a fence with a timeout (``RELAX_MLIR_VULKAN_TIMEOUT_S``, default 60 s: a
``TimeoutError``, never a hang); results are copied to numpy arrays, and every buffer of
the call goes back to a per-device pool (nothing is freed while commands may use it).
A call that fails a run-time check submits nothing.

Memory: buffers are allocated from a memory type that is HOST_VISIBLE and HOST_COHERENT
(DEVICE_LOCAL too where the device has one, as lavapipe, integrated GPUs and resizable
BAR do), mapped once; arguments are copied into them (the staging step). Results are read
back from them, or, where that memory is not HOST_CACHED (a discrete GPU's BAR: the host
reads it at tens of MB/s), from host-cached buffers the call's command buffer copies them
into. A discrete GPU without host-visible device memory would need explicit staging
copies of the arguments too, which this runtime does not do yet.

Device selection: ``RELAX_MLIR_VULKAN_DEVICE`` (an index into the physical devices or a
substring of the device name); else the first GPU, else the first device (lavapipe
``llvmpipe``). Errors are Python exceptions naming the cause: :class:`VulkanUnavailable`
(no loader, package or device), :class:`SpirvError` (the driver rejects a kernel),
``MemoryError`` (a buffer beyond the device's limits), ``TimeoutError``.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Optional

from .. import config
from .gpu_shared import (ALLOC_FN, FREE_FN, BufferPool, CallHooks, DeviceArray, DeviceExecutable, StagedFunction,
                         add_stats, attr_py, binaries)

#: bytes of one scalar slot in the per-call scalar arena (covers i64 / f64)
_SCALAR_BYTES = 8
_ARENA_BYTES = 1 << 16
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


class Buffer:
    """One VkBuffer with its own memory, mapped for the whole of its life."""

    __slots__ = ("handle", "memory", "size", "address", "_map")

    def __init__(self, dev: "Device", size: int, memory_type: Optional[int] = None):
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

    def destroy(self, dev: "Device") -> None:
        vk = dev.vk
        vk.vkUnmapMemory(dev.device, self.memory)
        vk.vkDestroyBuffer(dev.device, self.handle, None)
        vk.vkFreeMemory(dev.device, self.memory, None)


class Device(BufferPool):
    """A logical device on one physical device, its compute queue and its buffer pool."""

    pool_kind = "Vulkan"
    pool_error = VulkanError

    def __init__(self, selector: Optional[str] = None):
        vk = self.vk = _vk()
        try:
            self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
                pApplicationInfo=vk.VkApplicationInfo(pApplicationName="relax-mlir", applicationVersion=1,
                                                      pEngineName="relax-mlir", engineVersion=1,
                                                      apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))), None)
        except vk.VkError as e:
            raise VulkanUnavailable(f"vkCreateInstance failed ({type(e).__name__}): no Vulkan driver "
                                    "(on Debian: apt-get install mesa-vulkan-drivers)") from None
        phys = vk.vkEnumeratePhysicalDevices(self.instance)
        if not phys:
            raise VulkanUnavailable("the Vulkan loader found no physical device")
        props = [vk.vkGetPhysicalDeviceProperties(p) for p in phys]
        names = [vk.ffi.string(p.deviceName).decode() if not isinstance(p.deviceName, str) else p.deviceName
                 for p in props]
        k = self._select(selector, props, names, vk)
        self.physical, self.name = phys[k], names[k]
        limits = props[k].limits
        self.max_range = int(limits.maxStorageBufferRange)
        self.max_groups = [int(limits.maxComputeWorkGroupCount[i]) for i in range(3)]
        self.offset_align = max(int(limits.minStorageBufferOffsetAlignment), 4)
        #: invocations per workgroup and workgroup memory (bytes): relax_mlir.target.Target's limits
        self.max_invocations = int(limits.maxComputeWorkGroupInvocations)
        self.shared_memory = int(limits.maxComputeSharedMemorySize)
        #: the subgroup width when compute shaders may shuffle within it (the GPU rules' GEMV
        #: reduces with gpu.shuffle at exactly this width), else None
        self.subgroup_size = self._subgroup_size(vk, phys[k], int(props[k].vendorID))
        self.vendor = "0x%04x" % int(props[k].vendorID)
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        fam = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not fam:
            raise VulkanUnavailable(f"device '{self.name}' has no compute queue")
        self.family = fam[0]
        features = self._features(vk)
        self._priorities = vk.ffi.new("float[]", [1.0])
        self._queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1,
                                                      pQueuePriorities=self._priorities)
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            pNext=features, queueCreateInfoCount=1, pQueueCreateInfos=[self._queue_info]), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        types = [(i, mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount)]
        ok = [i for i, f in types if f & want == want]
        if not ok:
            raise VulkanUnavailable(f"device '{self.name}' has no host-visible coherent memory")
        local = [i for i in ok if types[i][1] & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
        self.memory_type = (local or ok)[0]
        cached = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
        #: results are read back through host-cached memory when the buffers' memory is not
        #: cached: a discrete GPU's DEVICE_LOCAL + HOST_VISIBLE memory (resizable BAR) is
        #: fast for kernels and for the host's writes, but the host reads it uncached (tens of
        #: MB/s measured on an H100), so each call copies its results into a cached buffer
        #: (vkCmdCopyBuffer, in the call's command buffer) and reads them there
        self.readback: Optional[_ReadbackPool] = None
        if not types[self.memory_type][1] & cached:
            host = [i for i in ok if types[i][1] & cached]
            if host:
                self.readback = _ReadbackPool(self, host[0])
        heap = mem.memoryHeaps[mem.memoryTypes[self.memory_type].heapIndex]
        self.max_alloc = min(int(heap.size), self.max_range)
        self.command_pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            queueFamilyIndex=self.family, flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT), None)
        self.lock = threading.Lock()      # queue submission, command pool, buffer pool
        self._init_pool()

    #: vendors whose compute shaders run at the subgroup size the device reports (NVIDIA: 32;
    #: Mesa's lavapipe: its SIMD width). Others may pick another size per shader (AMD wave32 /
    #: wave64, Intel SIMD8/16/32) unless the pipeline requires one (VK_EXT_subgroup_size_control,
    #: not used yet): no shuffles there
    FIXED_SUBGROUP_VENDORS = (0x10DE, 0x10005)

    @classmethod
    def _subgroup_size(cls, vk, physical, vendor: int) -> Optional[int]:
        if vendor not in cls.FIXED_SUBGROUP_VENDORS:
            return None
        try:
            sg = vk.VkPhysicalDeviceSubgroupProperties()
            vk.vkGetPhysicalDeviceProperties2(physical, vk.VkPhysicalDeviceProperties2(pNext=sg))
        except Exception:  # noqa: BLE001 - a Vulkan 1.0 driver: no subgroup properties
            return None
        shuffle, compute = vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT, vk.VK_SHADER_STAGE_COMPUTE_BIT
        if not (sg.supportedOperations & shuffle and sg.supportedStages & compute) or sg.subgroupSize < 1:
            return None
        return int(sg.subgroupSize)

    def _features(self, vk):
        """The optional features the kernels' SPIR-V capabilities need (64-bit and 16-bit
        scalars, 8/16-bit storage: i64, f64, f16, booleans as bytes), enabled where the
        device has them; a kernel needing a missing one fails at pipeline creation."""
        q12 = vk.VkPhysicalDeviceVulkan12Features()
        q11 = vk.VkPhysicalDeviceVulkan11Features(pNext=q12)
        q = vk.VkPhysicalDeviceFeatures2(pNext=q11)
        vk.vkGetPhysicalDeviceFeatures2(self.physical, q)
        f = q.features
        self._f12 = vk.VkPhysicalDeviceVulkan12Features(
            storageBuffer8BitAccess=q12.storageBuffer8BitAccess, shaderFloat16=q12.shaderFloat16,
            shaderInt8=q12.shaderInt8)
        self._f11 = vk.VkPhysicalDeviceVulkan11Features(pNext=self._f12,
                                                        storageBuffer16BitAccess=q11.storageBuffer16BitAccess)
        self._f2 = vk.VkPhysicalDeviceFeatures2(pNext=self._f11, features=vk.VkPhysicalDeviceFeatures(
            shaderInt64=f.shaderInt64, shaderFloat64=f.shaderFloat64, shaderInt16=f.shaderInt16))
        return self._f2

    @staticmethod
    def _select(selector, props, names, vk) -> int:
        if selector:
            if selector.isdigit():
                k = int(selector)
                if k >= len(names):
                    raise VulkanUnavailable(f"RELAX_MLIR_VULKAN_DEVICE={selector}: only {len(names)} "
                                            f"device(s): {', '.join(names)}")
                return k
            for k, n in enumerate(names):
                if selector.lower() in n.lower():
                    return k
            raise VulkanUnavailable(f"RELAX_MLIR_VULKAN_DEVICE={selector!r} names no device "
                                    f"(devices: {', '.join(names)})")
        gpus = [k for k, p in enumerate(props) if p.deviceType in (vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
                                                                   vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU)]
        return gpus[0] if gpus else 0

    # -- buffers (alloc / release / find: the BufferPool) --------------------------------
    def _new_buffer(self, size: int) -> Buffer:
        return Buffer(self, size)


class _ReadbackPool(BufferPool):
    """Host-cached buffers the results of a call are copied into before the host reads them."""

    pool_kind = "Vulkan readback"
    pool_error = VulkanError

    def __init__(self, dev: Device, memory_type: int):
        self.dev, self.memory_type = dev, memory_type
        self.name, self.max_alloc = dev.name, dev.max_range
        self.lock = threading.Lock()
        self._init_pool()

    def _new_buffer(self, size: int) -> Buffer:
        return Buffer(self.dev, size, self.memory_type)


_DEVICES: dict[str, Device] = {}
_DEVICES_LOCK = threading.Lock()


def device() -> Device:
    """The process's device for ``RELAX_MLIR_VULKAN_DEVICE`` (created once)."""
    sel = config.device_selection("vulkan")
    with _DEVICES_LOCK:
        if sel not in _DEVICES:
            _DEVICES[sel] = Device(sel or None)
        return _DEVICES[sel]


def available() -> tuple[bool, str]:
    """(True, device name) when a Vulkan device can be used, else (False, why)."""
    try:
        return True, device().name
    except VulkanError as e:
        return False, str(e)


class Kernel:
    """One launch site's compute pipeline (created when the executable is built)."""

    def __init__(self, dev: Device, module, entry: str, kinds: list[str], label: str):
        vk = dev.vk
        self.kinds = kinds
        n = len(kinds)
        bindings = [vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                    for i in range(n)]
        self.set_layout = vk.vkCreateDescriptorSetLayout(dev.device, vk.VkDescriptorSetLayoutCreateInfo(
            bindingCount=n, pBindings=bindings or None), None)
        self.layout = vk.vkCreatePipelineLayout(dev.device, vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1, pSetLayouts=[self.set_layout]), None)
        # the entry name and the stage struct must outlive the call: the bindings copy the
        # nested struct by value and would let a temporary name buffer be freed before it
        self._name = vk.ffi.new("char[]", entry.encode())
        self._stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                         pName=self._name)
        try:
            self.pipeline = vk.vkCreateComputePipelines(dev.device, vk.VK_NULL_HANDLE, 1, [
                vk.VkComputePipelineCreateInfo(stage=self._stage, layout=self.layout)], None)[0]
        except vk.VkError as e:
            raise SpirvError(f"kernel {label}: the Vulkan driver rejected the pipeline "
                             f"({type(e).__name__})") from None


def _shader_module(dev: Device, code: bytes, label: str):
    vk = dev.vk
    if len(code) % 4 or code[:4] != b"\x03\x02\x23\x07":
        raise SpirvError(f"kernel {label}: not a SPIR-V binary ({len(code)} bytes)")
    try:
        return vk.vkCreateShaderModule(dev.device, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)
    except vk.VkError as e:
        raise SpirvError(f"kernel {label}: the Vulkan driver rejected the SPIR-V ({type(e).__name__})") from None


class Recorder(CallHooks):
    """The state of one call on one thread: its command buffer, descriptor sets, buffers."""

    def __init__(self, dev: Device):
        vk = self.vk = dev.vk
        self.dev = dev
        with dev.lock:
            self.cmd = vk.vkAllocateCommandBuffers(dev.device, vk.VkCommandBufferAllocateInfo(
                commandPool=dev.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        self.fence = vk.vkCreateFence(dev.device, vk.VkFenceCreateInfo(), None)
        self.pools: list = []
        self.pool_index = 0
        self.buffers: list[Buffer] = []
        self.readbacks: list[Buffer] = []
        self.error: Optional[BaseException] = None
        self.recorded = 0
        self.dispatches = 0
        self.copies = 0
        self.active = False
        self.arena: Optional[Buffer] = None
        self.arena_used = 0
        self.barrier = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            dstAccessMask=(vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                           | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT))
        self.host_barrier = vk.VkMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)

    def begin(self, session=None) -> None:
        vk = self.vk
        vk.vkResetCommandBuffer(self.cmd, 0)
        vk.vkBeginCommandBuffer(self.cmd, vk.VkCommandBufferBeginInfo(
            flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        for p in self.pools:
            vk.vkResetDescriptorPool(self.dev.device, p, 0)
        self.pool_index = 0
        self.error = None
        self.recorded = self.dispatches = self.copies = 0
        self.arena, self.arena_used = None, 0
        self.active = True

    def alloc(self, nbytes: int) -> int:
        buf = self.dev.alloc(nbytes)
        self.buffers.append(buf)
        return buf.address

    def _descriptor_set(self, kernel: Kernel):
        vk = self.vk
        while True:
            if self.pool_index == len(self.pools):
                self.pools.append(vk.vkCreateDescriptorPool(self.dev.device, vk.VkDescriptorPoolCreateInfo(
                    maxSets=256, poolSizeCount=1, pPoolSizes=[vk.VkDescriptorPoolSize(
                        type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=256 * 16)]), None))
            try:
                return vk.vkAllocateDescriptorSets(self.dev.device, vk.VkDescriptorSetAllocateInfo(
                    descriptorPool=self.pools[self.pool_index], descriptorSetCount=1,
                    pSetLayouts=[kernel.set_layout]))[0]
            except (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool):
                self.pool_index += 1
            except KeyError as e:
                # the package maps VK_ERROR_OUT_OF_POOL_MEMORY with the wrong sign
                # (+1000069000), so a driver's -1000069000 (NVIDIA's, once a pool's sets
                # run out) surfaces as a KeyError of the raw code
                if e.args != (_VK_ERROR_OUT_OF_POOL_MEMORY,):
                    raise VulkanError(f"vkAllocateDescriptorSets failed: VkResult {e.args[0]}") from None
                self.pool_index += 1

    def _scalar(self, kind: str, value: int) -> tuple[Buffer, int, int]:
        if kind in ("index", "i32"):
            if not -2 ** 31 <= value < 2 ** 31:
                raise VulkanError(f"kernel scalar {value} does not fit the device's 32-bit index")
            data, size = int(value).to_bytes(4, "little", signed=True), 4
        elif kind == "f32":
            data, size = (value & 0xFFFFFFFF).to_bytes(4, "little"), 4
        else:
            data, size = (value & (2 ** 64 - 1)).to_bytes(8, "little"), 8
        step = (max(size, _SCALAR_BYTES) + self.dev.offset_align - 1) // self.dev.offset_align * self.dev.offset_align
        if self.arena is None or self.arena_used + step > self.arena.size:
            self.arena = self.dev.alloc(_ARENA_BYTES)
            self.buffers.append(self.arena)
            self.arena_used = 0
        off = self.arena_used
        ctypes.memmove(self.arena.address + off, data, size)
        self.arena_used += step
        return self.arena, off, size

    def launch(self, kernel: Kernel, grid: tuple[int, int, int], args: tuple[int, ...]) -> None:
        vk = self.vk
        if min(grid) <= 0:
            return
        for g, m in zip(grid, self.dev.max_groups):
            if g > m:
                raise VulkanError(f"a dispatch of {grid} workgroups exceeds the device's limit {self.dev.max_groups}")
        ds = self._descriptor_set(kernel)
        infos, moved = [], {}
        for kind, a in zip(kernel.kinds, args):
            if kind == "buffer":
                if a == 0:
                    raise MemoryError("a kernel buffer could not be allocated on the Vulkan device")
                buf, off = self.dev.find(a)
                if off % self.dev.offset_align:
                    buf, off = moved.get(a) or moved.setdefault(a, self._aligned_copy(a, buf.size - off))
                infos.append(vk.VkDescriptorBufferInfo(buffer=buf.handle, offset=off, range=buf.size - off))
            else:
                buf, off, size = self._scalar(kind, a)
                infos.append(vk.VkDescriptorBufferInfo(buffer=buf.handle, offset=off, range=size))
        writes = [vk.VkWriteDescriptorSet(dstSet=ds, dstBinding=i, dstArrayElement=0, descriptorCount=1,
                                          descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, pBufferInfo=[info])
                  for i, info in enumerate(infos)]
        if writes:
            vk.vkUpdateDescriptorSets(self.dev.device, len(writes), writes, 0, None)
        vk.vkCmdBindPipeline(self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline)
        vk.vkCmdBindDescriptorSets(self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, kernel.layout, 0, 1, [ds], 0, None)
        vk.vkCmdDispatch(self.cmd, *grid)
        self.dispatches += 1
        self._barrier()

    def _aligned_copy(self, address: int, nbytes: int) -> tuple[Buffer, int]:
        """A descriptor binds a buffer at multiples of minStorageBufferOffsetAlignment only: a
        view starting elsewhere (rows [begin, end) of a state buffer, relax.state_read) is
        copied (device to device, in the command buffer) into a fresh buffer the kernel reads
        instead. Such views are read-only (a kernel writes into buffers of its own)."""
        dst = self.alloc(nbytes)
        self.copy(address, dst, nbytes)
        return self.dev.find(dst)

    def copy(self, src: int, dst: int, nbytes: int) -> None:
        vk = self.vk
        if nbytes <= 0:
            return
        if self.dev.lookup(src) is None:
            # Host memory (a constant array of the program: relax-gpu-device-constants copies
            # it into a buffer): staged now into a fresh buffer of this call, which no command
            # recorded before can touch, then copied in program order like any other copy.
            staged = self.alloc(nbytes)
            self.dev.upload(self.dev.find(staged)[0], src, nbytes)
            src = staged
        sb, so = self.dev.find(src)
        db, do = self.dev.find(dst)
        vk.vkCmdCopyBuffer(self.cmd, sb.handle, db.handle, 1, [vk.VkBufferCopy(srcOffset=so, dstOffset=do, size=nbytes)])
        self.copies += 1
        self._barrier()

    def reading(self, regions) -> list[int]:
        """Record copies of the results into host-cached buffers where the device's buffers
        are not cached for the host (see Device.readback); the addresses to read them at."""
        pool = self.dev.readback
        if pool is None:
            return [address for address, _ in regions]
        vk, out = self.vk, []
        for address, nbytes in regions:
            found = self.dev.lookup(address) if nbytes else None
            if found is None:       # no device buffer (a host constant) or nothing to read
                out.append(address)
                continue
            buf, off = found
            rb = pool.alloc(nbytes)
            self.readbacks.append(rb)
            vk.vkCmdCopyBuffer(self.cmd, buf.handle, rb.handle, 1,
                               [vk.VkBufferCopy(srcOffset=off, dstOffset=0, size=nbytes)])
            self.recorded += 1
            out.append(rb.address)
        return out

    def _barrier(self) -> None:
        vk = self.vk
        stages = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        vk.vkCmdPipelineBarrier(self.cmd, stages, stages, 0, 1, [self.barrier], 0, None, 0, None)
        self.recorded += 1

    def submit(self) -> None:
        """End the command buffer; submit it once and wait (with a timeout)."""
        vk = self.vk
        stages = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        if self.recorded:
            vk.vkCmdPipelineBarrier(self.cmd, stages, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, [self.host_barrier],
                                    0, None, 0, None)
        vk.vkEndCommandBuffer(self.cmd)
        self.active = False
        if not self.recorded:
            return
        with self.dev.lock:
            vk.vkQueueSubmit(self.dev.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[self.cmd])],
                             self.fence)
        try:
            vk.vkWaitForFences(self.dev.device, 1, [self.fence], vk.VK_TRUE, int(_timeout_s() * 1e9))
        except vk.VkTimeout:
            raise TimeoutError(f"the Vulkan device did not finish the call within {_timeout_s()} s "
                               "(RELAX_MLIR_VULKAN_TIMEOUT_S)") from None
        finally:
            vk.vkResetFences(self.dev.device, 1, [self.fence])

    def abandon(self) -> None:
        if self.active:
            self.vk.vkEndCommandBuffer(self.cmd)
            self.active = False

    def finish(self) -> None:
        """Every buffer of the call back to the pool (the device no longer uses them)."""
        for b in self.buffers:
            self.dev.release(b)
        for b in self.readbacks:
            self.dev.readback.release(b)
        self.buffers, self.readbacks = [], []


class VulkanFunction(StagedFunction):
    """A graph function of a vulkan executable: arguments staged into device buffers, one
    command buffer per call, results read back."""

    target_name = "vulkan"


_ALLOC = ALLOC_FN
_FREE = FREE_FN
_COPY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_LAUNCH_TYPES: dict[int, type] = {}


def _launch_type(n: int) -> type:
    if n not in _LAUNCH_TYPES:
        _LAUNCH_TYPES[n] = ctypes.CFUNCTYPE(None, *([ctypes.c_int64] * n))
    return _LAUNCH_TYPES[n]


class VulkanRuntime:
    """The callbacks one executable's host code calls, and its pipelines."""

    def __init__(self, dev: Device, launches: list[dict], binaries: dict[str, bytes]):
        self.dev = dev
        self.local = threading.local()
        modules = {name: _shader_module(dev, code, f"@{name}") for name, code in binaries.items()}
        self.kernels: dict[int, Kernel] = {}
        for entry in launches:
            name = entry["binary"]
            if name not in modules:
                raise SpirvError(f"launch #{entry['id']}: no SPIR-V binary @{name}")
            self.kernels[entry["id"]] = Kernel(dev, modules[name], entry["entry"], list(entry["args"]),
                                               f"@{name}::@{entry['entry']}")
        self._modules = modules
        #: per executable: calls, command-buffer submissions, dispatches and copies recorded,
        #: results copied into host-cached buffers (Device.readback), arrays copied from the
        #: host into device buffers (arguments staged per call, exe.upload, bind_params) and their bytes
        self.stats = {"calls": 0, "submits": 0, "dispatches": 0, "copies": 0, "readbacks": 0, "uploads": 0,
                      "upload_bytes": 0}
        self._stats_lock = threading.Lock()
        self.callbacks: dict[str, object] = {
            "_mlir_memref_to_llvm_alloc": _ALLOC(self._alloc),
            "_mlir_memref_to_llvm_free": _FREE(self._free),
            "relax_vk_copy": _COPY(self._copy),
        }
        for entry in launches:
            kid = entry["id"]
            self.callbacks[f"relax_vk_launch_{kid}"] = _launch_type(3 + len(entry["args"]))(self._launcher(kid))

    def count(self, rec: Recorder, uploads: int, upload_bytes: int) -> None:
        add_stats(self, calls=1, submits=1 if rec.recorded else 0, dispatches=rec.dispatches, copies=rec.copies,
                  readbacks=len(rec.readbacks), uploads=uploads, upload_bytes=upload_bytes)

    def recorder(self) -> Recorder:
        rec = getattr(self.local, "recorder", None)
        if rec is None:
            rec = self.local.recorder = Recorder(self.dev)
        return rec

    def _current(self) -> Optional[Recorder]:
        return getattr(self.local, "rec", None)

    def _fail(self, rec: Optional[Recorder], e: BaseException) -> None:
        if rec is not None and rec.error is None:
            rec.error = e

    # Callbacks never raise (an exception cannot cross the JIT-compiled frames): the
    # first failure is kept and raised when the host function returns.
    def _alloc(self, nbytes: int) -> int:
        rec = self._current()
        if rec is None:
            return 0
        try:
            return rec.alloc(max(int(nbytes), 4))
        except MemoryError:
            return 0  # the compiled allocation check reports it as a MemoryError
        except BaseException as e:  # noqa: BLE001
            self._fail(rec, e)
            return 0

    def _free(self, ptr) -> None:
        return None  # the call's buffers go back to the pool once the device is done

    def _copy(self, src: int, dst: int, nbytes: int) -> None:
        rec = self._current()
        try:
            if rec is None:
                raise VulkanError("relax_vk_copy called outside a call")
            if rec.error is None:
                rec.copy(src, dst, nbytes)
        except BaseException as e:  # noqa: BLE001
            self._fail(rec, e)

    def _launcher(self, kid: int):
        kernel = None

        def launch(*values):
            nonlocal kernel
            rec = self._current()
            try:
                if rec is None:
                    raise VulkanError("a kernel launch outside a call")
                if rec.error is None:
                    kernel = kernel or self.kernels[kid]
                    rec.launch(kernel, values[:3], values[3:])
            except BaseException as e:  # noqa: BLE001
                self._fail(rec, e)
        return launch


class VulkanExecutable(DeviceExecutable):
    """An Executable whose functions run on a Vulkan device (see the module docstring)."""

    function_class = VulkanFunction

    @property
    def vulkan_stats(self) -> dict:
        """Calls, command-buffer submissions (one per call that launched anything),
        dispatches and buffer copies recorded so far."""
        return dict(self._runtime.stats)

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
    from .executable import runtime_libraries
    from .jit import EngineResolver, build_engine

    dev = device()
    launches, binaries = take_kernels(module)
    runtime = VulkanRuntime(dev, launches, binaries)
    engine = build_engine(module, options.opt_level, runtime_libraries() + list(libraries), runtime.callbacks)
    exe = VulkanExecutable(EngineResolver(engine, module.context, module), metadata, runtime,
                           libraries=libraries)
    exe._runtime_callbacks = runtime.callbacks  # outlive the engine's code
    return exe


__all__ = ["VulkanError", "VulkanUnavailable", "SpirvError", "DeviceArray", "VulkanExecutable", "available",
           "device", "vulkan_runtime"]
