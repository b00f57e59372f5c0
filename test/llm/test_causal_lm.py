"""CausalLM against transformers on tiny random-init models (fixed seed, no downloads):
logits at every position and every decode step within 1e-3, greedy generation token for
token, one compile for every prompt length, and the KV cache updated in place."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import relax_mlir  # noqa: E402
from relax_mlir.llm import CausalLM  # noqa: E402
from relax_mlir.llm import causal_lm as clm  # noqa: E402
from relax_mlir.llm import weights as W  # noqa: E402
from relax_mlir.llm.model import LlamaModel  # noqa: E402
from relax_mlir.transforms.pipeline import run_pipeline  # noqa: E402
from mlir import ir  # noqa: E402

TOL = 1e-3
BASE = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)

# Configs that differ only in weights or rope frequencies (tied, rope_llama3) share the
# compiled executable of "gqa": six compiles in all, each ~9 s of CPU.
CONFIGS = {
    "gqa": ("llama", {}),
    "tied": ("llama", {"tie_word_embeddings": True}),
    "rope_llama3": ("llama", {"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                                  "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                  "original_max_position_embeddings": 16}}),
    "odd_heads_mqa_bias": ("llama", {"hidden_size": 60, "num_attention_heads": 3, "num_key_value_heads": 1,
                                     "rms_norm_eps": 1e-5, "attention_bias": True, "mlp_bias": True}),
    "qwen2_head_dim": ("qwen2", {"rope_parameters": {"rope_type": "default", "rope_theta": 1000.0},
                                 "head_dim": 24}),
    "mistral_window": ("mistral", {"sliding_window": 5, "num_key_value_heads": 1}),
    "mha_yarn": ("llama", {"num_key_value_heads": 4,        # G == 1; yarn: attention_scaling != 1
                           "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                               "original_max_position_embeddings": 64}}),
}

_MODELS: dict[str, tuple] = {}


def hf_classes(name: str):
    """(the HF config, the HF model class) of a config name."""
    kind, extra = CONFIGS[name]
    cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
           "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
           "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM)}[kind]
    return cls[0](**{**BASE, **extra}), cls[1]


def hf_and_ours(name: str):
    """The HF model (seed 0, f32, eval) and its CausalLM; built once per config."""
    if name not in _MODELS:
        cfg, model_cls = hf_classes(name)
        torch.manual_seed(0)
        hf = model_cls(cfg).eval()
        with torch.no_grad():                    # bigger weights: decisive, non-trivial logits
            for p in hf.parameters():
                p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
        _MODELS[name] = (hf, CausalLM.from_hf(hf, max_seq_len=64))
    return _MODELS[name]


def hf_logits(hf, ids) -> np.ndarray:
    with torch.no_grad():
        return hf(torch.tensor(np.asarray(ids)[None])).logits[0].numpy()


def prompt(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 128, n).astype(np.int64)


def test_one_compile_for_every_length(monkeypatch, tmp_path):
    """Exactly one Executable serves prefill at lengths 1, 6, 31, decode, extend, generate,
    and a second CausalLM of the same config (runs first: its compile is reused below). Its
    prefill attention is the fused library call (3 query heads tiled over 1 k / v head)."""
    name = "odd_heads_mqa_bias"
    calls = []
    real = relax_mlir.compile
    monkeypatch.setattr(relax_mlir, "compile", lambda *a, **k: calls.append(1) or real(
        *a, **{**k, "options": {"dump_ir": str(tmp_path)}}))
    _MODELS.pop(name, None)
    for key in list(clm._EXECUTABLES):      # keys: (config, target)
        if key[0].num_heads == 3:
            del clm._EXECUTABLES[key]
    hf, lm = hf_and_ours(name)
    for n in (1, 6, 31):
        lm.prefill(prompt(n))
    lm.decode(3)
    lm.extend(prompt(4))
    lm.generate(prompt(3), max_new_tokens=4)
    CausalLM.from_hf(hf, max_seq_len=16).generate(prompt(2), max_new_tokens=3)
    assert len(calls) == 1
    assert lm.exe.functions == ["layer_prefill", "layer_qkv", "layer_attend", "prefill_layers",
                                "extend_layers", "prefill", "extend"]
    graph = open(glob.glob(os.path.join(str(tmp_path), "*-graph.mlir"))[0]).read()
    assert graph.count('callee = "relax_blas_attention_h1111_tiled_f32"') == 1


def _graph(name: str):
    """(LMConfig, the module's text after the cpu pipeline's graph passes up to
    relax-dispatch-library)."""
    c = W.config_from_hf(hf_classes(name)[0])
    with relax_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        LlamaModel(c).build(module)
        run_pipeline(module, "builtin.module(relax-infer-shapes, relax-cse, relax-dce, relax-dispatch-library)")
        return c, str(module)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_prefill_attention_is_one_library_call(name):
    """layer_prefill's attention becomes ONE relax_blas_attention call: q, k, v read in place
    from their projections (head views), the output written merged, the k / v heads tiled to
    the group-major query heads (``_tiled``) when G > 1; no scores, softmax, repeat or
    per-head mask is left."""
    c, text = _graph(name)
    body = text[text.index("func.func @layer_prefill"):]
    body = body[:body.index("\n  }\n")]
    symbol = "relax_blas_attention_h1111" + ("_tiled" if c.group > 1 else "") + "_f32"
    assert body.count(f'callee = "{symbol}"') == 1 and body.count("relax_blas_attention") == 1, body
    for gone in ('"relax.softmax"', '"relax.broadcast_to"', '"relax.permute_dims"', '"relax.matmul"',
                 f'#relax.shape<[{c.num_heads}, "s", "s"]>'):
        assert gone not in body, gone


@pytest.mark.parametrize("name", ["gqa", "mha_yarn", "mistral_window"])
def test_long_prompts_one_executable(name):
    """Prompts of 1 to 130 tokens (odd lengths, across the fused call's 64-row blocks) through
    the config's one executable: the last position's logits equal transformers'."""
    hf, lm = hf_and_ours(name)
    long = CausalLM.from_hf(hf, max_seq_len=160)
    assert long.exe is lm.exe
    ids = prompt(130, seed=5)
    ref = hf_logits(hf, ids)
    for n in (1, 2, 63, 64, 65, 97, 130):
        np.testing.assert_allclose(long.prefill(ids[:n]), ref[n - 1], atol=TOL, rtol=0, err_msg=f"{n} tokens")
    np.testing.assert_allclose(long.decode(ids[0]), hf_logits(hf, np.append(ids, ids[0]))[-1], atol=TOL, rtol=0)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_prefill_and_decode(name):
    hf, lm = hf_and_ours(name)
    ids = prompt(19)
    ref = hf_logits(hf, ids)
    # every position of a whole prompt (extend with an empty cache)
    lm.reset()
    np.testing.assert_allclose(lm.extend(ids), ref, atol=TOL, rtol=0)
    # prefill at three lengths (1, odd, longer), then decode steps to the end
    for n in (1, 7, 12):
        np.testing.assert_allclose(lm.prefill(ids[:n]), ref[n - 1], atol=TOL, rtol=0)
    for j in range(12, 19):
        np.testing.assert_allclose(lm.decode(ids[j]), ref[j], atol=TOL, rtol=0)
    assert lm.cache.length == 19
    # a chunk after a cached prefix (multi-turn)
    lm.prefill(ids[:5])
    np.testing.assert_allclose(lm.extend(ids[5:16]), ref[5:16], atol=TOL, rtol=0)


@pytest.mark.parametrize("name", ["gqa", "tied", "odd_heads_mqa_bias", "qwen2_head_dim", "mistral_window"])
def test_generate_matches_transformers_greedy(name):
    hf, lm = hf_and_ours(name)
    ties = 0
    for seed, n in ((2, 5), (3, 11)):
        ids = prompt(n, seed)
        new = 20
        with torch.no_grad():
            ref = hf.generate(torch.tensor(ids[None]), max_new_tokens=new, do_sample=False,
                              pad_token_id=0)[0].numpy()
        ours = lm.generate(ids, max_new_tokens=new)
        # where our top-two logits lie within 1e-4 the argmax may legitimately differ
        lm.prefill(ids)
        seq = list(ids)
        for k in range(len(ref) - n):
            logits = lm.decode(seq[-1]) if k else lm.prefill(ids)
            top2 = np.sort(logits)[-2:]
            if ours[n + k] != ref[n + k]:
                assert top2[1] - top2[0] < 1e-4, f"step {k}: {ours[n + k]} != {ref[n + k]}"
                ties += 1
                break
            seq.append(int(ref[n + k]))
        else:
            np.testing.assert_array_equal(ours, ref)
    assert ties == 0  # with these seeds no step is a near-tie: the sequences are equal


def test_kv_cache_is_session_state_written_in_place():
    """The cache is the session's state: the graph writes the new row of every layer into
    the same buffers (object and address unchanged), the past and the free rows stay."""
    hf, lm = hf_and_ours("gqa")
    lm.prefill(prompt(9))
    k0 = lm.cache.k[0]
    k = lm.session.state["k"]     # the layers' caches: 2 blocks of 64 rows in one buffer
    assert k0.shape == (64, 2, 16) and k.shape == (128, 2, 16) and k0.ctypes.data == k.ctypes.data
    assert lm.cache.k[1].ctypes.data == k.ctypes.data + k0.nbytes
    assert lm.exe.states == ["k", "v"]
    ptr = k0.ctypes.data
    before = [a.copy() for a in lm.cache.k + lm.cache.v]
    lm.decode(4)
    assert lm.session.state["k"] is k and lm.cache.k[0].ctypes.data == ptr and lm.cache.length == 10
    for a, b in zip(lm.cache.k + lm.cache.v, before):
        np.testing.assert_array_equal(a[:9], b[:9])      # the past is untouched
        assert np.all(a[9] != b[9])                       # one new row written in place
        np.testing.assert_array_equal(a[10:], b[10:])    # nothing beyond it
    # the bytes that changed are exactly one row per layer and K/V
    changed = sum(int((a != b).any(axis=(1, 2)).sum()) * a[0].nbytes for a, b in
                  zip(lm.cache.k + lm.cache.v, before))
    assert changed == lm.bytes_per_token == 2 * 2 * 2 * 16 * 4   # K+V x layers x kv_heads x head_dim x f32
    assert lm.cache.nbytes == 2 * 2 * 64 * 2 * 16 * 4


def test_f16_kv_cache_on_the_cpu():
    """``kv_dtype="f16"``: the state is f16 (half the bytes per token), the new rows are the
    f32 keys rounded to f16, and the logits follow HF's within f16's rounding of K and V
    (the cpu converts the cache rows it reads; the GPU targets' fused attention reads them
    as they are: test_gpu_launches.py). A sliding window and MQA included."""
    for name in ("gqa", "mistral_window"):
        hf, lm = hf_and_ours(name)
        half = CausalLM.from_hf(hf, max_seq_len=64, kv_dtype="f16")
        assert half.session.state["k"].dtype == np.float16 and half.bytes_per_token * 2 == lm.bytes_per_token
        ids = prompt(10)
        ref = hf_logits(hf, ids)
        lm.prefill(ids[:6])
        half.prefill(ids[:6])
        np.testing.assert_array_equal(half.cache.k[0][:6], lm.cache.k[0][:6].astype(np.float16))
        for j in range(6, 10):
            a, b = lm.decode(int(ids[j])), half.decode(int(ids[j]))
            np.testing.assert_allclose(b, a, atol=1e-3 * np.abs(a).max(), rtol=0)   # measured 2.7e-4
            np.testing.assert_allclose(b, ref[j], atol=1e-3 * np.abs(ref[j]).max(), rtol=0)


def test_bf16_kv_cache_on_the_cpu():
    """``kv_dtype="bf16"``: the state is bf16 (half the bytes per token), the new rows are the
    f32 keys rounded to nearest even (ml_dtypes' bits), the logits of a few decode steps
    follow the f32 cache's within bf16's rounding of K and V (2^-9 relative: 1e-2 of the
    largest logit; measured in docs/gpu.md), and greedy generation gives the f32 cache's
    tokens on this model."""
    import ml_dtypes
    hf, lm = hf_and_ours("gqa")
    half = CausalLM.from_hf(hf, max_seq_len=64, kv_dtype="bf16")
    assert half.session.state["k"].dtype == ml_dtypes.bfloat16 and half.bytes_per_token * 2 == lm.bytes_per_token
    ids = prompt(10)
    lm.reset()
    lm.prefill(ids[:6])
    half.prefill(ids[:6])
    for c in (half.cache.k, half.cache.v):
        assert c[0].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(half.cache.k[1][:6].view(np.uint16),
                                  lm.cache.k[1][:6].astype(ml_dtypes.bfloat16).view(np.uint16))
    np.testing.assert_array_equal(half.cache.v[0][:6].view(np.uint16),
                                  lm.cache.v[0][:6].astype(ml_dtypes.bfloat16).view(np.uint16))
    worst = 0.0
    for j in range(6, 10):
        a, b = lm.decode(int(ids[j])), half.decode(int(ids[j]))
        worst = max(worst, float(np.abs(b - a).max() / np.abs(a).max()))
        np.testing.assert_allclose(b, a, atol=1e-2 * np.abs(a).max(), rtol=0)
    print(f"bf16 KV cache: max |logit difference| / max |logit| = {worst:.2e}")
    assert worst > 0.0
    lm.reset()
    half.reset()
    p = prompt(5, seed=3)
    assert [int(t) for t in half.generate(p, 12)] == [int(t) for t in lm.generate(p, 12)]


def test_two_models_are_two_conversations():
    """Two CausalLMs of one config share the executable, not their caches."""
    hf, lm = hf_and_ours("gqa")
    other = CausalLM.from_hf(hf, max_seq_len=32)
    assert other.exe is lm.exe and other.session is not lm.session
    ids = prompt(12)
    ref = hf_logits(hf, ids)
    lm.prefill(ids[:6])
    other.prefill(prompt(3, seed=9))
    other.decode(5)
    np.testing.assert_allclose(lm.extend(ids[6:]), ref[6:], atol=TOL, rtol=0)


def test_errors():
    _, lm = hf_and_ours("gqa")
    with pytest.raises(ValueError, match="exceed max_seq_len 64"):
        lm.prefill(prompt(65))
    # beyond the session's capacity inside the compiled code: a ShapeError, nothing written
    lm.prefill(prompt(60))
    with pytest.raises(relax_mlir.ShapeError, match=r"@extend_layers: relax.state_write: rows \[p, p \+ s\) of "
                                                    r"block f \+ i of 2 = \[60, 66\) of state 'k' exceed its capacity "
                                                    r"of 64 rows with i = 0, s = 6, p = 60, f = 0"):
        lm._extend(prompt(6), lm.cache.past())
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 128\)"):
        lm.prefill([1, 128])
    with pytest.raises(NotImplementedError, match="rope_type 'dynamic'"):
        cfg = transformers.LlamaConfig(**BASE, rope_parameters={"rope_type": "dynamic", "factor": 2.0,
                                                                "rope_theta": 10000.0})
        CausalLM.from_hf(transformers.LlamaForCausalLM(cfg), max_seq_len=8)


