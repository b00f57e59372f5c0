"""The Llama-family decoder as relax graph functions (built with :mod:`relax_mlir.frontend.nn`).

The KV cache is EXECUTABLE-OWNED STATE (:mod:`relax_mlir.ops.state`): the module declares
``k`` and ``v``, each ``(cap, kv_heads, head_dim)`` (sequence axis first), the layers' caches
as ``num_layers`` equal blocks of rows (layer i: block i, ``cap <= num_layers *
max_positions``), which a :class:`~relax_mlir.runtime.executable.Session` allocates once. Two graph functions, compiled together into ONE executable, both
symbolic in the new sequence length ``s`` (and the past length ``p``):

``prefill(ids: (s,) i64, *weights) -> logits (1, vocab)``
    A prompt with an empty cache: attention over the new tokens only, ONE fused library
    call per layer on the cpu target (``relax_blas_attention``, see ``_attend_blas``: the
    scores never reach memory); writes the prompt's keys and values into rows [0, s) of
    the state.
    Logits of the last position only (the lm_head is a fifth of a 134M Llama's FLOPs).

``extend(ids: (s,) i64, past: (p, 0) i8, *weights) -> logits (s, vocab)``
    ``s`` new tokens after ``p`` cached ones (decode is ``s == 1``). ``past`` is a
    zero-byte array whose shape carries ``p`` (the runtime passes sizes as tensor
    shapes). Per layer: ``layer_qkv`` (norm, qkv projection, rope); the new keys and
    values written into rows [p, p + s) of the state (``relax.state_write``: only
    ``2 * layers * s * kv * hd`` elements move); rows [0, p + s) read back IN PLACE
    (``relax.state_read``: a view, never a copy); ``layer_attend`` (attention over them,
    o projection, MLP). The cache is never concatenated, transposed or copied, and the
    scores and the mix are one broadcast multiply + sum each over the whole cache, which
    the ``contraction`` schedule vectorizes along ``hd`` (q is an argument of
    ``layer_attend``: inside one function, fusion pulled the rope into the scores
    kernel, which then had no schedule).

The graph functions run the layers in a loop: ONE ``relax.repeat`` per run of consecutive
layers with equal formats, of a step function (``prefill_layers``, ``extend_layers``) that
takes layer i's weights as views (``relax.view``) of the run's stacked weights (one
``(layers, bytes)`` i8 array per weight: :meth:`LlamaModel.stack_weights`) and its cache
block, and calls the layer functions (one decoder layer, its weights as arguments) through
``relax.call``. Neither the graph nor the host code grows with depth, so neither does the
compile time.
Layers whose weights are stored in different formats (``LMConfig.layer_formats``: a Q4_K_M
file mixes types by layer) get one variant of each layer function per distinct format tuple
it depends on (``layer_qkv_1``, ...; :meth:`LlamaModel.layer_function`), and one step
function per distinct format tuple (``extend_layers_1``, ...), repeated by every run of it.
The layer functions take the cache as tensors and return the new keys/values; the state
ops (on the layer's block) live in the step functions.

Head order: query heads are laid out group-major, ``(s, group, kv_head, hd)``, i.e. HF
head ``h = kv * group_size + g`` sits at ``g * kv_heads + kv`` (the loader permutes the
rows of q_proj and the columns of o_proj once), so grouped-query attention needs no
repeat: the KV tensor ``(t, kv, hd)`` broadcasts against queries ``(s, g, 1, kv, hd)``.
Prefill's fused attention reads the k / v heads in place for every query head in this
order too (the library's ``_tiled`` mapping: query head h reads kv head ``h % kv_heads``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from mlir import ir

from ..dialects import relax
from ..frontend import nn
from ..frontend.builder import graph_function
from ..ops.memory import VIEW_BYTES
from ..ops.state import declare_states

NEG = float(np.finfo(np.float32).min)

#: the roles of a decoder layer's projections: ``qkv`` fused, or ``q``, ``k``, ``v`` apart (a
#: layer whose q, k and v are stored in different formats)
LAYER_ROLES = ("qkv", "q", "k", "v", "o", "gate", "up", "down")

#: element types of the KV cache (``LMConfig.kv_dtype``)
KV_DTYPES = ("f32", "f16", "bf16")

ACTIVATIONS = {"silu": relax.silu, "swish": relax.silu, "gelu": relax.gelu,
               "gelu_pytorch_tanh": relax.gelu_tanh, "gelu_new": relax.gelu_tanh, "relu": relax.relu}


@dataclass(frozen=True)
class LMConfig:
    """What the graph depends on (weights and rope frequencies are arguments)."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float = 1e-6
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    hidden_act: str = "silu"
    attention_scaling: float = 1.0      # rope post-scaling of cos/sin (yarn); 1 otherwise
    sliding_window: Optional[int] = None
    dtype: str = "f32"
    #: upper bound of the KV state's capacity (rows): sessions allocate up to this many
    max_positions: int = 4096
    #: weights kept as stored, as (role, format) pairs: roles ``embed``, ``lm_head`` and the
    #: layer roles (:data:`LAYER_ROLES`), the latter then the same format in every layer; the
    #: others f32
    formats: tuple = ()
    #: per-layer formats, overriding the layer roles of ``formats``: empty, or one tuple of
    #: (layer role, format) pairs per layer (a real Q4_K_M file mixes types by layer)
    layer_formats: tuple = ()
    #: ``q8``: quantized matmuls quantize their activations to 8 bits (int8 dot products)
    activations: str = "f32"
    #: element type of the KV cache (the state): ``f16`` or ``bf16`` halves what decode
    #: attention reads (the GPU targets' fused decode attention reads the 16-bit rows and
    #: accumulates in f32; on the cpu target every read is a conversion of the whole cache:
    #: f32 there); off by default
    kv_dtype: str = "f32"

    def format_of(self, role: str) -> Optional[str]:
        return dict(self.formats).get(role)

    def layer_pairs(self, i: int) -> tuple:
        """Layer ``i``'s (role, format) pairs, sorted: equal tuples share a layer function."""
        pairs = self.layer_formats[i] if self.layer_formats else \
            tuple(p for p in self.formats if p[0] in LAYER_ROLES)
        return tuple(sorted(pairs))

    def linear(self, role: str, in_features: int, out_features: int, bias: bool = False,
               fmt: Optional[str] = None) -> nn.Module:
        """A projection: f32 (in, out) weights, or the raw rows of ``fmt`` (``"f32"``: f32;
        None: the role's format in ``formats``)."""
        fmt = self.format_of(role) if fmt is None else fmt
        if fmt in (None, "f32"):
            return nn.Linear(in_features, out_features, bias=bias)
        return nn.QuantLinear(in_features, out_features, fmt, bias=bias, activations=self.activations)

    def o_in_hf_order(self, fmt: Optional[str]) -> bool:
        """Whether an o projection stored in ``fmt`` keeps Hugging Face's column (head) order:
        the loader reorders its columns to our group-major heads by whole blocks, which needs
        whole blocks per head under grouped-query attention; otherwise the model permutes the
        attention output back to HF head order before o (a copy of s x H x hd floats)."""
        from ..ops.quant import FORMATS
        return fmt is not None and self.group > 1 and self.head_dim % FORMATS[fmt][0] != 0

    def __post_init__(self):
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads {self.num_heads} is not a multiple of "
                             f"num_key_value_heads {self.num_kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"rotary embeddings need an even head_dim, got {self.head_dim}")
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"unsupported hidden_act '{self.hidden_act}' (supported: {', '.join(ACTIVATIONS)})")
        from ..ops.quant import ACTIVATIONS as QUANT_ACTIVATIONS, FORMATS
        roles = ("embed", "lm_head") + LAYER_ROLES
        for role, fmt in self.formats:
            if role not in roles or fmt not in FORMATS:
                raise ValueError(f"formats: ({role!r}, {fmt!r}): roles {', '.join(roles)}; formats {', '.join(FORMATS)}")
        if self.layer_formats and len(self.layer_formats) != self.num_layers:
            raise ValueError(f"layer_formats: {len(self.layer_formats)} entries for {self.num_layers} layers")
        for i, pairs in enumerate(self.layer_formats):
            for role, fmt in pairs:
                if role not in LAYER_ROLES or fmt not in FORMATS:
                    raise ValueError(f"layer_formats[{i}]: ({role!r}, {fmt!r}): roles {', '.join(LAYER_ROLES)}; "
                                     f"formats {', '.join(FORMATS)}")
            roles_i = [r for r, _ in pairs]
            if "qkv" in roles_i and {"q", "k", "v"} & set(roles_i):
                raise ValueError(f"layer_formats[{i}]: 'qkv' (fused) together with q/k/v (split)")
        if self.kv_dtype not in KV_DTYPES:
            raise ValueError(f"kv_dtype must be one of {', '.join(KV_DTYPES)}, got {self.kv_dtype!r}")
        if self.activations not in QUANT_ACTIVATIONS:
            raise ValueError(f"activations must be one of {', '.join(QUANT_ACTIVATIONS)}, got {self.activations!r}")

    @property
    def group(self) -> int:
        return self.num_heads // self.num_kv_heads


