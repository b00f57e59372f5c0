"""Checkpoints (Hugging Face configs, state dicts, safetensors; GGUF through
:mod:`relax_mlir.llm.gguf`) -> :class:`LMConfig` and our weight layout.

Done once at load time, in numpy, over a :class:`WeightSource` (tensors under Hugging Face
names, as stored): roles whose format the target computes on stay as stored (raw rows,
memory-mapped; :func:`plan_formats`), the others become f32 Linear weights transposed to
(in, out); q/k/v are fused into one projection with the query heads reordered group-major
(see :mod:`relax_mlir.llm.model`) and o's input columns reordered to match; a tied
lm_head is the embedding (:func:`model_weights`).
"""

from __future__ import annotations

import math
import os
from typing import Mapping, Optional

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


def convert_state_dict(sd: Mapping[str, np.ndarray], c: LMConfig, tie: bool) -> dict[str, np.ndarray]:
    """HF names/layouts (a state dict of arrays) -> our parameter names, all float32
    (:meth:`LlamaModel.named_parameters`; :func:`model_weights` over the dict)."""
    return model_weights(ArraySource(sd), c, tie)


# -- weights as stored: block-quantized / half-precision rows kept, the rest f32 --------------

#: our weight roles (LMConfig.formats) -> the Hugging Face tensors of each layer
ROLE_TENSORS = {"qkv": ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"),
                "q": ("self_attn.q_proj.weight",), "k": ("self_attn.k_proj.weight",),
                "v": ("self_attn.v_proj.weight",),
                "o": ("self_attn.o_proj.weight",), "gate": ("mlp.gate_proj.weight",),
                "up": ("mlp.up_proj.weight",), "down": ("mlp.down_proj.weight",)}


class WeightSource:
    """A checkpoint's tensors under Hugging Face names, as stored: :meth:`kind` is the
    storage format (``f32`` or a :data:`relax_mlir.ops.quant.FORMATS` name), :meth:`raw`
    the rows of a 2-D tensor as bytes (an int8 ``(rows, row bytes)`` view, no copy),
    :meth:`f32` the tensor as float32. ``rope_interleaved``: q/k rows in llama.cpp's
    interleaved rope layout (GGUF llama/mistral), undone on rows."""

    rope_interleaved = False
    path = ""

    def __contains__(self, name: str) -> bool:
        raise NotImplementedError

    def kind(self, name: str) -> str:
        raise NotImplementedError

    def raw(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def f32(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def shape(self, name: str) -> tuple:
        """The tensor's logical shape (HF layout)."""
        raise NotImplementedError

    def release(self, name: str) -> None:
        """Tensor ``name`` was copied: a memory-mapped source lets go of its pages (read
        from the file again if touched); others do nothing."""

    def check_shape(self, name: str, want: tuple) -> None:
        """A ValueError naming the checkpoint and the tensor when ``name`` is not of shape ``want``."""
        got = tuple(self.shape(name))
        if got != tuple(want):
            raise ValueError(f"{self.path}: tensor '{name}' has shape {list(got)}, the config expects {list(want)}")


def expected_shapes(c: LMConfig, tie: bool = False, head: str = "lm_head.weight") -> dict[str, tuple]:
    """Every tensor :func:`model_weights` reads (HF names) -> its shape under config ``c``."""
    d, V, F = c.hidden_size, c.vocab_size, c.intermediate_size
    q, kv = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    out = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,)}
    if not tie:
        out[head] = (V, d)
    for i in range(c.num_layers):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
                    p + "self_attn.q_proj.weight": (q, d), p + "self_attn.k_proj.weight": (kv, d),
                    p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.o_proj.weight": (d, q),
                    p + "mlp.gate_proj.weight": (F, d), p + "mlp.up_proj.weight": (F, d),
                    p + "mlp.down_proj.weight": (d, F)})
        if c.qkv_bias:
            out.update({p + "self_attn.q_proj.bias": (q,), p + "self_attn.k_proj.bias": (kv,),
                        p + "self_attn.v_proj.bias": (kv,)})
        if c.o_bias:
            out[p + "self_attn.o_proj.bias"] = (d,)
        if c.mlp_bias:
            out.update({p + "mlp.gate_proj.bias": (F,), p + "mlp.up_proj.bias": (F,), p + "mlp.down_proj.bias": (d,)})
    return out


