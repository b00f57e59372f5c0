"""Weights kept as stored in a GGUF file (relax.quantized_matmul / quantized_take): every
supported format gives the logits and greedy tokens of the same file dequantized to f32
(within f32 accumulation-order error), the bound weights are the file's bytes, and the
q/k rows (llama.cpp's rope layout, group-major heads) and o columns (whole blocks per head)
are reordered correctly."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from relax_mlir.llm import CausalLM  # noqa: E402
from relax_mlir.ops.quant import row_bytes  # noqa: E402
from test_gguf import write_gguf  # noqa: E402

T = gguf.GGMLQuantizationType
# head_dim 32 (a whole q4/q8 block per head) and grouped-query attention (G = 2): the o
# projection's columns are reordered by blocks; vocab and sizes multiples of 32
CFG = dict(vocab_size=320, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5)
FORMATS = {"q8_0": T.Q8_0, "q4_0": T.Q4_0, "q4_1": T.Q4_1, "f16": T.F16, "bf16": T.BF16}
ROLES = {"embed", "qkv", "o", "gate", "up", "down", "lm_head"}


def _source_model(cfg):
    """(HF model, its state dict as numpy) with seeded weights spread wide enough that
    quantization matters (matrices x4, vectors jittered)."""
    torch.manual_seed(0)
    src = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in src.parameters():
            p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
    return src, {k: v.detach().numpy().copy() for k, v in src.state_dict().items()}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    cfg = transformers.LlamaConfig(**CFG)
    src, sd = _source_model(cfg)
    out = {}
    for name, qt in FORMATS.items():
        path = tmp_path_factory.mktemp("q") / f"{name}.gguf"
        write_gguf(path, "llama", sd, src.config, {}, qt)
        out[name] = str(path)
    return out


def _close(a, b, rel=1e-4):
    np.testing.assert_allclose(a, b, atol=rel * float(np.abs(b).max()), rtol=0)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_quantized_equals_dequantized(files, fmt):
    q = CausalLM.from_gguf(files[fmt], max_seq_len=64)
    f = CausalLM.from_gguf(files[fmt], max_seq_len=64, quantized=False)
    assert dict(q.config.formats) == {r: fmt for r in ROLES}
    assert f.config.formats == ()
    qkv = q.named_weights()["layers.0.attn.qkv.weight"]
    assert qkv.dtype == np.int8 and qkv.shape == ((4 + 2 * 2) * 32, row_bytes(fmt, 128))
    ids = np.random.default_rng(1).integers(0, 320, 11).astype(np.int64)
    _close(q.extend(ids), f.extend(ids))                 # prefill of 11 tokens, every position
    _close(q.prefill(ids[:6]), f.prefill(ids[:6]))
    for t in ids[6:]:                                    # decode: the M = 1 kernels
        _close(q.decode(t), f.decode(t))
    np.testing.assert_array_equal(q.generate(ids[:4], 10, eos_token_id=[]), f.generate(ids[:4], 10, eos_token_id=[]))


def test_against_transformers_q8_0(files):
    """The quantized model against transformers on the dequantized weights (HF layout: the
    un-permuted q/k rows and the reordered o columns are right)."""
    path = files["q8_0"]
    f = CausalLM.from_gguf(path, max_seq_len=64, quantized=False)
    q = CausalLM.from_gguf(path, max_seq_len=64)
    from relax_mlir.llm import gguf as G
    sd = G.hf_state_dict(path)
    cfg = transformers.LlamaConfig(**CFG)
    m = transformers.LlamaForCausalLM(cfg).eval()
    _, unexpected = m.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in sd.items()}, strict=False)
    assert not unexpected
    ids = np.random.default_rng(2).integers(0, 320, 9).astype(np.int64)
    with torch.no_grad():
        ref = m(torch.tensor(ids[None])).logits[0].numpy()
    np.testing.assert_allclose(q.extend(ids), ref, atol=1e-3, rtol=1e-3)
    np.testing.assert_allclose(f.extend(ids), ref, atol=1e-3, rtol=1e-3)


# A Q4_K_M-like file: types mixed by role AND by layer, K-quants where K is a multiple of 256,
# q/k/v of different types in some layers (kept apart), an o projection in Q4_K with 64-wide
# heads under grouped-query attention (blocks straddle heads: the heads are permuted back at
# run time), token_embd Q6_K. Layers 0 and 2 share their format tuple (one layer function).
MIXED_CFG = dict(vocab_size=320, hidden_size=256, intermediate_size=512, num_hidden_layers=3, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5)
_KQ = {"attn_q.weight": T.Q4_K, "attn_k.weight": T.Q5_K, "attn_v.weight": T.Q6_K, "attn_output.weight": T.Q4_K,
       "ffn_gate.weight": T.Q5_0, "ffn_up.weight": T.Q5_K, "ffn_down.weight": T.Q6_K}
MIXED_TYPES = {**{f"blk.{i}.{n}": t for i in (0, 2) for n, t in _KQ.items()},
               **{f"blk.1.{n}": T.Q8_0 for n in ("attn_q.weight", "attn_k.weight", "attn_v.weight")},
               "blk.1.attn_output.weight": T.Q5_1, "blk.1.ffn_gate.weight": T.Q4_K, "blk.1.ffn_up.weight": T.Q4_0,
               "blk.1.ffn_down.weight": T.Q4_K, "token_embd.weight": T.Q6_K, "output.weight": T.Q8_0}
LAYER0 = (("down", "q6_k"), ("gate", "q5_0"), ("k", "q5_k"), ("o", "q4_k"), ("q", "q4_k"), ("up", "q5_k"),
          ("v", "q6_k"))
LAYER1 = (("down", "q4_k"), ("gate", "q4_k"), ("o", "q5_1"), ("qkv", "q8_0"), ("up", "q4_0"))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """(path, HF model on the dequantized weights) of the mixed-format file."""
    cfg = transformers.LlamaConfig(**MIXED_CFG)
    src, sd = _source_model(cfg)
    path = tmp_path_factory.mktemp("mixed") / "mixed.gguf"
    ref = write_gguf(path, "llama", sd, src.config, MIXED_TYPES, T.F32)
    m = transformers.LlamaForCausalLM(cfg).eval()
    m.load_state_dict({k: torch.from_numpy(np.asarray(v, np.float32)) for k, v in ref.items()})
    return str(path), m


def test_mixed_formats_plan(mixed):
    """Every weight stays in its stored format: per-layer tuples, q/k/v apart where they differ."""
    from relax_mlir.llm import gguf as G
    from relax_mlir.llm import weights as W
    from relax_mlir.ops.quant import supported_formats
    path, _ = mixed
    c = G.config_from_gguf(path)
    for target in ("cpu", "vulkan"):
        formats, layers = W.plan_formats(G.GGUFSource(path), c, supported_formats(target))
        assert formats == (("embed", "q6_k"), ("lm_head", "q8_0"))
        assert layers == (LAYER0, LAYER1, LAYER0)


def test_mixed_formats_every_weight_as_stored(mixed):
    """Logits equal the same file dequantized to f32 (prefill, extend, decode) and
    transformers on the dequantized weights; greedy tokens equal; the bound weights are the
    file's bytes; one layer function per distinct format tuple."""
    path, hf = mixed
    q = CausalLM.from_gguf(path, max_seq_len=64)
    f = CausalLM.from_gguf(path, max_seq_len=64, quantized=False)
    assert q.config.layer_formats == (LAYER0, LAYER1, LAYER0) and f.config.layer_formats == ()
    assert sorted(q.exe.functions) == ["extend", "extend_layers", "extend_layers_1", "layer_attend",
                                       "layer_attend_1", "layer_prefill", "layer_prefill_1", "layer_qkv",
                                       "layer_qkv_1", "prefill", "prefill_layers", "prefill_layers_1"]
    bound = q.named_weights()
    assert {n for n, w in bound.items() if w.dtype == np.float32} == \
        {"rope_inv_freq", "norm.weight"} | {f"layers.{i}.{n}_norm.weight" for i in range(3) for n in ("input", "post")}
    assert bound["layers.0.attn.k.weight"].shape == (128, row_bytes("q5_k", 256))
    assert bound["layers.1.attn.qkv.weight"].shape == (512, row_bytes("q8_0", 256))
    from relax_mlir.llm import gguf as G
    raw = G.raw_tensors(path)
    np.testing.assert_array_equal(bound["layers.0.attn.o.weight"].view(np.uint8),   # HF column order: as stored
                                  raw["blk.0.attn_output.weight"].data)
    np.testing.assert_array_equal(bound["embed.weight"].view(np.uint8), raw["token_embd.weight"].data)
    ids = np.random.default_rng(3).integers(0, 320, 11).astype(np.int64)
    _close(q.extend(ids), f.extend(ids))
    _close(q.prefill(ids[:6]), f.prefill(ids[:6]))
    for t in ids[6:]:
        _close(q.decode(t), f.decode(t))
    with torch.no_grad():
        ref = hf(torch.tensor(ids[None])).logits[0].numpy()
    q.reset()
    _close(q.extend(ids), ref, 1e-3)
    np.testing.assert_array_equal(q.generate(ids[:4], 10, eos_token_id=[]), f.generate(ids[:4], 10, eos_token_id=[]))


