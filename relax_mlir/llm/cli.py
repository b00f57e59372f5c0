"""``relax-mlir llm``: generate tokens from a random-init Llama of a named size, a local
model directory or a llama.cpp GGUF file, printing tokens/s (a progress line while
compiling and generating; with a tokenizer, the text streams as it is generated).

    python -m relax_mlir.llm.cli --size 134m --prompt-len 128 --max-new-tokens 32
    python -m relax_mlir.llm.cli --model ./my-llama --prompt "Once upon a time" -n 64
    relax-mlir llm --model SmolLM2-135M-Instruct.Q4_1.gguf --chat "What is the capital of France?"

:func:`main` takes ``argv`` so the ``relax-mlir`` console script can route its ``llm``
subcommand here (``add_arguments`` fills a subparser, ``run`` executes parsed args).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Mapping, Optional, Sequence

import numpy as np

from .model import LMConfig

#: named random-init sizes (Llama architecture, f32)
SIZES = {
    "tiny": LMConfig(vocab_size=128, hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16,
                     intermediate_size=128),
    "small": LMConfig(vocab_size=8000, hidden_size=256, num_layers=4, num_heads=8, num_kv_heads=4, head_dim=32,
                      intermediate_size=688),
    "134m": LMConfig(vocab_size=32000, hidden_size=768, num_layers=12, num_heads=12, num_kv_heads=12, head_dim=64,
                     intermediate_size=2048, rms_norm_eps=1e-6),
}


class _Progress:
    """A one-line progress display on stderr: a bar when the total is known, else elapsed time."""

    def __init__(self, label: str, total: Optional[int] = None, stream=None):
        # sys.stderr read per call, not as a default argument: one bound at import time
        # outlives a replaced stream (pytest's capture, a redirected embedding host)
        stream = sys.stderr if stream is None else stream
        self.label, self.total, self.stream, self.n = label, total, stream, 0
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = None
        if total is None and stream.isatty():
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _tick(self):
        while not self._stop.wait(0.5):
            self.stream.write(f"\r{self.label} ... {time.perf_counter() - self.t0:5.1f} s")
            self.stream.flush()

    def step(self, k: int = 1):
        self.n += k
        w = 30
        fill = int(w * self.n / max(1, self.total))
        self.stream.write(f"\r{self.label} [{'#' * fill}{'.' * (w - fill)}] {self.n}/{self.total}")
        self.stream.flush()

    def cancel(self):
        """Stop without a final line (an error message follows instead)."""
        self._stop.set()
        if self._thread:
            self._thread.join()
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def done(self, msg: str = ""):
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.stream.write(f"\r{self.label}: {msg or f'{time.perf_counter() - self.t0:.1f} s'}\n")
        self.stream.flush()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--size", choices=sorted(SIZES), default="tiny", help="random-init Llama of this size")
    src.add_argument("--model", help="local model directory (config.json + *.safetensors [+ tokenizer]) or a "
                                     "llama.cpp .gguf file (llama, mistral, qwen2; tokenizer and chat template inside)")
    text = ap.add_mutually_exclusive_group()
    text.add_argument("--prompt", help="prompt text, as is (needs a tokenizer in --model)")
    text.add_argument("--chat", metavar="MESSAGE", help="a user message, wrapped in the model's chat template")
    ap.add_argument("--prompt-len", type=int, default=16, help="random prompt length when no --prompt")
    ap.add_argument("-n", "--max-new-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seq-len", type=int, default=None)
    ap.add_argument("--target", default="cpu", help="compile target: cpu, vulkan or cuda (KV cache and weights "
                                                    "on the GPU)")
    ap.add_argument("--weights", choices=("stored", "f32"), default="stored",
                    help="stored: quantized / half weights stay as in the file, converted in the kernels' "
                         "registers (default); f32: every weight converted to f32 once")
    ap.add_argument("--random-format", choices=("f32", "f16", "bf16"), default="f32",
                    help="with --size: the projections and the lm head stored as f16 / bf16 (relax.quantized_matmul "
                         "on raw rows: half the bytes of f32)")
    ap.add_argument("--stats", action="store_true",
                    help="GPU targets: print what the prefill and the last decode step did on the device "
                         "(kernel launches, host<->device copies, synchronizations, allocations, graphs)")
    ap.add_argument("--kv-dtype", choices=("f32", "f16", "bf16"), default="f32",
                    help="element type of the KV cache (f16 / bf16: half the bytes decode attention reads; the "
                         "GPU targets' fused attention widens each element, the cpu converts the whole cache)")
    ap.add_argument("--q8", action="store_true",
                    help="quantized matmuls quantize their inputs to 8 bits (llama.cpp's int8 dot products: "
                         "faster, not exact; recommended for Q8_0 and K-quant files, as llama.cpp always does)")


def is_gguf(path: str) -> bool:
    """A .gguf name, or any file but a .safetensors one (the GGUF reader then says what is
    wrong with it); directories are Hugging Face model directories."""
    if path.lower().endswith(".gguf"):
        return True
    return os.path.isfile(path) and not path.lower().endswith(".safetensors")


def _fail(msg: str) -> int:
    print(f"relax-mlir llm: error: {msg}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace, out=None) -> int:
    from .causal_lm import CausalLM

    out = sys.stdout if out is None else out   # read per call (see _Progress)

    tokenizer = None
    chat = getattr(args, "chat", None)
    if args.model and is_gguf(args.model):
        from .gguf import GGUFError
        try:
            prog = _Progress("loading + compiling")
            lm = CausalLM.from_gguf(args.model, max_seq_len=args.max_seq_len, target=args.target,
                                    quantized=getattr(args, "weights", "stored") == "stored",
                                    activations="q8" if getattr(args, "q8", False) else "f32",
                                    kv_dtype=getattr(args, "kv_dtype", None))
        except (GGUFError, OSError) as e:
            prog.cancel()
            return _fail(str(e))
        return _run_text(lm, args, chat, prog, out)
    prog = _Progress("compiling")
    if chat is not None and not args.model:
        prog.cancel()
        return _fail("--chat needs --model (a model with a tokenizer and a chat template)")
    if args.model:
        if not os.path.exists(args.model):
            prog.cancel()
            return _fail(f"{args.model}: no such file or directory")
        lm = CausalLM.from_pretrained(args.model, max_seq_len=args.max_seq_len, target=args.target,
                                      quantized=getattr(args, "weights", "stored") == "stored",
                                      kv_dtype=getattr(args, "kv_dtype", None))
        if args.prompt is not None or chat is not None:
            from transformers import AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained(args.model)
            if chat is not None:
                prog.done(f"{lm.exe.compile_time_s:.1f} s")
                ids = tokenizer.apply_chat_template([{"role": "user", "content": chat}], add_generation_prompt=True,
                                                    tokenize=True)
                ids = ids["input_ids"] if isinstance(ids, Mapping) else ids
                return _stream(lm, tokenizer, np.asarray(ids, np.int64), args, out)
    else:
        c = SIZES[args.size]
        fmt = getattr(args, "random_format", "f32")
        if fmt != "f32":
            from dataclasses import replace
            c = replace(c, formats=tuple((role, fmt) for role in ("qkv", "o", "gate", "up", "down", "lm_head")))
        lm = CausalLM.random(c, max_seq_len=args.max_seq_len or args.prompt_len + args.max_new_tokens + 1,
                             seed=args.seed, target=args.target, kv_dtype=getattr(args, "kv_dtype", None))
    prog.done(f"{lm.exe.compile_time_s:.1f} s (one executable for every prompt length)")
    return _generate_ids(lm, args, out, tokenizer)


def _generate_ids(lm, args, out, tokenizer=None) -> int:
    """Prefill (warm-up, then timed) and generate with a progress bar; print the text (or
    the ids) and the rates. A random prompt of ``--prompt-len`` ids without a tokenizer."""
    if tokenizer is not None and args.prompt is not None:
        ids = np.asarray(tokenizer(args.prompt)["input_ids"], np.int64)
    else:
        ids = np.random.default_rng(args.seed).integers(0, lm.config.vocab_size, args.prompt_len)
    lm.prefill(ids)                      # warm-up (first-call costs)
    t0 = time.perf_counter()
    lm.prefill(ids)
    t_prefill = time.perf_counter() - t0
    prefill_stats = _call_stats(lm)
    bar = _Progress("generating", total=args.max_new_tokens)
    stamps = []

    def on_token(_):
        stamps.append(time.perf_counter())
        bar.step()

    toks = lm.generate(ids, args.max_new_tokens, temperature=args.temperature, top_p=args.top_p,
                       seed=args.seed, callback=on_token)
    dt = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
    new = toks[len(ids):]
    bar.done(f"{len(new)} tokens")
    text = tokenizer.decode(new) if tokenizer is not None and args.prompt is not None else " ".join(str(int(t)) for t in new)
    print(text, file=out)
    rate = f"{(len(new) - 1) / dt:.1f} tokens/s" if dt > 0 else "-"
    print(f"prefill {len(ids)} tokens: {t_prefill * 1e3:.1f} ms ({len(ids) / t_prefill:.1f} tokens/s); "
          f"decode: {rate}", file=out)
    if getattr(args, "stats", False):
        _print_stats(out, [("prefill", prefill_stats), ("decode step (the last)", _call_stats(lm))])
    return 0


def _call_stats(lm) -> Optional[dict]:
    """The device counts of the executable's last call (cuda target), else None."""
    return getattr(lm.exe, "cuda_call_stats", None)