def test_sampling_is_seeded_and_top_p_restricts():
    _, lm = hf_and_ours("gqa")
    a = lm.generate(prompt(4), 6, temperature=0.8, top_p=0.9, seed=7)
    b = lm.generate(prompt(4), 6, temperature=0.8, top_p=0.9, seed=7)
    np.testing.assert_array_equal(a, b)
    logits = np.array([0.0, 10.0, 9.0, -5.0], np.float32)
    rng = np.random.default_rng(0)
    # top_p = 0.5: only the most likely token remains
    assert {clm.sample(logits, 1.0, 0.5, rng) for _ in range(20)} == {1}
    assert clm.sample(logits) == 1


def test_cli_generates_from_random_init(capsys):
    """`relax-mlir llm --size tiny` (same graph as "gqa": no new compile): prints the greedy
    tokens of CausalLM.random and the rates."""
    from relax_mlir.llm import cli

    assert cli.main(["--size", "tiny", "-n", "5", "--prompt-len", "4", "--seed", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    lm = CausalLM.random(cli.SIZES["tiny"], max_seq_len=16, seed=3)
    ids = np.random.default_rng(3).integers(0, 128, 4)
    assert out[0] == " ".join(str(t) for t in lm.generate(ids, 5)[4:])
    assert out[1].startswith("prefill 4 tokens: ") and "decode: " in out[1]


def test_cli_random_format(capsys):
    """`--random-format bf16`: the projections and the lm head of the random model stored as
    bf16 rows (CausalLM.random with those formats): its greedy tokens."""
    from dataclasses import replace

    from relax_mlir.llm import cli

    assert cli.main(["--size", "tiny", "-n", "4", "--prompt-len", "4", "--seed", "2", "--random-format", "bf16"]) == 0
    out = capsys.readouterr().out.splitlines()
    c = replace(cli.SIZES["tiny"], formats=tuple((r, "bf16") for r in ("qkv", "o", "gate", "up", "down", "lm_head")))
    lm = CausalLM.random(c, max_seq_len=16, seed=2)
    assert dict(lm.config.formats)["down"] == "bf16"
    ids = np.random.default_rng(2).integers(0, 128, 4)
    assert out[0] == " ".join(str(t) for t in lm.generate(ids, 4)[4:])


def test_cli_kv_dtype_bf16(capsys):
    """`--kv-dtype bf16`: the random tiny model with a bf16 cache (CausalLM.random with
    kv_dtype="bf16"): its greedy tokens, which equal the f32 cache's on this model."""
    from relax_mlir.llm import cli

    assert cli.main(["--size", "tiny", "-n", "5", "--prompt-len", "4", "--seed", "3", "--kv-dtype", "bf16"]) == 0
    out = capsys.readouterr().out.splitlines()
    lm = CausalLM.random(cli.SIZES["tiny"], max_seq_len=16, seed=3, kv_dtype="bf16")
    assert lm.config.kv_dtype == "bf16" and str(lm.session.state["k"].dtype) == "bfloat16"
    ids = np.random.default_rng(3).integers(0, 128, 4)
    assert out[0] == " ".join(str(t) for t in lm.generate(ids, 5)[4:])
    assert out[0] == " ".join(str(t) for t in CausalLM.random(cli.SIZES["tiny"], max_seq_len=16, seed=3)
                              .generate(ids, 5)[4:])


def test_from_pretrained_safetensors_directory(tmp_path):
    """A local directory written by save_pretrained (config.json + model.safetensors; the
    tied lm_head is not stored) loads without torch weights and gives the same logits."""
    hf, _ = hf_and_ours("tied")
    hf.save_pretrained(tmp_path)
    assert any(p.suffix == ".safetensors" for p in tmp_path.iterdir())
    lm = CausalLM.from_pretrained(str(tmp_path), max_seq_len=32)
    ids = prompt(9)
    np.testing.assert_allclose(lm.prefill(ids), hf_logits(hf, ids)[-1], atol=TOL, rtol=0)


def test_stats_line_names_library_calls():
    """``--stats``: a call that ran cuBLAS says how many of its launches were library calls;
    one without says nothing about them (the line test_gpu_state.py pins)."""
    import io

    from relax_mlir.llm import cli
    st = dict(launches=43, graph_launches=1, graph_builds=0, graph_updates=1, copies_in=1, copies_out=2,
              device_copies=7, syncs=1, allocations=0, buffers=0, library_calls=10)
    out = io.StringIO()
    cli._print_stats(out, [("prefill", st), ("decode step (the last)", dict(st, launches=31, library_calls=0))])
    prefill, step = out.getvalue().splitlines()
    assert prefill == ("prefill: 43 kernel launches (10 of them library calls) (1 graph launch(es), 0 built, "
                       "1 updated), 1 copies in, 2 out, 7 device copies, 1 sync(s), 0 allocation(s), 0 pool buffers")
    assert step.startswith("decode step (the last): 31 kernel launches (1 graph launch(es),")
