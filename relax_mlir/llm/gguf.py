"""llama.cpp GGUF files -> :class:`LMConfig`, our weights and a tokenizer.

::

    from relax_mlir.llm import CausalLM
    lm = CausalLM.from_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", max_seq_len=512)
    ids = lm.tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}])
    print(lm.tokenizer.decode(lm.generate(ids, 32)[len(ids):]))

The file is memory-mapped and its header read by :func:`check_file`'s walk, which bounds
every count, length and tensor range by the file size (``gguf.GGUFReader`` trusts them: a
truncated file gives short arrays, an absurd array count a near-endless loop; and it makes
a numpy array per metadata part, ~150 MB for a large vocabulary). Any problem is a :class:`GGUFError` naming the path.

Architectures: ``llama``, ``mistral`` (llama.cpp's converter permutes the q/k rows of
these for its rope layout: undone here, so the weights equal Hugging Face's) and
``qwen2`` (no permutation; q/k/v biases). Hyper-parameters come from the ``{arch}.*``
metadata; rope: plain, ``linear`` scaling, and the ``rope_freqs`` tensor (llama3-style
per-frequency factors). The GGUF names map to Hugging Face's (:class:`GGUFSource`), and
:func:`~relax_mlir.llm.weights.model_weights` builds our weights: tensors in a format the
target computes on (docs/quantization.md: f16, bf16, q8_0, q4_0/1, q5_0/1, q4/5/6_k on the
cpu target) stay as stored, their memory-mapped rows dequantized in the kernels' registers;
the rest is dequantized to f32 once (``gguf.quants.dequantize``: also the IQ and TQ types).
:func:`raw_tensors` gives every tensor's ``GGMLQuantizationType`` and bytes.

The tokenizer (:class:`GGUFTokenizer`) is a ``tokenizers.Tokenizer`` built from the
``tokenizer.ggml.*`` metadata: ``gpt2`` (byte-level BPE with the file's merges; the split
regex picked by ``tokenizer.ggml.pre``) and ``llama`` (SentencePiece-style BPE with byte
fallback, merges from the file or derived from the token scores), plus the chat template
(``tokenizer.chat_template``, rendered with jinja2 like transformers' apply_chat_template).
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from .model import LMConfig
from .weights import WeightSource, unpermute_rope_rows  # noqa: F401 (unpermute_rope_rows re-exported)

#: ``general.architecture`` values this loader understands
ARCHITECTURES = ("llama", "mistral", "qwen2")
#: architectures whose q/k rows llama.cpp's converter permutes (LlamaModel.permute)
_PERMUTED = ("llama", "mistral")


class GGUFError(ValueError):
    """A file that is not a (readable, supported) GGUF model; the message names the path."""


# -- reading ----------------------------------------------------------------------------------

# GGUF value types (gguf.GGUFValueType): byte sizes of the scalars; 8 = string, 9 = array
_SCALAR_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_MAX_DIMS = 8


def _gguf():
    try:
        import gguf
    except ImportError as e:    # a core dependency; only a broken install lands here
        raise GGUFError("reading GGUF files needs the 'gguf' package (pip install gguf)") from e
    return gguf


def check_file(path: str) -> None:
    """Walk the header of ``path`` with every count and offset bounded by the file size;
    raise :class:`GGUFError` on anything a well-formed GGUF cannot contain (bad magic,
    version, value type, tensor type, a truncated header or tensor data)."""
    _read_header(path)


class _Header(NamedTuple):
    """What :func:`_read_header` finds: the header bytes, metadata key -> (value type, offset
    of the value in ``buf``), tensor infos (name, dims, GGML type, offset) and where the data starts."""

    buf: bytes
    fields: dict
    infos: list
    data_start: int


def _read_header(path: str) -> _Header:
    """:func:`check_file`'s walk, keeping where each metadata value and tensor lies (the
    values are decoded on demand by :func:`_decode`: a vocabulary's 100k strings stay bytes)."""
    gguf = _gguf()
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise GGUFError(f"{path}: {e.strerror or e}") from None
    if os.path.isdir(path):
        raise GGUFError(f"{path}: is a directory, not a GGUF file")

    try:
        fh = open(path, "rb")
    except OSError as e:
        raise GGUFError(f"{path}: {e.strerror or e}") from None
    with fh:
        # The header (metadata + tensor infos) is read in chunks as the walk needs it.
        buf = bytearray()

        def need(end: int, what: str) -> None:
            if end > size:
                raise GGUFError(f"{path}: truncated GGUF file ({what} runs past the end, byte {end} of {size})")
            while len(buf) < end:
                chunk = fh.read(max(end - len(buf), 1 << 20))
                if not chunk:
                    raise GGUFError(f"{path}: truncated GGUF file ({what})")
                buf.extend(chunk)

        def u32(off: int, what: str) -> int:
            need(off + 4, what)
            return struct.unpack_from("<I", buf, off)[0]

        def u64(off: int, what: str) -> int:
            need(off + 8, what)
            return struct.unpack_from("<Q", buf, off)[0]

        def string(off: int, what: str) -> tuple[int, bytes]:
            n = u64(off, what)
            need(off + 8 + n, what)
            return off + 8 + n, bytes(buf[off + 8:off + 8 + n])

        if size < 4:
            raise GGUFError(f"{path}: not a GGUF file ({size} bytes)")
        need(4, "magic")
        if bytes(buf[:4]) != b"GGUF":
            raise GGUFError(f"{path}: not a GGUF file (magic {bytes(buf[:4])!r}, expected b'GGUF')")
        version = u32(4, "version")
        if version & 0xFFFF == 0 and version:
            raise GGUFError(f"{path}: big-endian GGUF files are not supported")
        if version not in gguf.gguf_reader.READER_SUPPORTED_VERSIONS:
            raise GGUFError(f"{path}: GGUF version {version} is not supported "
                            f"(supported: {', '.join(map(str, gguf.gguf_reader.READER_SUPPORTED_VERSIONS))})")
        n_tensors, n_kv = u64(8, "tensor count"), u64(16, "metadata count")
        # every metadata entry takes >= 13 bytes, every tensor info >= 24
        if n_kv * 13 > size or n_tensors * 24 > size:
            raise GGUFError(f"{path}: corrupt GGUF header ({n_kv} metadata entries, {n_tensors} tensors "
                            f"in {size} bytes)")
        off = 24
        alignment = gguf.constants.GGUF_DEFAULT_ALIGNMENT

        def value(off: int, vtype: int, key: str, depth: int = 0) -> int:
            if vtype in _SCALAR_SIZE:
                need(off + _SCALAR_SIZE[vtype], key)
                return off + _SCALAR_SIZE[vtype]
            if vtype == _STRING:
                return string(off, key)[0]
            if vtype == _ARRAY and depth < 4:
                itype, count = u32(off, key), u64(off + 4, key)
                off += 12
                if itype in _SCALAR_SIZE:
                    need(off + count * _SCALAR_SIZE[itype], key)
                    return off + count * _SCALAR_SIZE[itype]
                if count * 8 > size - off:
                    raise GGUFError(f"{path}: truncated or corrupt GGUF file (metadata '{key}': an array of "
                                    f"{count} entries in the {size - off} bytes left)")
                for _ in range(count):
                    off = value(off, itype, key, depth + 1)
                return off
            raise GGUFError(f"{path}: corrupt GGUF metadata '{key}' (value type {vtype})")

        fields = {}
        for _ in range(n_kv):
            off, kb = string(off, "metadata key")
            key = kb.decode("utf-8", "replace")
            vtype = u32(off, key)
            if key in fields:
                raise GGUFError(f"{path}: corrupt GGUF file (metadata '{key}' appears twice)")
            fields[key] = (vtype, off + 4)
            if key == "general.alignment" and vtype == 4:
                alignment = u32(off + 4, key)
                if alignment == 0 or alignment & (alignment - 1):
                    raise GGUFError(f"{path}: general.alignment {alignment} is not a power of two")
            off = value(off + 4, vtype, key)

        infos = []
        for _ in range(n_tensors):
            off, nb = string(off, "tensor name")
            name = nb.decode("utf-8", "replace")
            n_dims = u32(off, name)
            if not 0 < n_dims <= _MAX_DIMS:
                raise GGUFError(f"{path}: corrupt GGUF tensor '{name}' ({n_dims} dimensions)")
            need(off + 4 + 8 * n_dims + 12, name)
            dims = struct.unpack_from(f"<{n_dims}Q", buf, off + 4)
            ttype, toff = struct.unpack_from("<IQ", buf, off + 4 + 8 * n_dims)
            off += 4 + 8 * n_dims + 12
            infos.append((name, dims, ttype, toff))

    data_start = -(-off // alignment) * alignment
    types = {int(t): t for t in gguf.GGMLQuantizationType}
    for name, dims, ttype, toff in infos:
        if ttype not in types:
            raise GGUFError(f"{path}: tensor '{name}' has unknown GGML type {ttype}")
        block, type_size = gguf.constants.GGML_QUANT_SIZES[types[ttype]]
        n = 1
        for d in dims:
            n *= d
        if n > size * 64 or dims[0] % block:
            raise GGUFError(f"{path}: corrupt GGUF tensor '{name}' (shape {list(dims)}, type {types[ttype].name})")
        end = data_start + toff + n // block * type_size
        if end > size:
            raise GGUFError(f"{path}: truncated GGUF file (tensor '{name}' needs bytes up to {end}, "
                            f"the file has {size})")
    return _Header(bytes(buf[:off]), fields, infos, data_start)


_SCALAR_FORMAT = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _decode(buf: bytes, off: int, vtype: int):
    """The Python value (int, float, bool, str or list) of a metadata value the walk checked."""
    if vtype in _SCALAR_FORMAT:
        return struct.unpack_from("<" + _SCALAR_FORMAT[vtype], buf, off)[0]
    if vtype == _STRING:
        (n,) = struct.unpack_from("<Q", buf, off)
        return str(buf[off + 8:off + 8 + n], "utf-8")
    itype, count = struct.unpack_from("<IQ", buf, off)
    off += 12
    if itype in _SCALAR_FORMAT:
        return np.frombuffer(buf, "<" + _SCALAR_FORMAT[itype], count, off).tolist()
    out = []
    for _ in range(count):
        if itype == _STRING:
            (n,) = struct.unpack_from("<Q", buf, off)
            out.append(str(buf[off + 8:off + 8 + n], "utf-8"))
            off += 8 + n
        else:
            out.append(_decode(buf, off, itype))
            off = _skip(buf, off, itype)
    return out


def _skip(buf: bytes, off: int, vtype: int) -> int:
    """The offset after a (checked) value."""
    if vtype in _SCALAR_SIZE:
        return off + _SCALAR_SIZE[vtype]
    if vtype == _STRING:
        return off + 8 + struct.unpack_from("<Q", buf, off)[0]
    itype, count = struct.unpack_from("<IQ", buf, off)
    off += 12
    if itype in _SCALAR_SIZE:
        return off + count * _SCALAR_SIZE[itype]
    for _ in range(count):
        off = _skip(buf, off, itype)
    return off


#: GGML types read as numpy elements (the others as uint8 blocks, gguf.GGUFReader's convention)
_ELEMENT_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8, "I16": np.int16,
                   "I32": np.int32, "I64": np.int64}


