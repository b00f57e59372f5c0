"""Sentence similarity with all-MiniLM-L6-v2 (real weights), compiled once by relax-mlir.

The PyTorch model (BERT encoder + mean pooling + L2 normalization) is exported with
torch.export with a symbolic batch and sequence length, imported into relax and compiled
ONCE; every batch below has another shape and runs on the same executable.

    python examples/minilm.py ["a sentence" "another sentence" ...]
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from relax_mlir.frontend.torch import minilm  # noqa: E402

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "A man is riding a horse.",
    "A man is riding a white horse on an enclosed ground.",
    "The new movie is awesome!",
    "The new movie is so great.",
]


def main(argv: list[str]) -> None:
    sentences = argv or SENTENCES
    t0 = time.perf_counter()
    encoder = minilm.compile_minilm(max_batch=64, max_seq=128)
    print(f"compiled all-MiniLM-L6-v2 once in {time.perf_counter() - t0:.1f} s "
          f"(symbols: batch <= 64, seq <= 128)")
    tok = minilm.tokenizer()
    batch = tok(sentences, padding=True, truncation=True, max_length=128, return_tensors="np")
    ids, mask = batch["input_ids"].astype(np.int64), batch["attention_mask"].astype(np.int64)
    t0 = time.perf_counter()
    emb = encoder(ids, mask)
    print(f"embedded {ids.shape[0]} sentences of {ids.shape[1]} tokens in {1e3 * (time.perf_counter() - t0):.1f} ms")
    sim = emb @ emb.T
    width = max(len(s) for s in sentences)
    print("\ncosine similarity:")
    for i, s in enumerate(sentences):
        print(f"  {s:<{width}}  " + " ".join(f"{v:5.2f}" for v in sim[i]))
    print("\nmost similar pairs:")
    pairs = sorted(((sim[i, j], i, j) for i in range(len(sentences)) for j in range(i + 1, len(sentences))),
                   reverse=True)
    for score, i, j in pairs[:3]:
        print(f"  {score:.4f}  {sentences[i]!r} ~ {sentences[j]!r}")
    # one more shape on the same executable: a single short query
    q = tok([sentences[0]], return_tensors="np")
    e = encoder(q["input_ids"].astype(np.int64), q["attention_mask"].astype(np.int64))
    print(f"\nquery {sentences[0]!r} ({q['input_ids'].shape[1]} tokens) vs the batch: "
          + " ".join(f"{v:.2f}" for v in (emb @ e[0])))


if __name__ == "__main__":
    main(sys.argv[1:])
