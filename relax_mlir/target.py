"""The target: what the compiled code runs on and the choices made for it, in one frozen object.

::

    t = Target.detect()                       # this host: ISA, CPU, threads, BLAS, policy
    t = Target.detect("cuda")                 # the device's properties, or documented defaults
    t = Target.from_options(CompileOptions(target="cpu", pipeline_options={"dispatch_policy": "flops"}))
    exe = relax_mlir.compile(src, target=replace(Target.detect(), threads=1, blas="openblas"))
    Target.of(module)                          # the one compile() recorded (None without)

Data flow: :func:`relax_mlir.compile` makes the target (from its options, else detected) and
records it on the module as the attribute ``relax.target`` (a dictionary,
:meth:`Target.to_attr`) before the first pass runs; every pass that needs to know the
machine reads it back with :meth:`Target.for_module` -- ``relax-dispatch-library`` (policy,
calibration table, CPU model and ISA, threads, fused attention), ``relax-apply-schedules``
and ``relax-specialize-ranges`` (the SIMD unit tiles are sized for, the thread count of a
tuning record and of the module's thread global), ``relax-omp-threads``, the GPU passes (the
device's threads per block). A pass run on its own (``relax-opt``) on a module without the
attribute uses :meth:`Target.detect` (this host and the environment, as before). Nothing
below the driver reads the environment or probes the host for these choices.

Fields
======================  ===================================================================
``kind``                ``cpu``, ``cuda`` or ``vulkan`` (the backend, ``relax_mlir.TARGETS``)
``arch``                cpu: the x86-64 level (``x86-64-v4``, ``x86-64-v3``, ``x86-64``) or
                        the machine (``aarch64``); cuda: ``sm_XX``; vulkan: ``spirv``
``chip``, ``vendor``    the CPU's model name and vendor (``AuthenticAMD``...); the GPU's
                        device name and vendor
``simd``                the SIMD unit (:class:`Simd`) host code and CPU kernels are tiled for
``threads``             threads of generated code (``RELAX_MLIR_NUM_THREADS``, default every
                        core of the process; 1 without an OpenMP runtime): the initial value
                        of a module's run-time count and the thread count calibration tables
                        and tuning records are looked up with
``max_threads_per_block``, ``shared_memory_bytes``, ``subgroup_size``
                        GPU limits (threads per block / workgroup invocations, workgroup
                        memory, warp / subgroup width); None on the cpu
``multiprocessors``     the GPU's streaming multiprocessors (cuda's device attribute; None
                        where unknown: vulkan has no such property, a compile without a device)
``blas``                the BLAS provider of ``relax_blas`` (``mkl``, ``openblas``; None:
                        no library dispatch)
``dispatch_policy``     relax-dispatch-library's policy: ``measured``, ``flops`` or ``off``
``dispatch_table``      the calibration table of the measured policy ('' : the checked-in one)
``dispatch_attention``  fused library attention (relax-dispatch-library{attention})
``emulate_mma``         vulkan: the cuda tensor-core routes are built and their warp-level
                        matrix ops emulated (relax-emulate-mma; the vulkan pipeline's
                        ``emulate-tensor-cores`` option): a testing aid, off by default
======================  ===================================================================

The BLAS provider
-----------------
``RELAX_BLAS`` when set; else a table keyed by the CPU
(:data:`relax_mlir.runtime.cpu.BLAS_BY_CPU`, next to the CPU identification it is keyed by so
that the runtime, which builds and pins the provider, reads the same table without importing
the compiler):

=================  ===============  =======================================================
vendor             provider         measured
=================  ===============  =======================================================
``GenuineIntel``   ``mkl``          Xeon, 2 vCPU: MKL 1.2-2x faster than OpenBLAS (MLP)
``AuthenticAMD``   ``openblas``     EPYC (Zen 5), 2 vCPU: MKL 1.7-2.5x slower (MiniLM)
anything else      ``openblas``     fast everywhere (:data:`~relax_mlir.runtime.cpu.BLAS_FALLBACK`)
=================  ===============  =======================================================

A provider that is not installed is skipped (MKL is an optional extra). The JIT loads ONE
provider per process (the shims export the same symbols): the first compile that links
relax_blas pins it, and a later target asking for another raises ``LibraryError``.

GPU defaults (no device, or no driver, at compile time)
-------------------------------------------------------
cuda: ``sm_80`` (PTX that every later GPU JIT-compiles), 1024 threads per block, 48 KiB of
shared memory per block, warps of 32. vulkan: the limits every Vulkan device guarantees --
128 invocations per workgroup, 16 KiB of workgroup memory -- and an unknown subgroup size.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Optional

from . import config

if TYPE_CHECKING:
    from mlir import ir

#: The module attribute holding the target (a DictAttr, :meth:`Target.to_attr`).
ATTR = "relax.target"
KINDS = ("cpu", "cuda", "vulkan")
DISPATCH_POLICIES = ("measured", "flops")
#: the cpu pipeline's policy with schedules (without: ``flops``); a pass alone: ``flops``
DISPATCH_POLICY_DEFAULT = "measured"


@dataclass(frozen=True)
class Simd:
    """The SIMD unit the CPU schedules size their register tiles for."""

    isa: str  # "avx512", "avx2", "sse", "neon", "generic"
    vector_bits: int  # widest f32 SIMD register
    registers: int  # SIMD registers
    fma: bool

    @property
    def lanes(self) -> int:
        """f32 lanes per SIMD register."""
        return self.vector_bits // 32


#: Named SIMD units, for tests and cross-compilation (``relax-apply-schedules{target=avx2}``).
SIMD = {
    "avx512": Simd("avx512", 512, 32, True),
    "avx2": Simd("avx2", 256, 16, True),
    "sse": Simd("sse", 128, 16, False),
    "neon": Simd("neon", 128, 32, True),
}


@functools.lru_cache(maxsize=None)
def host_simd() -> Simd:
    """The host's SIMD unit (Linux /proc/cpuinfo flags; AArch64 always has NEON)."""
    from .runtime.cpu import cpu_flags

    machine = platform.machine().lower()
    flags = cpu_flags()
    if machine in ("aarch64", "arm64"):
        return SIMD["neon"]
    if machine in ("x86_64", "amd64"):
        if {"avx512f", "avx512vl"} <= flags:
            return SIMD["avx512"]
        if {"avx2", "fma"} <= flags:
            return SIMD["avx2"]
        return Simd("sse", 128, 16, "fma" in flags)
    return Simd("generic", 128, 16, False)