class RawTensor(NamedTuple):
    """One tensor as stored: ``qtype`` (``gguf.GGMLQuantizationType``), ``shape`` the
    logical numpy shape (rows..., cols: a Linear weight is (out, in) like PyTorch's) and
    ``data`` the memory-mapped array (float for F32/F16, else uint8 blocks of shape
    (rows..., bytes per row): quantization blocks run along the last axis, so whole rows
    can be permuted without requantizing)."""

    name: str
    qtype: Any
    shape: tuple[int, ...]
    data: np.ndarray


class GGUFFile:
    """A checked, memory-mapped GGUF file: ``metadata`` (key -> Python value, decoded on
    first use), ``tensors`` (name -> :class:`RawTensor`, views of one read-only mapping).

    The header is read by :func:`_read_header`, not ``gguf.GGUFReader``: the reader makes a
    numpy array per part of every metadata value, ~150 MB of small objects for a 49k-token
    vocabulary. :meth:`release` drops the mapped pages of tensor data that was copied
    (they are read again from the file if touched), so a copy and its source are not both
    resident."""

    def __init__(self, path: str | os.PathLike):
        import mmap

        self.path = os.fspath(path)
        h = _read_header(self.path)
        gguf = _gguf()
        types = {int(t): t for t in gguf.GGMLQuantizationType}
        self._buf, self._fields = h.buf, h.fields
        with open(self.path, "rb") as fh:
            self._mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._data = np.frombuffer(self._mmap, np.uint8)
        self.tensors = {}
        for name, dims, ttype, toff in h.infos:
            if name in self.tensors:
                raise GGUFError(f"{self.path}: corrupt GGUF file (tensor '{name}' appears twice)")
            qtype = types[ttype]
            shape = tuple(int(d) for d in reversed(dims))
            block, type_size = gguf.constants.GGML_QUANT_SIZES[qtype]
            nbytes = math.prod(shape) // block * type_size
            try:
                a = self._data[h.data_start + toff:h.data_start + toff + nbytes]
                if qtype.name in _ELEMENT_DTYPES:
                    a = a.view(_ELEMENT_DTYPES[qtype.name]).reshape(shape)
                else:   # whole blocks per row along the last axis
                    a = a.reshape(*shape[:-1], shape[-1] // block * type_size)
            except ValueError as e:
                raise GGUFError(f"{self.path}: cannot read GGUF tensor '{name}': {e}") from None
            self.tensors[name] = RawTensor(name, qtype, shape, a)
        self._cache: dict[str, Any] = {}

    def release(self, a: np.ndarray) -> None:
        """The pages wholly inside array ``a`` (a view of this file's data, already copied)
        leave this process's memory; touching them again reads them from the file."""
        from .weights import drop_pages
        drop_pages(self._mmap, self._data, a)

    def __contains__(self, key: str) -> bool:
        return key in self._fields

    def get(self, key: str, default: Any = None, kind: Optional[str] = None) -> Any:
        """A metadata value (int, float, bool, str or list), ``default`` when absent. ``kind``
        (``int``, ``float``, ``bool``, ``str``, ``[int]``, ``[float]``, ``[str]``): the value
        must be of that type (an int is a float too), else :class:`GGUFError` naming the key."""
        if key not in self._fields:
            return default
        if key not in self._cache:
            try:
                self._cache[key] = _decode(self._buf, self._fields[key][1], self._fields[key][0])
            except Exception as e:
                raise GGUFError(f"{self.path}: cannot read metadata '{key}': {e}") from None
        v = self._cache[key]
        if kind is not None and not _is_kind(v, kind):
            shown = f"an array of {len(v)} entries" if isinstance(v, list) else f"{type(v).__name__} {v!r:.40}"
            raise GGUFError(f"{self.path}: metadata '{key}' is {shown}, expected {kind}")
        return v

    def require(self, key: str, kind: Optional[str] = None) -> Any:
        v = self.get(key, kind=kind)
        if v is None:
            raise GGUFError(f"{self.path}: metadata '{key}' is missing")
        return v

    @property
    def architecture(self) -> str:
        return self.require("general.architecture", "str")


def _is_kind(v: Any, kind: str) -> bool:
    if kind.startswith("["):
        return isinstance(v, list) and all(_is_kind(x, kind[1:-1]) for x in v)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, {"bool": bool, "str": str}[kind])