def _head_name(src: WeightSource, tie: bool) -> str:
    return "model.embed_tokens.weight" if tie or "lm_head.weight" not in src else "lm_head.weight"


def plan_formats(src: WeightSource, c: LMConfig, supported, tie: bool = False) -> tuple[tuple, tuple]:
    """``(formats, layer_formats)`` for :class:`LMConfig`: every tensor whose storage format is
    in ``supported`` (what the target computes on) stays as stored, the others become f32.
    Per layer: q, k and v fused (``qkv``) when they share one format, else apart (``q``, ``k``,
    ``v``); ``o``, ``gate``, ``up``, ``down`` each. When every layer has the same pairs they go
    into ``formats`` (one layer function) and ``layer_formats`` is empty; otherwise
    ``layer_formats`` holds each layer's pairs (one layer function per distinct tuple)."""
    layers = []
    for i in range(c.num_layers):
        kind = {r: src.kind(f"model.layers.{i}.{ROLE_TENSORS[r][0]}") for r in ("q", "k", "v", "o", "gate", "up", "down")}
        pairs = []
        if kind["q"] == kind["k"] == kind["v"]:
            if kind["q"] in supported:
                pairs.append(("qkv", kind["q"]))
        else:
            pairs += [(r, kind[r]) for r in ("q", "k", "v") if kind[r] in supported]
        pairs += [(r, kind[r]) for r in ("o", "gate", "up", "down") if kind[r] in supported]
        layers.append(tuple(sorted(pairs)))
    glob = tuple((role, src.kind(name)) for role, name in (("embed", "model.embed_tokens.weight"),
                                                           ("lm_head", _head_name(src, tie)))
                 if src.kind(name) in supported)
    if len(set(layers)) <= 1:
        return (layers[0] if layers else ()) + glob, ()
    return glob, tuple(layers)


def stored_formats(src: WeightSource, c: LMConfig, supported, tie: bool = False) -> LMConfig:
    """``c`` with the formats of :func:`plan_formats` (weights kept as stored)."""
    from dataclasses import replace
    formats, layer_formats = plan_formats(src, c, supported, tie)
    return replace(c, formats=formats, layer_formats=layer_formats)