class Attention(nn.Module):
    """The q/k/v projection, fused (``qkv``: one matmul) unless the layer stores q, k and v in
    different formats (``q``, ``k``, ``v``: three), and o."""

    def __init__(self, c: LMConfig, fmt: dict):
        self.c = c
        H, KV, D = c.num_heads, c.num_kv_heads, c.head_dim
        if {"q", "k", "v"} & set(fmt):
            self.q = c.linear("q", c.hidden_size, H * D, c.qkv_bias, fmt.get("q", "f32"))
            self.k = c.linear("k", c.hidden_size, KV * D, c.qkv_bias, fmt.get("k", "f32"))
            self.v = c.linear("v", c.hidden_size, KV * D, c.qkv_bias, fmt.get("v", "f32"))
        else:
            self.qkv = c.linear("qkv", c.hidden_size, (H + 2 * KV) * D, c.qkv_bias, fmt.get("qkv", "f32"))
        self.o = c.linear("o", H * D, c.hidden_size, c.o_bias, fmt.get("o", "f32"))
        self.o_hf_order = c.o_in_hf_order(fmt.get("o"))

    def project(self, h: ir.Value) -> tuple:
        """(q, k, v): (s, H*hd), (s, KV*hd), (s, KV*hd)."""
        if hasattr(self, "qkv"):
            H, KV, D = self.c.num_heads, self.c.num_kv_heads, self.c.head_dim
            return tuple(relax.split(self.qkv(h), indices=[H * D, (H + KV) * D], axis=-1))
        return self.q(h), self.k(h), self.v(h)

    def out(self, a: ir.Value) -> ir.Value:
        """o over the attention output a (s, H*hd), heads group-major (``o_hf_order``: permuted
        back to HF's kv-major order first)."""
        if self.o_hf_order:
            c = self.c
            a = relax.permute_dims(relax.reshape(a, shape=["s", c.group, c.num_kv_heads, c.head_dim]),
                                   axes=[0, 2, 1, 3])
            a = relax.reshape(a, shape=["s", c.num_heads * c.head_dim])
        return self.o(a)