def _open(src) -> GGUFFile:
    return src if isinstance(src, GGUFFile) else GGUFFile(src)


def raw_tensors(src) -> dict[str, RawTensor]:
    """Per GGUF tensor name: its quantization type, logical shape and raw (memory-mapped)
    bytes, as stored -- the q/k rows of llama/mistral files still in llama.cpp's rope
    layout (:func:`unpermute_rope_rows` undoes it on rows, quantized or not)."""
    return dict(_open(src).tensors)


def dequantizable() -> frozenset:
    """The ``GGMLQuantizationType``\\ s :func:`dequantize` handles."""
    gguf = _gguf()
    T = gguf.GGMLQuantizationType
    return frozenset({T.F32, T.F16, *gguf.quants._type_traits})


def dequantize(t: RawTensor, path: str = "") -> np.ndarray:
    """The tensor as float32, logical shape."""
    gguf = _gguf()
    where = f"{path}: " if path else ""
    if t.qtype not in dequantizable():
        names = sorted(q.name for q in dequantizable())
        raise GGUFError(f"{where}tensor '{t.name}' has quantization type {t.qtype.name}, which cannot be "
                        f"dequantized (supported: {', '.join(names)})")
    try:
        out = gguf.quants.dequantize(t.data, t.qtype)
    except Exception as e:
        raise GGUFError(f"{where}cannot dequantize tensor '{t.name}' ({t.qtype.name}): {e}") from None
    return np.asarray(out, dtype=np.float32).reshape(t.shape)


