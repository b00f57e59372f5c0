"""The host CPU as the schedules see it: SIMD width and register count, detected once at
compile time, from which the register tiles are sized.

The JIT needs nothing more: MLIR's ExecutionEngine builds its target machine with
``JITTargetMachineBuilder::detectHost()`` (host CPU name and features, AVX-512
included; checked on the object code: ``vfmadd231ps`` on ``zmm`` registers). An
exported library is compiled by ``llc`` for the host's x86-64 level
(:func:`relax_mlir.runtime.cpu.export_requirement`), checked again at load time.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import dataclass

from ..runtime.cpu import cpu_flags


@dataclass(frozen=True)
class CpuTarget:
    isa: str  # "avx512", "avx2", "sse", "neon", "generic"
    vector_bits: int  # widest f32 SIMD register
    registers: int  # SIMD registers
    fma: bool

    @property
    def lanes(self) -> int:
        """f32 lanes per SIMD register."""
        return self.vector_bits // 32


@functools.lru_cache(maxsize=None)
def host_target() -> CpuTarget:
    """Detect the host's SIMD features (Linux /proc/cpuinfo; AArch64 always has NEON)."""
    machine = platform.machine().lower()
    flags = cpu_flags()
    if machine in ("aarch64", "arm64"):
        return CpuTarget("neon", 128, 32, True)
    if machine in ("x86_64", "amd64"):
        if {"avx512f", "avx512vl"} <= flags:
            return CpuTarget("avx512", 512, 32, True)
        if {"avx2", "fma"} <= flags:
            return CpuTarget("avx2", 256, 16, True)
        return CpuTarget("sse", 128, 16, "fma" in flags)
    return CpuTarget("generic", 128, 16, False)


#: Named targets, for tests and cross-compilation (``relax-apply-schedules{target=avx2}``).
TARGETS = {
    "avx512": CpuTarget("avx512", 512, 32, True),
    "avx2": CpuTarget("avx2", 256, 16, True),
    "sse": CpuTarget("sse", 128, 16, False),
    "neon": CpuTarget("neon", 128, 32, True),
}


def target_named(name: str) -> CpuTarget:
    """``"host"`` (detected) or one of :data:`TARGETS`."""
    if name == "host":
        return host_target()
    if name not in TARGETS:
        raise ValueError(f"unknown schedule target '{name}' (host, {', '.join(TARGETS)})")
    return TARGETS[name]
