"""Generate tokens from a random-init Llama with relax-mlir, next to transformers.

    PYTHONPATH=. python examples/llm.py

Builds a small LlamaForCausalLM from a config (seed 0, no download), wraps it with
``CausalLM.from_hf`` (one compile for every prompt length), checks the logits against
transformers and generates greedily, token for token like ``generate(do_sample=False)``.
"""

import time

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from relax_mlir.llm import CausalLM

cfg = LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=344, num_hidden_layers=4,
                  num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512)
torch.manual_seed(0)
hf = LlamaForCausalLM(cfg).eval()
with torch.no_grad():      # random init (std 0.02) repeats one token forever; larger weights vary
    for p in hf.parameters():
        if p.dim() == 2:
            p.mul_(5.0)

t0 = time.perf_counter()
lm = CausalLM.from_hf(hf, max_seq_len=256)
print(f"compiled prefill + extend once in {time.perf_counter() - t0:.1f} s")

prompt = np.random.default_rng(0).integers(0, cfg.vocab_size, 12)
with torch.no_grad():
    ref_logits = hf(torch.tensor(prompt[None])).logits[0, -1].numpy()
print(f"prefill logits vs transformers: max |diff| = {np.abs(lm.prefill(prompt) - ref_logits).max():.2e}")

t0 = time.perf_counter()
ours = lm.generate(prompt, max_new_tokens=24)
dt = time.perf_counter() - t0
with torch.no_grad():
    ref = hf.generate(torch.tensor(prompt[None]), max_new_tokens=24, do_sample=False, pad_token_id=0)[0].numpy()
print("ours:        ", ours[len(prompt):].tolist())
print("transformers:", ref[len(prompt):].tolist())
print(f"equal token for token: {np.array_equal(ours, ref)}; {len(ours) - len(prompt)} tokens in {dt * 1e3:.0f} ms; "
      f"KV cache: {lm.bytes_per_token} bytes written per token (cache {lm.cache.nbytes / 1e6:.1f} MB, never copied)")