# -- config -----------------------------------------------------------------------------------

@dataclass
class GGUFModel:
    """What :func:`load` reads: the graph config, our weights (a dict, or with ``lazy`` a
    :class:`~relax_mlir.llm.weights.LayerWeights`), the file's context length, eos id(s)
    and tokenizer (None when ``tokenizers`` is not installed)."""

    config: LMConfig
    weights: dict[str, np.ndarray]
    context_length: int
    eos_token_id: Optional[int]
    tokenizer: Optional["GGUFTokenizer"]
    architecture: str
    types: dict[str, str] = field(default_factory=dict)   # GGUF tensor name -> quant type name


def architecture(f: GGUFFile) -> str:
    arch = f.architecture
    if arch not in ARCHITECTURES:
        raise GGUFError(f"{f.path}: architecture '{arch}' is not supported (supported: {', '.join(ARCHITECTURES)})")
    return arch


def config_from_gguf(src) -> LMConfig:
    """The :class:`LMConfig` of a GGUF file's ``{arch}.*`` metadata."""
    f = _open(src)
    arch = architecture(f)

    def meta(key, default=None, kind="int"):
        v = f.get(f"{arch}.{key}", default, kind)
        if v is None:
            raise GGUFError(f"{f.path}: metadata '{arch}.{key}' is missing")
        if kind == "int" and not 0 < v < 1 << 31:
            raise GGUFError(f"{f.path}: metadata '{arch}.{key}' is {v}, expected a positive count")
        return v

    d, H = meta("embedding_length"), meta("attention.head_count")
    KV = meta("attention.head_count_kv", H)
    hd = meta("attention.key_length", max(d // H, 1))
    rot = meta("rope.dimension_count", hd)
    if rot != hd:
        raise GGUFError(f"{f.path}: partial rotary embeddings (rope.dimension_count {rot} < head dim {hd}) "
                        "are not supported")
    if meta("attention.value_length", hd) != hd:
        raise GGUFError(f"{f.path}: attention.value_length differs from key_length; not supported")
    eps = meta("attention.layer_norm_rms_epsilon", kind="float")
    if not 0 <= eps < 1:
        raise GGUFError(f"{f.path}: metadata '{arch}.attention.layer_norm_rms_epsilon' is {eps}, expected a "
                        "small non-negative number")
    tokens = f.get("tokenizer.ggml.tokens", kind="[str]")
    emb = f.tensors.get("token_embd.weight")
    vocab = len(tokens) if tokens is not None else meta("vocab_size", emb.shape[0] if emb else None)
    if emb is not None and emb.shape[0] != vocab:
        vocab = emb.shape[0]              # padded embedding tables: the tensor is the truth
    q_bias = "blk.0.attn_q.bias" in f.tensors
    o_bias = "blk.0.attn_output.bias" in f.tensors
    mlp_bias = "blk.0.ffn_up.bias" in f.tensors
    window = f.get(f"{arch}.attention.sliding_window", kind="int") if arch == "mistral" else None
    scaling = _rope_scaling(f, arch)
    try:
        return LMConfig(vocab_size=vocab, hidden_size=d, num_layers=meta("block_count"), num_heads=H,
                        num_kv_heads=KV, head_dim=hd, intermediate_size=meta("feed_forward_length"),
                        rms_norm_eps=float(eps), qkv_bias=q_bias,
                        o_bias=o_bias, mlp_bias=mlp_bias, attention_scaling=scaling[2],
                        sliding_window=int(window) if window else None)
    except GGUFError:
        raise
    except (ValueError, ZeroDivisionError) as e:
        raise GGUFError(f"{f.path}: inconsistent hyper-parameters: {e}") from None


def _rope_scaling(f: GGUFFile, arch: str) -> tuple[str, float, float]:
    """(type, factor, attention_scaling) of ``{arch}.rope.scaling.*``."""
    kind = f.get(f"{arch}.rope.scaling.type", "none", "str")
    factor = float(f.get(f"{arch}.rope.scaling.factor", 1.0, "float") or 1.0)
    if not 0 < factor < float("inf"):
        raise GGUFError(f"{f.path}: metadata '{arch}.rope.scaling.factor' is {factor}, expected a positive number")
    if kind in ("none", "") or factor == 1.0:
        return "none", 1.0, 1.0
    if kind == "linear":
        return kind, factor, 1.0
    raise GGUFError(f"{f.path}: rope scaling '{kind}' is not supported (supported: none, linear, "
                    "llama3-style rope_freqs factors)")


def inv_freq_from_gguf(src, c: LMConfig) -> np.ndarray:
    """Rope inverse frequencies (head_dim/2,) f32 as transformers computes them:
    ``1 / base ** (arange(0, hd, 2) / hd)``, divided by a linear scaling factor, or by the
    per-frequency factors of a ``rope_freqs`` tensor (llama.cpp stores llama3 scaling so)."""
    f = _open(src)
    arch = architecture(f)
    base = float(f.get(f"{arch}.rope.freq_base", 10000.0, "float"))
    if not 0 < base < float("inf"):
        raise GGUFError(f"{f.path}: metadata '{arch}.rope.freq_base' is {base}, expected a positive number")
    hd = c.head_dim
    inv = (1.0 / (base ** (np.arange(0, hd, 2, dtype=np.int64).astype(np.float32) / hd))).astype(np.float32)
    kind, factor, _ = _rope_scaling(f, arch)
    if kind == "linear":
        inv = inv / np.float32(factor)
    if "rope_freqs.weight" in f.tensors:
        ff = dequantize(f.tensors["rope_freqs.weight"], f.path).reshape(-1)
        if ff.size != hd // 2:
            raise GGUFError(f"{f.path}: rope_freqs has {ff.size} entries, expected {hd // 2}")
        inv = inv / ff
    return inv.astype(np.float32)


# -- weights ----------------------------------------------------------------------------------

#: GGUF tensor name (per layer: after ``blk.N.``) -> Hugging Face name (after ``model.layers.N.``)
LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight", "attn_output.bias": "self_attn.o_proj.bias",
    "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_gate.bias": "mlp.gate_proj.bias",
    "ffn_up.weight": "mlp.up_proj.weight", "ffn_up.bias": "mlp.up_proj.bias",
    "ffn_down.weight": "mlp.down_proj.weight", "ffn_down.bias": "mlp.down_proj.bias",
}
GLOBAL_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
                "output.weight": "lm_head.weight"}


