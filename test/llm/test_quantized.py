"""Weights kept as stored in a GGUF file (relax.quantized_matmul / quantized_take): every
supported format gives the logits and greedy tokens of the same file dequantized to f32
(within f32 accumulation-order error), the bound weights are the file's bytes, and the
q/k rows (llama.cpp's rope layout, group-major heads) and o columns (whole blocks per head)
are reordered correctly."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    cfg = transformers.LlamaConfig(**CFG)
    torch.manual_seed(0)
    src = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in src.parameters():
            p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
    sd = {k: v.detach().numpy().copy() for k, v in src.state_dict().items()}
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
    qkv = q.weights[q.weight_names.index("layers.0.attn.qkv.weight")]
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


def test_unsupported_roles_fall_back_to_f32(tmp_path):
    """Mixed types inside a role (q8_0 q, q4_0 k) and a format without kernels (q6_k) are
    dequantized; the rest stay quantized."""
    cfg = transformers.LlamaConfig(**CFG)
    torch.manual_seed(0)
    src = transformers.LlamaForCausalLM(cfg).eval()
    sd = {k: v.detach().numpy().copy() for k, v in src.state_dict().items()}
    path = tmp_path / "mixed.gguf"
    write_gguf(path, "llama", sd, src.config, {"attn_q.weight": T.Q8_0, "attn_k.weight": T.Q4_0,
                                               "ffn_down.weight": T.Q6_K}, T.Q4_1)
    from relax_mlir.llm import gguf as G
    from relax_mlir.llm import weights as W
    from relax_mlir.ops.quant import supported_formats
    c = G.config_from_gguf(str(path))
    got = dict(W.plan_formats(G.GGUFSource(str(path)), c, supported_formats("cpu")))
    want = {"o": "q4_1", "gate": "q4_1", "up": "q4_1", "embed": "q4_1", "lm_head": "q4_1"}
    if "q6_k" in supported_formats("cpu"):
        want["down"] = "q6_k"
    assert got == want


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
