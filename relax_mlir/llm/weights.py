"""Hugging Face Llama-family configs and weights -> :class:`LMConfig` and our weight layout.

Done once at load time, in numpy: Linear weights transposed to (in, out); q/k/v fused
into one (hidden, (H + 2 kv) hd) matrix with the query heads reordered group-major
(see :mod:`relax_mlir.llm.model`), o_proj's input columns reordered to match; gate and
up fused into (hidden, 2 F); a tied lm_head is the embedding transposed.
"""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from .model import LMConfig

#: HF ``model_type``\ s whose decoder is this graph: Llama (attention_bias on q, k, v and o;
#: mlp_bias), Mistral (sliding window), Qwen2 (bias on q, k, v only)
SUPPORTED = ("llama", "mistral", "qwen2")


def _get(cfg, name, default=None):
    v = getattr(cfg, name, default)
    return default if v is None else v


def rope_tables(cfg, head_dim: int) -> tuple[np.ndarray, float]:
    """(inv_freq (head_dim/2,) f32, attention_scaling) from HF's own rope init functions,
    so every static rope type (default, linear, llama3, yarn) matches transformers."""
    import torch
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = _get(cfg, "rope_parameters") or {}
    rope_type = params.get("rope_type", "default")
    if rope_type in ("dynamic", "longrope"):
        raise NotImplementedError(f"rope_type '{rope_type}' changes the frequencies with the sequence "
                                  "length; only static rope types (default, linear, llama3, yarn) are supported")
    if rope_type == "default":
        base = params.get("rope_theta", _get(cfg, "rope_theta", 10000.0))
        inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float) / head_dim))
        return inv.numpy().astype(np.float32), 1.0
    inv, scaling = ROPE_INIT_FUNCTIONS[rope_type](cfg, "cpu")
    return inv.float().numpy(), float(scaling)


def config_from_hf(cfg) -> LMConfig:
    mt = getattr(cfg, "model_type", "llama")
    if mt not in SUPPORTED:
        raise NotImplementedError(f"model_type '{mt}' is not supported (supported: llama, mistral, qwen2)")
    H = cfg.num_attention_heads
    KV = _get(cfg, "num_key_value_heads", H)
    hd = _get(cfg, "head_dim") or cfg.hidden_size // H
    if mt == "qwen2":
        qkv_bias, o_bias = True, False
    elif mt == "llama":
        qkv_bias = o_bias = bool(_get(cfg, "attention_bias", False))
    else:
        qkv_bias = o_bias = False
    window = None
    if mt == "mistral":
        window = _get(cfg, "sliding_window")
    elif mt == "qwen2" and _get(cfg, "use_sliding_window", False):
        raise NotImplementedError("qwen2 with use_sliding_window=True (per-layer windows) is not supported")
    _, scaling = rope_tables(cfg, hd)
    return LMConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size, num_layers=cfg.num_hidden_layers,
                    num_heads=H, num_kv_heads=KV, head_dim=hd, intermediate_size=cfg.intermediate_size,
                    rms_norm_eps=float(cfg.rms_norm_eps), qkv_bias=qkv_bias, o_bias=o_bias,
                    mlp_bias=bool(_get(cfg, "mlp_bias", False)), hidden_act=_get(cfg, "hidden_act", "silu"),
                    attention_scaling=scaling, sliding_window=window)


def _group_major_rows(w: np.ndarray, c: LMConfig) -> np.ndarray:
    """Rows (H*hd, ...) in HF order h = kv*G + g -> group-major g*KV + kv."""
    rest = w.shape[1:]
    return w.reshape(c.num_kv_heads, c.group, c.head_dim, *rest).swapaxes(0, 1).reshape(w.shape)