def _print_stats(out, rows) -> None:
    """``--stats``: one line per call."""
    for label, st in rows:
        if not st:
            print(f"{label}: no device statistics on this target", file=out)
            continue
        lib = st.get("library_calls", 0)
        print(f"{label}: {st['launches']} kernel launches"
              f"{f' ({lib} of them library calls)' if lib else ''} ({st['graph_launches']} graph launch(es), "
              f"{st['graph_builds']} built, {st['graph_updates']} updated), {st['copies_in']} copies in, "
              f"{st['copies_out']} out, {st['device_copies']} device copies, {st['syncs']} sync(s), "
              f"{st['allocations']} allocation(s), {st['buffers']} pool buffers", file=out)


def _run_text(lm, args, chat, prog, out) -> int:
    """A GGUF model: --chat (the chat template) or --prompt (raw text) streamed as text; neither:
    a random prompt of token ids, as for the other models."""
    prog.done(f"{lm.exe.compile_time_s:.1f} s compile")
    tok = getattr(lm, "tokenizer", None)
    if chat is None and args.prompt is None:
        return _generate_ids(lm, args, out)
    if tok is None:
        return _fail(f"{args.model}: no tokenizer in the file (or the 'tokenizers' package is missing)")
    from .gguf import GGUFError
    try:
        ids = (tok.apply_chat_template([{"role": "user", "content": chat}]) if chat is not None
               else tok.encode(args.prompt))
    except GGUFError as e:
        return _fail(str(e))
    return _stream(lm, tok, np.asarray(ids, np.int64), args, out)


