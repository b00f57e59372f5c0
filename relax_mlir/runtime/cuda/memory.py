"""CUDA memory: device buffers (``cuMemAlloc``, pooled by the device:
:class:`~relax_mlir.runtime.gpu_shared.BufferPool`) and what one session's calls use on the
device: a stream and the call arena the compiled allocation carves call buffers from."""

from __future__ import annotations

from typing import Optional


class DeviceBuffer:
    """One ``cuMemAlloc`` allocation (kept for the life of the process, pooled)."""

    __slots__ = ("address", "size")

    def __init__(self, address: int, size: int):
        self.address, self.size = address, size


class _SessionResources:
    """What one session's calls use on the device: a stream and the call arena."""

    def __init__(self, dev):  # dev: a device.CudaDevice
        self.dev = dev
        self.stream = dev.new_stream()
        self.arena: Optional[DeviceBuffer] = None
        self.cublas: Optional[DeviceBuffer] = None

    def cublas_workspace(self, nbytes: int) -> DeviceBuffer:
        """The session's cuBLAS workspace (a pool buffer, made on first use)."""
        if self.cublas is None or self.cublas.size < nbytes:
            if self.cublas is not None:
                self.dev.release(self.cublas)
            self.cublas = None
            self.cublas = self.dev.alloc(nbytes)
        return self.cublas

    def reserve(self, nbytes: int) -> None:
        """An arena of at least ``nbytes`` (a pool buffer: sizes in powers of two)."""
        if nbytes and (self.arena is None or self.arena.size < nbytes):
            old, self.arena = self.arena, None
            if old is not None:
                self.dev.release(old)
            self.arena = self.dev.alloc(nbytes)

    def close(self) -> None:
        if self.cublas is not None:
            self.dev.release(self.cublas)
            self.cublas = None
        if self.arena is not None:
            self.dev.release(self.arena)
            self.arena = None
        self.dev.destroy_stream(self.stream)