class MLP(nn.Module):
    """gate and up stay two matmuls: one concatenated matmul needs a split of its result,
    and the split's slice copies leave the ``act(g) * u`` kernel unscheduled (plain loops:
    5% of a 128-token prefill); two GEMVs stream the same bytes as one."""

    def __init__(self, c: LMConfig, fmt: dict):
        self.gate = c.linear("gate", c.hidden_size, c.intermediate_size, c.mlp_bias, fmt.get("gate", "f32"))
        self.up = c.linear("up", c.hidden_size, c.intermediate_size, c.mlp_bias, fmt.get("up", "f32"))
        self.down = c.linear("down", c.intermediate_size, c.hidden_size, c.mlp_bias, fmt.get("down", "f32"))
        self.c = c

    def __call__(self, x: ir.Value) -> ir.Value:
        return self.down(relax.multiply(ACTIVATIONS[self.c.hidden_act](self.gate(x)), self.up(x)))


class Layer(nn.Module):
    """One decoder layer; ``pairs`` its (role, format) pairs (:meth:`LMConfig.layer_pairs`)."""

    def __init__(self, c: LMConfig, pairs: tuple = ()):
        fmt = dict(pairs)
        self.pairs = tuple(pairs)
        self.input_norm = nn.RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.attn = Attention(c, fmt)
        self.post_norm = nn.RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c, fmt)

    @property
    def qkv_key(self) -> tuple:
        """What ``layer_qkv``'s code depends on: the q/k/v formats."""
        return tuple(p for p in self.pairs if p[0] in ("qkv", "q", "k", "v"))

    @property
    def attend_key(self) -> tuple:
        """What ``layer_attend``'s code depends on: the o and MLP formats."""
        return tuple(p for p in self.pairs if p[0] in ("o", "gate", "up", "down"))


class _Part(nn.Module):
    """Some sub-modules of a layer: the weights one layer function takes, in order."""

    def __init__(self, **parts: nn.Module):
        for k, m in parts.items():
            setattr(self, k, m)


#: numpy dtype of a weight stored as f32 / f16 (other formats: their raw bytes)
_NP = {"f32": np.float32, "f16": np.float16}


