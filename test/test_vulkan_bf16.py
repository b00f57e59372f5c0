"""bf16 on the vulkan target (lavapipe on CI): stored as 16 bits (i16 in SPIR-V), computed in
f32 (docs/gpu.md). The SPIR-V holds no bf16 and validates; f32 -> bf16 rounding is
``ml_dtypes``' bit for bit; a bf16 matmul takes the f32 rule's routes (GEMV, thread per
element, GEMM tiles) between casts; a bf16 tiny Llama (weights and activations) and a bf16 KV
cache give the cpu target's tokens. The op-by-op numerics (test_ops_numerics in bf16) run on
vulkan in test/test_bf16.py (its ``target`` / ``exe`` parameters). Each executable is compiled
ONCE and run at several sizes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.dialects import relax  # noqa: E402
from relax_mlir.frontend.builder import graph_function  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

import gpu_checks  # noqa: E402
from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's route on vulkan)

BF16 = ml_dtypes.bfloat16
ULP = 2.0 ** -7


def _graph(ctx):
    """gelu(x @ w + b) in bf16, and x -> bf16 (astype) alone."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "mlp", [("x", ["n", 64], "bf16"), ("w", [64, 96], "bf16"),
                                       ("b", [96], "bf16")]) as fn:
            x, w, b = fn.params
            fn.ret(relax.gelu(relax.matmul(x, w) + b))
        with graph_function(m, "to_bf16", [("x", ["n"], "f32")]) as fn:
            fn.ret(relax.astype(fn.params[0], dtype="bf16"))
    return m


@pytest.mark.skipif(shutil.which("spirv-val") is None or shutil.which("spirv-dis") is None,
                    reason="spirv-val / spirv-dis (spirv-tools) not installed")
def test_vulkan_bf16_spirv_has_no_bf16_and_validates(tmp_path):
    """Every kernel's SPIR-V validates (Vulkan 1.1) and declares no bfloat16 type (no
    ``BFloat16TypeKHR`` capability, no ``OpTypeFloat 16 BFloat16KHR``): bf16 buffers are
    arrays of 16-bit integers (``OpTypeInt 16``), the rounding integer ops."""
    from relax_mlir.target import Target
    ctx = relax_mlir.make_context()
    m = _graph(ctx)
    with ctx:
        m.operation.attributes["relax.target"] = Target.detect("vulkan").to_attr()
        relax_mlir.run_pipeline(m, "builtin.module(vulkan)")
        spv = gpu_checks.validated_spirv(m, tmp_path)
    assert len(spv) >= 4, list(spv)   # the two casts, the matmul (+ bias, gelu), astype
    int16 = 0
    for name, path in spv.items():
        text = subprocess.run(["spirv-dis", str(path)], capture_output=True, text=True, check=True).stdout
        assert "BFloat16" not in text, name
        int16 += "OpTypeInt 16" in text
    assert int16 == len(spv), (int16, list(spv))   # each kernel reads or writes bf16


@needs_vulkan
def test_vulkan_f32_to_bf16_bits_equal_ml_dtypes():
    """f32 -> bf16 on the device, bit for bit ``ml_dtypes``' (round to nearest even): ties and
    their neighbours at several exponents, subnormals (and ties among them), the largest
    finite values rounding to inf, +-inf, NaN, +-0.0; one executable, sizes 1, 9, 4099."""
    exe = relax_mlir.compile(_graph(relax_mlir.make_context()), target="vulkan")
    base = np.array([1.0, 1.0078125, -3.0, 65504.0, 1e-3, 3.0e38, -2.0 ** -126, 2.0 ** -133, 5e-39],
                    np.float32).view(np.uint32)
    ties = np.concatenate([base + 0x8000, base + 0x7FFF, base + 0x8001, base + 0x18000, base])
    subnormal = np.array([0x00008000, 0x00018000, 0x00007FFF, 0x00000001, 0x807F8000, 0x007FFFFF], np.uint32)
    edges = np.concatenate([ties.astype(np.uint32), subnormal]).view(np.float32)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3.4e38, -3.4028235e38, 1e-40], np.float32)
    rng = np.random.default_rng(0)
    for size in (1, 9, 4099):
        x = np.resize(np.concatenate([edges, specials, rng.standard_normal(size).astype(np.float32)]), size)
        got = exe["to_bf16"](x)
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.view(np.uint16), x.astype(BF16).view(np.uint16))


