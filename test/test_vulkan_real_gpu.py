"""What the vulkan target needs to do on real Vulkan GPUs what it does on lavapipe and NVIDIA
(issue 27 part 7), checked where it can be without one:

* the subgroup size: ``choose_subgroup_size`` on fake property values of AMD-, Intel-,
  NVIDIA-, Adreno- and lavapipe-like devices, with and without VK_EXT_subgroup_size_control;
  on this machine's device (lavapipe has the extension) the pipelines of the kernels that
  shuffle are created with the size required, and the GEMV and the decode attention give the
  same numbers through them; the instance's Vulkan version (the loader's, clamped to 1.2-1.3)
  and where size control comes from (core on 1.3, else the extension), on fake versions, and on
  this machine's device through both (a 1.2 instance: the extension; 1.3 with the extension
  hidden: core);
* the ``Coherent`` decoration on the buffer the one-launch attention split's workgroups hand
  over (relax-spirv-coherent-buffers): in the serialized words, spirv-val accepting it.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from mlir import ir  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from relax_mlir.runtime.vulkan.device import (choose_subgroup_size, instance_api_version,  # noqa: E402
                                              subgroup_size_control)
from kernel_harness import graph_module  # noqa: E402
from test_gpu_launches import attention_inputs, attention_module, attention_ref  # noqa: E402

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

AMD, INTEL, NVIDIA, QUALCOMM, MESA = 0x1002, 0x8086, 0x10DE, 0x5143, 0x10005


def _props(size, lo, hi, control=True, shuffle=True, stages=True):
    return dict(size=size, shuffle=shuffle, control=control, min_size=lo, max_size=hi, required_stages=stages,
                full_subgroups=True, max_workgroup_subgroups=32)


#: (vendor, properties, expected (size, required))
_CHOICES = [
    (AMD, _props(64, 32, 64, control=False), (None, False)),          # RDNA, no size control: unknown
    (AMD, _props(64, 32, 64), (32, True)),                             # RDNA: wave32 required
    (AMD, _props(64, 64, 64), (64, True)),                             # GCN: only wave64
    (INTEL, _props(32, 8, 32, control=False), (None, False)),
    (INTEL, _props(32, 8, 32), (32, True)),
    (NVIDIA, _props(32, 32, 32, control=False), (32, False)),          # fixed: reported, not required
    (NVIDIA, _props(32, 32, 32), (32, True)),
    (MESA, _props(8, 8, 8, control=False), (8, False)),                # lavapipe without the extension
    (MESA, _props(8, 8, 8), (8, True)),
    (QUALCOMM, _props(64, 64, 128), (64, True)),                       # Adreno: its narrowest
    (AMD, _props(64, 32, 64, stages=False), (None, False)),            # compute not among the stages
    (NVIDIA, _props(32, 32, 32, stages=False), (32, False)),
    (AMD, _props(64, 32, 64, shuffle=False), (None, False)),           # no shuffles in compute shaders
    (NVIDIA, _props(32, 32, 32, shuffle=False), (None, False)),
]


@pytest.mark.parametrize("vendor,props,expected", _CHOICES)
def test_choose_subgroup_size(vendor, props, expected):
    assert choose_subgroup_size(vendor, **props) == expected


@pytest.mark.parametrize("loader,expected", [(None, (1, 2)), ((1, 1), (1, 2)), ((1, 2), (1, 2)),
                                             ((1, 3), (1, 3)), ((1, 4), (1, 3)), ((2, 0), (1, 3))])
def test_instance_api_version(loader, expected):
    """The instance asks for the loader's version up to 1.3; 1.2 from a loader older than that
    (or a 1.0 loader, which cannot say)."""
    assert instance_api_version(loader) == expected


#: (instance, device, device lists the extension) -> (size control usable, extension to enable)
_CONTROL = [
    ((1, 3), (1, 3), False, (True, False)),     # 1.3 device without the extension: core
    ((1, 3), (1, 4), True, (True, False)),      # core; the listed extension is not needed
    ((1, 2), (1, 3), True, (True, True)),       # a 1.2 instance: only through the extension
    ((1, 2), (1, 3), False, (False, False)),
    ((1, 3), (1, 2), True, (True, True)),       # a 1.2 device
    ((1, 3), (1, 2), False, (False, False)),
]


@pytest.mark.parametrize("instance,device,extension,expected", _CONTROL)
def test_subgroup_size_control_source(instance, device, extension, expected):
    assert subgroup_size_control(instance, device, extension) == expected


def test_vulkan13_amd_without_the_extension_gets_a_required_size():
    """The case that had no size: an RDNA device reporting Vulkan 1.3 that does not list
    VK_EXT_subgroup_size_control; its size control is core, so wave32 is required."""
    control, extension = subgroup_size_control((1, 3), (1, 3), False)
    assert (control, extension) == (True, False)
    assert choose_subgroup_size(AMD, **_props(64, 32, 64, control=control)) == (32, True)
    control, _ = subgroup_size_control((1, 2), (1, 3), False)      # the former 1.2 instance
    assert choose_subgroup_size(AMD, **_props(64, 32, 64, control=control)) == (None, False)


def _requirement(vendor, local, subgroup_ops=True, require=True, full=True):
    """Kernel._subgroup_requirement against a fake AMD-like device (size 32 required, at most
    4 subgroups per workgroup): (required size, full subgroups, stage fields)."""
    from types import SimpleNamespace
    vk = pytest.importorskip("vulkan")
    dev = SimpleNamespace(vk=vk, require_subgroup_size=require, subgroup_size=32, max_workgroup_subgroups=4,
                          full_subgroups=full, vendor="0x%04x" % vendor,
                          FIXED_SUBGROUP_VENDORS=vkrt.Device.FIXED_SUBGROUP_VENDORS)
    module = SimpleNamespace(subgroup_ops=subgroup_ops, local_sizes={"k": local})
    kernel = vkrt.Kernel.__new__(vkrt.Kernel)
    kernel.required_subgroup_size, kernel.full_subgroups = None, False
    extra = kernel._subgroup_requirement(dev, module, "k", "@m::@k")
    return kernel.required_subgroup_size, kernel.full_subgroups, sorted(extra)


def test_pipeline_requirement_on_a_fake_device():
    """A shuffling kernel requires the size, with full subgroups when its x size is a multiple
    of it and the device allows them; kernels without subgroup operations, or a device without
    size control, get nothing; a workgroup above maxComputeWorkgroupSubgroups x size is a
    SpirvError, except on a vendor whose size is fixed anyway (no requirement there)."""
    assert _requirement(AMD, (64, 1, 1)) == (32, True, ["flags", "pNext"])
    assert _requirement(AMD, (48, 1, 1)) == (32, False, ["flags", "pNext"])
    assert _requirement(AMD, (32, 2, 1), full=False) == (32, False, ["flags", "pNext"])
    assert _requirement(AMD, (64, 1, 1), subgroup_ops=False) == (None, False, [])
    assert _requirement(AMD, (64, 1, 1), require=False) == (None, False, [])
    assert _requirement(NVIDIA, (256, 1, 1)) == (None, False, [])
    with pytest.raises(vkrt.SpirvError, match=r"@m::@k: a workgroup of 256 invocations exceeds .*\(4\) x the "
                                              r"required subgroup size \(32\)"):
        _requirement(AMD, (128, 2, 1))


def test_spirv_facts_of_the_attention_kernels():
    """spirv_facts reads the GroupNonUniform capabilities and LocalSize from the serialized
    words: the decode attention's shuffling kernels (one subgroup of the target's size per
    workgroup) against the combining kernel without subgroup operations."""
    from mlir.dialects import gpu as gpu_d
    from relax_mlir.target import Target
    m = attention_module(2, 3, 16)
    with m.context:
        m.operation.attributes["relax.target"] = Target("vulkan", subgroup_size=8).to_attr()
        relax_mlir.run_pipeline(m, "builtin.module(vulkan{schedule-config=attention_launches=2})")
        facts = sorted(vkrt.spirv_facts(gpu_d.ObjectAttr(ir.ArrayAttr(o.operation.attributes["objects"])[0]).object)
                       for o in m.body.operations if o.operation.name == "gpu.binary")
    assert [(sub, sorted(sizes.values())) for sub, sizes in facts] == [
        (False, [(8, 1, 1)]), (True, [(8, 1, 1)]), (True, [(8, 1, 1)])], facts


# -- this machine's device ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev():
    return vkrt.device()


@needs_vulkan
def test_device_subgroup_size_is_the_choice(dev):
    """The device's subgroup size and requirement are choose_subgroup_size's on its own
    properties, and the target the compiler records reports that size."""
    from relax_mlir.target import Target
    props = dev._subgroup_properties(dev.vk)
    assert (dev.subgroup_size, dev.require_subgroup_size) == choose_subgroup_size(int(dev.vendor, 16), **props)
    assert Target.detect("vulkan").subgroup_size == dev.subgroup_size


def _required(dev):
    if not dev.require_subgroup_size:
        pytest.skip(f"{dev.name} has no VK_EXT_subgroup_size_control: no pipeline requires a size")


def _check_pipelines(exe, dev, shuffling: int):
    """`shuffling` pipelines (those of kernels with subgroup operations) require the device's
    size (with full subgroups where the device allows them), the others nothing."""
    rt = exe._runtime
    required = [k for k in rt.kernels.values() if k.required_subgroup_size is not None]
    assert exe.vulkan_pipelines == {"pipelines": len(rt.kernels), "required_subgroup_size": shuffling,
                                    "full_subgroups": shuffling if dev.full_subgroups else 0}
    assert len(required) == shuffling
    assert {k.required_subgroup_size for k in required} == {dev.subgroup_size}
    assert all(k.full_subgroups == dev.full_subgroups for k in required)
    codes = {name: m.subgroup_ops for name, m in rt._modules.items()}
    assert sum(codes.values()) == shuffling


@needs_vulkan
def test_gemv_through_required_subgroup_size(dev):
    """The f32 GEMV (shuffles at the device's subgroup size) through pipelines that require
    it: M = 1 and 3 rows, N = 4 .. 4096, K = 1, odd and 1000 against numpy, one executable;
    a shape off the GEMV (the small route) in the same executable."""
    _required(dev)
    exe = relax_mlir.compile(graph_module("matmul", [["m", "k"], ["k", "n"]], ["f32", "f32"]), target="vulkan")
    _check_pipelines(exe, dev, 1)
    for m, n, k in [(1, 4, 1), (1, 200, 65), (3, 36, 129), (1, 4096, 1000), (1, 33, 7)]:
        rng = np.random.default_rng(m * 10000 + n * 10 + k)
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@needs_vulkan
@pytest.mark.parametrize("launches,shuffling", [(1, 3), (2, 2)])
def test_decode_attention_through_required_subgroup_size(dev, launches, shuffling):
    """The fused decode attention (whole row, and the split over chunks of 256 keys, one
    launch or two) through pipelines that require the subgroup size: KV lengths 1, 7, 256,
    257, 2049 and 1-2 query rows against numpy; the counters zero after each call."""
    from relax_mlir.backends.gpu.decode_attention import COUNTERS_STATE
    _required(dev)
    G, KV, D = 2, 3, 16
    exe = relax_mlir.compile(attention_module(G, KV, D), target="vulkan",
                             options={"schedule_config": f"attention_launches={launches}"})
    # the whole-row kernel and the split's partial kernels shuffle (one launch: the partial
    # kernel of each form, the two-launch one for more rows than counters); the combining one not
    _check_pipelines(exe, dev, shuffling)
    sess = exe.session()
    for s, t in [(1, 1), (1, 7), (2, 256), (1, 257), (2, 2049)]:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, s * 1000 + t)
        y = sess["main"](q, k, v, mask)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D).reshape(s, -1), rtol=1e-5, atol=2e-6)
        assert not sess.state[COUNTERS_STATE].any()


_SIZE_CONTROL_RUN = r"""
import importlib, json, sys
import numpy as np
import vulkan
import relax_mlir
from relax_mlir.runtime import vulkan as vkrt
devmod = importlib.import_module("relax_mlir.runtime.vulkan.device")   # the package's `device` is the cache
from kernel_harness import graph_module
if sys.argv[1] == "instance-1.2":
    devmod.MAX_API_VERSION = (1, 2)
else:   # hide the extension: a 1.3 device that does not list it
    real = vulkan.vkEnumerateDeviceExtensionProperties
    vulkan.vkEnumerateDeviceExtensionProperties = lambda *a: [
        e for e in real(*a) if (e.extensionName if isinstance(e.extensionName, str) else
                                vulkan.ffi.string(e.extensionName).decode()) != "VK_EXT_subgroup_size_control"]
dev = vkrt.device()
exe = relax_mlir.compile(graph_module("matmul", [["m", "k"], ["k", "n"]], ["f32", "f32"]), target="vulkan")
err = []
for m, n, k in [(1, 200, 65), (3, 36, 129)]:
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    err.append(float(np.abs(exe(a, b) - a.astype(np.float64) @ b.astype(np.float64)).max()))
print(json.dumps(dict(instance=dev.instance_version, extension=dev.size_control_extension,
                      size=dev.subgroup_size, required=dev.require_subgroup_size,
                      pipelines=exe.vulkan_pipelines, err=err)))
"""


@needs_vulkan
@pytest.mark.parametrize("mode,instance,extension", [("instance-1.2", [1, 2], True),
                                                     ("hidden-extension", [1, 3], False)])
def test_size_control_through_extension_and_core(dev, mode, instance, extension):
    """On this machine's device (Vulkan 1.3, listing the extension): a 1.2 instance requires
    the size through VK_EXT_subgroup_size_control (enabled), a 1.3 instance with the
    extension hidden through core 1.3 (nothing enabled); either way the GEMV's pipeline is
    created with the size required (the GEMM and the small route's not) and gives numpy's numbers (a fresh process each: one
    device per process)."""
    _required(dev)
    if dev.api_version < (1, 3) or dev.instance_version < (1, 3):
        pytest.skip(f"{dev.name}: Vulkan {dev.api_version} device, {dev.instance_version} instance: no core 1.3")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                       os.path.dirname(os.path.abspath(__file__))]))
    r = subprocess.run([sys.executable, "-c", _SIZE_CONTROL_RUN, mode], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["instance"] == instance and got["extension"] is extension
    assert (got["size"], got["required"]) == (dev.subgroup_size, True)
    # the matmul's three routes (GEMM, GEMV, small), the GEMV's pipeline with the size required
    assert got["pipelines"] == {"pipelines": 3, "required_subgroup_size": 1,
                                "full_subgroups": 1 if dev.full_subgroups else 0}
    assert max(got["err"]) < 1e-4, got["err"]


# -- Coherent ---------------------------------------------------------------------------------------

_OP_DECORATE, _COHERENT, _OP_ATOMIC_IADD = 71, 23, 234


def _words(code: bytes):
    """(opcode, operands) of each instruction of a SPIR-V binary."""
    w = struct.unpack(f"<{len(code) // 4}I", code)
    i = 5
    while i < len(w):
        n = w[i] >> 16
        yield w[i] & 0xFFFF, w[i + 1:i + n]
        i += n


@needs_vulkan
def test_one_launch_split_workspace_is_coherent(tmp_path):
    """The one-launch split's partial kernel (the one with OpAtomicIAdd) decorates exactly
    one variable Coherent, the workspace it stores partials to and the last workgroup loads
    from; the other kernels decorate nothing Coherent. spirv-val (when installed) accepts
    every binary for Vulkan 1.1."""
    from mlir.dialects import gpu as gpu_d
    from relax_mlir.target import Target
    m = attention_module(2, 3, 16)
    found = []
    with m.context:
        m.operation.attributes["relax.target"] = Target.detect("vulkan").to_attr()
        relax_mlir.run_pipeline(m, "builtin.module(vulkan{schedule-config=attention_launches=1})")
        for o in m.body.operations:
            o = o.operation
            if o.name != "gpu.binary":
                continue
            code = gpu_d.ObjectAttr(ir.ArrayAttr(o.attributes["objects"])[0]).object
            insts = list(_words(code))
            coherent = [ops[0] for op, ops in insts if op == _OP_DECORATE and ops[1:] == (_COHERENT,)]
            bindings = {ops[0]: ops[2] for op, ops in insts if op == _OP_DECORATE and ops[1] == 33}   # Binding
            atomics = sum(op == _OP_ATOMIC_IADD for op, _ in insts)
            found.append((atomics, len(coherent), all(v in bindings for v in coherent)))
            if shutil.which("spirv-val"):
                path = tmp_path / "k.spv"
                path.write_bytes(code)
                r = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(path)], capture_output=True,
                                   text=True)
                assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(found) == [(0, 0, True), (0, 0, True), (0, 0, True), (1, 1, True)], found