class _Stack(nn.Module):
    """The weights of layers [first, first + count) (equal formats), stacked: per weight of
    the layer one ``(count, bytes)`` i8 parameter (``stacks.<run>.<weight name with _>``);
    layer ``first + i`` reads its weight as a :func:`relax.view` at byte ``i * bytes``."""

    def __init__(self, layer: "Layer", first: int, count: int):
        self.first, self.count = first, count
        self._layer = [(n, p) for n, p in layer.named_parameters()]   # a list: not walked as a module
        for n, p in self._layer:
            setattr(self, n.replace(".", "_"), nn.Parameter([count, int(np.prod(p.shape)) * VIEW_BYTES[p.dtype]], "i8"))

    @property
    def spec(self) -> list:
        """The layer's (name, Parameter) pairs, in the order of the stacked parameters."""
        return self._layer

    def views(self, values: list) -> dict:
        """The layer's Parameter (by id) -> the view of iteration ``i``'s weight in its
        stacked ``values`` (the step function's parameters, in this module's order)."""
        out = {}
        for (n, lp), v in zip(self._layer, values):
            nbytes = int(np.prod(lp.shape)) * VIEW_BYTES[lp.dtype]
            out[id(lp)] = relax.view(v, shape=list(lp.shape), dtype=lp.dtype, offset=f"{nbytes}*i")
        return out

    def stack(self, weights) -> dict:
        """The stacked arrays from ``weights`` by per-layer name (``layers.<j>.<name>``),
        filled layer by layer; after layer ``j``'s rows, ``weights.release(j)`` when the
        mapping has it (:class:`~relax_mlir.llm.weights.LayerWeights`: its source is dropped)."""
        params = list(zip(self._layer, self.named_parameters()))
        out = {name: np.empty(p.shape, np.int8) for _, (name, p) in params}
        for j in range(self.first, self.first + self.count):
            for (n, lp), (name, p) in params:
                if f"layers.{j}.{n}" not in weights:   # (a lazy source's own error, naming its file, first)
                    raise ValueError(f"missing weights: layers.{j}.{n}")
                w = weights[f"layers.{j}.{n}"]
                w = np.ascontiguousarray(w, dtype=_NP[lp.dtype]) if lp.dtype in _NP else np.ascontiguousarray(w)
                b = w.reshape(-1).view(np.int8)
                if b.size != p.shape[1]:
                    raise ValueError(f"layers.{j}.{n}: {b.size} bytes, the layer's weight has {p.shape[1]}")
                out[name][j - self.first] = b
                del w, b
            if hasattr(weights, "release"):
                weights.release(j)
        return out


@dataclass
class _Step:
    """Symbolic names of one graph function: new tokens ``s``, past ``p`` (None: no past)."""

    past: Optional[str]
    cos: ir.Value = None
    sin: ir.Value = None
    mask: ir.Value = None

    @property
    def total(self) -> str:
        return "s" if self.past is None else f"{self.past} + s"

    @property
    def start(self) -> object:
        return 0 if self.past is None else self.past


