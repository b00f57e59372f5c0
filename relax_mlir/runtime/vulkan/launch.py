"""Vulkan launches: a launch site's compute pipeline (:class:`Kernel`), the per-call command
buffer every dispatch and copy is recorded into (:class:`Recorder`), and the callbacks the
host code calls (:class:`VulkanRuntime`: allocation, ``relax_vk_copy``,
``relax_vk_launch_<id>``)."""

from __future__ import annotations

import ctypes
import struct
import threading
from typing import Optional

from ..gpu_shared import ALLOC_FN, FREE_FN, CallHooks, DeferredChecks, DeferredFailure, add_stats
from .device import Device
from .driver import SpirvError, VulkanError, _VK_ERROR_OUT_OF_POOL_MEMORY, _timeout_s
from .memory import _ARENA_BYTES, _SCALAR_BYTES, Buffer

#: relax-lower-host's deferred relax.check_indices (transforms/lower_host/function.py)
CHECK_INDICES_FN = "relax_gpu_check_indices"


#: SPIR-V capabilities GroupNonUniform ... GroupNonUniformQuad (61-68): a module declaring one
#: uses subgroup operations, whose results depend on the subgroup size
_SUBGROUP_CAPABILITIES = range(61, 69)
_OP_CAPABILITY, _OP_ENTRY_POINT, _OP_EXECUTION_MODE, _LOCAL_SIZE = 17, 15, 16, 17


class ShaderModule:
    """A VkShaderModule and what pipeline creation needs to know of its SPIR-V: whether it
    uses subgroup operations, and each entry point's workgroup size (LocalSize)."""

    def __init__(self, handle, code: bytes):
        self.handle = handle
        self.subgroup_ops, self.local_sizes = spirv_facts(code)


def spirv_facts(code: bytes) -> tuple[bool, dict[str, tuple[int, int, int]]]:
    """(declares a GroupNonUniform* capability, {entry point name: LocalSize}) of a SPIR-V
    binary (little-endian words, as MLIR serializes it)."""
    words = struct.unpack(f"<{len(code) // 4}I", code)
    subgroup, names, sizes = False, {}, {}
    i = 5                                       # past the header
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        if n == 0:
            break
        if op == _OP_CAPABILITY and words[i + 1] in _SUBGROUP_CAPABILITIES:
            subgroup = True
        elif op == _OP_ENTRY_POINT:
            raw = struct.pack(f"<{n - 3}I", *words[i + 3:i + n])
            names[words[i + 2]] = raw[:raw.index(b"\0")].decode()
        elif op == _OP_EXECUTION_MODE and words[i + 2] == _LOCAL_SIZE:
            sizes[words[i + 1]] = tuple(words[i + 3:i + 6])
        i += n
    return subgroup, {name: sizes.get(fid, (1, 1, 1)) for fid, name in names.items()}


class Kernel:
    """One launch site's compute pipeline (created when the executable is built).

    Where the device requires the subgroup size (``Device.require_subgroup_size``:
    VK_EXT_subgroup_size_control), the pipeline of a kernel that uses subgroup operations is
    created with ``VkPipelineShaderStageRequiredSubgroupSizeCreateInfo`` at the size the
    kernels were compiled for (``required_subgroup_size``), and with full subgroups where the
    device allows it and the workgroup's x size is a multiple of it (``full_subgroups``), so
    that the kernels' lane (thread id modulo the subgroup size) is the subgroup lane."""

    def __init__(self, dev: Device, module: ShaderModule, entry: str, kinds: list[str], label: str):
        vk = dev.vk
        self.kinds = kinds
        self.label = label     # the launch site (module::kernel), for diagnostics and tests
        n = len(kinds)
        bindings = [vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                    for i in range(n)]
        self.set_layout = vk.vkCreateDescriptorSetLayout(dev.device, vk.VkDescriptorSetLayoutCreateInfo(
            bindingCount=n, pBindings=bindings or None), None)
        self.layout = vk.vkCreatePipelineLayout(dev.device, vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1, pSetLayouts=[self.set_layout]), None)
        self.required_subgroup_size: Optional[int] = None
        self.full_subgroups = False
        extra = self._subgroup_requirement(dev, module, entry, label)
        # the entry name and the stage struct must outlive the call: the bindings copy the
        # nested struct by value and would let a temporary name buffer be freed before it
        self._name = vk.ffi.new("char[]", entry.encode())
        self._stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module.handle,
                                                         pName=self._name, **extra)
        try:
            self.pipeline = vk.vkCreateComputePipelines(dev.device, vk.VK_NULL_HANDLE, 1, [
                vk.VkComputePipelineCreateInfo(stage=self._stage, layout=self.layout)], None)[0]
        except vk.VkError as e:
            raise SpirvError(f"kernel {label}: the Vulkan driver rejected the pipeline "
                             f"({type(e).__name__})") from None

    def _subgroup_requirement(self, dev: Device, module: ShaderModule, entry: str, label: str) -> dict:
        """The stage's pNext and flags requiring the subgroup size, or {} (none needed)."""
        if not (dev.require_subgroup_size and module.subgroup_ops):
            return {}
        vk, size = dev.vk, dev.subgroup_size
        x, y, z = module.local_sizes.get(entry, (1, 1, 1))
        if x * y * z > dev.max_workgroup_subgroups * size:
            if int(dev.vendor, 16) in dev.FIXED_SUBGROUP_VENDORS:
                return {}                   # it runs at the reported size anyway
            raise SpirvError(f"kernel {label}: a workgroup of {x * y * z} invocations exceeds the device's "
                             f"maxComputeWorkgroupSubgroups ({dev.max_workgroup_subgroups}) x the required "
                             f"subgroup size ({size})")
        self.required_subgroup_size = size
        self.full_subgroups = bool(dev.full_subgroups and x % size == 0)
        self._required = vk.VkPipelineShaderStageRequiredSubgroupSizeCreateInfo(requiredSubgroupSize=size)
        flags = vk.VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT if self.full_subgroups else 0
        return {"pNext": self._required, "flags": flags}


