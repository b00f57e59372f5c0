"""LLM benchmark: a random-init Llama (hidden 768, 12 layers, 12 heads, intermediate 2048,
vocab 32000, f32, ~134M parameters), ours vs PyTorch eager in one process.

    PYTHONPATH=. python bench/bench_llm.py [--prompt 128] [--new 32] [--layers 12] [--repeat 3] [--threads N]
                                           [--profile]

Prints compile time, prefill latency (128 tokens) and decode tokens/s (32 tokens after
the prompt), with ratios, the bytes a decode step moves (written into the KV cache, the
session's state; the logits returned), the Python time per decode call (outside the
compiled code), and whether the greedy tokens agree. Decode runs alternate (eager, ours,
eager, ...) so both sides see the same load, and tokens per CPU-second (process time) are
printed beside tokens per second: on a machine loaded by others, the CPU-time ratio is the
steadier one. ``--profile`` exports the
executable to a shared library (so ``perf`` sees its symbols), runs decode steps under
``perf record`` and prints where the time goes: our kernels, BLAS, Python/numpy, libc. PyTorch eager prefill is measured both as a plain forward
(logits at every position) and with ``logits_to_keep=1`` (what generate() does, and
what our ``prefill`` computes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.cache_utils import DynamicCache

from relax_mlir.llm import CausalLM


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="profile decode with perf (exports the code first)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for both sides (torch and our BLAS); default: each side's default (2)")
    args = ap.parse_args()
    if args.threads:
        os.environ["RELAX_BLAS_NUM_THREADS"] = str(args.threads)
        torch.set_num_threads(args.threads)

    cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=args.layers,
                      num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=2048)
    torch.manual_seed(0)
    hf = LlamaForCausalLM(cfg).eval()
    nparams = sum(p.numel() for p in hf.parameters())
    ids = np.random.default_rng(0).integers(0, cfg.vocab_size, args.prompt).astype(np.int64)
    tids = torch.tensor(ids[None])
    print(f"model: {nparams / 1e6:.0f}M parameters, f32; prompt {args.prompt}, decode {args.new}; "
          f"torch threads {torch.get_num_threads()}")

    t0 = time.perf_counter()
    lm = CausalLM.from_hf(hf, max_seq_len=args.prompt + args.new + 8)
    compile_s = time.perf_counter() - t0

    # -- prefill ----------------------------------------------------------------------
    with torch.no_grad():
        eager_full = median_time(lambda: hf(tids, use_cache=True), args.repeat)
        eager_last = median_time(lambda: hf(tids, use_cache=True, logits_to_keep=1), args.repeat)
    ours_prefill = median_time(lambda: lm.prefill(ids), args.repeat)

    # -- decode -----------------------------------------------------------------------
    def eager_decode():
        toks = []
        with torch.no_grad():
            cache = DynamicCache(config=cfg)
            out = hf(tids, past_key_values=cache, use_cache=True, logits_to_keep=1)
            tok = int(out.logits[0, -1].argmax())
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.new):
                toks.append(tok)
                out = hf(torch.tensor([[tok]]), past_key_values=out.past_key_values, use_cache=True)
                tok = int(out.logits[0, -1].argmax())
            return time.perf_counter() - t0, toks, time.process_time() - c0

    near_ties = []

    def ours_decode():
        toks = []
        tok = int(np.argmax(lm.prefill(ids)))
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.new):
            toks.append(tok)
            logits = lm.decode(tok)
            tok = int(np.argmax(logits))
            near_ties.append(float(np.diff(np.sort(logits)[-2:])[0]) < 1e-4)
        return time.perf_counter() - t0, toks, time.process_time() - c0

    with torch.no_grad():
        ref = hf(tids).logits[0, -1].numpy()
    logit_err = float(np.abs(lm.prefill(ids) - ref).max())

    # Interleaved (eager, ours, eager, ours, ...): on a machine loaded by others, the two
    # sides see the same load on average; CPU time (process_time) is the load-robust
    # companion of the wall-clock figure.
    e_runs, o_runs = [], []
    for _ in range(max(1, args.repeat - 1)):
        e_runs.append(eager_decode())
        o_runs.append(ours_decode())
    e_dec = statistics.median(r[0] for r in e_runs)
    o_dec = statistics.median(r[0] for r in o_runs)
    e_cpu = statistics.median(r[2] for r in e_runs)
    o_cpu = statistics.median(r[2] for r in o_runs)
    same = sum(a == b for a, b in zip(e_runs[0][1], o_runs[0][1]))

    e_tps, o_tps = args.new / e_dec, args.new / o_dec
    cache_mb = lm.cache.nbytes / 1e6
    py_ms, c_ms = python_time_per_decode(lm, ids, args.new)
    print(f"compile (ours, once for every length): {compile_s:.1f} s, executables built: 1")
    print(f"{'':34s}{'PyTorch eager':>16s}{'ours':>12s}{'ratio':>10s}")
    print(f"{'prefill ' + str(args.prompt) + ' (all logits) ms':34s}{eager_full * 1e3:16.1f}"
          f"{'':12s}{'':10s}")
    print(f"{'prefill ' + str(args.prompt) + ' (last logits) ms':34s}{eager_last * 1e3:16.1f}"
          f"{ours_prefill * 1e3:12.1f}{eager_last / ours_prefill:9.2f}x")
    print(f"{'decode ' + str(args.new) + ' tokens/s':34s}{e_tps:16.1f}{o_tps:12.1f}{o_tps / e_tps:9.2f}x")
    print(f"{'decode ' + str(args.new) + ' tokens/CPU-s':34s}{args.new / e_cpu:16.1f}{args.new / o_cpu:12.1f}"
          f"{e_cpu / o_cpu:9.2f}x")
    print(f"decode step moves {lm.bytes_per_token} bytes into the KV cache (session state, written in place by "
          f"the graph; the cache holds {cache_mb:.1f} MB, read in place) and returns "
          f"{cfg.vocab_size * 4} bytes of logits; per decode call: {c_ms:.2f} ms in compiled code, "
          f"{py_ms:.3f} ms of Python (runtime + CausalLM)")
    print(f"greedy tokens equal to eager: {same}/{args.new} (decode steps with top-2 logits within 1e-4: "
          f"{sum(near_ties[:args.new])}); prefill logits max |ours - eager| = {logit_err:.1e}")
    if args.profile:
        profile_decode(lm, ids, args.new)


def python_time_per_decode(lm, ids, steps: int) -> tuple[float, float]:
    """Median (Python ms, compiled-code ms) of a decode call: the C entry point is timed
    from inside, the rest of the call is Python (argument checks, descriptors, results)."""
    fn = lm.exe["extend"]
    real, inner = fn._direct, []   # the entry point every call path calls

    def timed(*a):
        t = time.perf_counter()
        r = real(*a)
        inner.append(time.perf_counter() - t)
        return r

    fn._direct = timed
    try:
        tok, total = int(np.argmax(lm.prefill(ids))), []
        for _ in range(steps):
            t = time.perf_counter()
            tok = int(np.argmax(lm.decode(tok)))
            total.append(time.perf_counter() - t)
    finally:
        fn._direct = real
    py = statistics.median(t - c for t, c in zip(total, inner))
    return py * 1e3, statistics.median(inner) * 1e3


def profile_decode(lm, ids, steps: int) -> None:
    """Decode under ``perf record`` with the code in an exported library (named symbols);
    prints the share of samples per library and the top symbols."""
    import subprocess
    import tempfile

    import relax_mlir
    from relax_mlir.llm import causal_lm as clm

    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "llm.so")
        lib = relax_mlir.load(lm.exe.export(so))
        clm._EXECUTABLES[lm.config] = (lib, lm.weight_names)
        try:
            prof = CausalLM(lm.config, dict(zip(lm.weight_names, lm.weights)), lm.max_seq_len)
        finally:
            clm._EXECUTABLES[lm.config] = (lm.exe, lm.weight_names)
        tok = int(np.argmax(prof.prefill(ids)))
        data = os.path.join(tmp, "perf.data")
        rec = subprocess.Popen(["perf", "record", "-q", "-F", "2000", "-o", data, "-p", str(os.getpid())],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        for _ in range(steps):
            tok = int(np.argmax(prof.decode(tok)))
        rec.send_signal(2)
        rec.wait()
        syms = _symbols(so)
        for sort in ("dso", "dso,sym"):
            out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", sort,
                                  "--percent-limit", "0.7"], capture_output=True, text=True).stdout
            print(f"-- perf report --sort {sort} (decode steps; >= 0.7% of samples; our code: llm.so)")
            for line in out.splitlines():
                if line.strip() and not line.startswith("#"):
                    print(_name_address(line, syms))


def _symbols(so: str) -> list[tuple[int, str]]:
    """(address, name) of the functions of an exported library, sorted (the loader maps it
    from memory, so perf cannot name them itself)."""
    import subprocess

    out = subprocess.run(["nm", "-n", "--defined-only", so], capture_output=True, text=True).stdout
    return [(int(a, 16), n) for a, t, n in (l.split(None, 2) for l in out.splitlines() if l.count(" ") >= 2)
            if t.lower() == "t"]


def _name_address(line: str, syms: list) -> str:
    import bisect
    import re

    m = re.search(r"\[\.\] 0x([0-9a-f]+)\s*$", line)
    if not m or not syms:
        return line
    i = bisect.bisect_right([a for a, _ in syms], int(m.group(1), 16)) - 1
    return line[:m.start()] + "[.] " + (syms[i][1] if i >= 0 else m.group(0))


if __name__ == "__main__":
    main()