def unpermute_rope_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's ``LlamaModel.permute`` (convert_hf_to_gguf.py) on the rows of a
    q or k projection (or bias): it reorders each head's rows from HF's rotate-half layout
    (first half, second half) to interleaved pairs, ``reshape(n_head, 2, hd/2, ...)
    .swapaxes(1, 2)``; the inverse is ``reshape(n_head, hd/2, 2, ...).swapaxes(1, 2)``."""
    rest = w.shape[1:]
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *rest).swapaxes(1, 2).reshape(w.shape)


def model_weights(src: WeightSource, c: LMConfig, tie: bool = False, lazy: bool = False):
    """Our parameters (:meth:`LlamaModel.named_parameters`) from ``src``: the roles of
    ``c.formats`` as their stored rows (copied only where rows are reordered or q/k/v
    concatenated), the others float32 in our layouts: Linear weights transposed to (in, out),
    q/k/v fused with the query heads group-major, o's input columns to match, a tied
    lm_head the embedding transposed. ``lazy``: a :class:`LayerWeights` that makes a layer's
    weights when they are asked for (one layer alive at a time), else a dict of all."""
    glob = dict(c.formats)
    head = _head_name(src, tie)
    shapes = expected_shapes(c, head == "model.embed_tokens.weight", head)
    read: list[str] = []        # the source tensors the layer being made reads

    def f32(name):      # every tensor checked against the config's shape before any reshape
        src.check_shape(name, shapes[name])
        read.append(name)
        return src.f32(name)

    def raw(name):
        src.check_shape(name, shapes[name])
        read.append(name)
        return src.raw(name)

    def layer(i: int) -> dict[str, np.ndarray]:
        """Layer ``i``'s weights by our names (``layers.<i>.<name>``)."""
        out = {}
        p, o = f"model.layers.{i}.", f"layers.{i}."
        fmt = dict(c.layer_pairs(i))
        fused = not ({"q", "k", "v"} & set(fmt))
        kept = {r: (fmt.get("qkv") if fused and r in "qkv" else fmt.get(r)) is not None
                for r in ("q", "k", "v", "o", "gate", "up", "down")}

        def rows(name, role, heads=None, group_major=False):
            """(out, ...) rows of a projection or bias: stored bytes when its role is kept."""
            w = raw(name) if kept.get(role) else f32(name)
            if heads is not None and src.rope_interleaved:
                if w.shape[0] % (2 * heads):
                    raise ValueError(f"{src.path}: tensor '{name}' has {w.shape[0]} rows, not a multiple of 2 x {heads} heads")
                w = unpermute_rope_rows(w, heads)
            return _group_major_rows(w, c) if group_major else w

        def weight(rows_, role):       # kept: (out, row bytes) rows; f32: (in, out) for x @ W
            return np.ascontiguousarray(rows_ if kept[role] else rows_.T)

        out[o + "input_norm.weight"] = f32(p + "input_layernorm.weight")
        out[o + "post_norm.weight"] = f32(p + "post_attention_layernorm.weight")
        qkv = {"q": rows(p + "self_attn.q_proj.weight", "q", c.num_heads, True),
               "k": rows(p + "self_attn.k_proj.weight", "k", c.num_kv_heads),
               "v": rows(p + "self_attn.v_proj.weight", "v")}
        bias = {}
        if c.qkv_bias:
            bias = {"q": rows(p + "self_attn.q_proj.bias", "", c.num_heads, True),
                    "k": rows(p + "self_attn.k_proj.bias", "", c.num_kv_heads), "v": rows(p + "self_attn.v_proj.bias", "")}
        if fused:
            out[o + "attn.qkv.weight"] = weight(np.concatenate([qkv[r] for r in "qkv"]), "q")
            if bias:
                out[o + "attn.qkv.bias"] = np.concatenate([bias[r] for r in "qkv"])
        else:
            for r in "qkv":
                out[o + f"attn.{r}.weight"] = weight(qkv[r], r)
                if bias:
                    out[o + f"attn.{r}.bias"] = bias[r]
        if kept["o"] and c.o_in_hf_order(fmt["o"]):     # the model permutes the heads back
            out[o + "attn.o.weight"] = raw(p + "self_attn.o_proj.weight")
        elif kept["o"]:  # columns (whole heads: whole blocks) in group-major order
            w = raw(p + "self_attn.o_proj.weight")
            hb = w.shape[1] // c.num_heads
            out[o + "attn.o.weight"] = np.ascontiguousarray(
                w.reshape(w.shape[0], c.num_kv_heads, c.group, hb).swapaxes(1, 2).reshape(w.shape))
        else:
            out[o + "attn.o.weight"] = np.ascontiguousarray(_group_major_rows(f32(p + "self_attn.o_proj.weight").T, c))
        if c.o_bias:
            out[o + "attn.o.bias"] = f32(p + "self_attn.o_proj.bias")
        for n in ("gate", "up", "down"):
            out[o + f"mlp.{n}.weight"] = weight(rows(p + f"mlp.{n}_proj.weight", n), n)
            if c.mlp_bias:
                out[o + f"mlp.{n}.bias"] = f32(p + f"mlp.{n}_proj.bias")
        return out

    emb = "model.embed_tokens.weight"
    out = {"embed.weight": raw(emb) if "embed" in glob else f32(emb)}
    if not lazy:
        for i in range(c.num_layers):
            out.update(layer(i))
    out["norm.weight"] = f32("model.norm.weight")
    if "lm_head" in glob:
        out["lm_head.weight"] = raw(head)
    else:   # transposed: a copy, its source's pages let go (a tied embedding read in place faults its rows back)
        out["lm_head.weight"] = np.ascontiguousarray(f32(head).T)
        src.release(head)
    if not lazy:
        return out
    for name, shape in shapes.items():     # a missing or misshapen tensor fails now, before any compile
        src.check_shape(name, shape)

    def make(i: int) -> tuple[dict, list]:
        read.clear()
        return layer(i), list(read)
    return LayerWeights(out, make, c.num_layers, src)