def _shader_module(dev: Device, code: bytes, label: str) -> ShaderModule:
    vk = dev.vk
    if len(code) % 4 or code[:4] != b"\x03\x02\x23\x07":
        raise SpirvError(f"kernel {label}: not a SPIR-V binary ({len(code)} bytes)")
    try:
        handle = vk.vkCreateShaderModule(dev.device, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)
    except vk.VkError as e:
        raise SpirvError(f"kernel {label}: the Vulkan driver rejected the SPIR-V ({type(e).__name__})") from None
    return ShaderModule(handle, code)


class Recorder(CallHooks, DeferredChecks):
    """The state of one call on one thread: its command buffer, descriptor sets, buffers.

    Deferred index checks (:class:`DeferredChecks`) are resolved after the call's one
    submission, except when a command that may write a session state buffer is recorded
    while one is pending: the commands so far are submitted first and the checks read,
    so that a failed check leaves the state as the cpu target does (nothing after the
    failed check runs; the rest of the call is not recorded)."""

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
        #: host-visible staging buffers of the call (staged path: arguments, constants, scalars)
        self.stagings: list[Buffer] = []
        self.staged_in = self.staged_bytes = self.readback_bytes = 0
        self.allocations_before = 0
        self.error: Optional[BaseException] = None
        self.recorded = 0
        self.dispatches = 0
        self.copies = 0
        self.active = False
        self.submits = 0
        self.state_buffers: set[int] = set()
        self.reset_checks()
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
        self.recorded = self.dispatches = self.copies = self.submits = 0
        self.staged_in = self.staged_bytes = self.readback_bytes = 0
        self.allocations_before = self.dev.allocations()
        self.arena, self.arena_used = None, 0
        self.reset_checks()
        state = getattr(session, "state", None)
        self.state_buffers = {b.buffer.address for b in getattr(state, "buffers", {}).values()}
        self.active = True

    def device_copy(self, src: int, dst: int, nbytes: int) -> None:
        self.copy(src, dst, nbytes)

    def _guard_state(self, addresses) -> None:
        """Before a command that may write a state buffer: resolve the pending index checks
        (one more submission); a failed one becomes the call's error."""
        if not self.deferred or not self.state_buffers:
            return
        for a in addresses:
            found = self.dev.lookup(a)
            if found is not None and found[0].address in self.state_buffers:
                break
        else:
            return
        regions = self.regions()
        addrs = self.reading(regions)
        self.submit()
        failed = self.failure(addrs)
        if failed is not None:
            raise DeferredFailure(*failed)
        vk = self.vk
        vk.vkResetCommandBuffer(self.cmd, 0)
        vk.vkBeginCommandBuffer(self.cmd, vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        self.recorded = 0
        self.active = True

    def alloc(self, nbytes: int) -> int:
        buf = self.dev.alloc(nbytes)
        self.buffers.append(buf)
        return buf.address

    def _staging_buffer(self, nbytes: int) -> Buffer:
        """A host-visible buffer of the device's staging pool, held until the call finishes."""
        sb = self.dev.staging.alloc(nbytes)
        self.stagings.append(sb)
        return sb

    def write(self, address: int, host: int, nbytes: int) -> None:
        """Copy an argument into its device buffer: through the mapping (direct), or into a
        staging buffer and by a copy recorded now, before any dispatch of the call (staged)."""
        if not self.dev.staged:
            return super().write(address, host, nbytes)
        if nbytes <= 0:
            return
        vk = self.vk
        sb = self._staging_buffer(nbytes)
        ctypes.memmove(sb.address, host, nbytes)
        db, do = self.dev.find(address)
        vk.vkCmdCopyBuffer(self.cmd, sb.handle, db.handle, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=do, size=nbytes)])
        self.staged_in += 1
        self.staged_bytes += nbytes
        self._barrier()

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
            # staged: the scalars live in a host-visible staging buffer the kernels read
            # (a few bytes each), never in a device buffer the host would have to map
            self.arena = self._staging_buffer(_ARENA_BYTES) if self.dev.staged else self.dev.alloc(_ARENA_BYTES)
            if not self.dev.staged:
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
        self._guard_state([a for kind, a in zip(kernel.kinds, args) if kind == "buffer" and a])
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
        self._guard_state([dst])
        if self.dev.lookup(src) is None:
            # Host memory (a constant array of the program: relax-gpu-device-constants copies
            # it into a buffer): staged now into a fresh buffer of this call, which no command
            # recorded before can touch, then copied in program order like any other copy.
            if self.dev.staged:
                sb, so = self._staging_buffer(nbytes), 0
                ctypes.memmove(sb.address, src, nbytes)
            else:
                staged = self.alloc(nbytes)
                self.dev.upload(self.dev.find(staged)[0], src, nbytes)
                sb, so = self.dev.find(staged)
        else:
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
            self.readback_bytes += nbytes
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
        self.submits += 1
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
        for b in self.stagings:
            self.dev.staging.release(b)
        self.buffers, self.readbacks, self.stagings = [], [], []


