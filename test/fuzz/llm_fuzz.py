"""Random Llama / Qwen2 / Mistral configs through :meth:`CausalLM.from_hf`, against transformers.

One case = one config drawn from the seed: family, 1 to 64 layers (mostly shallow; a fifth
of the cases deep, 16 to 64), a tiny hidden size (16 to 64), heads and KV heads dividing,
the default head_dim or an explicit one, an odd vocabulary (37 to 300), a rope variant
(default with a random theta, linear, llama3, yarn; dynamic and longrope, which
``relax_mlir/llm/weights.py`` refuses), tied embeddings, attention / MLP biases (llama),
a sliding window (mistral), the activation. The HF model is random-init in float32
(``torch.manual_seed(seed)``, 2-D weights scaled up so the logits are decisive), wrapped with
``CausalLM.from_hf(model, max_seq_len=64)`` and compared on a short prompt: the last
position's logits within ``1e-3`` (scaled by the logits' magnitude), then greedy tokens
equal to ``model.generate`` for ``steps`` decode steps (a step whose top-two logits lie within
1e-4 may differ: the case stops comparing there).

Compile cost: every case records its compile time and the compile's peak heap growth
(glibc's in-use bytes, sampled; per case and per layer) and the worker's peak RSS. A deep case (>= 16 layers) also compiles the same config with 2 layers in the
same worker first; the case fails when the compile time grows super-linearly with depth,
``time(L) / time(2) > (L / 2) * 1.5 + 3``, or the compile's heap growth exceeds a generous
linear bound, ``mem(L) > (L / 2) * 2 * mem(2) + 256 MB``.

An unsupported variant (dynamic / longrope rope, an unknown activation) must raise a clear
``NotImplementedError`` / ``ValueError`` naming it; anything else raised, a mismatch, a
crash or a hang (runner.py) is a failure.
"""

from __future__ import annotations

import os
import random
import resource
import threading
import time
from typing import Optional

import numpy as np

TOL = 1e-3
MAX_SEQ = 64


