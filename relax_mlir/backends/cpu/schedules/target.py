"""The SIMD unit the CPU schedules size their register tiles for: :class:`relax_mlir.target.Simd`,
a part of the compile's :class:`~relax_mlir.target.Target` (``Target.simd``; the passes take it
from the module's ``relax.target``). This module keeps the schedules' names for it.

The JIT needs nothing more: MLIR's ExecutionEngine builds its target machine with
``JITTargetMachineBuilder::detectHost()`` (host CPU name and features, AVX-512
included; checked on the object code: ``vfmadd231ps`` on ``zmm`` registers). An
exported library is compiled by ``llc`` for the host's x86-64 level
(:func:`relax_mlir.runtime.cpu.export_requirement`), checked again at load time.
"""

from __future__ import annotations

from ....target import SIMD, Simd, host_simd, simd_named

# The names the schedules and the tuner used before relax_mlir.target (one thing each:
# the SIMD unit, the named units, the host's, one by name).
CpuTarget = Simd
TARGETS = SIMD
host_target = host_simd
target_named = simd_named

__all__ = ["Simd", "SIMD", "host_simd", "simd_named", "CpuTarget", "TARGETS", "host_target", "target_named"]