def hf_name(name: str) -> Optional[str]:
    """The Hugging Face name of a GGUF tensor name; None when it has none."""
    if name in GLOBAL_NAMES:
        return GLOBAL_NAMES[name]
    if name.startswith("blk."):
        _, i, rest = name.split(".", 2)
        if i.isdigit() and rest in LAYER_NAMES:
            return f"model.layers.{i}.{LAYER_NAMES[rest]}"
    return None


def hf_state_dict(src, c: Optional[LMConfig] = None) -> dict[str, np.ndarray]:
    """Every weight of the file dequantized to float32 under its Hugging Face name and in
    Hugging Face's layout (q/k rows un-permuted for llama/mistral): ``model.embed_tokens.weight``,
    ``model.layers.N.self_attn.q_proj.weight``, ... (``lm_head.weight`` only when the file has
    ``output.weight``; without it the embeddings are tied)."""
    f = _open(src)
    arch = architecture(f)
    c = c or config_from_gguf(f)
    out: dict[str, np.ndarray] = {}
    for name, t in f.tensors.items():
        hf = hf_name(name)
        if hf is None:
            if name == "rope_freqs.weight" or name.endswith(".attn_rot_embd"):
                continue
            raise GGUFError(f"{f.path}: tensor '{name}' is not part of a {arch} model this loader knows")
        w = dequantize(t, f.path)
        if arch in _PERMUTED and (".attn_q." in name or ".attn_k." in name):
            heads = c.num_heads if ".attn_q." in name else c.num_kv_heads
            if w.shape[0] % (2 * heads):
                raise GGUFError(f"{f.path}: tensor '{name}' has {w.shape[0]} rows, not a multiple of 2 x {heads} heads")
            w = unpermute_rope_rows(w, heads)
        out[hf] = w
    needed = ["model.embed_tokens.weight", "model.norm.weight"] + [
        f"model.layers.{i}.{n}" for i in range(c.num_layers) for n in
        ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
         "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
         "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight")]
    missing = [n for n in needed if n not in out]
    if missing:
        inv = {v: k for k, v in GLOBAL_NAMES.items()}
        first = missing[0]
        gname = inv.get(first) or "blk.{}.{}".format(first.split(".")[2], {v: k for k, v in LAYER_NAMES.items()}[
            first.split(".", 3)[3]])
        raise GGUFError(f"{f.path}: tensor '{gname}' is missing ({len(missing)} weights missing in all)")
    return out


