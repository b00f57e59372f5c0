"""The Vulkan device: selection (``RELAX_MLIR_VULKAN_DEVICE``), limits, the compute queue and
the memory types; the device is the pool of its buffers (:mod:`.memory`). One per selector
per process (:func:`device`)."""

from __future__ import annotations

import ctypes
import threading
from typing import Optional

from ... import config
from ..gpu_shared import BufferPool, DeviceCache
from .driver import VulkanError, VulkanUnavailable, _timeout_s, _vk
from .memory import Buffer, _ReadbackPool


#: vendors whose compute shaders run at the subgroup size the device reports (NVIDIA: 32;
#: Mesa's lavapipe: its SIMD width) even when no pipeline requires one. Others may pick another
#: size per shader (AMD wave32 / wave64, Intel SIMD8/16/32): there a size is known only where
#: the pipelines can require it (VK_EXT_subgroup_size_control)
FIXED_SUBGROUP_VENDORS = (0x10DE, 0x10005)
#: the size pipelines are required to run at, clamped into the device's [min, max]: the
#: warp width the GPU rules' defaults were tuned for on cuda; wave32 on AMD RDNA (whose
#: drivers report 64 as the default subgroupSize; GCN: min = max = 64), Intel's widest
#: (8-32), lavapipe's only one (8), Adreno's narrowest (64)
PREFERRED_SUBGROUP_SIZE = 32
#: the Vulkan versions the instance asks for: the loader's own (vkEnumerateInstanceVersion)
#: clamped into [MIN, MAX]: 1.3 makes subgroup size control core (a 1.3 device need not list
#: VK_EXT_subgroup_size_control); 1.2 is what a loader without that query is asked for
MIN_API_VERSION = (1, 2)
MAX_API_VERSION = (1, 3)
#: the most bytes one staging / read-back buffer carries of an upload or a download outside a
#: call (the staged path); larger arrays move in chunks
STAGING_CHUNK = 16 << 20


def _chunks(nbytes: int):
    """(offset, size) of each staged transfer of ``nbytes``: at most STAGING_CHUNK each."""
    return ((off, min(STAGING_CHUNK, nbytes - off)) for off in range(0, max(nbytes, 0), STAGING_CHUNK))


def instance_api_version(loader: Optional[tuple[int, int]]) -> tuple[int, int]:
    """(major, minor) the instance asks for, given the loader's version (None: a 1.0 loader
    without vkEnumerateInstanceVersion)."""
    return max(MIN_API_VERSION, min(loader or MIN_API_VERSION, MAX_API_VERSION))


def subgroup_size_control(instance: tuple[int, int], device: tuple[int, int], extension: bool) -> tuple[bool, bool]:
    """(whether the subgroup size control structs may be queried and enabled, whether
    VK_EXT_subgroup_size_control must be enabled for that). Core where the device and the
    instance are both 1.3 or later (the promoted structs and enums are the extension's, same
    sType values); else only through the extension, where the device lists it."""
    if min(instance, device) >= (1, 3):
        return True, False
    return extension, extension


def choose_subgroup_size(vendor: int, *, size: int, shuffle: bool, control: bool, min_size: int, max_size: int,
                         required_stages: bool, **_) -> tuple[Optional[int], bool]:
    """(subgroup size the kernels may be compiled for, whether pipelines must require it).

    No size without subgroup shuffles in compute shaders. With VK_EXT_subgroup_size_control
    (the feature, compute among requiredSubgroupSizeStages, a valid [min, max]): required,
    PREFERRED_SUBGROUP_SIZE clamped into [min, max] (powers of two by the spec). Without it:
    the reported size for FIXED_SUBGROUP_VENDORS only, not required; else None (the GPU
    rules then build no shuffles: no GEMV, no fused decode attention)."""
    if not shuffle or size < 1:
        return None, False
    if control and required_stages and 1 <= min_size <= max_size:
        return min(max(PREFERRED_SUBGROUP_SIZE, min_size), max_size), True
    if vendor in FIXED_SUBGROUP_VENDORS:
        return size, False
    return None, False


