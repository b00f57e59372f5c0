"""Corrupt model files found by the model-file fuzzer (test/fuzz/files_fuzz.py): each must be a
clean ValueError / GGUFError naming the file and what is wrong, not a TypeError, an
AttributeError or numpy's reshape error."""

from __future__ import annotations

import json
import os
import random
import struct
import sys

import numpy as np
import pytest

pytest.importorskip("gguf")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz"))

import files_fuzz as FF  # noqa: E402

from relax_mlir.llm import gguf as G  # noqa: E402
from relax_mlir.llm import weights as W  # noqa: E402
from relax_mlir.ops.quant import supported_formats  # noqa: E402


def _gguf(tmp_path, sem, name="m.gguf", seed=0):
    r = random.Random(seed)
    m = FF.draw_model(r)
    m["lm_head"] = False
    path = str(tmp_path / name)
    FF.write_gguf(path, r, m, FF.hf_weights(m, np.random.default_rng(seed)), sem)
    return path, m


@pytest.mark.parametrize("key,value,msg", [
    # fuzz seed 2000004: embedding_length a string -> int('x') ValueError without the path
    ("{arch}.embedding_length", ("str", "x"), r"metadata '\w+\.embedding_length' is str 'x', expected int"),
    # seeds 2000022, 2000109: an array -> int(list) TypeError
    ("{arch}.feed_forward_length", ("strs", ["a", "b"]), r"'\w+\.feed_forward_length' is an array of 2 entries, expected int"),
    # seed 2000007: token_type an int -> list(int) TypeError
    ("tokenizer.ggml.token_type", ("i64", 1), r"'tokenizer\.ggml\.token_type' is int 1, expected \[int\]"),
    # seed 2000105: rope.scaling.factor a string -> float('linear') ValueError without the path
    ("{arch}.rope.scaling.factor", ("str", "linear"), r"'\w+\.rope\.scaling\.factor' is str 'linear', expected float"),
    ("{arch}.attention.head_count", ("u32", 0), r"'\w+\.attention\.head_count' is 0, expected a positive count"),
    ("{arch}.rope.freq_base", ("f32", float("nan")), r"'\w+\.rope\.freq_base' is nan, expected a positive number"),
    ("tokenizer.ggml.merges", ("strs", ["ab"]), r"merges entry 'ab' is not two tokens"),
])
def test_gguf_metadata_of_the_wrong_type_or_range(tmp_path, key, value, msg):
    path, _ = _gguf(tmp_path, {"meta": {key: value}})
    with pytest.raises(G.GGUFError, match=r"m\.gguf: (metadata |tokenizer\.ggml\.)?" + msg):
        G.load(path, formats=supported_formats("cpu"))


def test_gguf_tensor_of_the_wrong_shape(tmp_path):
    """Fuzz seed 2000031: attn_output (d, d) where the metadata says (d, H*hd) with H*hd != d
    reached numpy's reshape ('cannot reshape array of size 1024 into shape (1,2,32,32)')."""
    path, m = _gguf(tmp_path, {"reshape": {"blk.0.attn_output.weight": (32, 96)}})
    with pytest.raises(G.GGUFError, match=r"m\.gguf: tensor 'blk\.0\.attn_output\.weight' has shape \[32, 96\], "
                                          rf"the metadata implies \[{m['hidden']}, {m['heads'] * m['hd']}\]"):
        G.load(path, formats=supported_formats("cpu"))
    with pytest.raises(G.GGUFError, match=r"has shape \[32, 96\]"):
        G.load(path)


def _safetensors(tmp_path, seed=1):
    r = random.Random(seed)
    m = FF.draw_model(r)
    sd = FF.hf_weights(m, np.random.default_rng(seed))
    d = str(tmp_path / "st")
    FF.build_safetensors(d, r, m, sd, False)
    return d, m, sd


def test_safetensors_header_not_an_object(tmp_path):
    """Fuzz seed 2000075: a header '[]' raised AttributeError ('list' has no attribute 'items')."""
    d, _, _ = _safetensors(tmp_path)
    p = os.path.join(d, "model.safetensors")
    buf = open(p, "rb").read()
    (n,) = struct.unpack_from("<Q", buf)
    hb = b"[]      "
    open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + buf[8 + n:])
    with pytest.raises(ValueError, match=r"model\.safetensors: corrupt safetensors header \(a JSON list"):
        W.SafetensorsSource(d)


@pytest.mark.parametrize("shape", [[2**62, 2**62], [-1, 32], [1.5, 2]])
def test_safetensors_absurd_shapes(tmp_path, shape):
    """Shapes whose product wraps in int64 (np.prod) or that are not whole counts."""
    d, _, sd = _safetensors(tmp_path)
    name = next(iter(sd))
    FF.write_safetensors(os.path.join(d, "model.safetensors"), [(name, "F32", shape, b"\0" * 16)])
    with pytest.raises(ValueError, match=rf"model\.safetensors: tensor '{name}' (has an unsupported or malformed|lies outside)"):
        W.SafetensorsSource(d)


def test_safetensors_tensor_of_the_wrong_shape(tmp_path):
    d, m, sd = _safetensors(tmp_path)
    entries = []
    for name, x in sd.items():
        if name == "model.layers.0.mlp.down_proj.weight":
            x = np.zeros((x.shape[0], x.shape[1] + 32), np.float32)
        entries.append((name, "F32", list(x.shape), x.astype(np.float32).tobytes()))
    FF.write_safetensors(os.path.join(d, "model.safetensors"), entries)
    cfg = W.load_hf_config(d)
    c = W.config_from_hf(cfg)
    with pytest.raises(ValueError, match=rf"st: tensor 'model\.layers\.0\.mlp\.down_proj\.weight' has shape "
                                         rf"\[{m['hidden']}, {m['ffn'] + 32}\], the config expects \[{m['hidden']}, {m['ffn']}\]"):
        W.model_weights(W.SafetensorsSource(d), c, W.tie_embeddings(cfg))


def test_fuzz_seeds_replay_clean():
    """The seeds above through the fuzz worker's case: no failure."""
    for seed in (2000004, 2000007, 2000022, 2000031, 2000075, 2000105, 2000109, 2000143):
        res = FF.run_file(seed)
        assert res["error"] is None, res
