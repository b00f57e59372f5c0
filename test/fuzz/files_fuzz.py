"""Model files fuzzer: small valid GGUF files and safetensors directories, mutated, through
the loaders (``relax_mlir.llm.gguf`` and ``relax_mlir.llm.weights``).

One case = one seed: a tiny model (llama or qwen2, 1-2 layers, hidden 32 or 64, random
weights) written as

* a GGUF file (``gguf.GGUFWriter``; 2-D weights in random types among F32, F16, Q8_0,
  Q4_0, Q4_1; a tiny gpt2 tokenizer), or
* a safetensors directory (``config.json`` + ``model.safetensors``, f32 / f16 / bf16),

then mutated (a tenth of the seeds are left intact, the control): truncated at a random
point; bytes flipped or overwritten in the header; a count, string length, array count,
value type, tensor rank, dim, GGML type or data offset set to an extreme value (0, 1,
2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1, random, the file size); metadata written with
odd values or types (0, huge, negative, a float or a string where an int belongs); tensors
dropped, renamed onto another (a duplicate) or written with a wrong shape; the architecture
changed; safetensors headers with odd dtypes, shapes, offsets, header lengths, and
config.json fields out of range. The file is then loaded: ``gguf.load(path, formats=...)``
(``GGUFSource`` + ``plan_formats`` + ``model_weights``), or ``SafetensorsSource`` +
``config_from_hf`` + ``plan_formats`` + ``model_weights``; every fourth seed whose file
loads goes on through ``CausalLM.from_gguf(path, max_seq_len=16)`` /
``CausalLM.from_pretrained(dir, max_seq_len=16)``, a prefill of one token and one decode
step.

Pass: a clean error -- a ``ValueError`` (``GGUFError`` included) or ``KeyError`` whose
message names the file or directory, ``FileNotFoundError``, a ``NotImplementedError`` naming
an unsupported variant -- or a load (finite logits when it runs; an intact file must load).
Failure: any other exception (IndexError, struct.error, TypeError, OverflowError, a
MemoryError from an absurd allocation, numpy's errors, an error not naming the path), a
crash, a hang or runaway memory (the worker runs the case under an address-space limit of
``FILES_MEMORY`` above what it already uses).

Replay: ``echo '{"kind": "model-file", "seed": 17}' | PYTHONPATH=$PWD python test/fuzz/worker.py``;
``python test/fuzz/files_fuzz.py SEED`` writes the case's file(s) under ``fuzz-file-SEED/``
and prints the mutation and the load's outcome.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import struct
import sys
import tempfile
import traceback

import numpy as np

#: address space a case may use above the worker's own (a runaway allocation must fail)
FILES_MEMORY = 2 << 30

EXTREMES32 = [0, 1, 2, 3, 7, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE]
EXTREMES64 = [0, 1, 2, 3, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, (1 << 64) - 2,
              (1 << 40) + 5]


def _bytes_to_unicode() -> dict:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["h e", "l l", "o r", "Ġ t", "i s"]


def tokens() -> list[str]:
    b2u = _bytes_to_unicode()
    return SPECIAL + [b2u[b] for b in range(256)] + [m.replace(" ", "") for m in MERGES]


def draw_model(r: random.Random) -> dict:
    kv = r.choice([1, 2])
    heads = kv * r.choice([1, 2])
    hidden = r.choice([32, 64])
    return dict(arch=r.choice(["llama", "qwen2"]), layers=r.choice([1, 2]), hidden=hidden, heads=heads, kv=kv,
                hd=hidden // heads, ffn=r.choice([32, 64]), vocab=len(tokens()))


def hf_weights(m: dict, rng: np.random.Generator) -> dict:
    """HF names -> f32 arrays (tied embeddings: no lm_head unless drawn)."""
    d, hd, H, KV, F, V = m["hidden"], m["hd"], m["heads"], m["kv"], m["ffn"], m["vocab"]
    sd = {"model.embed_tokens.weight": rng.standard_normal((V, d), np.float32) * 0.5,
          "model.norm.weight": np.ones(d, np.float32)}
    if m.get("lm_head"):
        sd["lm_head.weight"] = rng.standard_normal((V, d), np.float32) * 0.5
    for i in range(m["layers"]):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = np.ones(d, np.float32)
        sd[p + "post_attention_layernorm.weight"] = np.ones(d, np.float32)
        for n, shape in (("self_attn.q_proj", (H * hd, d)), ("self_attn.k_proj", (KV * hd, d)),
                         ("self_attn.v_proj", (KV * hd, d)), ("self_attn.o_proj", (d, H * hd)),
                         ("mlp.gate_proj", (F, d)), ("mlp.up_proj", (F, d)), ("mlp.down_proj", (d, F))):
            sd[p + n + ".weight"] = rng.standard_normal(shape, np.float32) * 0.2
            if m["arch"] == "qwen2" and n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"):
                sd[p + n + ".bias"] = rng.standard_normal(shape[0], np.float32) * 0.1
    return sd


# -- GGUF -------------------------------------------------------------------------------------

#: metadata value kinds of a case -> the GGUFWriter method (scalars) or element type (arrays)
_SCALAR_WRITERS = {"u32": "add_uint32", "i32": "add_int32", "u64": "add_uint64", "i64": "add_int64",
                   "f32": "add_float32", "str": "add_string", "bool": "add_bool"}
_ARRAY_TYPES = {"i32s": "INT32", "f32s": "FLOAT32"}


def write_gguf(path: str, r: random.Random, m: dict, sd: dict, sem: dict) -> None:
    """``sd`` as a GGUF of ``m['arch']`` with the semantic mutations ``sem`` applied (metadata
    overrides, dropped tensors, wrong shapes, another architecture string)."""
    import gguf
    from gguf import GGMLQuantizationType as T

    from relax_mlir.llm import gguf as G

    arch = sem.get("arch", m["arch"])
    w = gguf.GGUFWriter(path, arch)
    meta = {f"{arch}.block_count": ("u32", m["layers"]), f"{arch}.context_length": ("u32", 256),
            f"{arch}.embedding_length": ("u32", m["hidden"]), f"{arch}.feed_forward_length": ("u32", m["ffn"]),
            f"{arch}.attention.head_count": ("u32", m["heads"]), f"{arch}.attention.head_count_kv": ("u32", m["kv"]),
            f"{arch}.attention.layer_norm_rms_epsilon": ("f32", 1e-5), f"{arch}.rope.freq_base": ("f32", 10000.0),
            f"{arch}.rope.dimension_count": ("u32", m["hd"]),
            "tokenizer.ggml.model": ("str", "gpt2"), "tokenizer.ggml.pre": ("str", "default"),
            "tokenizer.ggml.tokens": ("strs", tokens()),
            "tokenizer.ggml.token_type": ("i32s", [3] * 3 + [1] * (m["vocab"] - 3)),
            "tokenizer.ggml.merges": ("strs", MERGES),
            "tokenizer.ggml.bos_token_id": ("u32", 1), "tokenizer.ggml.eos_token_id": ("u32", 2)}
    for k, v in sem.get("meta", {}).items():
        k = k.replace("{arch}", arch)
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    for k, (t, v) in meta.items():
        if k == "general.architecture":
            continue
        if t in _SCALAR_WRITERS:
            getattr(w, _SCALAR_WRITERS[t])(k, v)
        elif t == "strs":
            w.add_array(k, list(v))
        elif t in _ARRAY_TYPES:
            w.add_key_value(k, list(v), gguf.GGUFValueType.ARRAY, sub_type=getattr(gguf.GGUFValueType, _ARRAY_TYPES[t]))
    inv = {v: k for k, v in G.GLOBAL_NAMES.items()}
    layer_inv = {v: k for k, v in G.LAYER_NAMES.items()}
    qtypes = [T.F32, T.F16, T.Q8_0, T.Q4_0, T.Q4_1]
    for name, x in sd.items():
        if name.startswith("model.layers."):
            _, _, i, rest = name.split(".", 3)
            gname = f"blk.{i}.{layer_inv[rest]}"
        else:
            gname = inv[name]
        if gname in sem.get("drop", ()):
            continue
        x = np.asarray(x, np.float32)
        if gname in sem.get("reshape", {}):
            x = np.resize(x, sem["reshape"][gname])
        qt = r.choice(qtypes) if x.ndim == 2 else T.F32
        if qt not in (T.F32, T.F16) and x.shape[-1] % 32:
            qt = T.F32
        if m["arch"] == "llama" and (".q_proj." in name or ".k_proj." in name) and x.ndim == 2:
            heads = m["heads"] if ".q_proj." in name else m["kv"]
            if x.shape[0] % (2 * heads) == 0:
                x = x.reshape(heads, 2, x.shape[0] // heads // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)
        if qt == T.F16:
            w.add_tensor(gname, x.astype(np.float16))
        elif qt == T.F32:
            w.add_tensor(gname, x)
        else:
            w.add_tensor(gname, gguf.quants.quantize(x, qt), raw_dtype=qt)
    for gname, vals in sem.get("extra", {}).items():
        w.add_tensor(gname, np.asarray(vals, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def header_fields(buf: bytes) -> tuple[list, int]:
    """The header's integer fields of a well-formed GGUF: (offset, byte size, label) each,
    and the header's end."""
    out = [(4, 4, "version"), (8, 8, "tensor count"), (16, 8, "kv count")]
    n_t, n_kv = struct.unpack_from("<QQ", buf, 8)
    off = 24

    def value(off, vt, key):
        if vt in _SCALAR:
            out.append((off, _SCALAR[vt], f"{key} value"))
            return off + _SCALAR[vt]
        if vt == 8:
            out.append((off, 8, f"{key} string length"))
            return off + 8 + struct.unpack_from("<Q", buf, off)[0]
        it, cnt = struct.unpack_from("<IQ", buf, off)
        out.append((off, 4, f"{key} array type"))
        out.append((off + 4, 8, f"{key} array count"))
        off += 12
        for _ in range(cnt):
            off = value(off, it, key + "[]") if it == 8 or it == 9 else off + _SCALAR[it]
        return off

    for _ in range(n_kv):
        out.append((off, 8, "key length"))
        n = struct.unpack_from("<Q", buf, off)[0]
        key = buf[off + 8:off + 8 + n].decode()
        off += 8 + n
        out.append((off, 4, f"{key} value type"))
        vt = struct.unpack_from("<I", buf, off)[0]
        off = value(off + 4, vt, key)
    for _ in range(n_t):
        out.append((off, 8, "tensor name length"))
        n = struct.unpack_from("<Q", buf, off)[0]
        name = buf[off + 8:off + 8 + n].decode()
        off += 8 + n
        out.append((off, 4, f"{name} n_dims"))
        nd = struct.unpack_from("<I", buf, off)[0]
        for k in range(nd):
            out.append((off + 4 + 8 * k, 8, f"{name} dim {k}"))
        off += 4 + 8 * nd
        out.append((off, 4, f"{name} type"))
        out.append((off + 4, 8, f"{name} offset"))
        off += 12
    return out, off