def draw_config(seed: int, max_layers: int = 64) -> tuple[str, dict, Optional[str]]:
    """(family, HF config kwargs, the expected refusal's keyword or None)."""
    r = random.Random(seed)
    family = r.choice(["llama", "llama", "qwen2", "mistral"])
    if r.random() < 0.2 and max_layers >= 16:
        layers = r.choice([16, 24, 32, 48, 64])
    else:
        layers = r.choice([1, 1, 2, 2, 3, 4, 5, 8])
    layers = min(layers, max_layers)
    kv = r.choice([1, 1, 2, 3, 4])
    heads = kv * r.choice([1, 1, 2, 3, 4])
    explicit_hd = r.random() < 0.35
    if explicit_hd:
        hd = r.choice([4, 8, 12, 16, 24])
        hidden = heads * r.randint(max(1, -(-16 // heads)), max(1, 64 // heads))   # HF: a multiple of heads
    else:
        hd = r.choice([4, 6, 8, 10, 12, 16])
        while heads * hd > 64 and hd > 2:
            hd -= 2
        hidden = heads * hd
        if hidden < 16:
            hd = 2 * ((16 + 2 * heads - 1) // (2 * heads))
            hidden = heads * hd
    kw = dict(vocab_size=r.randint(37, 300), hidden_size=hidden, intermediate_size=r.randrange(16, 97, 4),
              num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
              max_position_embeddings=r.choice([64, 128, 256]), rms_norm_eps=r.choice([1e-6, 1e-5]),
              tie_word_embeddings=r.random() < 0.3)
    if explicit_hd:
        kw["head_dim"] = hd
    refusal = None
    rope = r.choice(["default", "default", "default", "linear", "llama3", "yarn"] if r.random() < 0.9
                    else ["dynamic", "longrope"])
    theta = r.choice([10000.0, 1000.0, 500000.0, 1e6])
    if rope == "default":
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    elif rope == "linear":
        kw["rope_parameters"] = {"rope_type": "linear", "rope_theta": theta, "factor": r.choice([2.0, 4.0, 8.0])}
    elif rope == "llama3":
        kw["rope_parameters"] = {"rope_type": "llama3", "rope_theta": theta, "factor": r.choice([2.0, 8.0]),
                                 "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": r.choice([8, 16, 32])}
    elif rope == "yarn":
        kw["rope_parameters"] = {"rope_type": "yarn", "rope_theta": theta, "factor": r.choice([2.0, 4.0]),
                                 "original_max_position_embeddings": r.choice([16, 32, 64])}
    elif rope == "dynamic":
        kw["rope_parameters"] = {"rope_type": "dynamic", "rope_theta": theta, "factor": 2.0}
        refusal = "dynamic"
    else:   # longrope: per-dim factors
        half = hd // 2
        kw["rope_parameters"] = {"rope_type": "longrope", "rope_theta": theta, "short_factor": [1.0] * half,
                                 "long_factor": [2.0] * half, "original_max_position_embeddings": 32}
        refusal = "longrope"
    act = r.choice(["silu"] * 12 + ["gelu", "gelu", "gelu_pytorch_tanh", "gelu_pytorch_tanh", "relu", "relu", "sigmoid"])
    kw["hidden_act"] = act
    if act == "sigmoid" and refusal is None:
        refusal = "sigmoid"
    if family == "llama":
        kw["attention_bias"] = r.random() < 0.3
        kw["mlp_bias"] = r.random() < 0.3
    if family == "mistral":
        kw["sliding_window"] = r.choice([None, 3, 5, 8, 16, 4096])
    return family, kw, refusal


def _classes(family: str):
    import transformers
    return {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
            "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
            "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM)}[family]


def make_model(family: str, kw: dict, seed: int):
    import torch
    cfg_cls, model_cls = _classes(family)
    cfg = cfg_cls(**kw)
    torch.manual_seed(seed)
    model = model_cls(cfg).eval()
    with torch.no_grad():                      # bigger weights: decisive, non-trivial logits
        for p in model.parameters():
            p.mul_(3.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
    return model


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _heap_in_use() -> int:
    """Bytes malloc has handed out now (glibc ``mallinfo2``; C++ allocations included), or
    the resident set size where that is unavailable. Unlike the RSS it falls when memory is
    freed, so a compile's growth is measured from where the heap is, not from the
    process's high-water mark."""
    import ctypes

    global _MALLINFO
    if _MALLINFO is None:
        class MI2(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                       "fsmblks", "uordblks", "fordblks", "keepcost")]
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallinfo2.restype = MI2
            _MALLINFO = libc.mallinfo2
        except (OSError, AttributeError):
            _MALLINFO = False
    if not _MALLINFO:
        return _rss()
    m = _MALLINFO()
    return m.uordblks + m.hblkhd


_MALLINFO = None


class PeakMemory:
    """The peak heap growth while the block runs, sampled every 5 ms by a thread (which runs
    between passes: the bindings hold the GIL inside one)."""

    def __enter__(self):
        self.base = _heap_in_use()
        self.peak = self.base
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _heap_in_use())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _heap_in_use())
        self.growth = self.peak - self.base
        return False


def timed_compile(c):
    """(seconds, peak heap growth in bytes) of compiling LMConfig ``c`` (uncached)."""
    from relax_mlir.llm import causal_lm as clm
    for key in [k for k in clm._EXECUTABLES if k[0] == c]:
        del clm._EXECUTABLES[key]
    with PeakMemory() as m:
        t0 = time.perf_counter()
        clm.compile_model(c, "cpu")
        dt = time.perf_counter() - t0
    return dt, m.growth


def run_llm(seed: int, steps: int = 4, max_layers: int = 64) -> dict:
    """One config: compile, compare with transformers; returns {"calls", "error", ...}."""
    import torch

    from relax_mlir.llm import CausalLM
    from relax_mlir.llm import causal_lm as clm
    from relax_mlir.llm import weights as W
    from dataclasses import replace
    from worker import record

    family, kw, refusal = draw_config(seed, max_layers)
    desc = f"{family} {kw}"
    record(desc)
    res = {"calls": 0, "error": None, "family": family, "layers": kw["num_hidden_layers"], "refusal": refusal}
    before = set(clm._EXECUTABLES)
    try:
        model = make_model(family, kw, seed)
        L = kw["num_hidden_layers"]
        try:
            c = W.config_from_hf(model.config)
        except (NotImplementedError, ValueError) as e:
            if refusal and refusal in str(e):
                res["refused"] = str(e)[:200]
                return res
            res["error"] = f"config_from_hf raised {type(e).__name__}: {e}\n{desc}"
            return res
        if refusal:
            # a refusal may come later (LMConfig's own checks): from_hf must raise it
            try:
                CausalLM.from_hf(model, max_seq_len=MAX_SEQ)
            except (NotImplementedError, ValueError) as e:
                if refusal in str(e):
                    res["refused"] = str(e)[:200]
                    return res
                res["error"] = f"from_hf raised {type(e).__name__} not naming '{refusal}': {e}\n{desc}"
                return res
            res["error"] = f"from_hf accepted the unsupported '{refusal}'\n{desc}"
            return res
        cc = replace(c, max_positions=max(c.max_positions, MAX_SEQ))
        if L >= 16:   # the depth check: a 2-layer compile of the same config in this worker
            t2, m2 = timed_compile(replace(cc, num_layers=2))
            res["compile_s_2"], res["mem_mb_2"] = round(t2, 2), round(m2 / 2**20, 1)
        tL, mL = timed_compile(cc)
        res["compile_s"], res["mem_mb"] = round(tL, 2), round(mL / 2**20, 1)
        res["compile_s_per_layer"] = round(tL / L, 3)
        res["mem_mb_per_layer"] = round(mL / 2**20 / L, 2)
        res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        if L >= 16:
            bound_t = (L / 2) * 1.5 + 3
            if tL / t2 > bound_t:
                res["error"] = (f"compile time super-linear in depth: {tL:.1f} s at {L} layers, {t2:.1f} s at 2 "
                                f"(ratio {tL / t2:.1f} > {bound_t:.1f})\n{desc}")
                return res
            bound_m = (L / 2) * 2 * max(m2, 0) + (256 << 20)
            if mL > bound_m:
                res["error"] = (f"compile memory super-linear in depth: +{mL / 2**20:.0f} MB at {L} layers, "
                                f"+{m2 / 2**20:.0f} MB at 2 (bound {bound_m / 2**20:.0f} MB)\n{desc}")
                return res
        lm = CausalLM.from_hf(model, max_seq_len=MAX_SEQ)
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 13))
        ids = rng.integers(0, kw["vocab_size"], n).astype(np.int64)
        with torch.no_grad():
            ref = model(torch.tensor(ids[None])).logits[0, -1].numpy()
        got = lm.prefill(ids)
        res["calls"] += 1
        scale = max(1.0, float(np.abs(ref).max()))
        diff = float(np.abs(got - ref).max())
        res["max_diff"] = diff
        if not np.isfinite(got).all() or diff > TOL * scale:
            i = int(np.argmax(np.abs(got - ref)))
            res["error"] = (f"prefill logits of {n} tokens: max |diff| {diff:.3g} at {i} (got {got[i]!r}, "
                            f"want {ref[i]!r}, tol {TOL * scale:.3g})\n{desc}")
            return res
        # the reference token of each step: the argmax of transformers' full forward over the
        # sequence so far (not model.generate: with a sliding window as long as the prompt its
        # cached path picks another token than its own forward, seed 1000131)
        seq = list(ids)
        logits, ref_logits = got, ref
        for k in range(steps):
            tok = int(np.argmax(logits))
            want = int(np.argmax(ref_logits))
            top2 = np.sort(logits)[-2:]
            if tok != want:
                if top2[1] - top2[0] < 1e-4 * scale:
                    res["tie_at"] = k
                    break
                res["error"] = (f"greedy step {k}: token {tok}, transformers {want} "
                                f"(top two {top2.tolist()})\n{desc}")
                return res
            seq.append(tok)
            if k + 1 < steps:
                with torch.no_grad():
                    ref_logits = model(torch.tensor(np.asarray(seq)[None])).logits[0, -1].numpy()
            if k + 1 < steps:
                logits = lm.decode(tok)
                res["calls"] += 1
        return res
    finally:
        for key in set(clm._EXECUTABLES) - before:   # free the JIT'd code: the worker runs many configs
            del clm._EXECUTABLES[key]