class Device(BufferPool):
    """A logical device on one physical device, its compute queue and its buffer pool."""

    pool_kind = "Vulkan"
    FIXED_SUBGROUP_VENDORS = FIXED_SUBGROUP_VENDORS
    pool_error = VulkanError

    def __init__(self, selector: Optional[str] = None, staging: str = "auto"):
        vk = self.vk = _vk()
        try:
            loader = vk.vkEnumerateInstanceVersion()
            loader = (vk.VK_VERSION_MAJOR(loader), vk.VK_VERSION_MINOR(loader))
        except Exception:  # noqa: BLE001 - a Vulkan 1.0 loader has no vkEnumerateInstanceVersion
            loader = None
        #: (major, minor) of the instance: the loader's, clamped into [1.2, 1.3]
        self.instance_version = instance_api_version(loader)
        try:
            self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
                pApplicationInfo=vk.VkApplicationInfo(pApplicationName="relax-mlir", applicationVersion=1,
                                                      pEngineName="relax-mlir", engineVersion=1,
                                                      apiVersion=vk.VK_MAKE_VERSION(*self.instance_version, 0))),
                None)
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
        v = int(props[k].apiVersion)
        #: (major, minor) the device supports (its features beyond the instance's are unusable)
        self.api_version = (vk.VK_VERSION_MAJOR(v), vk.VK_VERSION_MINOR(v))
        limits = props[k].limits
        self.max_range = int(limits.maxStorageBufferRange)
        self.max_groups = [int(limits.maxComputeWorkGroupCount[i]) for i in range(3)]
        self.offset_align = max(int(limits.minStorageBufferOffsetAlignment), 4)
        #: invocations per workgroup and workgroup memory (bytes): relax_mlir.target.Target's limits
        self.max_invocations = int(limits.maxComputeWorkGroupInvocations)
        self.shared_memory = int(limits.maxComputeSharedMemorySize)
        self.vendor = "0x%04x" % int(props[k].vendorID)
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        fam = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not fam:
            raise VulkanUnavailable(f"device '{self.name}' has no compute queue")
        self.family = fam[0]
        sg = self._subgroup_properties(vk)
        #: the subgroup width when compute shaders may shuffle within it (the GPU rules' GEMV,
        #: quantized GEMV and decode attention reduce with gpu.shuffle at exactly this width),
        #: else None; with require_subgroup_size every pipeline of a kernel that uses subgroup
        #: operations is created with this size required (see choose_subgroup_size)
        self.subgroup_size, self.require_subgroup_size = choose_subgroup_size(int(props[k].vendorID), **sg)
        #: the most subgroups per workgroup at a required size (maxComputeWorkgroupSubgroups)
        self.max_workgroup_subgroups = sg["max_workgroup_subgroups"]
        #: whether such pipelines can also require full subgroups (computeFullSubgroups)
        self.full_subgroups = self.require_subgroup_size and sg["full_subgroups"]
        features = self._features(vk, self.require_subgroup_size, self.full_subgroups)
        self._priorities = vk.ffi.new("float[]", [1.0])
        self._queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1,
                                                      pQueuePriorities=self._priorities)
        extensions = ([vk.VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME]
                      if self.require_subgroup_size and self.size_control_extension else [])
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            pNext=features, queueCreateInfoCount=1, pQueueCreateInfos=[self._queue_info],
            enabledExtensionCount=len(extensions), ppEnabledExtensionNames=extensions or None), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self._choose_memory(vk, staging)
        self.command_pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            queueFamilyIndex=self.family, flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT), None)
        self.lock = threading.Lock()      # queue submission, command pool, buffer pool
        self._transfer_lock = threading.Lock()
        self._transfer = None             # (command buffer, fence) of uploads outside a call
        #: device-pool buffers mapped for the host (0 on the staged path, where none is) and
        #: the staged path's transfers outside calls: uploads (+ bytes), fills, downloads
        self.device_maps = 0
        self.transfer_stats = {"uploads": 0, "upload_bytes": 0, "fills": 0, "downloads": 0}
        self._init_pool()

    def _choose_memory(self, vk, staging: str) -> None:
        """The memory types of the device pool, of the read-back pool and of the staging pool.

        Direct (no staging): a HOST_VISIBLE + HOST_COHERENT type, DEVICE_LOCAL too where the
        device has one (lavapipe, integrated GPUs, resizable BAR); the host writes arguments
        and reads results through the buffers' mappings. Staged (``staging`` 'on', or 'auto'
        on a device with a DEVICE_LOCAL type that is not HOST_VISIBLE: a discrete GPU without
        resizable BAR, whose host-visible device memory is a 256 MiB window): the device pool
        takes a DEVICE_LOCAL type (device-only preferred) and is never mapped; data moves
        through host-visible staging and read-back buffers by copies on the device."""
        mem = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        local_bit, visible = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
        want = visible | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        cached = vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
        types = [(i, mem.memoryTypes[i].propertyFlags) for i in range(mem.memoryTypeCount)]
        ok = [i for i, f in types if f & want == want]
        if not ok:
            raise VulkanUnavailable(f"device '{self.name}' has no host-visible coherent memory")
        local = [i for i in ok if types[i][1] & local_bit]
        device_only = [i for i, f in types if f & local_bit and not f & visible]
        #: the memory type flags of each type (tests and messages)
        self.memory_types = [int(f) for _, f in types]
        #: whether device buffers are device-only memory moved by staging copies
        self.staged = staging == "on" or (staging == "auto" and bool(device_only))
        #: host-visible buffers the host writes for the device to copy from (staged path only)
        self.staging: Optional[_ReadbackPool] = None
        #: results are read back through host-cached memory when the buffers' memory is not
        #: cached: a discrete GPU's DEVICE_LOCAL + HOST_VISIBLE memory (resizable BAR) is
        #: fast for kernels and for the host's writes, but the host reads it uncached (tens of
        #: MB/s measured on an H100), so each call copies its results into a cached buffer
        #: (vkCmdCopyBuffer, in the call's command buffer) and reads them there; the staged
        #: path always reads back that way
        self.readback: Optional[_ReadbackPool] = None
        host_cached = [i for i in ok if types[i][1] & cached]
        if self.staged:
            self.memory_type = (device_only or [i for i, f in types if f & local_bit] or ok)[0]
            system = [i for i in ok if not types[i][1] & local_bit]
            self.staging = _ReadbackPool(self, (system or ok)[0], "Vulkan staging")
            self.readback = _ReadbackPool(self, (host_cached or ok)[0])
        else:
            self.memory_type = (local or ok)[0]
            if not types[self.memory_type][1] & cached and host_cached:
                self.readback = _ReadbackPool(self, host_cached[0])
        heap = mem.memoryHeaps[mem.memoryTypes[self.memory_type].heapIndex]
        self.max_alloc = min(int(heap.size), self.max_range)

    def host_pools(self) -> list:
        """The pools of host-visible buffers besides the device pool (read-back, staging)."""
        return [p for p in (self.readback, self.staging) if p is not None]

    def allocations(self) -> int:
        """Vulkan buffers made so far in every pool of the device (a pool miss each)."""
        return self.created + sum(p.created for p in self.host_pools())

    # -- transfers outside a call (the staged path) ----------------------------------------
    def _one_shot(self, record) -> None:
        """Record ``record(cmd)`` into the device's transfer command buffer, submit it, wait."""
        vk = self.vk
        with self._transfer_lock:
            if self._transfer is None:
                with self.lock:
                    cmd = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
                        commandPool=self.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                        commandBufferCount=1))[0]
                self._transfer = (cmd, vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None))
            cmd, fence = self._transfer
            vk.vkResetCommandBuffer(cmd, 0)
            vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
            record(cmd)
            stages = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
            vk.vkCmdPipelineBarrier(cmd, stages, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, [vk.VkMemoryBarrier(
                srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)],
                0, None, 0, None)
            vk.vkEndCommandBuffer(cmd)
            with self.lock:
                vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cmd])], fence)
            try:
                vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, int(_timeout_s() * 1e9))
            except vk.VkTimeout:
                raise TimeoutError(f"the Vulkan device did not finish a transfer within {_timeout_s()} s "
                                   "(RELAX_MLIR_VULKAN_TIMEOUT_S)") from None
            finally:
                vk.vkResetFences(self.device, 1, [fence])

    def upload(self, buf, host: int, nbytes: int) -> None:
        """Copy ``nbytes`` from host memory into ``buf`` (exe.upload, bind_params, state
        writes): through the mapping, or on the staged path through a staging buffer and a
        copy on the device, in chunks of at most STAGING_CHUNK bytes (one submission each: the
        staging pool keeps no weight-sized buffer)."""
        if not self.staged:
            return super().upload(buf, host, nbytes)
        vk = self.vk
        for off, n in _chunks(nbytes):
            sb = self.staging.alloc(n)
            try:
                ctypes.memmove(sb.address, host + off, n)
                self._one_shot(lambda cmd: vk.vkCmdCopyBuffer(cmd, sb.handle, buf.handle, 1,
                                                              [vk.VkBufferCopy(srcOffset=0, dstOffset=off, size=n)]))
            finally:
                self.staging.release(sb)
        with self.lock:
            self.transfer_stats["uploads"] += 1
            self.transfer_stats["upload_bytes"] += nbytes

    def download(self, host: int, buf, nbytes: int) -> None:
        """Copy ``nbytes`` of ``buf`` to host memory (``sess.state[name]``, DeviceArray.numpy):
        on the staged path through read-back buffers the device copies into (in chunks)."""
        if not self.staged:
            return super().download(host, buf, nbytes)
        vk = self.vk
        for off, n in _chunks(nbytes):
            rb = self.readback.alloc(n)
            try:
                self._one_shot(lambda cmd: vk.vkCmdCopyBuffer(cmd, buf.handle, rb.handle, 1,
                                                              [vk.VkBufferCopy(srcOffset=off, dstOffset=0, size=n)]))
                ctypes.memmove(host + off, rb.address, n)
            finally:
                self.readback.release(rb)
        with self.lock:
            self.transfer_stats["downloads"] += 1

    def zero(self, buf, nbytes: int) -> None:
        """Zero the first ``nbytes`` of ``buf`` (session state, reset_state): on the staged
        path a vkCmdFillBuffer, no host data."""
        if not self.staged:
            return super().zero(buf, nbytes)
        vk = self.vk
        size = (nbytes + 3) // 4 * 4           # vkCmdFillBuffer: a multiple of 4 (buffers are)
        self._one_shot(lambda cmd: vk.vkCmdFillBuffer(cmd, buf.handle, 0, size, 0))
        with self.lock:
            self.transfer_stats["fills"] += 1

    def _subgroup_properties(self, vk) -> dict:
        """The raw subgroup facts of the physical device, as choose_subgroup_size takes them
        (the size control ones only where subgroup_size_control allows them: Vulkan 1.3 on
        both sides, else VK_EXT_subgroup_size_control, which the device then enables). Sets
        ``size_control_extension``: whether that takes the extension."""
        out = dict(size=0, shuffle=False, control=False, min_size=0, max_size=0, required_stages=False,
                   full_subgroups=False, max_workgroup_subgroups=0)
        exts = {e.extensionName if isinstance(e.extensionName, str) else vk.ffi.string(e.extensionName).decode()
                for e in vk.vkEnumerateDeviceExtensionProperties(self.physical, None)}
        has_ext, self.size_control_extension = subgroup_size_control(
            self.instance_version, self.api_version, vk.VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME in exts)
        try:
            ctl = vk.VkPhysicalDeviceSubgroupSizeControlProperties()
            sg = vk.VkPhysicalDeviceSubgroupProperties(**({"pNext": ctl} if has_ext else {}))
            vk.vkGetPhysicalDeviceProperties2(self.physical, vk.VkPhysicalDeviceProperties2(pNext=sg))
            feat = vk.VkPhysicalDeviceSubgroupSizeControlFeatures()
            if has_ext:
                vk.vkGetPhysicalDeviceFeatures2(self.physical, vk.VkPhysicalDeviceFeatures2(pNext=feat))
        except Exception:  # noqa: BLE001 - a Vulkan 1.0 driver: no subgroup properties
            return out
        compute = vk.VK_SHADER_STAGE_COMPUTE_BIT
        out.update(size=int(sg.subgroupSize),
                   shuffle=bool(sg.supportedOperations & vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT
                                and sg.supportedStages & compute))
        if has_ext:
            out.update(control=bool(feat.subgroupSizeControl), min_size=int(ctl.minSubgroupSize),
                       max_size=int(ctl.maxSubgroupSize),
                       required_stages=bool(ctl.requiredSubgroupSizeStages & compute),
                       full_subgroups=bool(feat.computeFullSubgroups),
                       max_workgroup_subgroups=int(ctl.maxComputeWorkgroupSubgroups))
        return out

    def _features(self, vk, size_control: bool, full_subgroups: bool):
        """The optional features the kernels' SPIR-V capabilities need (64-bit and 16-bit
        scalars, 8/16-bit storage: i64, f64, f16, booleans as bytes), enabled where the
        device has them; a kernel needing a missing one fails at pipeline creation. Where
        choose_subgroup_size requires a size, also subgroupSizeControl (and
        computeFullSubgroups where the device has it)."""
        q12 = vk.VkPhysicalDeviceVulkan12Features()
        q11 = vk.VkPhysicalDeviceVulkan11Features(pNext=q12)
        q = vk.VkPhysicalDeviceFeatures2(pNext=q11)
        vk.vkGetPhysicalDeviceFeatures2(self.physical, q)
        f = q.features
        self._fsg = vk.VkPhysicalDeviceSubgroupSizeControlFeatures(
            subgroupSizeControl=vk.VK_TRUE, computeFullSubgroups=full_subgroups) if size_control else None
        self._f12 = vk.VkPhysicalDeviceVulkan12Features(
            **({"pNext": self._fsg} if size_control else {}), storageBuffer8BitAccess=q12.storageBuffer8BitAccess,
            shaderFloat16=q12.shaderFloat16, shaderInt8=q12.shaderInt8)
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
        if not self.staged:
            self.device_maps += 1
        return Buffer(self, size, mapped=not self.staged)


class _Devices(DeviceCache):
    """The process's devices, one per (``RELAX_MLIR_VULKAN_DEVICE``,
    ``RELAX_MLIR_VULKAN_STAGING``): a direct and a staged logical device on the same physical
    device may live side by side (an executable keeps the one it was compiled with)."""

    def __call__(self, staging: Optional[str] = None):
        sel = config.device_selection(self.kind)
        staging = staging or config.vulkan_staging()
        with self._lock:
            if (sel, staging) not in self._devices:
                self._devices[(sel, staging)] = self.factory(sel or None, staging)
            return self._devices[(sel, staging)]


#: ``device()``: the process's device for ``RELAX_MLIR_VULKAN_DEVICE`` and
#: ``RELAX_MLIR_VULKAN_STAGING`` (created once each; ``device(staging="on")`` overrides the latter).
device = _Devices("vulkan", Device)


def available() -> tuple[bool, str]:
    """(True, device name) when a Vulkan device can be used, else (False, why)."""
    try:
        return True, device().name
    except VulkanError as e:
        return False, str(e)
