"""Peak memory of loading a GGUF model: the lazy, layer-by-layer weights equal the eager
ones, give the same tokens, and the peak RSS growth of ``CausalLM.from_gguf`` + generate in
a fresh process stays within a bound of the file size (issue 25: 1.5x the file + KV + a
constant); the old loader held the file's pages, a transposed copy and the stacked copy at
once (~3x)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from gguf import GGMLQuantizationType as T  # noqa: E402

from relax_mlir.llm import CausalLM  # noqa: E402
from relax_mlir.llm import gguf as G  # noqa: E402
from relax_mlir.ops.quant import supported_formats  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from test_gguf import write_gguf  # noqa: E402

# mid-sized: the weights (~30 MB, most f32) dominate the process's other allocations
HF = dict(vocab_size=4096, hidden_size=256, intermediate_size=1024, num_hidden_layers=5, num_attention_heads=8,
          num_key_value_heads=4, max_position_embeddings=256, rms_norm_eps=1e-5)
TYPES = {"attn_q.weight": T.Q8_0, "attn_k.weight": T.Q4_1, "ffn_up.weight": T.Q8_0}
IDS = [5, 17, 300, 4095, 0, 9, 1234]

CHILD = r"""
import gc, json, sys
from relax_mlir.llm import CausalLM
from relax_mlir.llm.weights import stored_formats
from relax_mlir.ops.quant import supported_formats

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

from relax_mlir.llm import gguf
from relax_mlir.llm.causal_lm import compile_model

path, ids = sys.argv[1], json.loads(sys.argv[2])
f = gguf.GGUFFile(path)       # the config from_gguf makes (no weights read), its executable from the cache
compile_model(stored_formats(gguf.GGUFSource(f), gguf.config_from_gguf(f), supported_formats("cpu")))
del f
gc.collect()
open("/proc/self/clear_refs", "w").write("5")      # VmHWM := VmRSS
base = status("VmRSS")
lm = CausalLM.from_gguf(path, max_seq_len=64)
toks = lm.generate(ids, 8).tolist()
print("@@" + json.dumps({"base": base, "peak": status("VmHWM"), "tokens": toks, "kv": lm.cache.nbytes}))
"""


@pytest.fixture(scope="module")
def mid_file(tmp_path_factory):
    cfg = transformers.LlamaConfig(**HF)
    rng = np.random.default_rng(3)
    d, F, V, L = HF["hidden_size"], HF["intermediate_size"], HF["vocab_size"], HF["num_hidden_layers"]
    kv = d // HF["num_attention_heads"] * HF["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,), "lm_head.weight": (V, d)}
    for i in range(L):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
                       p + "self_attn.q_proj.weight": (d, d), p + "self_attn.k_proj.weight": (kv, d),
                       p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.o_proj.weight": (d, d),
                       p + "mlp.gate_proj.weight": (F, d), p + "mlp.up_proj.weight": (F, d),
                       p + "mlp.down_proj.weight": (d, F)})
    sd = {n: (1.0 + 0.1 * rng.standard_normal(s) if len(s) == 1 else 0.05 * rng.standard_normal(s)).astype(np.float32)
          for n, s in shapes.items()}
    path = tmp_path_factory.mktemp("mem") / "mid.gguf"
    write_gguf(path, "llama", sd, cfg, TYPES, T.F32, tokenizer=False)
    return str(path)


def test_lazy_weights_equal_eager(mid_file):
    """Every weight the lazy loader makes equals the eager loader's, layer by layer."""
    fmts = supported_formats("cpu")
    eager = G.load(mid_file, formats=fmts)
    lazy = G.load(mid_file, formats=fmts, lazy=True)
    assert eager.config == lazy.config
    names = list(eager.weights)
    assert sorted(lazy.weights.keys()) == sorted(names)
    for i in range(HF["num_hidden_layers"]):
        for n in [k for k in names if k.startswith(f"layers.{i}.")]:
            np.testing.assert_array_equal(np.asarray(lazy.weights[n]), np.asarray(eager.weights[n]), err_msg=n)
        lazy.weights.release(i)          # the pages go; read again, the values are the same
        for n in [k for k in names if k.startswith(f"layers.{i}.")]:
            np.testing.assert_array_equal(np.asarray(lazy.weights[n]), np.asarray(eager.weights[n]), err_msg=n)
    for n in [k for k in names if not k.startswith("layers.")]:
        np.testing.assert_array_equal(np.asarray(lazy.weights[n]), np.asarray(eager.weights[n]), err_msg=n)


def test_from_gguf_peak_rss_bounded(mid_file):
    """A fresh process: from_gguf + generate grow the peak RSS by at most 1.5x the file + KV
    + 8 MB (the executable compiled here and loaded there from the compile cache before
    measuring), and its tokens equal those of a CausalLM made here from the eager weights."""
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux /proc (VmHWM reset through clear_refs)")
    eager = G.load(mid_file, formats=supported_formats("cpu"))
    lm = CausalLM(eager.config, eager.weights, max_seq_len=64)
    want = lm.generate(IDS, 8).tolist()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-c", CHILD, mid_file, json.dumps(IDS)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("@@")][-1][2:])
    assert out["tokens"] == want
    size = os.path.getsize(mid_file)
    grew = out["peak"] - out["base"]
    assert grew <= 1.5 * size + out["kv"] + 8 * 2**20, f"peak RSS grew {grew / 2**20:.1f} MB for a {size / 2**20:.1f} MB file"