def draw_semantic_gguf(r: random.Random, m: dict) -> tuple[dict, str]:
    """A semantic mutation (a valid GGUF file with odd content): (sem, description)."""
    sem: dict = {}
    keys = ["{arch}.block_count", "{arch}.embedding_length", "{arch}.feed_forward_length",
            "{arch}.attention.head_count", "{arch}.attention.head_count_kv", "{arch}.context_length",
            "{arch}.attention.layer_norm_rms_epsilon", "{arch}.rope.freq_base", "{arch}.rope.dimension_count",
            "{arch}.attention.key_length", "{arch}.vocab_size", "{arch}.rope.scaling.type",
            "{arch}.rope.scaling.factor", "tokenizer.ggml.model", "tokenizer.ggml.tokens",
            "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id", "tokenizer.ggml.pre", "general.alignment"]
    what = r.choice(["meta", "meta", "meta", "drop", "reshape", "arch", "extra"])
    if what == "meta":
        k = r.choice(keys)
        t = r.choice(["u32", "i32", "u64", "i64", "f32", "str", "bool", "strs", "i32s", "f32s", None])
        ival = r.choice([0, 1, 2, 3, 5, 1000, 2**31 - 1, 2**32 - 1, 2**40, -1, -2**31, m["hidden"] * 2])
        v = {"u32": ival % 2**32, "i32": (ival + 2**31) % 2**32 - 2**31, "u64": ival % 2**64,
             "i64": ival, "f32": r.choice([0.0, -1.0, float("nan"), float("inf"), 1e30, 1e-30, 2.5]),
             "str": r.choice(["", "x", "llama", "linear", "yarn", "gpt2", "\u00ff" * 3]), "bool": r.random() < 0.5,
             "strs": [r.choice(["", "a b", "ab", "Ġ", "a"]) for _ in range(r.choice([0, 1, 3, 300]))],
             "i32s": [r.choice([0, 1, 3, 4, -1, 2**31 - 1]) for _ in range(r.choice([0, 1, 264, 300]))],
             "f32s": [r.choice([0.0, 1.0, float("nan")]) for _ in range(r.choice([0, 1, 264]))], None: None}[t]
        if k == "general.alignment" and t == "u32":
            v = r.choice([1, 2, 8, 64, 4096])
        sem["meta"] = {k: None if t is None else (t, v)}
        desc = f"metadata {k} = {t} {v if not isinstance(v, list) else f'[{len(v)} entries]'}"
    elif what == "drop":
        names = ["token_embd.weight", "output_norm.weight"] + [f"blk.{r.randrange(m['layers'])}.{n}" for n in
                                                                ("attn_q.weight", "attn_k.weight", "attn_v.weight",
                                                                 "attn_output.weight", "ffn_up.weight",
                                                                 "ffn_down.weight", "attn_norm.weight")]
        sem["drop"] = [r.choice(names)]
        desc = f"drop tensor {sem['drop'][0]}"
    elif what == "reshape":
        n = r.choice(["token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight",
                      "blk.0.attn_output.weight", "blk.0.ffn_down.weight", "blk.0.attn_norm.weight",
                      "blk.0.ffn_up.weight"])
        shape = r.choice([(m["hidden"],), (32, 32), (64, 32), (32, 64), (96, 32), (m["vocab"] - 8, m["hidden"]),
                          (2, 4, 32), (1,), (m["hidden"] + 32, m["hidden"])])
        sem["reshape"] = {n: shape}
        desc = f"tensor {n} shape {shape}"
    elif what == "arch":
        sem["arch"] = r.choice(["mistral", "gpt2", "", "LLAMA", "qwen2", "llama", "phi3", "x" * 300])
        desc = f"architecture {sem['arch']!r}"
    else:
        n = r.choice(["rope_freqs.weight", "blk.0.attn_rot_embd", "blk.9.attn_q.weight", "foo.weight",
                      "blk.x.attn_q.weight", "blk.0.ffn_up.bias", "blk.0.attn_output.bias"])
        sem["extra"] = {n: np.ones(r.choice([1, m["hd"] // 2, m["hidden"], m["ffn"]]), np.float32)}
        desc = f"extra tensor {n}"
    return sem, desc


def mutate_bytes(r: random.Random, path: str) -> str:
    """A byte-level mutation of the GGUF at ``path`` in place; its description."""
    buf = bytearray(open(path, "rb").read())
    fields, hend = header_fields(bytes(buf))
    tensor_names = {lab[:-len(" n_dims")] for _, _, lab in fields if lab.endswith(" n_dims")}
    kind = r.choice(["truncate", "truncate", "field", "field", "field", "field", "flip", "overwrite", "dup-name"])
    if kind == "truncate":
        at = r.choice([r.randrange(len(buf)), r.randrange(hend + 1), len(buf) - r.randrange(1, 64)])
        del buf[max(at, 0):]
        desc = f"truncate at {at}"
    elif kind == "field":
        # a field class first (the token list's hundreds of string lengths would swamp the rest)
        classes: dict = {}
        for fld in fields:
            lab = fld[2]
            cls = ("tensor" if lab.split(" ")[0] in tensor_names else
                   "string" if "[] " in lab else lab.split(" ", 1)[-1] if " " in lab else lab)
            classes.setdefault(cls, []).append(fld)
        off, size, label = r.choice(classes[r.choice(sorted(classes))])
        pool = EXTREMES32 if size == 4 else EXTREMES64
        v = r.choice(pool + [r.randrange(1 << (8 * size)), len(buf), len(buf) - off,
                             struct.unpack_from("<I" if size == 4 else "<Q", buf, off)[0] + r.choice([-1, 1, 8])])
        v %= 1 << (8 * size)
        buf[off:off + size] = v.to_bytes(size, "little")
        desc = f"{label} (byte {off}) = {v}"
    elif kind == "flip":
        n = r.choice([1, 2, 8])
        ats = [r.randrange(hend) for _ in range(n)]
        for at in ats:
            buf[at] ^= 1 << r.randrange(8)
        desc = f"flip bits at {ats}"
    elif kind == "overwrite":
        at = r.randrange(hend)
        n = r.choice([1, 4, 8, 16])
        buf[at:at + n] = bytes(r.choice([0, 0xFF, r.randrange(256)]) for _ in range(n))[:len(buf) - at]
        desc = f"overwrite {n} bytes at {at}"
    else:   # rename a tensor onto another of the same name length: a duplicate
        names = [lab[:-len(" n_dims")] for _, _, lab in fields if lab.endswith(" n_dims")]
        a = r.choice(names)
        same = [b for b in names if len(b) == len(a) and b != a]
        if not same:
            return mutate_bytes(r, path)
        b = r.choice(same)
        i = next(off + 8 for off, _, lab in fields if lab == "tensor name length"
                 and bytes(buf[off + 8:off + 8 + len(a)]) == a.encode())
        buf[i:i + len(a)] = b.encode()
        desc = f"tensor {a} renamed {b} (a duplicate)"
    with open(path, "wb") as f:
        f.write(bytes(buf))
    return desc


# -- safetensors ------------------------------------------------------------------------------

def write_safetensors(path: str, entries: list) -> None:
    """entries: (name, dtype string, shape, data bytes) -> a .safetensors file."""
    header, off, blobs = {}, 0, []
    for name, dt, shape, data in entries:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def st_dtype(x: np.ndarray, dt: str) -> bytes:
    if dt == "F32":
        return x.astype(np.float32).tobytes()
    if dt == "F16":
        return x.astype(np.float16).tobytes()
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()


def build_safetensors(d: str, r: random.Random, m: dict, sd: dict, mutate: bool) -> str:
    cfg = {"model_type": m["arch"], "architectures": ["LlamaForCausalLM" if m["arch"] == "llama" else "Qwen2ForCausalLM"],
           "vocab_size": m["vocab"], "hidden_size": m["hidden"], "intermediate_size": m["ffn"],
           "num_hidden_layers": m["layers"], "num_attention_heads": m["heads"], "num_key_value_heads": m["kv"],
           "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "tie_word_embeddings": "lm_head.weight" not in sd, "torch_dtype": "float32"}
    entries = []
    for name, x in sd.items():
        dt = r.choice(["F32", "F16", "BF16"]) if x.ndim == 2 else "F32"
        entries.append([name, dt, list(x.shape), st_dtype(x, dt)])
    desc = "intact"
    raw_header = None
    if mutate:
        what = r.choice(["config", "dtype", "shape", "offsets", "drop", "dup", "reshape", "truncate", "hlen",
                         "garbage", "json"])
        e = r.choice(entries)
        if what == "config":
            k = r.choice(["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "num_key_value_heads", "max_position_embeddings"])
            cfg[k] = r.choice([1, 2, 3, 7, 16, 31, 48, 128, 1000, m["hidden"] * 2])
            desc = f"config {k} = {cfg[k]}"
        elif what == "dtype":
            e[1] = r.choice(["F64", "I64", "I32", "U8", "BOOL", "F8_E4M3", "", "f32", 7, None])
            desc = f"tensor {e[0]} dtype {e[1]!r}"
        elif what == "shape":
            e[2] = r.choice([[], [0], [-1, e[2][-1]], [2**62, 2**62], [2**31, 1], ["a"], [1.5, 2], [3] * 40,
                             list(reversed(e[2])), e[2] + [1], [e[2][0] + 1] + e[2][1:]])
            desc = f"tensor {e[0]} shape {e[2]}"
        elif what == "offsets":
            raw_header = ("offsets", e[0], r.choice([[0, 0], [-8, 0], [5, 3], [0, 2**64], [0, 2**63 - 1], [1, 2],
                                                      [0], [], "x", [0.5, 1], [2**70, 2**70 + 4]]))
            desc = f"tensor {e[0]} data_offsets {raw_header[2]}"
        elif what == "drop":
            entries.remove(e)
            desc = f"drop tensor {e[0]}"
        elif what == "dup":
            raw_header = ("dup", e[0], None)
            desc = f"tensor {e[0]} twice in the header"
        elif what == "reshape":
            n = r.choice([1, 2, 4, 16, 32])
            x = np.resize(sd[e[0]], (n,) + tuple(e[2][1:])) if len(e[2]) > 1 else np.resize(sd[e[0]], (n,))
            e[2], e[3] = list(x.shape), st_dtype(x, e[1])
            desc = f"tensor {e[0]} written with shape {e[2]}"
        else:
            desc = what
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    p = os.path.join(d, "model.safetensors")
    write_safetensors(p, [tuple(e) for e in entries])
    if raw_header is not None:
        buf = open(p, "rb").read()
        (n,) = struct.unpack_from("<Q", buf)
        h = json.loads(buf[8:8 + n])
        kind, name, val = raw_header
        if kind == "offsets":
            h[name]["data_offsets"] = val
            hb = json.dumps(h).encode()
        else:
            hb = json.dumps(h).encode()
            one = json.dumps({name: h[name]})[1:-1].encode()
            hb = hb[:-1] + b", " + one + b"}"
        hb += b" " * (-len(hb) % 8)
        data = buf[8 + n:]
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + data)
    if desc in ("truncate", "hlen", "garbage", "json"):
        buf = bytearray(open(p, "rb").read())
        (n,) = struct.unpack_from("<Q", buf)
        if desc == "truncate":
            at = r.choice([r.randrange(len(buf)), r.randrange(8 + n + 1), len(buf) - r.randrange(1, 64)])
            del buf[at:]
            desc = f"truncate at {at}"
        elif desc == "hlen":
            v = r.choice(EXTREMES64 + [n - 1, n + 1, len(buf) - 8, len(buf)])
            buf[:8] = v.to_bytes(8, "little")
            desc = f"header length {v}"
        elif desc == "garbage":
            at = r.randrange(8, 8 + n)
            buf[at] = r.choice(b'{}[]",:0\xff\x00')
            desc = f"header byte {at} = {buf[at]}"
        else:
            hb = r.choice([b"[]", b"null", b"1", b'{"a": 1}', b'{"a": {"dtype": "F32"}}',
                           b'{"__metadata__": 3}', b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'])
            hb += b" " * (-len(hb) % 8)
            buf[:8 + n] = struct.pack("<Q", len(hb)) + hb
            desc = f"header {hb.strip()!r}"
        with open(p, "wb") as f:
            f.write(bytes(buf))
    return desc


# -- one case ---------------------------------------------------------------------------------

def build(seed: int, root: str) -> dict:
    """Write the seed's file(s) under ``root``: {"format", "path", "mutation", "run", "intact"}."""
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    m = draw_model(r)
    m["lm_head"] = r.random() < 0.3
    sd = hf_weights(m, rng)
    fmt = "gguf" if r.random() < 0.7 else "safetensors"
    intact = seed % 10 == 0
    run = seed % 4 == 0
    if fmt == "gguf":
        path = os.path.join(root, f"model-{seed}.gguf")
        if intact:
            write_gguf(path, r, m, sd, {})
            desc = "intact"
        elif r.random() < 0.45:
            sem, desc = draw_semantic_gguf(r, m)
            try:
                write_gguf(path, r, m, sd, sem)
            except Exception as e:       # gguf's writer refused the mutation: plain byte mutation
                write_gguf(path, r, m, sd, {})
                desc = f"(writer refused {desc}: {type(e).__name__}) " + mutate_bytes(r, path)
        else:
            write_gguf(path, r, m, sd, {})
            desc = mutate_bytes(r, path)
    else:
        path = os.path.join(root, f"model-{seed}")
        desc = build_safetensors(path, r, m, sd, not intact)
    return {"format": fmt, "path": path, "mutation": desc, "run": run, "intact": intact, "model": m}


CLEAN = (ValueError, KeyError)


def load(spec: dict) -> dict:
    """Load the case's file; raise what the loader raises. {'logits': ...} when it ran."""
    from relax_mlir.llm import weights as W
    from relax_mlir.ops.quant import supported_formats

    path = spec["path"]
    if spec["run"]:
        from relax_mlir.llm import CausalLM
        lm = CausalLM.from_gguf(path, max_seq_len=16) if spec["format"] == "gguf" else \
            CausalLM.from_pretrained(path, max_seq_len=16)
        a = lm.prefill([1])
        b = lm.decode(int(np.argmax(a)) % lm.config.vocab_size)
        return {"finite": bool(np.isfinite(a).all() and np.isfinite(b).all())}
    if spec["format"] == "gguf":
        from relax_mlir.llm import gguf as G
        G.load(path, formats=supported_formats("cpu"))
        return {}
    cfg, c = W.load_pretrained_config(path)
    src, tie = W.SafetensorsSource(path), W.tie_embeddings(cfg)
    c = W.stored_formats(src, c, supported_formats("cpu"), tie)
    W.model_weights(src, c, tie)
    return {}


def judge(spec: dict, exc: BaseException) -> str | None:
    """None when ``exc`` is a clean refusal of the case's file, else why it is not."""
    path = spec["path"]
    names = (path, os.path.basename(path))
    if isinstance(exc, FileNotFoundError):
        return None
    if isinstance(exc, NotImplementedError) and spec["format"] == "safetensors":
        return None
    if isinstance(exc, CLEAN) and not isinstance(exc, (IndexError,)):
        msg = str(exc)
        if any(n in msg for n in names):
            return None
        # transformers' own config.json validation (the config is not ours to check)
        if spec["format"] == "safetensors" and "transformers" in "".join(traceback.format_tb(exc.__traceback__)):
            return None
        return f"{type(exc).__name__} not naming the path"
    return f"{type(exc).__name__} escaped"


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_file(seed: int) -> dict:
    """One case: build, mutate, load under a tighter address-space limit."""
    root = tempfile.mkdtemp(prefix="relax-fuzz-file-")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        spec = build(seed, root)
        res = {"calls": 1, "format": spec["format"], "mutation": spec["mutation"], "error": None}
        limit = _vm_size() + FILES_MEMORY
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        try:
            out = load(spec)
        except BaseException as e:   # noqa: B902 (MemoryError, RecursionError ... are failures too)
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            why = judge(spec, e) if not spec["intact"] else "an intact file refused"
            res["refused"] = f"{type(e).__name__}: {str(e)[:200]}"
            if why:
                res["error"] = (f"{spec['format']} {spec['mutation']}: {why}:\n"
                                + "".join(traceback.format_exception(type(e), e, e.__traceback__))[-3000:])
            return res
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        res["loaded"] = True
        if "finite" in out:
            res["ran"] = True
            if not out["finite"] and spec["mutation"] == "intact":
                res["error"] = f"{spec['format']} intact: non-finite logits"
        return res
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    seed = int(sys.argv[1])
    d = os.path.abspath(f"fuzz-file-{seed}")
    os.makedirs(d, exist_ok=True)
    spec = build(seed, d)
    print(json.dumps({k: v for k, v in spec.items()}, default=str))
    try:
        print(load(spec))
    except Exception as e:
        traceback.print_exc()
        print("verdict:", judge(spec, e) or "clean refusal")