def _stream(lm, tok, ids: np.ndarray, args, out) -> int:
    """Generate after ``ids``, writing the text as it comes (decoded incrementally), then
    a line with the prefill time and the decode rate."""
    if ids.size + 1 > lm.max_seq_len:
        return _fail(f"the prompt has {ids.size} tokens; --max-seq-len {lm.max_seq_len} leaves no room to generate")
    n = min(args.max_new_tokens, lm.max_seq_len - ids.size)
    from .gguf import TextStream
    stream, stamps = TextStream(tok), []

    def on_token(t):
        stamps.append(time.perf_counter())
        out.write(stream.push(t))
        out.flush()

    t0 = time.perf_counter()
    toks = lm.generate(ids, n, temperature=args.temperature, top_p=args.top_p, seed=args.seed, callback=on_token)
    new = toks[len(ids):]
    print(stream.finish(), file=out)    # the rest (an incomplete UTF-8 sequence included)
    t_prefill = stamps[0] - t0 if stamps else 0.0
    dt = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
    rate = f"{(len(new) - 1) / dt:.1f} tokens/s" if dt > 0 else "-"
    print(f"prefill {len(ids)} tokens: {t_prefill * 1e3:.1f} ms; decode {len(new)} tokens: {rate}", file=out)
    if getattr(args, "stats", False):
        _print_stats(out, [("decode step (the last)", _call_stats(lm))])
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="relax-mlir llm", description=__doc__.split("\n\n")[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