class LayerWeights:
    """Model weights whose layers are made on demand: the global ones held, layer ``i``'s
    (``layers.<i>.*``) made from the source when first asked for and kept until another
    layer is asked for or :meth:`release` (so a loader that copies the layers into stacked
    arrays layer by layer never holds more than one layer's temporaries). ``release(i)``
    also lets go of the source's pages of layer ``i`` (:meth:`WeightSource.release`)."""

    def __init__(self, globals_: dict, make, num_layers: int, src: WeightSource):
        self._globals, self._make, self.num_layers, self._src = globals_, make, num_layers, src
        self._i, self._cur, self._read = None, {}, []

    def _layer(self, key: str) -> Optional[int]:
        if key.startswith("layers."):
            i = key.split(".", 2)[1]
            if i.isdigit() and int(i) < self.num_layers:
                return int(i)
        return None

    def _load(self, i: int) -> dict:
        if self._i != i:
            self._cur, self._read = {}, []     # the previous layer's temporaries go first
            self._cur, self._read = self._make(i)
            self._i = i
        return self._cur

    def __getitem__(self, key: str) -> np.ndarray:
        i = self._layer(key)
        return self._globals[key] if i is None else self._load(i)[key]

    def __setitem__(self, key: str, value) -> None:
        if self._layer(key) is not None:
            raise KeyError(f"{key}: a layer's weights are made from the checkpoint, not set")
        self._globals[key] = value

    def __contains__(self, key: str) -> bool:
        i = self._layer(key)
        return key in self._globals if i is None else key in self._load(i)

    def keys(self):
        for k in self._globals:
            yield k
        for i in range(self.num_layers):
            yield from self._load(i)

    __iter__ = keys

    def release(self, i: int) -> None:
        """Layer ``i`` was copied: drop its arrays and the source pages they came from."""
        read = self._read if self._i == i else []
        self._i, self._cur, self._read = None, {}, []
        for name in read:
            self._src.release(name)


