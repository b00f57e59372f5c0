"""What the vulkan target needs to do on real Vulkan GPUs what it does on lavapipe and NVIDIA
(issue 27 part 7), checked where it can be without one:

* the subgroup size: ``choose_subgroup_size`` on fake property values of AMD-, Intel-,
  NVIDIA-, Adreno- and lavapipe-like devices, with and without VK_EXT_subgroup_size_control;
  on this machine's device (lavapipe has the extension) the pipelines of the kernels that
  shuffle are created with the size required, and the GEMV and the decode attention give the
  same numbers through them;
* the ``Coherent`` decoration on the buffer the one-launch attention split's workgroups hand
  over (relax-spirv-coherent-buffers): in the serialized words, spirv-val accepting it.
"""

from __future__ import annotations

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
from relax_mlir.runtime.vulkan.device import choose_subgroup_size  # noqa: E402
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
