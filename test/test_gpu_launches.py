"""Fewer launches per kernel on the GPU targets (issue 27): a fused kernel should be one
launch, not one per linalg op.

* row kernels reducing a middle axis (decode attention's softmax over the KV length, its
  q.k and p.v sums written as multiply + sum) are taken by the row rule with their loops
  reordered (relax-gpu-row-reductions), after relax-gpu-forward-copies removed the reshape
  copies in front of them: numerics on vulkan at sizes 1, odd and large through ONE
  executable, one launch per call;
* the cached (decode) attention chain as one launch (relax-gpu-decode-attention + the
  DecodeAttention rule): numerics on vulkan at KV lengths 1, odd and longer than a split,
  several query rows, through ONE executable; the fused kernel's linalg body on the other
  routes; its PTX loaded and launched by the fake CUDA driver;
* an f16 KV cache: the fused kernel reads f16 K / V (numerics on vulkan, its PTX, a tiny
  Llama's decode with ``kv_dtype="f16"``); the split's chunk sized from the multiprocessors;
* the tiny Llama's decode step with the fake CUDA driver: the launches per step
  (``exe.cuda_call_stats``), pinned (75 before these changes, docs/gpu.md); from Q8_0 / Q4_0 /
  F16 GGUFs as many as with F32 weights (the quantized GEMV applies the residual add).
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from kernel_harness import graph_module  # noqa: E402
from mlir import ir  # noqa: E402
from relax_mlir.backends.gpu import rules  # noqa: E402
from relax_mlir.dialects import relax  # noqa: E402
from relax_mlir.frontend.builder import graph_function  # noqa: E402
from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's route)

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")


_SIZES = [(1, 1, 1), (2, 7, 3), (3, 300, 5), (1, 1500, 2)]


@needs_vulkan
def test_vulkan_softmax_over_a_middle_axis_is_one_launch(routes):
    exe = relax_mlir.compile(graph_module("softmax", [["a", "n", "b"]], ["f32"], "axis = 1 : i64"), target="vulkan")
    for a, n, b in _SIZES:
        x = np.random.default_rng(n).standard_normal((a, n, b)).astype(np.float32) * 4
        y, launched = routes.call(exe, x)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
        assert len(launched) == 1, (a, n, b, launched)


@needs_vulkan
def test_vulkan_sum_over_a_middle_axis_is_one_launch(routes):
    exe = relax_mlir.compile(graph_module("sum", [["a", "n", "b"]], ["f32"], "axes = array<i64: 1>"), target="vulkan")
    for a, n, b in _SIZES:
        x = np.random.default_rng(n + 1).standard_normal((a, n, b)).astype(np.float32)
        y, launched = routes.call(exe, x)
        np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)
        assert len(launched) == 1, (a, n, b, launched)


# -- fused decode attention -------------------------------------------------------------------

NEG = float(np.finfo(np.float32).min)


def attention_module(G: int, KV: int, D: int, merged: bool = True, kv_dtype: str = "f32"):
    """relax_mlir/llm's cached attention (LlamaModel._attend_cached): q (s, G*KV, D) against
    k, v (t, KV, D) with an additive mask (s, 1, t, 1); the result merged (s, G*KV*D) or
    (s, G, KV, D). ``kv_dtype="f16"``: k and v f16, converted to f32 first (an f16 cache)."""
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("q", ["s", G * KV, D], "f32"), ("k", ["t", KV, D], kv_dtype),
                                        ("v", ["t", KV, D], kv_dtype), ("mask", ["s", 1, "t", 1], "f32")]) as fn:
            q, k, v, mask = fn.params
            if kv_dtype != "f32":
                k, v = relax.astype(k, dtype="f32"), relax.astype(v, dtype="f32")
            sc = relax.sum(relax.multiply(relax.reshape(q, shape=["s", G, 1, KV, D]), k), axes=[-1])
            p = relax.softmax(relax.add(sc, mask), axis=2)
            o = relax.sum(relax.multiply(relax.expand_dims(p, axis=[4]), v), axes=[2])
            fn.ret(relax.reshape(o, shape=["s", G * KV * D]) if merged else o)
    return m


def attention_ref(q, k, v, mask, G, KV, D):
    s = q.shape[0]
    sc = (q.reshape(s, G, 1, KV, D).astype(np.float64) * k).sum(-1) + mask
    e = np.exp(sc - sc.max(2, keepdims=True))
    return ((e / e.sum(2, keepdims=True))[..., None] * v).sum(2)


def attention_inputs(s, t, KV, D, G, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((s, G * KV, D)).astype(np.float32)
    k, v = (rng.standard_normal((t, KV, D)).astype(np.float32) for _ in range(2))
    mask = np.where(rng.random((s, 1, t, 1)) < 0.25, NEG, 0.0).astype(np.float32)
    mask[:, :, 0] = 0.0
    return q, k, v, mask


#: (s, t): one query row and several, KV lengths 1, odd, longer than 4 splits of 8 lanes
_ATT_SIZES = [(1, 1), (1, 7), (2, 33), (1, 300), (3, 5)]


@needs_vulkan
@pytest.mark.parametrize("D,splits", [(4, 1), (16, 1), (32, 1), (16, 4)])
def test_vulkan_decode_attention_is_one_launch(routes, D, splits):
    """Head dims below, equal to and 4x lavapipe's subgroup (8); 1 and 4 subgroups per
    workgroup splitting the KV length; every length at most one chunk (``attention_chunk``):
    one workgroup per row."""
    G, KV = 2, 3
    exe = relax_mlir.compile(attention_module(G, KV, D), target="vulkan",
                             options={"schedule_config": f"attention_splits={splits}:attention_chunk=512"})
    for s, t in _ATT_SIZES:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, s * 1000 + t)
        y, launched = routes.call(exe, q, k, v, mask)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D).reshape(s, -1), rtol=1e-5, atol=2e-6)
        assert len(launched) == 1 and launched[0][0], (s, t, launched)   # one launch, with shuffles


#: (s, t): KV lengths around one chunk of 256 keys and several chunks, an odd last chunk
_SPLIT_SIZES = [(1, 1), (1, 7), (1, 255), (1, 256), (2, 257), (1, 2048), (1, 2049), (1, 3000), (1, 2049)]


@needs_vulkan
@pytest.mark.parametrize("D,splits,chunk,launches", [(16, 1, 256, 1), (4, 4, 256, 1), (32, 2, 128, 1),
                                                     (16, 1, 256, 2)])
def test_vulkan_decode_attention_split_across_workgroups(routes, D, splits, chunk, launches):
    """Flash-decoding's split: above ``chunk`` keys a workgroup per (row, chunk) computes a
    partial (max, sum, accumulators); the last workgroup of each row to finish (a counter
    per row in the session state ``relax_gpu_attention_counters``) combines them: ONE launch
    (``attention_launches=1``, cuda's default), or a second launch does
    (``attention_launches=2``, vulkan's default). At most one chunk: a workgroup per row. One executable for
    every length (1, odd, one chunk, above it, 2049 twice: the counters were reset); lanes
    idle (D = 4) and several subgroups per workgroup included; the counters are all zero
    after every call."""
    from relax_mlir.backends.gpu.decode_attention import COUNTERS_STATE
    G, KV = 2, 3
    exe = relax_mlir.compile(attention_module(G, KV, D), target="vulkan", options={
        "schedule_config": f"attention_splits={splits}:attention_chunk={chunk}:attention_launches={launches}"})
    sess = exe.session()
    for s, t in _SPLIT_SIZES:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, s * 1000 + t)
        y, launched = routes.call(sess["main"], q, k, v, mask)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D).reshape(s, -1), rtol=1e-5, atol=2e-6)
        parts = -(-t // chunk)
        assert len(launched) == (1 if parts == 1 else launches) and launched[0][0], (s, t, launched)
        assert tuple(launched[0][1]) == (s * G * KV * parts, 1, 1), (s, t, launched)
        assert not sess.state[COUNTERS_STATE].any()


@needs_vulkan
@pytest.mark.skipif(__import__("shutil").which("spirv-val") is None or __import__("shutil").which("spirv-dis") is None,
                    reason="spirv-val / spirv-dis (spirv-tools) not installed")
def test_vulkan_decode_attention_one_launch_spirv(tmp_path):
    """The SPIR-V of the one-launch split validates (Vulkan 1.1: subgroup shuffles); its
    partial kernel has the lanes' counter ``OpAtomicIAdd`` (Device scope) and two
    ``OpMemoryBarrier Device AcquireRelease|UniformMemory`` (GLSL's memoryBarrierBuffer: 1,
    72); no other kernel has atomics or device barriers (the whole-row and both partial
    kernels shuffle with ``OpGroupNonUniformShuffleXor``, the combining one not at all; no
    broadcast shuffle anywhere)."""
    import subprocess
    from gpu_checks import validated_spirv
    from relax_mlir.target import Target
    m = attention_module(2, 3, 16)
    with m.context:
        m.operation.attributes["relax.target"] = Target.detect("vulkan").to_attr()
        relax_mlir.run_pipeline(m, "builtin.module(vulkan{schedule-config=attention_launches=1})")
        found = {}
        for name, path in validated_spirv(m, tmp_path).items():
            dis = subprocess.run(["spirv-dis", str(path)], capture_output=True, text=True).stdout
            found[name] = (len(re.findall(r"OpAtomicIAdd %uint %\w+ %uint_1 ", dis)), dis.count("OpAtomic"),
                           dis.count("OpMemoryBarrier %uint_1 %uint_72"), dis.count("OpMemoryBarrier"),
                           "OpGroupNonUniformShuffleXor" in dis, dis.count("OpGroupNonUniformShuffle "))
    assert sorted(found.values()) == [(0, 0, 0, 0, False, 0), (0, 0, 0, 0, True, 0), (0, 0, 0, 0, True, 0),
                                      (1, 1, 2, 2, True, 0)], found


@needs_vulkan
def test_vulkan_decode_attention_split_more_rows_than_counters(routes):
    """A call needing more counters than the state holds (one per query row and live lane:
    65536 / 4 lanes (D = 4) = 16384 rows, 2731 x 6 here) takes the split's two launches, in
    the same executable as the one-launch calls."""
    from relax_mlir.backends.gpu.decode_attention import COUNTERS, COUNTERS_STATE
    from relax_mlir.target import Target
    G, KV, D = 2, 3, 4
    lanes = min(Target.detect("vulkan").subgroup_size, D)
    most = COUNTERS // lanes // (G * KV)      # query rows s that fit
    exe = relax_mlir.compile(attention_module(G, KV, D), target="vulkan",
                             options={"schedule_config": "attention_launches=1"})
    sess = exe.session()
    for s, t in [(2, 300), (most + 1, 257), (most, 257)]:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, s + t)
        y, launched = routes.call(sess["main"], q, k, v, mask)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D).reshape(s, -1), rtol=1e-5, atol=2e-6)
        assert len(launched) == (2 if s > most else 1), (s, t, launched)
        assert not sess.state[COUNTERS_STATE].any()


#: (s, t): KV lengths 1, odd, one chunk and above it (the split), several query rows
_F16_SIZES = [(1, 1), (1, 7), (2, 33), (1, 256), (1, 300), (3, 1001)]


@needs_vulkan
@pytest.mark.parametrize("D,splits", [(16, 1), (32, 2)])
def test_vulkan_decode_attention_reads_an_f16_cache(routes, D, splits):
    """An f16 KV cache (relax_mlir/llm's ``kv_dtype="f16"``: k and v f16, converted to f32
    before the chain): the conversions are absorbed, the fused kernel reads the f16 rows and
    accumulates in f32, one launch at every length (the split combined in its last
    workgroups), through ONE executable.
    Against numpy on the same f16 values: f32 rounding only; against the f32 cache the
    difference is f16's rounding of K and V (documented in docs/gpu.md)."""
    G, KV = 2, 3
    exe = relax_mlir.compile(attention_module(G, KV, D, kv_dtype="f16"), target="vulkan",
                             options={"schedule_config": f"attention_splits={splits}:attention_chunk=256:"
                                                         "attention_launches=1"})
    for s, t in _F16_SIZES:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, s * 1000 + t)
        k16, v16 = k.astype(np.float16), v.astype(np.float16)
        y, launched = routes.call(exe, q, k16, v16, mask)
        ref16 = attention_ref(q, k16.astype(np.float64), v16.astype(np.float64), mask, G, KV, D).reshape(s, -1)
        np.testing.assert_allclose(y, ref16, rtol=1e-5, atol=2e-6)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D).reshape(s, -1), rtol=0, atol=5e-3)
        assert len(launched) == 1 and launched[0][0], (s, t, launched)


