"""relax_mlir.target.Target: detected on this host, made from options, recorded on the module
(relax.target) by compile() and read back by the passes instead of the environment; the BLAS
provider chosen by a table keyed by the CPU."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import relax_mlir
from relax_mlir import CompileOptions
from relax_mlir.runtime import cpu as host_cpu
from relax_mlir.runtime import libraries
from relax_mlir.target import GPU_DEFAULTS, SIMD, Simd, Target, host_simd


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("RELAX_MLIR_DISPATCH_POLICY", "RELAX_MLIR_DISPATCH_TABLE", "RELAX_MLIR_DISPATCH_ATTENTION",
                 "RELAX_BLAS", "RELAX_MLIR_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_detect_this_host(clean_env):
    from relax_mlir.backends.cpu.omp_threads import num_threads

    t = Target.detect()
    assert (t.kind, t.arch, t.chip, t.vendor) == ("cpu", host_cpu.cpu_arch(), host_cpu.cpu_model(),
                                                  host_cpu.cpu_vendor())
    assert t.simd == host_simd() and t.isa == host_simd().isa and t.vector_bits == host_simd().vector_bits
    assert t.threads == num_threads()
    assert t.blas == libraries.blas_provider()
    assert (t.max_threads_per_block, t.shared_memory_bytes, t.subgroup_size) == (None, None, None)
    # a pass alone does not depend on the machine's calibration: flops unless the environment says
    assert (t.dispatch_policy, t.dispatch_table, t.dispatch_attention) == ("flops", "", True)


def test_detect_reads_the_environment(clean_env):
    clean_env.setenv("RELAX_MLIR_DISPATCH_POLICY", "measured")
    clean_env.setenv("RELAX_MLIR_DISPATCH_TABLE", "/tmp/t.json")
    clean_env.setenv("RELAX_MLIR_DISPATCH_ATTENTION", "0")
    clean_env.setenv("RELAX_BLAS", "openblas")
    t = Target.detect()
    assert (t.dispatch_policy, t.dispatch_table, t.dispatch_attention, t.blas) == \
        ("measured", "/tmp/t.json", False, "openblas")


@pytest.mark.parametrize("kind", ["cuda", "vulkan"])
def test_detect_gpu_defaults_without_a_device(clean_env, kind):
    clean_env.setattr("relax_mlir.target._device_properties", lambda k: {})
    t = Target.detect(kind)
    d = GPU_DEFAULTS[kind]
    assert (t.kind, t.arch, t.max_threads_per_block, t.shared_memory_bytes, t.subgroup_size) == \
        (kind, d["arch"], d["max_threads_per_block"], d["shared_memory_bytes"], d["subgroup_size"])
    assert (t.blas, t.dispatch_policy) == (None, "off")


def test_detect_gpu_device_properties(clean_env):
    clean_env.setattr("relax_mlir.target._device_properties",
                      lambda k: {"arch": "sm_90", "chip": "H100", "max_threads_per_block": 1024,
                                 "shared_memory_bytes": 49152, "subgroup_size": 32})
    t = Target.detect("cuda")
    assert (t.arch, t.chip, t.max_threads_per_block, t.shared_memory_bytes, t.subgroup_size) == \
        ("sm_90", "H100", 1024, 49152, 32)


def test_from_options(clean_env):
    assert Target.from_options(CompileOptions()).dispatch_policy == "measured"   # the cpu pipeline's default
    assert Target.from_options(CompileOptions(pipeline_options={"schedules": False})).dispatch_policy == "flops"
    assert Target.from_options(CompileOptions(pipeline_options={"dispatch_policy": "flops"})).dispatch_policy == "flops"
    assert Target.from_options(CompileOptions(pipeline_options={"dispatch": False})).dispatch_policy == "off"
    assert Target.from_options(None, threads=3, blas="openblas").threads == 3
    explicit = replace(Target.detect(), threads=5)
    assert Target.from_options(CompileOptions(target=explicit)) is explicit
    clean_env.setattr("relax_mlir.target._device_properties", lambda k: {"arch": "sm_90"})
    cuda = Target.from_options(CompileOptions(target="cuda"))
    assert (cuda.kind, cuda.arch) == ("cuda", "sm_80")   # the PTX arch compiled for (the chip option)
    assert Target.from_options(CompileOptions(target="cuda", pipeline_options={"chip": "sm_90a"})).arch == "sm_90a"
    with pytest.raises(ValueError, match="dispatch-policy must be one of measured, flops"):
        Target.from_options(CompileOptions(pipeline_options={"dispatch_policy": "bogus"}))


def test_invalid_fields():
    with pytest.raises(ValueError, match="unknown target kind 'tpu'"):
        Target(kind="tpu")
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        Target(threads=0)
    with pytest.raises(ValueError, match="blas must be mkl, openblas or None"):
        Target(blas="atlas")


def test_attr_round_trip():
    from mlir import ir

    targets = [Target.detect(),
               Target(kind="cuda", arch="sm_90", chip="H100", vendor="NVIDIA", simd=SIMD["avx2"], threads=2,
                      max_threads_per_block=1024, shared_memory_bytes=49152, subgroup_size=32, dispatch_policy="off"),
               Target(kind="cpu", simd=Simd("neon", 128, 32, True), dispatch_attention=False, dispatch_table="/x.json")]
    with relax_mlir.make_context(), ir.Location.unknown():
        for t in targets:
            assert Target.from_attr(t.to_attr()) == t
            m = ir.Module.parse("module {}")
            assert Target.of(m) is None
            t.record(m.operation)
            assert Target.of(m) == t
            assert Target.of(ir.Module.parse(str(m))) == t   # printed and parsed back
        bad = ir.Attribute.parse('{kind = "cpu", colour = "red"}')
        with pytest.raises(ValueError, match="unknown field"):
            Target.from_attr(bad)
        with pytest.raises(ValueError, match="must be a dictionary"):
            Target.from_attr(ir.Attribute.parse('"cpu"'))


def T(dims) -> str:
    s = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    e = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{s}xf32, #relax.shape<[{e}]>>"


MM = (f"func.func @main(%x: {T(['m', 512])}, %w: {T([512, 256])}) -> {T(['m', 256])} attributes {{relax.function, relax.upper_bounds = {{m = 64 : i64}}}} {{\n"
      f'  %0 = "relax.matmul"(%x, %w) : ({T(["m", 512])}, {T([512, 256])}) -> {T(["m", 256])}\n'
      f"  return %0 : {T(['m', 256])}\n}}\n")
# generated code wins for every M: the measured policy keeps the matmul, the flops rule dispatches it
TABLE = {"machine": "test", "isa": "any", "classes": [{"k": 512, "n": 256, "generated_m": [[1, 1 << 30]]}]}


def _graph(tmp_path, **kw) -> str:
    d = tmp_path / "ir"
    relax_mlir.compile(MM, options=CompileOptions(dump_ir=str(d), **kw))
    return (d / "01-graph.mlir").read_text()


def test_compile_records_the_target(clean_env, tmp_path):
    from mlir import ir

    assert "relax.target = {" in _graph(tmp_path)
    with relax_mlir.make_context():
        t = Target.of(ir.Module.parse((tmp_path / "ir" / "00-input.mlir").read_text()))
    assert t == Target.from_options(CompileOptions())


def test_compiled_with_an_explicit_target_not_the_environment(clean_env, tmp_path):
    """The policy and the table come from the Target given to compile(), whatever the
    environment says; the environment alone gives the other answer."""
    table = tmp_path / "table.json"
    table.write_text(json.dumps(TABLE))
    clean_env.setenv("RELAX_MLIR_DISPATCH_POLICY", "flops")
    clean_env.setenv("RELAX_MLIR_NUM_THREADS", "2")
    measured = replace(Target.detect(), dispatch_policy="measured", dispatch_table=str(table), threads=1)
    d = tmp_path / "ir"
    exe = relax_mlir.compile(MM, options=CompileOptions(target=measured, dump_ir=str(d)))
    graph = (d / "01-graph.mlir").read_text()
    assert "relax_blas" not in graph and "relax.dispatch_split" not in graph   # generated code
    assert "threads = 1 : i64" in (d / "00-input.mlir").read_text()
    import numpy as np
    x, w = np.ones((3, 512), np.float32), np.ones((512, 256), np.float32)
    assert np.array_equal(exe(x, w), x @ w)
    # the environment (flops) without an explicit target: the matmul goes to BLAS
    clean_env.setenv("RELAX_MLIR_DISPATCH_TABLE", str(table))
    assert '"relax.call_dps_library"' in _graph(tmp_path / "env")


def test_compile_target_kind_and_unknown(clean_env):
    with pytest.raises(relax_mlir.CompileError, match="unknown target 'tpu'"):
        relax_mlir.compile(MM, target="tpu")


def test_backend_names_kept():
    from relax_mlir import compiler
    from relax_mlir.backends.cpu.schedules import target as sched_target
    from relax_mlir.transforms import lower_host

    assert relax_mlir.TARGETS is compiler.BACKENDS and relax_mlir.Target is compiler.Backend
    assert relax_mlir.register_target is compiler.register_backend
    assert relax_mlir.TARGETS["cpu"].host_hooks == relax_mlir.TARGETS["cpu"].host_target == "cpu"
    assert lower_host.HostTarget is lower_host.HostHooks and lower_host.HOST_TARGETS is lower_host.HOST_HOOKS
    assert sched_target.CpuTarget is Simd and sched_target.TARGETS is SIMD and sched_target.host_target() == host_simd()


# -- the BLAS provider by CPU --------------------------------------------------------------

@pytest.mark.parametrize("vendor,model,installed,want", [
    ("AuthenticAMD", "AMD EPYC", ["mkl", "openblas"], "openblas"),
    ("GenuineIntel", "Intel(R) Xeon(R) Processor @ 2.50GHz", ["mkl", "openblas"], "mkl"),
    ("GenuineIntel", "Intel(R) Xeon(R)", ["openblas"], "openblas"),      # MKL not installed
    ("0x41", "Neoverse-V2", ["openblas"], "openblas"),                  # no row: the fallback
    ("HygonGenuine", "Hygon C86", ["mkl", "openblas"], "openblas"),     # no row: the fallback
    ("AuthenticAMD", "AMD EPYC", [], None),
])
def test_blas_table(vendor, model, installed, want):
    assert host_cpu.preferred_blas(vendor, model, installed) == want


@pytest.mark.parametrize("vendor,want", [("AuthenticAMD", "openblas"), ("GenuineIntel", "mkl"), ("SomeVendor", "openblas")])
def test_blas_provider_follows_the_cpu(clean_env, vendor, want):
    """A fake CPU vendor: the default provider (and the detected Target's) follows the table;
    RELAX_BLAS still overrides."""
    clean_env.setattr(host_cpu, "cpu_vendor", lambda: vendor)
    clean_env.setattr(libraries, "blas_providers", lambda: ["mkl", "openblas"])
    assert libraries.blas_provider() == want
    assert Target.detect().blas == want
    clean_env.setenv("RELAX_BLAS", "mkl")
    assert libraries.blas_provider() == "mkl" and Target.detect().blas == "mkl"