def simd_named(name: str) -> Simd:
    """``"host"`` (detected) or one of :data:`SIMD`."""
    if name == "host":
        return host_simd()
    if name not in SIMD:
        raise ValueError(f"unknown schedule target '{name}' (host, {', '.join(SIMD)})")
    return SIMD[name]


def resolve_dispatch_policy(policy: Optional[str], schedules: bool = True) -> str:
    """``policy`` when given, else ``$RELAX_MLIR_DISPATCH_POLICY``, else
    :data:`DISPATCH_POLICY_DEFAULT` with schedules and ``flops`` without. ValueError for
    another name."""
    policy = policy or config.dispatch_policy()
    if not policy:
        return DISPATCH_POLICY_DEFAULT if schedules else "flops"
    if policy not in DISPATCH_POLICIES:
        raise ValueError(f"dispatch-policy must be one of {', '.join(DISPATCH_POLICIES)}, got '{policy}'")
    return policy


#: GPU limits when no device is there (see the module docstring).
GPU_DEFAULTS = {
    "cuda": dict(arch="sm_80", chip="", vendor="NVIDIA", max_threads_per_block=1024,
                 shared_memory_bytes=48 * 1024, subgroup_size=32),
    "vulkan": dict(arch="spirv", chip="", vendor="", max_threads_per_block=128,
                   shared_memory_bytes=16 * 1024, subgroup_size=None),
}


