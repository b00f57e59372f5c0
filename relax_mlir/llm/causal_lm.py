"""CausalLM: a compiled Llama-family model with a KV cache, prefill / decode / generate.

::

    from transformers import LlamaForCausalLM
    from relax_mlir.llm import CausalLM

    lm = CausalLM.from_hf(hf_model, max_seq_len=512)   # compiles once (both graph functions)
    logits = lm.prefill(ids)          # (vocab,) logits after the prompt; cache filled
    logits = lm.decode(token)         # (vocab,) after one more token
    out = lm.generate(ids, max_new_tokens=32)           # greedy (temperature/top_p optional)

The KV cache is executable-owned state (:mod:`relax_mlir.ops.state`): the compiled module
declares ``k{i}``, ``v{i}`` per layer, shape ``(cap, kv_heads, head_dim)`` (sequence axis
first), and each CausalLM holds one :class:`~relax_mlir.runtime.executable.Session` whose
buffers (``max_seq_len`` rows) ARE the cache. The graph functions write the new keys
and values into rows [p, p + s) themselves, then read rows [0, p + s) in place (views): a decode step moves ``2 * layers * kv_heads * head_dim * 4`` bytes into the
cache (:attr:`CausalLM.bytes_per_token`), never the cache itself, and Python passes only
the new token(s) and the cached length (the weights are bound once:
``Function.bind_params``). :class:`KVCache` is the Python handle on that state: its
arrays are the session's buffers, ``length`` the filled rows. Two CausalLMs of one
config share the compiled executable, not their caches.

``target="vulkan"`` (or ``"cuda"``) compiles the same graph for a GPU: the cache is then
device memory owned by the session (``lm.cache.k[i]`` reads a layer back as numpy) and
the bound weights are uploaded once, when the CausalLM is made. ``kv_dtype="f16"`` (or
``"bf16"``) keeps the cache in 16 bits (half the bytes
decode attention reads; the GPU's fused decode attention widens each element as it loads
it, f32 arithmetic; off by default, docs/gpu.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from .model import LlamaModel, LMConfig
from . import weights as W

_EXECUTABLES: dict[tuple[LMConfig, str], tuple] = {}


class KVCache:
    """A handle on a session's KV state: ``k[i]``, ``v[i]`` are layer ``i``'s
    ``(max_seq_len, kv_heads, head_dim)`` block of the session's buffers ``k``, ``v`` (views;
    on a GPU target: read back from the device as numpy); ``length`` rows are filled."""

    def __init__(self, session, num_layers: int):
        self.session = session
        self.num_layers = num_layers
        self.max_seq_len = session.state_shapes["k"][0] // num_layers if num_layers else 0
        self.length = 0

    def _blocks(self, name: str) -> list[np.ndarray]:
        a = self.session.state[name]
        return list(a.reshape(self.num_layers, -1, *a.shape[1:]))

    @property
    def k(self) -> list[np.ndarray]:
        return self._blocks("k")

    @property
    def v(self) -> list[np.ndarray]:
        return self._blocks("v")

    def past(self) -> np.ndarray:
        """The zero-byte ``(length, 0)`` array whose shape tells ``extend`` the cached length."""
        return np.empty((self.length, 0), np.int8)

    def views(self) -> list[np.ndarray]:
        """[k_0[:p], v_0[:p], ...]: the filled rows (views of the session's buffers)."""
        p = self.length
        out = []
        for k, v in zip(self.k, self.v):
            out += [k[:p], v[:p]]
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the ``k`` and ``v`` buffers (a GPU target's module may hold other state:
        the decode attention's row counters)."""
        s = self.session
        return sum(int(d.sizes[0]) for name, d in zip(s.state_shapes, s._state_descs) if name in ("k", "v"))


def compile_model(c: LMConfig, target: str = "cpu"):
    """(executable, weight names) for a config; compiled once per process per config and target."""
    if (c, target) not in _EXECUTABLES:
        import relax_mlir
        from mlir import ir

        model = LlamaModel(c)
        ctx = relax_mlir.make_context()
        with ctx, ir.Location.unknown():
            module = ir.Module.create()
            names = model.build(module)
        # the compile cache: a later process loads this config's library instead of compiling
        _EXECUTABLES[c, target] = (relax_mlir.compile(module, target=target, options={"cache": True}), names)
    return _EXECUTABLES[c, target]


class CausalLM:
    """A compiled decoder LM; see the module docstring."""

    def __init__(self, config: LMConfig, weights: dict[str, np.ndarray], max_seq_len: int = 2048,
                 eos_token_id=None, target: str = "cpu", kv_dtype: Optional[str] = None):
        self.max_seq_len = int(max_seq_len)
        if kv_dtype is not None:      # the KV cache's element type (LMConfig.kv_dtype)
            config = replace(config, kv_dtype=kv_dtype)
        if self.max_seq_len > config.max_positions:   # the state's capacity bound is part of the graph
            config = replace(config, max_positions=self.max_seq_len)
        self.config = config
        self.target = target
        self.exe, self.weight_names = compile_model(config, target)
        model = LlamaModel(config)
        # the layers' weights are checked as they are stacked (a lazy mapping makes each once)
        missing = [n for n, _ in model.named_parameters() if not n.startswith("layers.") and n not in weights] + \
            [n for n in self.weight_names if not n.startswith("stacks.") and n not in weights]
        if missing:
            raise ValueError(f"missing weights: {', '.join(missing[:5])}")
        weights = model.stack_weights(weights)   # the graph takes each run of layers' weights stacked
        dtypes = {n: p.dtype for n, p in model.named_parameters()}
        # f32 weights as f32; block-quantized ones (i8 raw rows) as their bytes, never copied
        self.weights = [np.ascontiguousarray(weights[n], dtype=np.float32) if dtypes.get(n) == "f32"
                        else np.ascontiguousarray(weights[n]).view(np.int8) for n in self.weight_names]
        self.session = self.exe.session(rows=self.max_seq_len * config.num_layers)
        self.cache = KVCache(self.session, config.num_layers)
        # the ~9 arrays per layer are checked and converted once (a GPU target: uploaded once,
        # shared by both functions); a call passes ids (and past)
        bound = [self.exe.upload(w) for w in self.weights] if hasattr(self.exe, "upload") else self.weights
        self._prefill = self.session["prefill"].bind_params(*bound)
        self._extend = self.session["extend"].bind_params(*bound)
        self.eos_token_id = eos_token_id

    def named_weights(self) -> dict[str, np.ndarray]:
        """Every bound weight by its per-layer name (:meth:`LlamaModel.named_parameters`):
        the global ones as bound, a layer's as a view of its row of the run's stacked bytes
        (f32 weights as f32, the others as their stored bytes)."""
        bound = dict(zip(self.weight_names, self.weights))
        model = LlamaModel(self.config)
        out = {n: bound[n] for n, _ in model.named_parameters() if n in bound}
        for r, stack in enumerate(model.stacks()):
            for (n, lp), (sn, _) in zip(stack.spec, stack.named_parameters()):
                rows = bound[f"stacks.{r}.{sn}"]
                for j in range(stack.count):
                    w = np.asarray(rows[j])
                    out[f"layers.{stack.first + j}.{n}"] = (w.view(np.float32) if lp.dtype == "f32" else w).reshape(lp.shape)
        return out

    # -- construction --------------------------------------------------------------------

    @classmethod
    def from_hf(cls, model, max_seq_len: Optional[int] = None, target: str = "cpu",
                kv_dtype: Optional[str] = None) -> "CausalLM":
        """Wrap a transformers causal LM (Llama, Mistral, Qwen2 families) in f32, compiled for
        ``target`` (``cpu``, ``vulkan``, ``cuda``)."""
        cfg = model.config
        c = W.config_from_hf(cfg)
        sd = W.torch_state_dict(model)
        weights = W.convert_state_dict(sd, c, tie=W.tie_embeddings(cfg))
        weights["rope_inv_freq"] = W.inv_freq(cfg, c, model)
        msl = max_seq_len or getattr(cfg, "max_position_embeddings", 2048)
        return cls(c, weights, msl, eos_token_id=getattr(getattr(model, "generation_config", None),
                                                          "eos_token_id", None), target=target, kv_dtype=kv_dtype)

    @classmethod
    def random(cls, config: LMConfig, max_seq_len: int = 2048, seed: int = 0, rope_theta: float = 10000.0,
               std: float = 0.02, target: str = "cpu", kv_dtype: Optional[str] = None) -> "CausalLM":
        """Random-init weights (normal(0, std), norms at 1) without torch: for demos and benchmarks.
        ``config.formats`` may keep matrices as f16 or bf16 (one of the two for all its roles):
        those are drawn in f32 and stored rounded (f16) or truncated (bf16) as raw rows."""
        fmts = {f for _, f in config.formats}
        if config.layer_formats or not fmts <= {"f16", "bf16"} or len(fmts) > 1:
            raise ValueError("CausalLM.random makes f32 weights (or f16 / bf16 ones: one of them for every role "
                             "of config.formats): a config with quantized formats needs them from a file "
                             "(CausalLM.from_gguf)")
        half = fmts.pop() if fmts else None
        rng = np.random.default_rng(seed)
        weights = {}
        for name, p in LlamaModel(config).named_parameters():
            if name == "rope_inv_freq":
                hd = config.head_dim
                weights[name] = (1.0 / rope_theta ** (np.arange(0, hd, 2, dtype=np.float32) / hd)).astype(np.float32)
            elif name.endswith("norm.weight"):
                weights[name] = np.ones(p.shape, np.float32)
            elif name.endswith(".bias"):
                weights[name] = np.zeros(p.shape, np.float32)
            elif p.dtype == "i8":   # an f16 / bf16 matrix's raw rows (N, 2K)
                w = rng.standard_normal((p.shape[0], p.shape[1] // 2), dtype=np.float32) * std
                bits = w.astype(np.float16).view(np.uint16) if half == "f16" else (w.view(np.uint32) >> 16).astype(np.uint16)
                weights[name] = bits.view(np.int8).reshape(p.shape)
            else:
                weights[name] = (rng.standard_normal(p.shape, dtype=np.float32) * std)
        return cls(config, weights, max_seq_len, target=target, kv_dtype=kv_dtype)

    @classmethod
    def from_pretrained(cls, path: str, max_seq_len: Optional[int] = None, target: str = "cpu",
                        quantized: bool = True, kv_dtype: Optional[str] = None) -> "CausalLM":
        """A local model directory (config.json + *.safetensors); nothing is downloaded, no
        torch model is made: the files are memory-mapped, f16/bf16 projections stay as stored
        (converted in the kernels' registers; ``quantized=False``: all converted to f32 once)."""
        from ..ops.quant import supported_formats

        cfg, c = W.load_pretrained_config(path)
        src, tie = W.SafetensorsSource(path), W.tie_embeddings(cfg)
        if quantized:
            c = W.stored_formats(src, c, supported_formats(target), tie)
        weights = W.model_weights(src, c, tie, lazy=True)
        weights["rope_inv_freq"] = W.inv_freq(cfg, c)
        return cls(c, weights, max_seq_len or getattr(cfg, "max_position_embeddings", 2048),
                   eos_token_id=getattr(cfg, "eos_token_id", None), target=target, kv_dtype=kv_dtype)

    @classmethod
    def from_gguf(cls, path: str, max_seq_len: Optional[int] = None, target: str = "cpu",
                  quantized: bool = True, activations: str = "f32", kv_dtype: Optional[str] = None) -> "CausalLM":
        """A llama.cpp GGUF file (llama, mistral, qwen2), its tokenizer and chat template as
        ``.tokenizer`` (:class:`~relax_mlir.llm.gguf.GGUFTokenizer`); ``max_seq_len`` defaults to
        min(the file's context length, 2048). Weights in a format ``target`` computes on
        (:func:`relax_mlir.ops.quant.supported_formats`) stay as stored, dequantized in the
        kernels' registers (``quantized=False``: every weight dequantized to f32 once);
        ``activations="q8"``: the quantized matmuls quantize their inputs to 8 bits
        (llama.cpp's int8 dot products: faster, not exact)."""
        from ..ops.quant import supported_formats
        from .gguf import load
        g = load(path, formats=supported_formats(target) if quantized else None, activations=activations, lazy=True)
        lm = cls(g.config, g.weights, max_seq_len or min(g.context_length, 2048), eos_token_id=g.eos_token_id,
                 target=target, kv_dtype=kv_dtype)
        lm.tokenizer = g.tokenizer
        return lm

    # -- running ---------------------------------------------------------------------------

    @property
    def bytes_per_token(self) -> int:
        """Bytes written into the cache per generated token (new K and V of every layer)."""
        c = self.config
        return 2 * c.num_layers * c.num_kv_heads * c.head_dim * (2 if c.kv_dtype in ("f16", "bf16") else 4)

    def reset(self) -> None:
        self.cache.length = 0

    def _ids(self, ids) -> np.ndarray:
        ids = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        if ids.size == 0:
            raise ValueError("no tokens given")
        if self.cache.length + ids.size > self.max_seq_len:
            raise ValueError(f"{self.cache.length} cached + {ids.size} new tokens exceed max_seq_len {self.max_seq_len}")
        if ids.min() < 0 or ids.max() >= self.config.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.config.vocab_size})")
        return ids

    def _run(self, ids: np.ndarray) -> np.ndarray:
        """Logits of the new tokens (prefill: the last only); the graph writes the cache."""
        if self.cache.length == 0:
            out = self._prefill(ids)
        else:
            out = self._extend(ids, self.cache.past())
        self.cache.length += ids.size
        return out

    def prefill(self, ids) -> np.ndarray:
        """Start over with prompt ``ids``; the logits (vocab,) after its last token."""
        self.reset()
        return self._run(self._ids(ids))[-1]

    def extend(self, ids) -> np.ndarray:
        """Append ``ids`` after the cached tokens; logits (len(ids), vocab) at every new position
        (with an empty cache: the whole prompt's logits)."""
        ids = self._ids(ids)
        out = self._extend(ids, self.cache.past())
        self.cache.length += ids.size
        return out

    def decode(self, token: int) -> np.ndarray:
        """One more token after the cached ones; its logits (vocab,)."""
        return self._run(self._ids([int(token)]))[-1]

    def generate(self, ids, max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                 eos_token_id=None, seed: Optional[int] = None, callback=None) -> np.ndarray:
        """Prompt + up to ``max_new_tokens`` tokens: greedy when ``temperature == 0``, else
        sampling from softmax(logits / temperature) restricted to the top-p nucleus."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        rng = np.random.default_rng(seed)
        eos = eos_token_id if eos_token_id is not None else self.eos_token_id
        eos = set([eos] if isinstance(eos, int) else (eos or []))
        out = list(ids)
        logits = self.prefill(ids)
        for i in range(max_new_tokens):
            tok = sample(logits, temperature, top_p, rng)
            out.append(tok)
            if callback is not None:
                callback(tok)
            if tok in eos or i == max_new_tokens - 1:
                break
            logits = self.decode(tok)
        return np.array(out, dtype=np.int64)


def sample(logits: np.ndarray, temperature: float = 0.0, top_p: float = 1.0,
           rng: Optional[np.random.Generator] = None) -> int:
    """Greedy (argmax, first index on ties like torch) or temperature / top-p sampling."""
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        cum = np.cumsum(p[order])
        keep = order[:int(np.searchsorted(cum, top_p) + 1)]
        q = np.zeros_like(p)
        q[keep] = p[keep]
        p = q / q.sum()
    return int((rng or np.random.default_rng()).choice(p.size, p=p))
