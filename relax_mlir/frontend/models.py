"""Small reference models built with the relax builders (symbolic batch / sequence dims),
with numpy references. Used by the demo, the benchmarks and the end-to-end tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from ..dialects import relax
from .builder import graph_function


# -- MLP --------------------------------------------------------------------------

@dataclass(frozen=True)
class MLPConfig:
    d_in: int = 512
    d_hidden: int = 2048
    d_out: int = 512
    max_batch: int = 4096


def mlp_module(ctx: ir.Context, cfg: MLPConfig = MLPConfig()) -> ir.Module:
    """``relu(x @ W1 + b1) @ W2 + b2`` with x: (n, d_in)."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        params = [("x", ["n", cfg.d_in], "f32"), ("w1", [cfg.d_in, cfg.d_hidden], "f32"),
                  ("b1", [cfg.d_hidden], "f32"), ("w2", [cfg.d_hidden, cfg.d_out], "f32"),
                  ("b2", [cfg.d_out], "f32")]
        with graph_function(m, "main", params, upper_bounds={"n": cfg.max_batch}) as fn:
            x, w1, b1, w2, b2 = fn.params
            h = relax.relu(relax.add(relax.matmul(x, w1), b1))
            fn.ret(relax.add(relax.matmul(h, w2), b2))
    return m


def mlp_params(cfg: MLPConfig, rng: np.random.Generator) -> list[np.ndarray]:
    f = np.float32
    return [(rng.standard_normal((cfg.d_in, cfg.d_hidden)) / np.sqrt(cfg.d_in)).astype(f),
            rng.standard_normal(cfg.d_hidden).astype(f) * 0.1,
            (rng.standard_normal((cfg.d_hidden, cfg.d_out)) / np.sqrt(cfg.d_hidden)).astype(f),
            rng.standard_normal(cfg.d_out).astype(f) * 0.1]


def mlp_reference(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


# -- transformer block --------------------------------------------------------------

@dataclass(frozen=True)
class BlockConfig:
    d_model: int = 256
    heads: int = 4
    d_ffn: int = 512
    eps: float = 1e-5
    max_seq: int = 2048

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads


def block_module(ctx: ir.Context, cfg: BlockConfig = BlockConfig()) -> ir.Module:
    """One pre-norm decoder block over x: (s, d): RMSNorm, causal multi-head attention,
    RMSNorm, SiLU-gated MLP, residuals. ``s`` is symbolic."""
    d, H, Dh, F = cfg.d_model, cfg.heads, cfg.head_dim, cfg.d_ffn
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        params = [("x", ["s", d], "f32"), ("norm1", [d], "f32"), ("wq", [d, d], "f32"),
                  ("wk", [d, d], "f32"), ("wv", [d, d], "f32"), ("wo", [d, d], "f32"),
                  ("norm2", [d], "f32"), ("w_gate", [d, F], "f32"), ("w_up", [d, F], "f32"),
                  ("w_down", [F, d], "f32")]
        with graph_function(m, "main", params, upper_bounds={"s": cfg.max_seq}) as fn:
            x, norm1, wq, wk, wv, wo, norm2, w_gate, w_up, w_down = fn.params
            h = relax.rms_norm(x, norm1, axes=[-1], epsilon=cfg.eps)

            def heads(t, perm):
                return relax.permute_dims(relax.reshape(t, shape=["s", H, Dh]), axes=perm)

            q = heads(relax.matmul(h, wq), [1, 0, 2])                 # (H, s, Dh)
            kt = heads(relax.matmul(h, wk), [1, 2, 0])                # (H, Dh, s)
            v = heads(relax.matmul(h, wv), [1, 0, 2])                 # (H, s, Dh)
            scale = relax.full(shape=[], value=1.0 / float(np.sqrt(Dh)), dtype="f32")
            scores = relax.multiply(relax.matmul(q, kt), scale)       # (H, s, s)
            mask = relax.triu(relax.full(shape=["s", "s"], value=-1e9, dtype="f32"), k=1)
            probs = relax.softmax(relax.add(scores, mask), axis=-1)
            attn = relax.matmul(probs, v)                             # (H, s, Dh)
            attn = relax.reshape(relax.permute_dims(attn, axes=[1, 0, 2]), shape=["s", d])
            x1 = relax.add(x, relax.matmul(attn, wo))
            h2 = relax.rms_norm(x1, norm2, axes=[-1], epsilon=cfg.eps)
            ff = relax.multiply(relax.silu(relax.matmul(h2, w_gate)), relax.matmul(h2, w_up))
            fn.ret(relax.add(x1, relax.matmul(ff, w_down)))
    return m


def block_params(cfg: BlockConfig, rng: np.random.Generator) -> list[np.ndarray]:
    d, F = cfg.d_model, cfg.d_ffn
    f = np.float32

    def w(a, b):
        return (rng.standard_normal((a, b)) / np.sqrt(a)).astype(f)

    return [(1 + 0.1 * rng.standard_normal(d)).astype(f), w(d, d), w(d, d), w(d, d), w(d, d),
            (1 + 0.1 * rng.standard_normal(d)).astype(f), w(d, F), w(d, F), w(F, d)]


def _rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def block_reference(x, norm1, wq, wk, wv, wo, norm2, w_gate, w_up, w_down, cfg: BlockConfig = BlockConfig()):
    s, d = x.shape
    H, Dh = cfg.heads, cfg.head_dim
    h = _rms(x, norm1, cfg.eps)
    q = (h @ wq).reshape(s, H, Dh).transpose(1, 0, 2)
    k = (h @ wk).reshape(s, H, Dh).transpose(1, 2, 0)
    v = (h @ wv).reshape(s, H, Dh).transpose(1, 0, 2)
    scores = (q @ k) * np.float32(1.0 / np.sqrt(Dh)) + np.triu(np.full((s, s), -1e9, np.float32), 1)
    scores = scores - scores.max(-1, keepdims=True)
    p = np.exp(scores)
    p = p / p.sum(-1, keepdims=True)
    attn = (p @ v).transpose(1, 0, 2).reshape(s, d)
    x1 = x + attn @ wo
    h2 = _rms(x1, norm2, cfg.eps)
    g = h2 @ w_gate
    ff = (g / (1 + np.exp(-g))) * (h2 @ w_up)
    return x1 + ff @ w_down
