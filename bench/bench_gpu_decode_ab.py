"""Decode tokens/s of a random Llama on a GPU target with a ``relax_mlir.pipelines.gpu`` module
flag on and off, in ONE process, rounds interleaved (lavapipe runs on the CPU: its figures say
little about a GPU; the launch counts are what carries over).

    python bench/bench_gpu_decode_ab.py --flag QUANT_EPILOGUE_DEFAULT --size 134m --format f16

Each round: a prefill of 16 tokens, then 16 timed decode steps per variant; the greedy tokens of
both variants are checked equal first. Prints the median and best tok/s per variant, their
ratios, and the 1-minute load average over the rounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import relax_mlir.llm.causal_lm as causal_lm  # noqa: E402
from relax_mlir.llm import CausalLM  # noqa: E402
from relax_mlir.llm.cli import SIZES  # noqa: E402
from relax_mlir.pipelines import gpu as gpu_pipeline  # noqa: E402

ROLES = ("qkv", "o", "gate", "up", "down", "lm_head")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flag", default="QUANT_EPILOGUE_DEFAULT", help="a boolean of relax_mlir.pipelines.gpu")
    ap.add_argument("--size", default="small", choices=sorted(SIZES))
    ap.add_argument("--format", default="f16", choices=("f32", "f16", "bf16"), help="projections and lm head")
    ap.add_argument("--target", default="vulkan", choices=("vulkan", "cuda"))
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    c = SIZES[args.size]
    if args.format != "f32":
        c = replace(c, formats=tuple((r, args.format) for r in ROLES))
    default = getattr(gpu_pipeline, args.flag)
    lms = {}
    for flag in (True, False):
        setattr(gpu_pipeline, args.flag, flag)
        causal_lm._EXECUTABLES.clear()   # one executable per config and target otherwise
        lms[flag] = CausalLM.random(c, max_seq_len=64, target=args.target)
    setattr(gpu_pipeline, args.flag, default)
    ids = np.arange(3, 19, dtype=np.int64)
    on, off = (lm.generate(ids, 4, eos_token_id=[]) for lm in lms.values())
    assert (on == off).all(), (on, off)
    rates: dict = {True: [], False: []}
    loads = []
    for _ in range(args.rounds):
        for flag, lm in lms.items():
            lm.prefill(ids)
            t0 = time.perf_counter()
            for _ in range(16):
                lm.decode(5)
            rates[flag].append(16 / (time.perf_counter() - t0))
        loads.append(os.getloadavg()[0])
    print(f"{args.target} {args.size} {args.format}: {args.flag}, {args.rounds} rounds, "
          f"load {min(loads):.1f}-{max(loads):.1f}")
    for flag in (True, False):
        print(f"  {'on ' if flag else 'off'} median {np.median(rates[flag]):.2f} tok/s, best {max(rates[flag]):.2f}")
    print(f"  on/off: median {np.median(rates[True]) / np.median(rates[False]):.3f}, "
          f"best {max(rates[True]) / max(rates[False]):.3f}")


if __name__ == "__main__":
    main()