def convert_state_dict(sd: Mapping[str, np.ndarray], c: LMConfig, tie: bool, prefix: str = "model.") -> dict[str, np.ndarray]:
    """HF names/layouts -> our parameter names (:meth:`LlamaModel.named_parameters`)."""
    f32 = np.float32

    def g(name):
        return np.asarray(sd[name], dtype=f32)

    out = {"embed.weight": np.ascontiguousarray(g(prefix + "embed_tokens.weight"))}
    for i in range(c.num_layers):
        p, o = f"{prefix}layers.{i}.", f"layers.{i}."
        out[o + "input_norm.weight"] = g(p + "input_layernorm.weight")
        out[o + "post_norm.weight"] = g(p + "post_attention_layernorm.weight")
        q = _group_major_rows(g(p + "self_attn.q_proj.weight"), c)
        out[o + "attn.qkv.weight"] = np.ascontiguousarray(
            np.concatenate([q, g(p + "self_attn.k_proj.weight"), g(p + "self_attn.v_proj.weight")]).T)
        if c.qkv_bias:
            out[o + "attn.qkv.bias"] = np.concatenate([_group_major_rows(g(p + "self_attn.q_proj.bias"), c),
                                                      g(p + "self_attn.k_proj.bias"), g(p + "self_attn.v_proj.bias")])
        wo = g(p + "self_attn.o_proj.weight")                      # (d, H*hd): columns group-major
        out[o + "attn.o.weight"] = np.ascontiguousarray(_group_major_rows(wo.T, c))
        if c.o_bias:
            out[o + "attn.o.bias"] = g(p + "self_attn.o_proj.bias")
        for n in ("gate", "up"):
            out[o + f"mlp.{n}.weight"] = np.ascontiguousarray(g(p + f"mlp.{n}_proj.weight").T)
        if c.mlp_bias:
            for n in ("gate", "up", "down"):
                out[o + f"mlp.{n}.bias"] = g(p + f"mlp.{n}_proj.bias")
        out[o + "mlp.down.weight"] = np.ascontiguousarray(g(p + "mlp.down_proj.weight").T)
    out["norm.weight"] = g(prefix + "norm.weight")
    head = out["embed.weight"] if tie or "lm_head.weight" not in sd else g("lm_head.weight")
    out["lm_head.weight"] = np.ascontiguousarray(head.T)
    return out


def torch_state_dict(model) -> dict[str, np.ndarray]:
    """A torch module's state_dict as float32 numpy arrays (shared storage where possible)."""
    import torch
    out = {}
    for k, v in model.state_dict().items():
        if v.dtype != torch.float32:
            v = v.float()
        out[k] = v.detach().cpu().numpy()
    return out


def safetensors_state_dict(path: str) -> dict[str, np.ndarray]:
    """Every tensor of a .safetensors file, or of every such file in a directory."""
    from safetensors.numpy import load_file
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(path, f) for f in os.listdir(path) if f.endswith(".safetensors"))
    if not files:
        raise FileNotFoundError(f"no .safetensors file at {path}")
    out: dict[str, np.ndarray] = {}
    for f in files:
        out.update(load_file(f))
    return out


def load_hf_config(path: str):
    from transformers import AutoConfig
    return AutoConfig.from_pretrained(path if os.path.isdir(path) else os.path.dirname(path))


def tie_embeddings(cfg) -> bool:
    return bool(_get(cfg, "tie_word_embeddings", False))


def inv_freq(cfg, c: LMConfig, model=None) -> np.ndarray:
    """The model's own inv_freq buffer when there is one (exactly what HF multiplies by)."""
    rot = getattr(getattr(model, "model", None), "rotary_emb", None) if model is not None else None
    if rot is not None and hasattr(rot, "inv_freq"):
        return rot.inv_freq.detach().float().cpu().numpy().copy()
    return rope_tables(cfg, c.head_dim)[0]


__all__ = ["SUPPORTED", "config_from_hf", "convert_state_dict", "torch_state_dict", "safetensors_state_dict",
           "load_hf_config", "tie_embeddings", "inv_freq", "rope_tables"]