class GGUFSource(WeightSource):
    """A GGUF file's tensors under Hugging Face names (:class:`~relax_mlir.llm.weights.WeightSource`):
    storage formats are the GGML types (lower case), raw rows the memory-mapped blocks."""

    def __init__(self, src):
        self.file = _open(src)
        self.path = self.file.path
        self.rope_interleaved = architecture(self.file) in _PERMUTED
        self._names = {}
        for name in self.file.tensors:
            hf = hf_name(name)
            if hf is not None:
                self._names[hf] = name

    def __contains__(self, name: str) -> bool:
        return name in self._names

    def _tensor(self, name: str) -> RawTensor:
        if name not in self._names:
            inv = {v: k for k, v in GLOBAL_NAMES.items()}
            gname = inv.get(name) or name
            if name.startswith("model.layers."):
                _, _, i, rest = name.split(".", 3)
                gname = f"blk.{i}." + {v: k for k, v in LAYER_NAMES.items()}.get(rest, rest)
            raise GGUFError(f"{self.path}: tensor '{gname}' is missing")
        return self.file.tensors[self._names[name]]

    def kind(self, name: str) -> str:
        return self._tensor(name).qtype.name.lower()

    def raw(self, name: str) -> np.ndarray:
        t = self._tensor(name)
        return np.asarray(t.data).view(np.uint8).reshape(t.shape[0], -1).view(np.int8)

    def f32(self, name: str) -> np.ndarray:
        return dequantize(self._tensor(name), self.path)

    def release(self, name: str) -> None:
        self.file.release(self._tensor(name).data)

    def shape(self, name: str) -> tuple:
        return self._tensor(name).shape

    def check_shape(self, name: str, want: tuple) -> None:
        t = self._tensor(name)
        if tuple(t.shape) != tuple(want):
            raise GGUFError(f"{self.path}: tensor '{t.name}' has shape {list(t.shape)}, the metadata implies "
                            f"{list(want)}")


def load(path, tokenizer: bool = True, formats=None, activations: str = "f32", lazy: bool = False) -> GGUFModel:
    """Read a GGUF model: config, our weights, tokenizer. ``formats``: the quantized formats
    the target runs (weights in them stay as stored, :func:`plan_formats`); None or empty:
    every weight dequantized to f32. ``lazy``: the weights as a
    :class:`~relax_mlir.llm.weights.LayerWeights` (layers made when asked for)."""
    from dataclasses import replace

    from . import weights as W

    f = _open(path)
    arch = architecture(f)
    c = config_from_gguf(f)
    src = GGUFSource(f)
    if formats:
        c = replace(W.stored_formats(src, c, formats), activations=activations)
    w = W.model_weights(src, c, lazy=lazy)
    w["rope_inv_freq"] = inv_freq_from_gguf(f, c)
    ctx = f.get(f"{arch}.context_length", 2048, "int")
    if ctx <= 0:
        raise GGUFError(f"{f.path}: metadata '{arch}.context_length' is {ctx}, expected a positive length")
    eos = f.get("tokenizer.ggml.eos_token_id", kind="int")
    tok = None
    if tokenizer and f.get("tokenizer.ggml.tokens", kind="[str]") is not None:
        try:
            import tokenizers  # noqa: F401
        except ImportError:
            tok = None
        else:
            tok = GGUFTokenizer.from_file(f)
    return GGUFModel(c, w, ctx, None if eos is None else int(eos), tok, arch,
                     {n: t.qtype.name for n, t in f.tensors.items()})