@dataclass(frozen=True)
class Target:
    """What the code is compiled for (see the module docstring for each field)."""

    kind: str = "cpu"
    arch: str = ""
    chip: str = ""
    vendor: str = ""
    simd: Simd = field(default_factory=lambda: Simd("generic", 128, 16, False))
    threads: int = 1
    max_threads_per_block: Optional[int] = None
    shared_memory_bytes: Optional[int] = None
    subgroup_size: Optional[int] = None
    multiprocessors: Optional[int] = None
    blas: Optional[str] = None
    dispatch_policy: str = "flops"
    dispatch_table: str = ""
    dispatch_attention: bool = True
    emulate_mma: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown target kind '{self.kind}' (kinds: {', '.join(KINDS)})")
        if self.dispatch_policy not in DISPATCH_POLICIES + ("off",):
            raise ValueError(f"dispatch_policy must be measured, flops or off, got '{self.dispatch_policy}'")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be an int >= 1, got {self.threads!r}")
        if self.blas is not None and self.blas not in ("mkl", "openblas"):
            raise ValueError(f"blas must be mkl, openblas or None, got '{self.blas}'")

    # -- convenience views ------------------------------------------------------------------

    @property
    def isa(self) -> str:
        return self.simd.isa

    @property
    def vector_bits(self) -> int:
        return self.simd.vector_bits

    # -- making one ------------------------------------------------------------------------

    @classmethod
    def detect(cls, kind: str = "cpu", **overrides: Any) -> "Target":
        """This host (and, for ``cuda`` / ``vulkan``, its device: the defaults of the module
        docstring when none can be opened) with the environment's choices (config.py):
        threads, BLAS provider, dispatch policy (``flops`` unless
        ``RELAX_MLIR_DISPATCH_POLICY`` says otherwise: a pass alone does not depend on the
        machine's calibration), table and attention. ``overrides``: fields to replace."""
        from .runtime.cpu import cpu_arch, cpu_model, cpu_vendor

        if kind not in KINDS:
            raise ValueError(f"unknown target kind '{kind}' (kinds: {', '.join(KINDS)})")
        base = dict(kind=kind, arch=cpu_arch(), chip=cpu_model(), vendor=cpu_vendor(), simd=host_simd(),
                    threads=_threads())
        if kind == "cpu":
            base.update(blas=_blas(), dispatch_policy=resolve_dispatch_policy(None, schedules=False),
                        dispatch_table=config.dispatch_table(), dispatch_attention=config.dispatch_attention())
        else:
            base.update(GPU_DEFAULTS[kind], dispatch_policy="off")
            base.update(_device_properties(kind))
        return cls(**{**base, **overrides})

    @classmethod
    def from_options(cls, options: Any = None, **fields_: Any) -> "Target":
        """The target of a compile: ``options`` (a :class:`~relax_mlir.CompileOptions`, or
        None) gives the kind (``options.target``: a kind name, or a Target used as it is)
        and the pipeline options that are target choices (``dispatch_policy``: else the
        environment's, else ``measured`` with schedules and ``flops`` without; cuda's
        ``chip``: the arch the PTX is compiled for, default sm_80); ``fields_`` replace
        fields explicitly (they win)."""
        given = getattr(options, "target", None) if options is not None else None
        if isinstance(given, Target):
            return replace(given, **fields_) if fields_ else given
        kind = fields_.get("kind", given or "cpu")
        po = {str(k).replace("-", "_"): v for k, v in dict(getattr(options, "pipeline_options", None) or {}).items()}
        t = cls.detect(kind)
        change: dict[str, Any] = {}
        if kind == "cpu":
            dispatch = po.get("dispatch", True)
            policy = resolve_dispatch_policy(po.get("dispatch_policy"), schedules=po.get("schedules", True) is not False)
            change["dispatch_policy"] = policy if dispatch is not False else "off"
        elif kind == "cuda":
            change["arch"] = po.get("chip") or GPU_DEFAULTS["cuda"]["arch"]
        change.update(fields_)
        return replace(t, **change)

    @classmethod
    def for_module(cls, module: "ir.Operation", kind: str = "cpu") -> "Target":
        """The module's recorded target, else :meth:`detect` (a pass run on its own). For
        GPU kinds the fallback is the documented defaults (no device is opened by a pass)."""
        t = cls.of(module)
        if t is not None:
            return t
        if kind == "cpu":
            return cls.detect()
        return cls(kind=kind, simd=host_simd(), **GPU_DEFAULTS[kind], dispatch_policy="off")

    # -- the module attribute ---------------------------------------------------------------

    def to_attr(self) -> "ir.Attribute":
        """A DictAttr (in the current context): strings, integers, booleans; a None field is
        left out; the SIMD unit as ``isa``, ``vector_bits``, ``simd_registers``, ``fma``."""
        from mlir import ir

        i64 = ir.IntegerType.get_signless(64)
        out: dict[str, ir.Attribute] = {}
        for k, v in _flat(self).items():
            if v is None:
                continue
            if isinstance(v, bool):
                out[k] = ir.BoolAttr.get(v)
            elif isinstance(v, int):
                out[k] = ir.IntegerAttr.get(i64, v)
            else:
                out[k] = ir.StringAttr.get(v)
        return ir.DictAttr.get(out)

    @classmethod
    def from_attr(cls, attr: "ir.Attribute") -> "Target":
        """The Target of a ``relax.target`` DictAttr (ValueError for a malformed one)."""
        from mlir import ir

        try:
            d = ir.DictAttr(attr)
        except ValueError:
            raise ValueError(f"{ATTR} must be a dictionary, got {attr}") from None
        values: dict[str, Any] = {}
        for na in d:
            values[na.name] = _scalar(na.name, na.attr)
        return _unflat(values)

    def record(self, module: "ir.Operation") -> None:
        """Put the target on ``module`` (``relax.target``)."""
        module.attributes[ATTR] = self.to_attr()

    @classmethod
    def of(cls, module: "ir.Operation") -> Optional["Target"]:
        """The target recorded on ``module`` (an ``ir.Module`` or its operation), else None."""
        op = getattr(module, "operation", module)
        if ATTR not in op.attributes:
            return None
        return cls.from_attr(op.attributes[ATTR])