@needs_vulkan
def test_vulkan_decode_attention_split_from_multiprocessors(routes):
    """``attention_split=2`` (cuda's default where the device reports its multiprocessors):
    the chunk is sized at run time for about ``attention_waves * multiprocessors`` workgroups
    over all rows, never below ``attention_chunk`` keys: the number of chunks per row follows
    the rows and the cache length (one launch either way: the last workgroup of a row
    combines). A vulkan target with a multiprocessor count set stands in for a GPU here; one
    executable for every size."""
    from dataclasses import replace
    from relax_mlir.compiler import CompileOptions
    from relax_mlir.target import Target
    G, KV, D, sms, waves, least = 2, 3, 16, 12, 2, 32
    target = replace(Target.detect("vulkan"), multiprocessors=sms)
    exe = relax_mlir.compile(attention_module(G, KV, D), options=CompileOptions(
        target=target, pipeline_options={"schedule_config": f"attention_split=2:attention_waves={waves}:"
                                                            f"attention_chunk={least}:attention_launches=1"}))
    for s, t in [(1, 1), (1, 31), (1, 33), (1, 100), (2, 100), (4, 100), (1, 3000), (3, 257)]:
        rows = s * G * KV
        per_row = -(-sms * waves // rows)
        chunk = max(-(-t // per_row), least)
        parts = -(-t // chunk)
        q, k, v, mask = attention_inputs(s, t, KV, D, G, s * 1000 + t)
        y, launched = routes.call(exe, q, k, v, mask)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D).reshape(s, -1), rtol=1e-5, atol=2e-6)
        assert len(launched) == 1, (s, t, parts, launched)
        assert launched[0][1][0] == rows * parts, (s, t, parts, launched)


@needs_vulkan
def test_vulkan_decode_attention_kernel_on_the_other_routes(routes, monkeypatch):
    """The fused kernel's linalg body (what runs where the rule does not apply) computes the
    same, unmerged output included."""
    monkeypatch.setattr(rules.DecodeAttention, "apply", lambda *a: False)
    G, KV, D = 2, 2, 8
    exe = relax_mlir.compile(attention_module(G, KV, D, merged=False), target="vulkan")
    for s, t in _ATT_SIZES[:4]:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, t)
        y, launched = routes.call(exe, q, k, v, mask)
        np.testing.assert_allclose(y, attention_ref(q, k, v, mask, G, KV, D), rtol=1e-5, atol=2e-6)
        assert len(launched) > 1


@needs_vulkan
def test_vulkan_decode_attention_f16_cache_on_the_row_kernels(routes, monkeypatch):
    """Where the fused kernel is not built, an f16 cache's conversions fuse into the q.k and
    p.v sums, which the row rule takes with their f16 inputs (the body widens them): right at
    every KV length. (They fell to the unscheduled fallback before, which is wrong on lavapipe
    at these sizes: the xfail below.)"""
    monkeypatch.setattr(rules.DecodeAttention, "apply", lambda *a: False)
    G, KV, D = 3, 4, 64
    exe = relax_mlir.compile(attention_module(G, KV, D, kv_dtype="f16"), target="vulkan")
    for s, t in [(1, 1), (1, 7), (1, 256), (2, 300), (1, 512)]:
        q, k, v, mask = attention_inputs(s, t, KV, D, G, t)
        k16, v16 = k.astype(np.float16), v.astype(np.float16)
        y, launched = routes.call(exe, q, k16, v16, mask)
        ref = attention_ref(q, k16.astype(np.float64), v16.astype(np.float64), mask, G, KV, D).reshape(s, -1)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


#: (a, n, b): 1, odd, large; (1, 254, 768) was wrong before (one thread looped over every n and b)
_FALLBACK_SUM_SIZES = [(1, 254, 768), (1, 1, 1), (2, 7, 3), (3, 1000, 5), (1, 300, 4), (4, 129, 65)]


@needs_vulkan
def test_vulkan_fallback_sum_over_a_middle_axis(routes, monkeypatch):
    """Schedules off (the parallel-loop route): a sum over the middle axis is a thread per
    output element, each reducing its own n (relax-gpu-sequential-inner-loops joins the
    parallel loop under the reduction loop to the outer one). Before, a thread per a looped
    over every n and b: at (1, 254, 768) one thread, 195K iterations, past lavapipe's 65,535
    loop iterations per invocation (its results were partial sums). Sizes 1, odd and large
    through one executable; the fill's and the sum's grids are (ceil(b / 64), a)."""
    from relax_mlir.pipelines import gpu
    monkeypatch.setattr(gpu, "SCHEDULES_DEFAULT", False)
    exe = relax_mlir.compile(graph_module("sum", [["a", "n", "b"]], ["f32"], "axes = array<i64: 1>"), target="vulkan")
    for a, n, b in _FALLBACK_SUM_SIZES:
        x = np.random.default_rng(a * n * b).standard_normal((a, n, b)).astype(np.float32)
        y, launched = routes.call(exe, x)
        np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-4)
        assert [tuple(g) for _, g in launched] == [(-(-b // 64), a, 1)] * 2, (a, n, b, launched)


FAKE_FALLBACK_SUM = r"""
from relax_mlir.pipelines import gpu
sys.path.insert(0, sys.argv[2])
from kernel_harness import graph_module
gpu.SCHEDULES_DEFAULT = False
exe = relax_mlir.compile(graph_module("sum", [["a", "n", "b"]], ["f32"], "axes = array<i64: 1>"), target="cuda")
out = []
for shape in ((1, 254, 768), (3, 7, 5)):
    before = launches()
    y = exe(np.ones(shape, np.float32))
    out.append([list(y.shape), [list(grids[3 * k:3 * k + 3]) for k in range(before, launches())]])
print("FAKE-RUN " + json.dumps(out))
"""


def test_fake_cuda_fallback_sum_over_a_middle_axis_grid(tmp_path):
    """The cuda pipeline's fallback of the same sum (its PTX loaded and launched by the fake
    driver; kernels not run): the fill and the sum each launch (ceil(b / 64), a) blocks, a
    thread per output element, as on vulkan."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_FALLBACK_SUM, os.path.dirname(__file__))
    assert got == [[[1, 768], [[12, 1, 1], [12, 1, 1]]], [[3, 5], [[1, 3, 1], [1, 3, 1]]]]


FAKE_ATTENTION = r"""
sys.path.insert(0, sys.argv[2])
from test_gpu_launches import attention_module, attention_inputs
out = []
for config in ("", "attention_launches=2"):
    exe = relax_mlir.compile(attention_module(2, 4, 64), target="cuda", options={"schedule_config": config})
    calls = []
    for s, t in ((1, 1), (1, 77), (2, 300), (1, 256), (1, 1000), (1, 1000)):
        exe(*attention_inputs(s, t, 4, 64, 2, t))
        calls.append(exe.cuda_call_stats["launches"])
    out.append(calls)
print("FAKE-RUN " + json.dumps(out))
"""


def test_cuda_decode_attention_ptx():
    """The cuda pipeline's PTX of the fused decode attention (D = 64: 2 elements per lane,
    4 warps splitting the KV length): four kernels: the whole-row one; the split's partial
    one combined in its last workgroups (per lane: a ``fence.acq_rel.gpu`` after its stores,
    one ``atom.global.add`` on its counter, a second fence on the last arrival's side; no
    more barriers or shuffles than the two-launch partial kernel); and the two-launch split
    (more counters needed than the state holds, or ``attention_launches=2``): its partial
    kernel and the combination, with neither shuffles nor barriers (a warp per row, nothing
    shared)."""
    from test_gpu_rules import _cuda_ptx
    ptx = _cuda_ptx(str(attention_module(2, 4, 64)), "cuda")
    assert len(ptx) == 4, list(ptx)
    counts = sorted((p.count("shfl.sync.bfly.b32"), p.count("bar.sync"), p.count("atom.global.add.u32"),
                     p.count("fence.acq_rel.gpu"), p.count("atom.")) for p in ptx.values())
    assert counts == [(0, 0, 0, 0, 0), (5, 2, 0, 0, 0), (5, 2, 0, 0, 0), (5, 2, 1, 2, 1)], counts


def test_cuda_decode_attention_f16_cache_ptx():
    """With an f16 cache the kernels load K and V as 16-bit values and widen them
    (``cvt.f32.f16``), no f32 conversion kernel of the cache in front: the same four
    kernels."""
    from test_gpu_rules import _cuda_ptx
    ptx = _cuda_ptx(str(attention_module(2, 4, 64, kv_dtype="f16")), "cuda")
    assert len(ptx) == 4, list(ptx)
    main = [p for p in ptx.values() if p.count("shfl.sync.bfly.b32")]
    assert len(main) == 3 and all("cvt.f32.f16" in p and "ld.global.b16" in p for p in main), list(ptx)


def test_fake_cuda_decode_attention_launches(tmp_path):
    """The PTX loaded and launched by the fake driver: one launch per call at every KV length
    (the default ``attention_launches=1``: above 256 keys, the default ``attention_chunk``,
    the split combined in its last workgroups); with ``attention_launches=2`` two above 256
    keys (the partial results, then their combination)."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_ATTENTION, os.path.dirname(__file__))
    assert got == [[1, 1, 1, 1, 1, 1], [1, 1, 2, 1, 2, 2]]


FAKE_STEP = r"""
import torch, transformers
from relax_mlir.llm import CausalLM

torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=int(sys.argv[2]),
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
lm = CausalLM.from_hf(transformers.LlamaForCausalLM(cfg).eval(), max_seq_len=64, target="cuda")
lm.prefill(np.arange(1, 6, dtype=np.int64))
steps = []
for j in range(3):
    lm.decode(j + 1)
    steps.append(lm.exe.cuda_call_stats["launches"])
print("FAKE-RUN " + json.dumps(steps))
"""


def test_fake_cuda_decode_launches_per_step(tmp_path):
    """Launches per decode step of the tiny Llama (2 and 3 layers): 75 and 103 before the
    middle-axis row kernels and the copy forwarding (28 per layer + 19), then 51 and 68
    (17 per layer + 17): per layer the softmax (6 -> 1), q.k and p.v (3 -> 1 each) and the
    rope kernel's two reshape copies; per step the causal mask's copy. Then 45 and 59
    (14 per layer + 17): the fused decode attention (q.k, softmax, p.v and the head merge's
    copy -> 1). Then 39 and 50 (11 per layer + 17): relax-gpu-fold-tensor-copies (rope's
    slice and reshape copies: 6 -> 3). Now 31 and 42 (11 per layer + 9): the rope tables
    computed without a concat (11 -> 3 per step: the positions, cos and sin each with its own
    product of the positions and the frequencies) and the mask built in its final shape (3
    per step). Now 28 and 38 (10 per layer + 8): relax-fuse-kernels{siblings=true} merges the
    rope kernel's k and v loop nests (q's, over 4 heads, is not the same domain as k's and v's
    over 2 KV heads) and the rope tables' cos and sin loop nests. Now 25 and 35 (10 per layer +
    5): relax-fuse-kernels{unit-reshapes=true} folds the reshapes of the positions (rope tables,
    mask) into their readers' indexing maps, so upstream fusion takes the aranges (the tables 2
    -> 1, the mask 3 -> 1)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_cuda
    (tmp_path / "2").mkdir()
    (tmp_path / "3").mkdir()
    two = test_cuda.run_fake(tmp_path / "2", test_cuda.FAKE_PRELUDE + FAKE_STEP, "2")
    three = test_cuda.run_fake(tmp_path / "3", test_cuda.FAKE_PRELUDE + FAKE_STEP, "3")
    assert two == [25, 25, 25]
    assert three == [35, 35, 35]


FAKE_QUANT_STEP = r"""
import relax_mlir.llm.causal_lm as causal_lm
from relax_mlir.llm import CausalLM
from relax_mlir.pipelines import gpu as gpu_pipeline
out = {}
for fused, path in [(True, p) for p in sys.argv[2:]] + [(False, sys.argv[3])]:
    gpu_pipeline.QUANT_EPILOGUE_DEFAULT = fused
    causal_lm._EXECUTABLES.clear()
    lm = CausalLM.from_gguf(path, max_seq_len=32, target="cuda")
    lm.prefill(np.arange(1, 6, dtype=np.int64))
    steps = []
    for j in range(2):
        lm.decode(j + 1)
        steps.append(lm.exe.cuda_call_stats["launches"])
    out[os.path.basename(path)[:-5] + ("" if fused else " unfused")] = steps
print("FAKE-RUN " + json.dumps(out))
"""


def test_fake_cuda_quantized_decode_launches_per_step(tmp_path):
    """A decode step of the tiny Llama (2 layers) from GGUFs: with Q8_0, Q4_0 or F16
    projections as many launches as with F32 weights (25): the residual add after the
    attention output and the MLP's down projection runs in the quantized GEMV's store
    (relax-fuse-ops{quant-epilogue=true}); without that fusion (``QUANT_EPILOGUE_DEFAULT =
    False``) one launch more per layer (27: the down projection's add, which cannot join the
    next layer's RMSNorm; the o projection's add joins this layer's)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    gguf = pytest.importorskip("gguf")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "llm"))
    from test_gguf import write_gguf
    from test_quantized import CFG, _source_model
    import test_cuda
    T = gguf.GGMLQuantizationType
    src, sd = _source_model(transformers.LlamaConfig(**CFG))
    paths = []
    for name, t in (("f32", T.F32), ("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("f16", T.F16)):
        paths.append(str(tmp_path / f"{name}.gguf"))
        write_gguf(paths[-1], "llama", sd, src.config, {}, t)
    (tmp_path / "fake").mkdir()
    got = test_cuda.run_fake(tmp_path / "fake", test_cuda.FAKE_PRELUDE + FAKE_QUANT_STEP, *paths)
    assert got == {"f32": [25, 25], "q8_0": [25, 25], "q4_0": [25, 25], "f16": [25, 25], "q8_0 unfused": [27, 27]}

FAKE_KV_PREFILL = r"""
import torch, transformers
import relax_mlir.llm.causal_lm as causal_lm
from relax_mlir.llm import CausalLM
from relax_mlir.pipelines import gpu as gpu_pipeline

torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
model = transformers.LlamaForCausalLM(cfg).eval()
out = {}
for name, multi_use, others in (("", True, True), (" single-use", False, True), (" neither", False, False)):
    gpu_pipeline.MULTI_USE_FUSION_DEFAULT = multi_use
    gpu_pipeline.SIBLING_FUSION_DEFAULT = gpu_pipeline.UNIT_RESHAPE_FUSION_DEFAULT = others
    causal_lm._EXECUTABLES.clear()
    for kv in ("f32", "f16", "bf16"):
        lm = CausalLM.from_hf(model, max_seq_len=64, target="cuda", kv_dtype=kv)
        counts = []
        for n in (1, 5, 17):
            lm.reset()
            lm.prefill(np.arange(1, n + 1, dtype=np.int64))
            counts.append(lm.exe.cuda_call_stats["launches"])
        lm.decode(1)
        counts.append(lm.exe.cuda_call_stats["launches"])
        out[kv + name] = counts
print("FAKE-RUN " + json.dumps(out))
"""


def test_fake_cuda_prefill_launches_per_kv_dtype(tmp_path):
    """Prefills of 1, 5 and 17 tokens and a decode step of the tiny Llama (2 layers) on the fake
    driver: an f16 or bf16 cache takes as many launches as the f32 cache (27 per prefill, 25
    per decode step). The prefill converts the new keys and values, which its attention also
    reads in f32: with relax-fuse-kernels{multi-use=true} (``MULTI_USE_FUSION_DEFAULT``) the
    conversions run in the loop nests that compute k (rope) and copy v; without it they are
    loop nests of their own: one launch per layer more with the sibling merge (29; the two
    conversions, over equal domains, merge), two without it and the unit-reshape folding (35
    against the f32 cache's 31; decode steps 31: the fused attention converts what it reads,
    and the new rows' conversions have one use)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_KV_PREFILL)
    assert got == {"f32": [27, 27, 27, 25], "f16": [27, 27, 27, 25], "bf16": [27, 27, 27, 25],
                   "f32 single-use": [27, 27, 27, 25], "f16 single-use": [29, 29, 29, 25],
                   "bf16 single-use": [29, 29, 29, 25],
                   "f32 neither": [31] * 4, "f16 neither": [35, 35, 35, 31], "bf16 neither": [35, 35, 35, 31]}, got


@needs_vulkan
def test_vulkan_llm_f16_kv_cache(routes):
    """``CausalLM(..., kv_dtype="f16")`` on lavapipe: the state is f16, a decode step takes as
    many launches as with the f32 cache (the conversions absorbed by the fused attention),
    the greedy tokens equal the f32 cache's across the split (past 256 keys), and the logits
    differ by f16's rounding of K and V only (relative to the largest logit < 1e-3; measured
    1.6e-4 over 300 steps of this model, docs/gpu.md)."""
    pytest.importorskip("transformers")
    import torch
    import transformers
    from relax_mlir.llm import CausalLM
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    m = transformers.LlamaForCausalLM(cfg).eval()
    a = CausalLM.from_hf(m, max_seq_len=300, target="vulkan")
    b = CausalLM.from_hf(m, max_seq_len=300, target="vulkan", kv_dtype="f16")
    assert b.session.state["k"].dtype == np.float16 and a.session.state["k"].dtype == np.float32
    ids = np.random.default_rng(0).integers(1, 128, 250)
    la, lb = a.prefill(ids), b.prefill(ids)
    tok = int(np.argmax(la))
    assert int(np.argmax(lb)) == tok
    for _ in range(10):          # KV lengths 251..260
        la, na = routes.call(a.decode, tok)
        lb, nb = routes.call(b.decode, tok)
        assert len(na) == len(nb), (len(na), len(nb))
        assert np.abs(la - lb).max() < 1e-3 * np.abs(la).max()
        tok = int(np.argmax(la))
        assert int(np.argmax(lb)) == tok


@needs_vulkan
def test_vulkan_f16_kv_prefill_rows_equal_the_cpu_targets(routes):
    """A prefill with an f16 cache on lavapipe (prompts of 1, 7 and 40 through one executable):
    the f16 rows the merged rope / copy loop nest writes (relax-fuse-kernels{multi-use}, k's and
    v's conversions in the loop nests that compute them) equal the cpu target's within f16's
    rounding of slightly different f32 sums, the logits within 1e-4 of the largest, as many
    launches as the f32 cache's prefill; a decode step after it gives the cpu target's token."""
    from relax_mlir.llm import CausalLM
    from relax_mlir.llm.cli import SIZES
    c = SIZES["tiny"]
    cpu = CausalLM.random(c, max_seq_len=48, seed=5, kv_dtype="f16")
    gpu = CausalLM.random(c, max_seq_len=48, seed=5, target="vulkan", kv_dtype="f16")
    f32 = CausalLM.random(c, max_seq_len=48, seed=5, target="vulkan")
    for n in (1, 7, 40):
        ids = np.random.default_rng(n).integers(0, c.vocab_size, n)
        want = cpu.prefill(ids)
        got, launches = routes.call(gpu.prefill, ids)
        _, launches32 = routes.call(f32.prefill, ids)
        assert len(launches) == len(launches32), (len(launches), len(launches32))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * np.abs(want).max())
        for a, b in zip(gpu.cache.views(), cpu.cache.views()):
            assert a.dtype == b.dtype == np.float16 and a.shape == b.shape == (n, c.num_kv_heads, c.head_dim)
            a, b = a.astype(np.float32), b.astype(np.float32)
            np.testing.assert_allclose(a, b, rtol=2 ** -10, atol=2 ** -10 * np.abs(b).max())
        tok = int(np.argmax(want))
        assert int(np.argmax(gpu.decode(tok))) == int(np.argmax(cpu.decode(tok)))


def test_decode_attention_launches_default_per_target():
    """The split in one launch is cuda's default; vulkan keeps the combining launch (its
    workspace has no Coherent decoration, which a device-scope handoff between workgroups
    needs on real Vulkan GPUs, and lavapipe's atomics made one launch slower: docs/gpu.md)."""
    from dataclasses import replace
    from relax_mlir.backends.gpu.rules import DecodeAttention
    from relax_mlir.target import Target
    vk = Target.detect("vulkan")
    assert DecodeAttention().default(vk, "f32")["attention_launches"] == 2
    assert DecodeAttention().default(replace(vk, kind="cuda"), "f32")["attention_launches"] == 1