def test_mixed_formats_on_vulkan(mixed):
    """The same file on the vulkan target (every format on the quantized GEMV / GEMM rules,
    K-quants included: backends/gpu/quant_gemv.py) gives the cpu library kernels' logits."""
    from relax_mlir.runtime import vulkan
    ok, why = vulkan.available()
    if not ok:
        pytest.skip(f"no Vulkan device: {why}")
    path, _ = mixed
    g = CausalLM.from_gguf(path, max_seq_len=16, target="vulkan")
    c = CausalLM.from_gguf(path, max_seq_len=16)
    assert g.config.layer_formats == (LAYER0, LAYER1, LAYER0)
    ids = np.random.default_rng(6).integers(0, 320, 5).astype(np.int64)
    _close(g.prefill(ids), c.prefill(ids))
    _close(g.decode(int(ids[0])), c.decode(int(ids[0])))


def test_mixed_formats_q8_activations(mixed):
    """activations="q8" on every mixed format: llama.cpp's rounding of x, a few 1e-3 off."""
    path, _ = mixed
    q = CausalLM.from_gguf(path, max_seq_len=64, activations="q8")
    f = CausalLM.from_gguf(path, max_seq_len=64, quantized=False)
    ids = np.random.default_rng(5).integers(0, 320, 7).astype(np.int64)
    _close(q.extend(ids), f.extend(ids), 3e-2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_from_pretrained_keeps_half_weights(tmp_path, dtype):
    """A save_pretrained directory in bf16/f16: projections stay half (raw rows), the result
    equals the same checkpoint converted to f32 and transformers on it (weights upcast)."""
    cfg = transformers.LlamaConfig(**{**CFG, "tie_word_embeddings": dtype == "float16"})
    torch.manual_seed(0)
    src = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in src.parameters():
            p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
    src.to(getattr(torch, dtype)).save_pretrained(tmp_path)
    q = CausalLM.from_pretrained(str(tmp_path), max_seq_len=64)
    f = CausalLM.from_pretrained(str(tmp_path), max_seq_len=64, quantized=False)
    fmt = "bf16" if dtype == "bfloat16" else "f16"
    assert dict(q.config.formats) == {r: fmt for r in ROLES}
    ids = np.random.default_rng(4).integers(0, 320, 9).astype(np.int64)
    got = q.extend(ids)
    _close(got, f.extend(ids))
    with torch.no_grad():
        ref = src.float()(torch.tensor(ids[None])).logits[0].numpy()
    np.testing.assert_allclose(got, ref, atol=1e-3 * float(np.abs(ref).max()), rtol=0)


REAL_Q4_K_M = os.path.expanduser("~/.cache/relax-mlir/bench-gguf/SmolLM2-135M-Instruct.Q4_K_M.gguf")


@pytest.mark.skipif(not os.path.exists(REAL_Q4_K_M),
                    reason="no SmolLM2 Q4_K_M file (bench/bench_llamacpp.py --files q4_k_m --make-only makes it)")
def test_real_q4_k_m_every_weight_as_stored():
    """llama.cpp's own Q4_K_M SmolLM2 (Q5_0 / Q8_0 / Q4_K / Q6_K by role and layer, Q8_0
    token_embd): every projection and the embedding stay as stored, and the logits and 16
    greedy tokens of a chat prompt equal the same file dequantized to f32."""
    from relax_mlir.llm import gguf as G
    q = CausalLM.from_gguf(REAL_Q4_K_M, max_seq_len=96)
    raw = G.raw_tensors(REAL_Q4_K_M)
    f32 = {n for n, w in q.named_weights().items() if w.dtype == np.float32}
    assert f32 == {"rope_inv_freq", "norm.weight"} | {f"layers.{i}.{n}_norm.weight" for i in range(30)
                                                       for n in ("input", "post")}
    # attn_v is Q8_0 in 14 layers (q/k/v apart there), Q5_0 like q and k in 16 (fused)
    assert sum(f"layers.{i}.attn.qkv.weight" in q.named_weights() for i in range(30)) == 16
    stored = {t.qtype.name.lower() for n, t in raw.items() if n.endswith(".weight") and len(t.shape) == 2}
    assert stored == {"q5_0", "q8_0", "q4_k", "q6_k"}
    assert {f for layer in q.config.layer_formats for _, f in layer} | {f for _, f in q.config.formats} == stored
    f = CausalLM.from_gguf(REAL_Q4_K_M, max_seq_len=96, quantized=False)
    ids = q.tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}])
    _close(q.prefill(ids), f.prefill(ids))
    np.testing.assert_array_equal(q.generate(ids, 16), f.generate(ids, 16))