class LlamaModel(nn.Module):
    """Embedding, ``num_layers`` pre-norm decoder layers, final norm, lm_head."""

    def __init__(self, c: LMConfig):
        self.c = c
        fmt = c.format_of("embed")
        self.embed = nn.Embedding(c.vocab_size, c.hidden_size) if fmt is None else \
            nn.QuantEmbedding(c.vocab_size, c.hidden_size, fmt)
        self.layers = [Layer(c, c.layer_pairs(i)) for i in range(c.num_layers)]
        self.norm = nn.RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.lm_head = c.linear("lm_head", c.hidden_size, c.vocab_size)
        self.rope_inv_freq = nn.Parameter([c.head_dim])   # [-f, f]: rope_weight(inv_freq)

    def layer_function(self, kind: str, layer: Layer) -> str:
        """The graph function computing ``kind`` (``prefill``, ``qkv``, ``attend``) of
        ``layer``: ``layer_<kind>`` for the first distinct format tuple the function depends
        on, ``layer_<kind>_<j>`` for the j-th other (one compiled copy per tuple)."""
        key = {"prefill": layer.pairs, "qkv": layer.qkv_key, "attend": layer.attend_key}[kind]
        keys = list(dict.fromkeys({"prefill": L.pairs, "qkv": L.qkv_key, "attend": L.attend_key}[kind]
                                  for L in self.layers))
        j = keys.index(key)
        return f"layer_{kind}" + (f"_{j}" if j else "")

    # -- pieces -----------------------------------------------------------------------

    def _setup(self, st: _Step) -> None:
        """cos/sin of positions start..start+s (HF: freqs = pos * inv_freq, emb = [freqs, freqs])
        and the causal (optionally sliding-window) mask over absolute positions, ADDITIVE
        (0 or the f32 minimum): prefill ``(s, s)``, the bias every head of the fused attention
        call reads (no per-head copy), extend ``(s, 1, t, 1)``, already in the shape its scores
        take, so its masked softmax kernel is a broadcast add + softmax on f32 with no reshape
        or i1 operand inside."""
        # (s, 1, D) tables straight from the positions, no concat: the frequencies are
        # ``rope_inv_freq`` = [-f, f] (LlamaModel.rope_weight), cos is even and sin odd, so
        # cos(pos * [-f, f]) = [c, c] and sin(pos * [-f, f]) = [-s, s], each one elementwise
        # pass (a concat was a copy per slice: 11 GPU launches per call).
        pos = relax.reshape(relax.arange(start=st.start, end=st.total, dtype="f32"), shape=["s", 1, 1])
        f = self.rope_inv_freq.value
        # the product once per table (operands swapped, so that no CSE merges them): each
        # table's kernel then computes it in registers (a product read by both would be a
        # buffer and a launch of its own on the GPU)
        st.cos, st.sin = relax.cos(relax.multiply(pos, f)), relax.sin(relax.multiply(f, pos))   # (s, 1, D)
        if self.c.attention_scaling != 1.0:
            a = relax.full(shape=[], value=self.c.attention_scaling, dtype="f32")
            st.cos, st.sin = relax.multiply(st.cos, a), relax.multiply(st.sin, a)
        # the mask built in its final shape by broadcasting (reshapes only add unit dims)
        cached = st.past is not None
        qpos = relax.reshape(relax.arange(start=st.start, end=st.total, dtype="i64"),
                             shape=["s", 1, 1, 1] if cached else ["s", 1])
        kpos = relax.arange(start=0, end=st.total, dtype="i64")                        # (t,)
        if cached:
            kpos = relax.reshape(kpos, shape=[st.total, 1])                             # (t, 1)
        mask = relax.less_equal(kpos, qpos)                                # (s, 1, t, 1) / (s, t)
        if self.c.sliding_window is not None:                                          # and pos - j < W
            w = relax.full(shape=[], value=float(self.c.sliding_window), dtype="i64")
            mask = relax.where(mask, relax.less(relax.subtract(qpos, kpos), w), mask)
        zero = relax.full(shape=[], value=0.0, dtype="f32")
        mask = relax.where(mask, zero, relax.full(shape=[], value=NEG, dtype="f32"))
        st.mask = mask


    @staticmethod
    def _rope(st: _Step, rot: ir.Value, x: ir.Value) -> ir.Value:
        """x: (s, heads, hd) -> rotate_half form [x1 c - x2 s, x2 c + x1 s], written as ONE
        elementwise pass: x * [c, c] + x[rot] * [-s, s] with rot = [hd/2..hd, 0..hd/2) (a
        gather along hd). The split + concat form fused into a kernel of slice copies and
        temporaries: 7% of a 128-token prefill."""
        return relax.add(relax.multiply(x, st.cos), relax.multiply(relax.take(x, rot, axis=-1), st.sin))

    def _qkv(self, layer: Layer, st: _Step, h: ir.Value):
        c = self.c
        H, KV, D = c.num_heads, c.num_kv_heads, c.head_dim
        q, k, v = layer.attn.project(h)
        rot = relax.const(np.roll(np.arange(D, dtype=np.int64), -(D // 2)))   # one constant for q and k
        q = self._rope(st, rot, relax.reshape(q, shape=["s", H, D]))
        k = self._rope(st, rot, relax.reshape(k, shape=["s", KV, D]))
        scale = relax.full(shape=[], value=1.0 / float(np.sqrt(D)), dtype="f32")
        q = relax.multiply(q, scale)
        return q, k, relax.reshape(v, shape=["s", KV, D])

    def _attend_blas(self, st: _Step, q, k, v) -> ir.Value:
        """No past: attention over the new tokens as the torch importer writes
        scaled-dot-product attention -- head splits of the (1, s, heads*hd) projections, k and
        v heads tiled to the H query heads (group-major: query head g*KV + kv reads kv head
        kv), scores + the causal mask (s, s) shared by every head, softmax, mix, head merge --
        which relax-dispatch-library turns into ONE library call
        (``relax_blas_attention_h1111[_tiled]_f32``: q, k and v read in place, the (H, s, s)
        scores never in memory, the output written merged). Returns (s, H*hd)."""
        c = self.c
        H, KV, G, D = c.num_heads, c.num_kv_heads, c.group, c.head_dim

        def split(x, n):   # (s, n, hd) -> (1, n, s, hd), through its projection (1, s, n*hd)
            x = relax.reshape(relax.reshape(x, shape=[1, "s", n * D]), shape=[1, "s", n, D])
            return relax.permute_dims(x, axes=[0, 2, 1, 3])

        def per_query_head(x):   # (1, KV, s, hd) -> (H, s, hd): the kv heads tiled G times
            if G > 1:
                x = relax.broadcast_to(relax.expand_dims(x, axis=[1]), shape=[1, G, KV, "s", D])
            return relax.reshape(x, shape=[H, "s", D])

        qh = relax.reshape(split(q, H), shape=[H, "s", D])
        kh, vh = per_query_head(split(k, KV)), per_query_head(split(v, KV))
        scores = relax.matmul(qh, relax.permute_dims(kh, axes=[0, 2, 1]))                 # (H, s, s)
        probs = relax.softmax(relax.add(scores, st.mask), axis=-1)
        o = relax.matmul(probs, vh)                                                        # (H, s, hd)
        o = relax.permute_dims(relax.reshape(o, shape=[1, H, "s", D]), axes=[0, 2, 1, 3])
        return relax.reshape(relax.reshape(o, shape=[1, "s", H * D]), shape=["s", H * D])

    def _attend_cached(self, st: _Step, q, k_all, v_all) -> ir.Value:
        """Queries (s, H, hd) against the whole cache (t = p + s rows, the new ones
        included: the caller wrote them first), read in place; returns (s, H*hd). The
        scores and the mix are broadcast multiply + sum generics over a symbolic t, which
        the ``contraction`` schedule vectorizes along hd; q arrives as an argument, so its
        rope is no prologue of the scores kernel (it would leave it unscheduled)."""
        c = self.c
        G, KV, D = c.group, c.num_kv_heads, c.head_dim
        if c.kv_dtype != "f32":   # (the GPU's decode attention reads the 16-bit rows themselves)
            k_all, v_all = relax.astype(k_all, dtype="f32"), relax.astype(v_all, dtype="f32")
        q5 = relax.reshape(q, shape=["s", G, 1, KV, D])
        sc = relax.sum(relax.multiply(q5, k_all), axes=[-1])                         # (s, G, t, KV)
        probs = relax.softmax(relax.add(sc, st.mask), axis=2)
        o = relax.sum(relax.multiply(relax.expand_dims(probs, axis=[4]), v_all), axes=[2])  # (s, G, KV, D)
        return relax.reshape(o, shape=["s", c.num_heads * D])

    def _layer(self, layer: Layer, st: _Step, x: ir.Value) -> list:
        """One decoder layer without a past (prefill): (x', k_new, v_new)."""
        q, k, v = self._qkv(layer, st, layer.input_norm(x))
        return [self._finish(layer, x, self._attend_blas(st, q, k, v)), self._to_cache(k), self._to_cache(v)]

    def _to_cache(self, x: ir.Value) -> ir.Value:
        """New keys / values in the cache's element type (``kv_dtype``)."""
        return x if self.c.kv_dtype == "f32" else relax.astype(x, dtype=self.c.kv_dtype)

    def _finish(self, layer: Layer, x: ir.Value, a: ir.Value) -> ir.Value:
        """o projection, residual, post-norm MLP, residual."""
        x = relax.add(x, layer.attn.out(a))
        return relax.add(x, layer.mlp(layer.post_norm(x)))

    @staticmethod
    def _qkv_part(layer: Layer) -> nn.Module:
        """The weights of ``layer_qkv`` (input norm, qkv projection)."""
        proj = {"qkv": layer.attn.qkv} if hasattr(layer.attn, "qkv") else \
            {"q": layer.attn.q, "k": layer.attn.k, "v": layer.attn.v}
        return _Part(input_norm=layer.input_norm, **proj)

    @staticmethod
    def _attend_part(layer: Layer) -> nn.Module:
        """The weights of ``layer_attend`` (o projection, post norm, MLP)."""
        return _Part(o=layer.attn.o, post_norm=layer.post_norm, mlp=layer.mlp)

    def runs(self) -> list[tuple[int, int]]:
        """(first layer, count) of each run of consecutive layers with equal formats: one
        ``relax.repeat`` of one step function each (:meth:`_step`)."""
        out: list[tuple[int, int]] = []
        for i, L in enumerate(self.layers):
            if out and self.layers[out[-1][0]].pairs == L.pairs:
                out[-1] = (out[-1][0], out[-1][1] + 1)
            else:
                out.append((i, 1))
        return out

    def _body(self, st: _Step, ids: ir.Value, stacks: list, last_only: bool, past=None) -> list:
        """Embedding, rope tables and mask once, then ONE ``relax.repeat`` per run of equal
        layers of the step function (:meth:`_step`), so neither the graph nor the host code
        grows with the depth; then the final norm and lm_head."""
        self._setup(st)
        x = self.embed(ids)
        kind = "prefill" if st.past is None else "extend"
        for (first, count), stack in zip(self.runs(), stacks):
            extra = [] if past is None else [past]
            at = relax.zeros(shape=[first, 0], dtype="i8")      # the run's first layer, as a size
            x = relax.repeat([x, st.cos, st.sin, st.mask, *extra, at, *[p.value for _, p in stack.named_parameters()]],
                             callee=self.step_function(kind, self.layers[first]), count=count, carried=1)
        if last_only:
            x = relax.strided_slice(x, axes=[0], begin=["s - 1"], end=["s"])
        return self.lm_head(self.norm(x))

    def step_function(self, kind: str, layer: "Layer") -> str:
        """The step function (``prefill_layers``, ``extend_layers``) of ``layer``'s format
        tuple (``_<j>`` for the j-th other tuple, as :meth:`layer_function`): every run of
        layers with these formats repeats it."""
        return f"{kind}_layers" + self.layer_function("prefill", layer)[len("layer_prefill"):]

    def _step(self, kind: str, layer: "Layer", views: dict, st: _Step, x: ir.Value) -> ir.Value:
        """One layer of a run (iteration ``i`` of the run starting at layer ``f``: layer
        ``f + i``): its weights ``views`` of the run's stacked weights (``relax.view``, no
        copy), its cache block ``f + i`` of the states ``k``, ``v``. Prefill:
        ``layer_prefill``, its new keys and values written into the state after. Extend:
        ``layer_qkv``; the new keys and values written into rows [p, p + s); rows [0, p + s)
        read back in place (views); ``layer_attend`` over them."""
        blk = {"block": "f + i", "blocks": self.c.num_layers}
        if kind == "prefill":
            ws = [views[id(p)] for _, p in layer.named_parameters()]
            x, k, v = relax.call([x, st.cos, st.sin, st.mask, *ws], callee=self.layer_function("prefill", layer))
            relax.state_write(k, state="k", offset=0, **blk)
            relax.state_write(v, state="v", offset=0, **blk)
            return x
        ws = [views[id(p)] for _, p in self._qkv_part(layer).named_parameters()]
        q, k, v = relax.call([x, st.cos, st.sin, *ws], callee=self.layer_function("qkv", layer))
        relax.state_write(k, state="k", offset=st.start, **blk)
        relax.state_write(v, state="v", offset=st.start, **blk)
        kv = [relax.state_read(state=n, end=st.total, **blk) for n in "kv"]
        ws = [views[id(p)] for _, p in self._attend_part(layer).named_parameters()]
        return relax.call([x, q, *kv, st.mask, *ws], callee=self.layer_function("attend", layer))

    def state_names(self) -> list[str]:
        """The KV state buffers, in the executable's order (sorted by name): ``k`` and ``v``,
        each the layers' caches as ``num_layers`` equal blocks of rows (block i: layer i)."""
        return ["k", "v"]

    def stacks(self) -> list["_Stack"]:
        """The stacked weights of each run (:meth:`runs`)."""
        return [_Stack(self.layers[first], first, count) for first, count in self.runs()]

    def rope_weight(self, inv_freq) -> np.ndarray:
        """The graph's ``rope_inv_freq`` (head_dim,) from the loaders' inverse frequencies f
        (head_dim/2,): [-f, f] (see :meth:`_setup`); one already that wide is kept."""
        f = np.asarray(inv_freq, np.float32).reshape(-1)
        if f.size == self.c.head_dim:
            return f
        if f.size != self.c.head_dim // 2:
            raise ValueError(f"rope_inv_freq: {f.size} values, expected head_dim/2 = {self.c.head_dim // 2}")
        return np.concatenate([-f, f])

    def stack_weights(self, weights) -> dict:
        """The weights the graph takes: ``weights``' global ones (by :meth:`named_parameters`'
        names) and the stacked arrays, per run and weight the layers' bytes as one
        ``(count, bytes)`` i8 array (f32 weights as f32 bytes, others as stored); the
        per-layer arrays are read once each, layer by layer (:meth:`_Stack.stack`)."""
        out = {n: weights[n] for n, _ in self.named_parameters() if not n.startswith("layers.") and n in weights}
        if "rope_inv_freq" in out:
            out["rope_inv_freq"] = self.rope_weight(out["rope_inv_freq"])
        for r, stack in enumerate(self.stacks()):
            out.update({f"stacks.{r}.{n}": w for n, w in stack.stack(weights).items()})
        return out

    # -- graph functions --------------------------------------------------------------

    def build(self, module: ir.Module) -> list[str]:
        """Declare the KV state on ``module`` and append the layer functions, ``prefill`` and
        ``extend``; returns the weight names (the trailing arguments of both, in order)."""
        c = self.c
        d, KV, D = c.hidden_size, c.num_kv_heads, c.head_dim
        H, t = c.num_heads, "p + s"
        rope = [("x", ["s", d], c.dtype), ("cos", ["s", 1, D], c.dtype), ("sin", ["s", 1, D], c.dtype)]

        def prefill_layer(L):
            def fn(x, cos, sin, mask):
                return self._layer(L, _Step(None, cos, sin, mask), x)
            return fn

        def qkv(L):
            def fn(x, cos, sin):
                q, k, v = self._qkv(L, _Step("p", cos, sin), L.input_norm(x))
                return [q, self._to_cache(k), self._to_cache(v)]
            return fn

        def attend(L):
            def fn(x, q, k_all, v_all, mask):
                return self._finish(L, x, self._attend_cached(_Step("p", mask=mask), q, k_all, v_all))
            return fn

        for kind, part, args, body in (
                ("prefill", lambda L: L, rope + [("mask", ["s", "s"], c.dtype)], prefill_layer),
                ("qkv", self._qkv_part, rope, qkv),
                ("attend", self._attend_part,
                 [("x", ["s", d], c.dtype), ("q", ["s", H, D], c.dtype), ("k_all", [t, KV, D], c.kv_dtype),
                  ("v_all", [t, KV, D], c.kv_dtype), ("mask", ["s", 1, t, 1], c.dtype)], attend)):
            done = set()
            for L in self.layers:          # one function per distinct format tuple
                name = self.layer_function(kind, L)
                if name not in done:
                    done.add(name)
                    nn.export(module, name, part(L), args, body(L))
        N = c.num_layers
        declare_states(module, {kv: (["cap", KV, D], c.kv_dtype) for kv in "kv"},
                       upper_bounds={"cap": N * c.max_positions})
        stacks = self.stacks()
        done = set()
        for (first, count), stack in zip(self.runs(), stacks):
            layer = self.layers[first]
            if self.step_function("prefill", layer) in done:
                continue
            for kind, extra in (("prefill", [("mask", ["s", "s"], c.dtype)]),
                                ("extend", [("mask", ["s", 1, t, 1], c.dtype), ("past", ["p", 0], "i8")])):
                name = self.step_function(kind, layer)
                done.add(name)
                # the iteration i, the inputs, the run's first layer f, the stacked weights (c rows)
                specs = [("it", ["i", 0], "i8")] + rope + extra + [("first", ["f", 0], "i8")] + \
                    [(n, ["c", p.shape[1]], "i8") for n, p in stack.named_parameters()]
                with graph_function(module, name, specs) as fn:
                    x, cos, sin, mask = fn.params[1:5]
                    st = _Step(None, cos, sin, mask) if kind == "prefill" else _Step("p", cos, sin, mask)
                    views = stack.views(fn.params[len(specs) - len(stack.spec):])
                    fn.ret(self._step(kind, layer, views, st, x))
        top = _Part(embed=self.embed, stacks=stacks, norm=self.norm, lm_head=self.lm_head,
                    rope_inv_freq=self.rope_inv_freq)
        names = nn.export(module, "prefill", top, [("ids", ["s"], "i64")],
                          lambda ids: self._body(_Step(None), ids, stacks, last_only=True))
        names2 = nn.export(module, "extend", top, [("ids", ["s"], "i64"), ("past", ["p", 0], "i8")],
                           lambda ids, past: self._body(_Step("p"), ids, stacks, last_only=False, past=past))
        assert names == names2
        return names