# -- tokenizer --------------------------------------------------------------------------------

# llama.cpp's pre-tokenizer splits (tokenizer.ggml.pre) that differ from GPT-2's default
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_SPLITS = {"llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
           "smaug-bpe": _LLAMA3_SPLIT, "dbrx": _LLAMA3_SPLIT, "falcon3": _LLAMA3_SPLIT,
           "qwen2": _QWEN2_SPLIT, "deepseek-r1-qwen": _QWEN2_SPLIT}
_CONTROL, _USER_DEFINED = 3, 4


def _byte_level_pre_tokenizer(pre: str):
    from tokenizers import Regex, pre_tokenizers as P

    if pre in _SPLITS:
        return P.Sequence([P.Split(Regex(_SPLITS[pre]), behavior="isolated"),
                           P.ByteLevel(add_prefix_space=False, use_regex=False)])
    if pre == "smollm":   # llama.cpp: every digit alone, then GPT-2's regex (as HF's tokenizer.json)
        return P.Sequence([P.Digits(individual_digits=True), P.ByteLevel(add_prefix_space=False, use_regex=True)])
    return P.ByteLevel(add_prefix_space=False, use_regex=True)


def _merges_from_scores(tokens: Sequence[str], scores: Sequence[float]) -> list[tuple[str, str]]:
    """SentencePiece BPE vocabularies without merges: every split of a token into two
    vocabulary pieces is a merge, ranked by the merged token's score (best first)."""
    vocab = {t: i for i, t in enumerate(tokens)}
    ranked = []
    for tok, score in zip(tokens, scores):
        for k in range(1, len(tok)):
            a, b = tok[:k], tok[k:]
            if a in vocab and b in vocab:
                ranked.append((-score, vocab[a], vocab[b], a, b))
    ranked.sort()
    return [(a, b) for *_, a, b in ranked]


def _merge_pairs(path: str, merges: Sequence[str]) -> list[tuple[str, str]]:
    pairs = []
    for m in merges:
        a, sep, b = m.partition(" ")
        if not sep:
            raise GGUFError(f"{path}: tokenizer.ggml.merges entry {m!r:.40} is not two tokens separated by a space")
        pairs.append((a, b))
    return pairs


def _bpe(path: str, vocab, merges, **kw):
    from tokenizers import models
    try:
        return models.BPE(vocab, merges, **kw)
    except Exception as e:     # the tokenizers library raises its own Exception (a merge out of vocabulary)
        raise GGUFError(f"{path}: cannot build the tokenizer: {e}") from None