_ALLOC = ALLOC_FN
_FREE = FREE_FN
_COPY = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_CHECK_INDICES = ctypes.CFUNCTYPE(None, *([ctypes.c_int64] * 8))
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
        #: pipelines created with the device's subgroup size required (and with full subgroups)
        self.required_subgroup_pipelines = sum(k.required_subgroup_size is not None for k in self.kernels.values())
        self.full_subgroup_pipelines = sum(k.full_subgroups for k in self.kernels.values())
        #: per executable: calls, command-buffer submissions, dispatches and copies recorded,
        #: results copied into host-cached buffers (Device.readback) and their bytes, arrays
        #: copied from the host into device buffers (arguments staged per call, exe.upload,
        #: bind_params) and their bytes; on the staged path the arguments' copies from staging
        #: buffers (``staged_in``, ``staged_bytes``); Vulkan buffers created during calls
        #: (``allocations``: pool misses of the device, read-back and staging pools)
        self.stats = {"calls": 0, "submits": 0, "dispatches": 0, "copies": 0, "readbacks": 0, "readback_bytes": 0,
                      "uploads": 0, "upload_bytes": 0, "staged_in": 0, "staged_bytes": 0, "allocations": 0}
        self._stats_lock = threading.Lock()
        self.callbacks: dict[str, object] = {
            "_mlir_memref_to_llvm_alloc": _ALLOC(self._alloc),
            "_mlir_memref_to_llvm_free": _FREE(self._free),
            "relax_vk_copy": _COPY(self._copy),
            CHECK_INDICES_FN: _CHECK_INDICES(self._check_indices),
        }
        for entry in launches:
            kid = entry["id"]
            self.callbacks[f"relax_vk_launch_{kid}"] = _launch_type(3 + len(entry["args"]))(self._launcher(kid))

    def count(self, rec: Recorder, uploads: int, upload_bytes: int) -> None:
        add_stats(self, calls=1, submits=rec.submits, dispatches=rec.dispatches, copies=rec.copies,
                  readbacks=len(rec.readbacks), readback_bytes=rec.readback_bytes, uploads=uploads,
                  upload_bytes=upload_bytes, staged_in=rec.staged_in, staged_bytes=rec.staged_bytes,
                  allocations=self.dev.allocations() - rec.allocations_before)

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

    def _check_indices(self, *args) -> None:
        rec = self._current()
        try:
            if rec is None:
                raise VulkanError(f"{CHECK_INDICES_FN} called outside a call")
            if rec.error is None:
                rec.defer(*args)
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