def drop_pages(mm, whole: np.ndarray, a: np.ndarray) -> None:
    """The pages wholly inside ``a`` (a view of ``whole``, the uint8 array over the read-only
    file mapping ``mm``) leave this process's memory (``MADV_DONTNEED``: a file's pages are
    read again if touched, never lost); anything else is left alone."""
    import mmap

    lo = a.ctypes.data - whole.ctypes.data
    hi = lo + a.nbytes
    if a.size == 0 or not a.flags.c_contiguous or lo < 0 or hi > whole.size or not hasattr(mm, "madvise"):
        return
    page = mmap.PAGESIZE
    lo, hi = -(-lo // page) * page, hi // page * page
    if hi > lo:
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


class ArraySource(WeightSource):
    """A Hugging Face state dict of arrays (f32, or anything numpy converts to it)."""

    def __init__(self, sd: Mapping[str, np.ndarray]):
        self.sd = sd

    def __contains__(self, name: str) -> bool:
        return name in self.sd

    def kind(self, name: str) -> str:
        return "f32"

    def raw(self, name: str) -> np.ndarray:
        raise ValueError(f"tensor '{name}': a state dict of arrays keeps no stored format")

    def f32(self, name: str) -> np.ndarray:
        return np.asarray(self.sd[name], dtype=np.float32)

    def shape(self, name: str) -> tuple:
        if name not in self.sd:
            raise KeyError(f"tensor '{name}' is missing from the state dict")
        return tuple(np.shape(self.sd[name]))


#: safetensors dtype -> (our storage format, numpy dtype of the stored elements)
_ST_DTYPES = {"F32": ("f32", np.float32), "F16": ("f16", np.float16), "BF16": ("bf16", np.uint16),
              "F64": ("f64", np.float64), "I64": ("i64", np.int64), "I32": ("i32", np.int32)}


class SafetensorsSource(WeightSource):
    """The tensors of a ``.safetensors`` file or of every one in a directory, memory-mapped
    (the header read here: no torch, no copy; bf16 kept as its bits)."""

    def __init__(self, path: str):
        import json
        import struct

        self.path = path
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(path, f) for f in os.listdir(path) if f.endswith(".safetensors"))
        if not files:
            raise FileNotFoundError(f"no .safetensors file at {path}")
        self._tensors: dict[str, tuple[str, np.ndarray]] = {}
        self._maps: list = []      # (mmap, uint8 array over it) per file
        for f in files:
            size = os.path.getsize(f)
            with open(f, "rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise ValueError(f"{f}: not a safetensors file (shorter than its header length)")
                (n,) = struct.unpack("<Q", head)
                if n > min(size - 8, 1 << 28):
                    raise ValueError(f"{f}: not a safetensors file (header of {n} bytes in a file of {size})")
                try:
                    header = json.loads(fh.read(n))
                except ValueError as e:
                    raise ValueError(f"{f}: corrupt safetensors header ({e})") from None
            if not isinstance(header, dict):
                raise ValueError(f"{f}: corrupt safetensors header (a JSON {type(header).__name__}, not an object)")
            data = np.memmap(f, dtype=np.uint8, mode="r", offset=8 + n) if size > 8 + n else np.zeros(0, np.uint8)
            mm = getattr(data, "_mmap", None)
            if mm is not None:
                self._maps.append((mm, np.frombuffer(mm, np.uint8)))
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                try:
                    kind, dt = _ST_DTYPES[info["dtype"]]
                    lo, hi = info["data_offsets"]
                    shape = info["shape"]
                    if not all(type(v) is int for v in (lo, hi, *shape)) or min(shape, default=0) < 0:
                        raise TypeError
                except (KeyError, TypeError, ValueError):
                    raise ValueError(f"{f}: tensor '{name}' has an unsupported or malformed entry {info!r:.200}") from None
                if not 0 <= lo <= hi <= data.size or hi - lo != math.prod(shape) * np.dtype(dt).itemsize:
                    raise ValueError(f"{f}: tensor '{name}' lies outside the file (truncated?)")
                self._tensors[name] = (kind, data[lo:hi].view(dt).reshape(shape))

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def _get(self, name: str) -> tuple[str, np.ndarray]:
        if name not in self._tensors:
            raise KeyError(f"{self.path}: tensor '{name}' is missing")
        return self._tensors[name]

    def kind(self, name: str) -> str:
        return self._get(name)[0]

    def shape(self, name: str) -> tuple:
        return tuple(self._get(name)[1].shape)

    def release(self, name: str) -> None:
        a = self._get(name)[1]
        for mm, whole in self._maps:
            if whole.ctypes.data <= a.ctypes.data < whole.ctypes.data + whole.size:
                drop_pages(mm, whole, a)

    def raw(self, name: str) -> np.ndarray:
        a = self._get(name)[1]
        return a.view(np.uint8).reshape(a.shape[0], -1).view(np.int8)

    def f32(self, name: str) -> np.ndarray:
        kind, a = self._get(name)
        if kind == "bf16":
            return (a.astype(np.uint32) << 16).view(np.float32)
        return np.asarray(a, dtype=np.float32)


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


def load_pretrained_config(path: str) -> tuple[object, LMConfig]:
    """(transformers config, LMConfig) of a model directory; what either rejects is a
    ValueError / NotImplementedError naming the directory."""
    cfg = load_hf_config(path)
    try:
        return cfg, config_from_hf(cfg)
    except (ValueError, NotImplementedError) as e:
        raise type(e)(f"{path}: {e}") from None


def load_hf_config(path: str):
    """The model directory's config.json through transformers' AutoConfig; whatever it
    rejects is a ValueError naming the directory."""
    from transformers import AutoConfig
    d = path if os.path.isdir(path) else os.path.dirname(path)
    try:
        return AutoConfig.from_pretrained(d)
    except OSError:
        raise
    except Exception as e:   # transformers raises its own validation errors, ValueError, KeyError...
        raise ValueError(f"{d}: config.json is not a usable model config: {type(e).__name__}: {e}") from None


def tie_embeddings(cfg) -> bool:
    return bool(_get(cfg, "tie_word_embeddings", False))


def inv_freq(cfg, c: LMConfig, model=None) -> np.ndarray:
    """The model's own inv_freq buffer when there is one (exactly what HF multiplies by)."""
    rot = getattr(getattr(model, "model", None), "rotary_emb", None) if model is not None else None
    if rot is not None and hasattr(rot, "inv_freq"):
        return rot.inv_freq.detach().float().cpu().numpy().copy()
    return rope_tables(cfg, c.head_dim)[0]


__all__ = ["SUPPORTED", "config_from_hf", "convert_state_dict", "torch_state_dict", "safetensors_state_dict",
           "load_hf_config", "tie_embeddings", "inv_freq", "rope_tables", "WeightSource", "SafetensorsSource",
           "plan_formats", "stored_formats", "model_weights", "LayerWeights", "drop_pages", "unpermute_rope_rows"]
