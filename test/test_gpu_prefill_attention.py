"""The GPU targets' fused PREFILL attention (relax-gpu-decode-attention's prefill chain,
issue 27 part 4): relax_mlir/llm's ``LlamaModel._attend_blas`` (head splits, q.k^T + the causal
(s, s) mask, softmax, p.v, head merge) becomes the decode_attention kernel, one launch per
layer on the GPU rule.

* numerics of the fused chain on vulkan (lavapipe) vs numpy at s = 1, 7, 33, 130 through ONE
  executable, each call one launch with subgroup shuffles;
* the tiny Llama on vulkan generates the cpu target's tokens (prompt lengths 1, 5, 40);
* prefill launches through the fake CUDA driver, fused and not (``PREFILL_ATTENTION_DEFAULT``).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import relax_mlir  # noqa: E402
from relax_mlir.llm.cli import SIZES  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's route)

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")
NEG = float(np.finfo(np.float32).min)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from bench_gpu import prefill_attention_module  # noqa: E402  (the model's own prefill attention alone)


def prefill_attention_ref(q, k, v, mask, KV):
    """numpy: query head h reads kv head h % KV (relax_mlir/llm's group-major heads)."""
    s, H, D = q.shape
    kh = k[:, np.arange(H) % KV].astype(np.float64)
    vh = v[:, np.arange(H) % KV].astype(np.float64)
    sc = np.einsum("shd,thd->hst", q, kh) + mask
    e = np.exp(sc - sc.max(-1, keepdims=True))
    return np.einsum("hst,thd->shd", e / e.sum(-1, keepdims=True), vh).reshape(s, H * D)


@needs_vulkan
@pytest.mark.parametrize("size", ["tiny", "small"])
def test_vulkan_fused_prefill_attention(routes, size):
    """tiny (H 4, KV 2, D 16) and small (H 8, KV 4, D 32): grouped-query heads, the causal mask;
    one executable for s = 1, odd, longer than 4 subgroups' keys, above 128: one launch each;
    above ``attention_chunk`` (256) keys flash-decoding's split (vulkan: a second launch
    combines the chunks)."""
    c = SIZES[size]
    exe = relax_mlir.compile(prefill_attention_module(c), target="vulkan")
    for s in (1, 7, 33, 130, 300):
        rng = np.random.default_rng(s)
        q = rng.standard_normal((s, c.num_heads, c.head_dim)).astype(np.float32)
        k, v = (rng.standard_normal((s, c.num_kv_heads, c.head_dim)).astype(np.float32) for _ in range(2))
        mask = np.where(np.tril(np.ones((s, s), bool)), 0.0, NEG).astype(np.float32)
        y, launched = routes.call(exe, q, k, v, mask)
        np.testing.assert_allclose(y, prefill_attention_ref(q, k, v, mask, c.num_kv_heads), rtol=1e-5, atol=2e-6)
        assert len(launched) == (1 if s <= 256 else 2) and launched[0][0], (s, launched)   # with shuffles


@needs_vulkan
def test_vulkan_tiny_llama_generates_the_cpus_tokens():
    """The tiny Llama (2 layers, 4 heads / 2 KV heads): prefill (the fused attention) then
    greedy decode on vulkan gives the cpu target's tokens for prompts of 1, 5 and 40."""
    from gpu_checks import tiny_hf_llama
    from relax_mlir.llm import CausalLM

    hf = tiny_hf_llama()
    cpu = CausalLM.from_hf(hf, max_seq_len=64)
    gpu = CausalLM.from_hf(hf, max_seq_len=64, target="vulkan")
    for n in (1, 5, 40):
        prompt = np.random.default_rng(n).integers(0, 128, n).astype(np.int64)
        np.testing.assert_allclose(gpu.prefill(prompt), cpu.prefill(prompt), atol=1e-3, rtol=0)
        want = cpu.generate(prompt, max_new_tokens=8)
        got = gpu.generate(prompt, max_new_tokens=8)
        assert list(got) == list(want), n


FAKE_PREFILL = r"""
import dataclasses
import relax_mlir.llm.causal_lm as causal_lm
from relax_mlir.llm import CausalLM
from relax_mlir.llm.cli import SIZES
from relax_mlir.pipelines import gpu as gpu_pipeline
out = {}
for fused in (True, False):
    gpu_pipeline.PREFILL_ATTENTION_DEFAULT = fused
    causal_lm._EXECUTABLES.clear()
    for layers in (2, 3):
        lm = CausalLM.random(dataclasses.replace(SIZES["tiny"], num_layers=layers), max_seq_len=64, target="cuda")
        steps = []
        for n in (5, 17):
            lm.prefill(np.arange(1, n + 1, dtype=np.int64))
            steps.append(lm.exe.cuda_call_stats["launches"])
        out[f"{'fused' if fused else 'unfused'} {layers}"] = steps
print("FAKE-RUN " + json.dumps(out))
"""


def test_fake_cuda_prefill_launches_per_layer(tmp_path):
    """Launches of a prefill of the tiny Llama (2 and 3 layers; 5 and 17 tokens) through the
    fake CUDA driver: 55 and 78 unfused (23 per layer + 9: per layer the k and v head splits'
    copies, q.k^T + mask, the softmax, p.v and the head merge's copy among them), 31 and 42
    fused (11 per layer + 9, as a decode step): the attention one launch per layer. With
    relax-fuse-kernels{siblings=true} (rope's k and v loop nests one, the rope tables' cos
    and sin one) 48 and 68 unfused, 28 and 38 fused (10 per layer + 8); with {unit-reshapes=true}
    (the tables' positions fused: 2 -> 1) 47 and 67, 27 and 37 (10 per layer + 7)."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_PREFILL)
    assert got == {"fused 2": [27, 27], "fused 3": [37, 37], "unfused 2": [47, 47], "unfused 3": [67, 67]}


@needs_vulkan
def test_vulkan_skipped_masked_keys_change_nothing(monkeypatch):
    """The launch skips a key masked by the lowest f32 once a visible key set the running max
    (``SKIP_MASKED_KEYS``): bit-identical to visiting every key, also for a row whose every
    key is masked (both give the mean of v there, as the linalg body does) and for keys
    masked before the first visible one; lengths within one chunk and above it (the split)."""
    from relax_mlir.backends.gpu import decode_attention as da
    c = SIZES["tiny"]
    exes = []
    for skip in (True, False):
        monkeypatch.setattr(da, "SKIP_MASKED_KEYS", skip)
        exes.append(relax_mlir.compile(prefill_attention_module(c), target="vulkan"))
    for s in (40, 300):
        rng = np.random.default_rng(s)
        q = rng.standard_normal((s, c.num_heads, c.head_dim)).astype(np.float32)
        k, v = (rng.standard_normal((s, c.num_kv_heads, c.head_dim)).astype(np.float32) for _ in range(2))
        mask = np.where(rng.random((s, s)) < 0.5, NEG, 0.0).astype(np.float32)
        mask[0] = NEG                       # every key masked
        mask[1, : s // 2] = NEG             # the first half masked, then visible keys
        mask[1, s // 2] = 0.0
        a, b = (e(q, k, v, mask) for e in exes)
        np.testing.assert_array_equal(a, b)
        mean_v = v[:, np.arange(c.num_heads) % c.num_kv_heads].mean(0).reshape(-1)
        np.testing.assert_allclose(a[0], mean_v, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, prefill_attention_ref(q, k, v, mask, c.num_kv_heads), rtol=1e-5, atol=2e-6)