class GGUFTokenizer:
    """A ``tokenizers.Tokenizer`` (``.tokenizer``) built from ``tokenizer.ggml.*``, with
    the file's special ids and chat template. ``encode`` adds BOS when the file says so
    (``tokenizer.ggml.add_bos_token``; SentencePiece files default to yes, as llama.cpp)."""

    def __init__(self, tokenizer, bos_token_id=None, eos_token_id=None, add_bos_token=False,
                 chat_template: Optional[str] = None, tokens: Sequence[str] = ()):
        self.tokenizer = tokenizer
        self.bos_token_id, self.eos_token_id = bos_token_id, eos_token_id
        self.add_bos_token = bool(add_bos_token)
        self.chat_template = chat_template
        self._tokens = tokens

    @classmethod
    def from_file(cls, src) -> "GGUFTokenizer":
        from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

        f = _open(src)
        kind = f.get("tokenizer.ggml.model", "", "str")
        tokens = list(f.require("tokenizer.ggml.tokens", "[str]"))
        types = list(f.get("tokenizer.ggml.token_type", kind="[int]") or [])
        merges = f.get("tokenizer.ggml.merges", kind="[str]")
        bos, eos = f.get("tokenizer.ggml.bos_token_id", kind="int"), f.get("tokenizer.ggml.eos_token_id", kind="int")
        unk = f.get("tokenizer.ggml.unknown_token_id", kind="int")
        vocab = {t: i for i, t in enumerate(tokens)}
        if len(vocab) != len(tokens):   # duplicates: keep the first id (as llama.cpp's text->id map)
            vocab = {}
            for i, t in enumerate(tokens):
                vocab.setdefault(t, i)
        if kind == "gpt2":
            if merges is None:
                raise GGUFError(f"{f.path}: a 'gpt2' tokenizer without tokenizer.ggml.merges")
            tk = Tokenizer(_bpe(f.path, vocab, _merge_pairs(f.path, merges), fuse_unk=False))
            pre = f.get("tokenizer.ggml.pre", "default", "str")
            if pre in ("qwen2", "deepseek-r1-qwen"):
                tk.normalizer = normalizers.NFC()
            tk.pre_tokenizer = _byte_level_pre_tokenizer(pre)
            tk.decoder = decoders.ByteLevel()
            add_bos = f.get("tokenizer.ggml.add_bos_token", False, "bool")
        elif kind == "llama":
            if merges is not None:
                pairs = _merge_pairs(f.path, merges)
            else:
                scores = f.get("tokenizer.ggml.scores", kind="[float]")
                if scores is None:
                    raise GGUFError(f"{f.path}: a 'llama' tokenizer with neither merges nor scores")
                pairs = _merges_from_scores(tokens, scores)
            unk_tok = tokens[unk] if unk is not None and 0 <= unk < len(tokens) else None
            tk = Tokenizer(_bpe(f.path, vocab, pairs, unk_token=unk_tok, fuse_unk=True, byte_fallback=True))
            prefix = f.get("tokenizer.ggml.add_space_prefix", True, "bool")
            norms = [normalizers.Replace(" ", "\u2581")]
            if prefix:
                norms.insert(0, normalizers.Prepend("\u2581"))
            tk.normalizer = normalizers.Sequence(norms)
            decs = [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
            if prefix:
                decs.append(decoders.Strip(" ", 1, 0))
            tk.decoder = decoders.Sequence(decs)
            add_bos = f.get("tokenizer.ggml.add_bos_token", True, "bool")
        else:
            raise GGUFError(f"{f.path}: tokenizer model '{kind}' is not supported (supported: gpt2, llama)")
        # control tokens (<|im_start|>, </s>, ...) whole and special; user-defined ones whole
        special = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == _CONTROL]
        user = [AddedToken(t, special=False, normalized=False) for t, ty in zip(tokens, types) if ty == _USER_DEFINED]
        if special:
            tk.add_special_tokens(special)
        if user:
            tk.add_tokens(user)
        return cls(tk, None if bos is None else int(bos), None if eos is None else int(eos), add_bos,
                   f.get("tokenizer.chat_template", kind="str"), tokens)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def token(self, i: Optional[int]) -> str:
        return "" if i is None or not 0 <= i < len(self._tokens) else self._tokens[i]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        if add_special_tokens and self.add_bos_token and self.bos_token_id is not None:
            ids = [self.bos_token_id] + ids
        return ids

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True,
                            tokenize: bool = True, **kwargs):
        """The conversation rendered with the file's template (like transformers'
        ``apply_chat_template``: jinja2 sandbox, trim_blocks, lstrip_blocks, ``bos_token`` /
        ``eos_token`` / ``raise_exception`` defined); token ids, or the text with
        ``tokenize=False``. The template writes any special tokens itself."""
        if not self.chat_template:
            raise GGUFError("this GGUF file has no chat template (tokenizer.chat_template)")
        text = render_chat_template(self.chat_template, messages, add_generation_prompt=add_generation_prompt,
                                    bos_token=self.token(self.bos_token_id), eos_token=self.token(self.eos_token_id),
                                    **kwargs)
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def streamer(self) -> "TextStream":
        return TextStream(self)


def render_chat_template(template: str, messages, add_generation_prompt: bool = True, **kwargs) -> str:
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    def strftime_now(fmt):
        import datetime
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    return env.from_string(template).render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                                            **kwargs)


class TextStream:
    """Incremental detokenization with any tokenizer that has ``decode(ids,
    skip_special_tokens=...)``: ``push(token)`` returns the text the new token adds
    (everything so far decoded again; text ending in an incomplete UTF-8 sequence waits),
    ``finish()`` whatever is left."""

    def __init__(self, tok):
        self.tok, self.ids, self.printed = tok, [], ""

    def _text(self) -> str:
        return self.tok.decode(self.ids, skip_special_tokens=True)

    def push(self, token: int) -> str:
        self.ids.append(int(token))
        text = self._text()
        if text.endswith("\ufffd"):
            return ""
        new = text[len(self.printed):]     # (a decode that rewrites earlier text is not undone)
        self.printed = text
        return new

    def finish(self) -> str:
        text = self._text()
        new, self.printed = text[len(self.printed):], text
        return new


__all__ = ["ARCHITECTURES", "GGUFError", "GGUFFile", "GGUFModel", "GGUFTokenizer", "RawTensor", "TextStream",
           "check_file", "config_from_gguf", "dequantize", "dequantizable", "hf_name", "hf_state_dict",
           "inv_freq_from_gguf", "load", "raw_tensors", "render_chat_template", "unpermute_rope_rows"]