@needs_vulkan
def test_vulkan_bf16_matmul_routes(routes):
    """A bf16 matmul with a bias and gelu: the f32 matmul rule between casts
    (relax-widen-bf16-matmul), the cast back, bias and gelu its epilogue: three launches per
    call (x's cast, w's cast, the product), the product's route as for f32: the GEMV
    (shuffles) at M = 1, a thread per element of C at 17, the GEMM's 64 x 64 tiles at 64 and
    130; each result within one bf16 ulp (two after gelu) of numpy on the same bf16 inputs,
    each op rounded once."""
    from test_bf16 import _gelu, bf, close
    from test_gpu_rules import _gemv_columns
    exe = relax_mlir.compile(_graph(relax_mlir.make_context()), target="vulkan")
    rng = np.random.default_rng(3)
    w, b = bf(rng.standard_normal((64, 96)) / 8), bf(rng.standard_normal(96))
    r = lambda v: bf(v).astype(np.float64)  # noqa: E731
    for n, route in ((1, "gemv"), (17, "small"), (64, "gemm"), (130, "gemm")):
        x = bf(rng.standard_normal((n, 64)))
        y, launched = routes.call(exe["mlp"], x, w, b)
        h = r(r(x.astype(np.float64) @ w.astype(np.float64)) + b.astype(np.float64))
        close(y, bf(_gelu(h)), scale=np.maximum(np.abs(h), 1.0), ulps=2)
        assert len(launched) == 3, (n, launched)
        shuffles, grid = launched[-1]
        assert shuffles == (route == "gemv"), (n, launched)
        if route == "gemm":
            assert grid == (-(-96 // 64), -(-n // 64), 1), (n, grid)
        if route == "gemv":
            assert grid == (-(-96 // _gemv_columns()), n, 1), (n, grid)


def _bf16_llama():
    """gpu_checks' tiny HF Llama in bf16 (weights and activations), its logits as a function."""
    torch = pytest.importorskip("torch")
    hf = gpu_checks.tiny_hf_llama().to(torch.bfloat16)

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = hf

        def forward(self, input_ids):
            return self.lm(input_ids=input_ids, use_cache=False).logits

    return Logits().eval()


@needs_vulkan
def test_vulkan_bf16_tiny_llama_tokens_equal_the_cpus():
    """The torch importer's bf16 tiny Llama compiled for vulkan and for cpu (one executable
    each, sequence lengths 1, 7, 33): every position's greedy token equal, logits within two
    bf16 ulps of the largest logit (the kernels' summation orders differ)."""
    torch = pytest.importorskip("torch")
    from relax_mlir.frontend.torch import compile as torch_compile
    model = _bf16_llama()
    example, dyn = (torch.randint(0, 128, (1, 8)),), {"input_ids": {1: torch.export.Dim("s", max=64)}}
    vk = torch_compile(model, example, dynamic_shapes=dyn, target="vulkan")
    cpu = torch_compile(model, example, dynamic_shapes=dyn, target="cpu")
    for s in (1, 7, 33):
        ids = torch.randint(0, 128, (1, s), generator=torch.Generator().manual_seed(s))
        g, c = vk(ids), cpu(ids)
        assert g.dtype == torch.bfloat16 and g.shape == (1, s, 128)
        g, c = g.float().numpy(), c.float().numpy()
        np.testing.assert_array_equal(g.argmax(-1), c.argmax(-1))
        assert np.abs(g - c).max() <= 2 * ULP * np.abs(c).max(), np.abs(g - c).max()


@needs_vulkan
def test_vulkan_bf16_kv_cache_tokens_equal_the_cpus(routes):
    """``CausalLM(..., target="vulkan", kv_dtype="bf16")``: the state is bf16, the fused decode
    attention reads its rows (widened by a shift into an f32's high half): a decode step takes
    as many launches as with the f32 cache; 24 greedy tokens after a 250-token prompt (past the
    256-key split) equal the cpu target's with the bf16 cache, logits within 1e-2 of the largest."""
    pytest.importorskip("transformers")
    from relax_mlir.llm import CausalLM
    hf = gpu_checks.tiny_hf_llama()
    vk = CausalLM.from_hf(hf, max_seq_len=300, target="vulkan", kv_dtype="bf16")
    vk32 = CausalLM.from_hf(hf, max_seq_len=300, target="vulkan")
    cpu = CausalLM.from_hf(hf, max_seq_len=300, kv_dtype="bf16")
    assert vk.session.state["k"].dtype == BF16
    ids = np.random.default_rng(0).integers(1, 128, 250)
    lv, lc, _ = vk.prefill(ids), cpu.prefill(ids), vk32.prefill(ids)
    tok = int(np.argmax(lc))
    assert int(np.argmax(lv)) == tok
    for step in range(24):       # KV lengths 251..274
        (lv, nv), lc = routes.call(vk.decode, tok), cpu.decode(tok)
        if step < 2:
            _, n32 = routes.call(vk32.decode, tok)
            assert len(nv) == len(n32), (len(nv), len(n32))
        assert np.abs(lv - lc).max() < 1e-2 * np.abs(lc).max(), (step, np.abs(lv - lc).max())
        tok = int(np.argmax(lc))
        assert int(np.argmax(lv)) == tok, step
