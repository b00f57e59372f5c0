"""Fewer launches per kernel on the GPU targets (issue 27): a fused kernel should be one
launch, not one per linalg op.

* row kernels reducing a middle axis (decode attention's softmax over the KV length, its
  q.k and p.v sums written as multiply + sum) are taken by the row rule with their loops
  reordered (relax-gpu-row-reductions), after relax-gpu-forward-copies removed the reshape
  copies in front of them: numerics on vulkan at sizes 1, odd and large through ONE
  executable, one launch per call;
* the tiny Llama's decode step with the fake CUDA driver: the launches per step
  (``exe.cuda_call_stats``), pinned (75 before these changes, docs/gpu.md).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from kernel_harness import graph_module  # noqa: E402
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
    middle-axis row kernels and the copy forwarding (28 per layer + 19), now 51 and 68
    (17 per layer + 17): per layer the softmax (6 -> 1), q.k and p.v (3 -> 1 each) and the
    rope kernel's two reshape copies; per step the causal mask's copy."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import test_cuda
    (tmp_path / "2").mkdir()
    (tmp_path / "3").mkdir()
    two = test_cuda.run_fake(tmp_path / "2", test_cuda.FAKE_PRELUDE + FAKE_STEP, "2")
    three = test_cuda.run_fake(tmp_path / "3", test_cuda.FAKE_PRELUDE + FAKE_STEP, "3")
    assert two == [51, 51, 51]
    assert three == [68, 68, 68]