# -- helpers -------------------------------------------------------------------------------

_SIMD_KEYS = {"isa": "isa", "vector_bits": "vector_bits", "simd_registers": "registers", "fma": "fma"}


def _flat(t: Target) -> dict[str, Any]:
    d = {f.name: getattr(t, f.name) for f in fields(t) if f.name != "simd"}
    s = asdict(t.simd)
    d.update({k: s[v] for k, v in _SIMD_KEYS.items()})
    return d


def _unflat(values: dict[str, Any]) -> Target:
    known = {f.name for f in fields(Target)} - {"simd"}
    extra = set(values) - known - set(_SIMD_KEYS)
    if extra:
        raise ValueError(f"{ATTR}: unknown field(s) {', '.join(sorted(extra))}")
    if "kind" not in values:
        raise ValueError(f"{ATTR}: no 'kind'")
    kw = {k: v for k, v in values.items() if k in known}
    if "isa" in values:
        s = SIMD.get(values["isa"], Simd(values["isa"], 128, 16, False))
        kw["simd"] = Simd(values["isa"], int(values.get("vector_bits", s.vector_bits)),
                          int(values.get("simd_registers", s.registers)), bool(values.get("fma", s.fma)))
    return Target(**kw)


def _scalar(name: str, a: "ir.Attribute") -> Any:
    from mlir import ir

    for cls in (ir.BoolAttr, ir.IntegerAttr, ir.StringAttr):   # BoolAttr first: an i1 IntegerAttr too
        try:
            return cls(a).value
        except ValueError:
            continue
    raise ValueError(f"{ATTR}: field '{name}' must be a string, integer or boolean, got {a}")


def _threads() -> int:
    """Threads of generated code now (:func:`relax_mlir.backends.cpu.omp_threads.num_threads`)."""
    from .runtime.libraries import env_threads, openmp_library

    n = env_threads()
    return n if n > 1 and openmp_library() else 1


def _blas() -> Optional[str]:
    """The provider relax_blas would use (None when ``RELAX_BLAS`` names a bad one: the link,
    if the module needs relax_blas, reports it)."""
    from .runtime.libraries import LibraryError, blas_provider

    try:
        return blas_provider()
    except LibraryError:
        return None


def _device_properties(kind: str) -> dict[str, Any]:
    """The device's arch, name and limits when its runtime can open it; {} otherwise (no
    driver, no device: a compile for it can still be inspected)."""
    try:
        if kind == "cuda":
            from .runtime import cuda

            ok, _ = cuda.available()
            if not ok:
                return {}
            dev = cuda.device()
            return {k: v for k, v in dict(
                arch="sm_%d%d" % dev.compute_capability, chip=dev.name, vendor="NVIDIA",
                max_threads_per_block=dev.max_threads,
                shared_memory_bytes=getattr(dev, "shared_memory", None),
                subgroup_size=getattr(dev, "warp_size", None),
                multiprocessors=getattr(dev, "multiprocessors", None)).items() if v is not None}
        from .runtime import vulkan

        ok, _ = vulkan.available()
        if not ok:
            return {}
        dev = vulkan.device()
        return {k: v for k, v in dict(
            chip=dev.name, vendor=getattr(dev, "vendor", None),
            max_threads_per_block=getattr(dev, "max_invocations", None),
            shared_memory_bytes=getattr(dev, "shared_memory", None),
            subgroup_size=getattr(dev, "subgroup_size", None)).items() if v is not None}
    except Exception:  # noqa: BLE001 - a probe: any failure means "no device", the defaults
        return {}
