"""The host CPU's instruction-set features, read without the compiler.

The compile side describes the host from them (:class:`relax_mlir.target.Target`: the
x86-64 level, the CPU's vendor and model, the SIMD unit the schedules size tiles for) and
records, in an exported library, the feature level its code was compiled for
(:func:`export_requirement`); :func:`relax_mlir.load` checks that level against the
loading machine (:func:`missing_features`), so a library built with AVX-512 raises a
``LoadError`` on a CPU without it instead of dying of SIGILL at its first call.
"""

from __future__ import annotations

import functools
import platform
from typing import Optional

#: x86-64 micro-architecture levels (as LLVM's -mcpu names them) and the /proc/cpuinfo
#: flags each needs beyond the previous one.
X86_V3 = ["avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe"]
X86_V4 = X86_V3 + ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset:
    """Linux /proc/cpuinfo flags (x86) or Features (AArch64); empty when unreadable."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=None)
def _cpuinfo_field(name: str) -> str:
    """The first ``name : value`` of /proc/cpuinfo ('' when absent or unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == name:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_model() -> str:
    """This machine's CPU model name (/proc/cpuinfo), else what ``platform`` says."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_vendor() -> str:
    """The CPU vendor as /proc/cpuinfo names it (``GenuineIntel``, ``AuthenticAMD``; on
    AArch64 the implementer code, e.g. ``0x41``), '' when unknown."""
    return _cpuinfo_field("vendor_id") or _cpuinfo_field("CPU implementer")


def cpu_arch() -> str:
    """The host's instruction-set level: ``x86-64-v4`` / ``x86-64-v3`` / ``x86-64`` (the
    levels of :func:`export_requirement`), else the machine name (``aarch64``...)."""
    return export_requirement()["mcpu"] or platform.machine().lower()


#: The BLAS provider per CPU (``relax_mlir.target`` documents the choice): ``(vendor, model
#: substring, provider)``, the first row whose vendor is the CPU's (and whose substring, ''
#: for any, is in its model name) and whose provider is installed wins; a CPU without a row
#: gets :data:`BLAS_FALLBACK`. Measured: Intel Xeon (2 vCPU) MKL 1.2-2x faster than OpenBLAS
#: on the MLP shapes; AMD EPYC (Zen 5, 2 vCPU) MKL 1.7-2.5x SLOWER on MiniLM (bench/README.md).
BLAS_BY_CPU: tuple[tuple[str, str, str], ...] = (
    ("GenuineIntel", "", "mkl"),
    ("AuthenticAMD", "", "openblas"),
)
#: The provider of a CPU without a row: fast everywhere (MKL is slow on non-Intel CPUs).
BLAS_FALLBACK = "openblas"


def preferred_blas(vendor: str, model: str, installed) -> Optional[str]:
    """The BLAS provider :data:`BLAS_BY_CPU` gives a ``vendor`` / ``model`` CPU among the
    ``installed`` providers; :data:`BLAS_FALLBACK` (or the first installed) otherwise; None
    when none is installed."""
    installed = list(installed)
    for v, sub, provider in BLAS_BY_CPU:
        if v == vendor and sub in model and provider in installed:
            return provider
    if BLAS_FALLBACK in installed:
        return BLAS_FALLBACK
    return installed[0] if installed else None


def export_requirement(target_cpu: Optional[str] = None, target_features: Optional[str] = None) -> dict:
    """The ``llc`` CPU for an exported library and the flags a loading CPU needs.

    An explicit ``target_cpu`` / ``target_features`` (CompileOptions) is used as given
    (not checked at load). Otherwise the host's level: x86-64-v4 with AVX-512, x86-64-v3
    with AVX2 + FMA, else the architecture's baseline (portable to every CPU of it)."""
    if target_cpu or target_features:
        return {"mcpu": target_cpu, "mattr": target_features, "machine": platform.machine(), "flags": []}
    flags = cpu_flags()
    machine = platform.machine()
    if machine in ("x86_64", "AMD64"):
        if set(X86_V4) <= flags:
            return {"mcpu": "x86-64-v4", "mattr": None, "machine": machine, "flags": X86_V4}
        if set(X86_V3) <= flags:
            return {"mcpu": "x86-64-v3", "mattr": None, "machine": machine, "flags": X86_V3}
    return {"mcpu": None, "mattr": None, "machine": machine, "flags": []}


def llc_flags(req: dict) -> list[str]:
    return ([f"-mcpu={req['mcpu']}"] if req.get("mcpu") else []) + \
           ([f"-mattr={req['mattr']}"] if req.get("mattr") else [])


def missing_features(req: Optional[dict]) -> list[str]:
    """Flags ``req`` needs that this CPU lacks (nothing when /proc/cpuinfo is unreadable)."""
    if not req or not req.get("flags"):
        return []
    flags = cpu_flags()
    if not flags:
        return []
    return [f for f in req["flags"] if f not in flags]
