"""Vulkan decode: the direct path (buffers in host-visible memory) against the staged one
(RELAX_MLIR_VULKAN_STAGING=1: device-only buffers, arguments and results through staging /
read-back copies) in ONE process, decode steps interleaved; per step also the staged path's
copies and allocations. On a device where auto picks the direct path (lavapipe, integrated
GPUs) this measures what staging costs where it brings nothing.

    PYTHONPATH=. .venv/bin/python bench/bench_vulkan_staging.py --size 134m --prompt-len 16 --steps 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from relax_mlir.llm import CausalLM, causal_lm  # noqa: E402
from relax_mlir.llm.cli import SIZES  # noqa: E402

ENV = "RELAX_MLIR_VULKAN_STAGING"


def build(size: str, staging: str, max_seq_len: int) -> CausalLM:
    os.environ[ENV] = staging
    causal_lm._EXECUTABLES.clear()           # one executable per path (its own device)
    t0 = time.perf_counter()
    lm = CausalLM.random(SIZES[size], max_seq_len=max_seq_len, seed=0, target="vulkan")
    print(f"{'staged' if staging == '1' else 'direct'}: compiled in {time.perf_counter() - t0:.1f} s, "
          f"device staged={lm.exe._runtime.dev.staged}", flush=True)
    return lm


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="134m", choices=sorted(SIZES))
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    cap = args.prompt_len + args.steps + 2
    lms = {"direct": build(args.size, "0", cap), "staged": build(args.size, "1", cap)}
    ids = np.random.default_rng(0).integers(0, SIZES[args.size].vocab_size, args.prompt_len)
    times: dict[str, list[float]] = {k: [] for k in lms}
    nxt = {}
    for k, lm in lms.items():
        nxt[k] = int(np.argmax(lm.prefill(ids)[-1]))
    assert nxt["direct"] == nxt["staged"]
    per_step = None
    for step in range(args.steps):
        order = list(lms.items())
        for k, lm in (order if step % 2 else order[::-1]):   # interleaved, alternating order
            before = dict(lm.exe.vulkan_stats)
            t0 = time.perf_counter()
            logits = lm.decode(nxt[k])
            times[k].append(time.perf_counter() - t0)
            nxt[k] = int(np.argmax(logits))
            if k == "staged":
                per_step = {s: lm.exe.vulkan_stats[s] - before[s] for s in before}
        assert nxt["direct"] == nxt["staged"], "the paths' greedy tokens differ"
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"decode step, median of {args.steps} (ms): direct {med['direct']:.1f}, staged {med['staged']:.1f}, "
          f"staged/direct {med['staged'] / med['direct']:.3f}")
    print("staged, per step:", {k: per_step[k] for k in ("submits", "dispatches", "staged_in", "staged_bytes",
                                                         "readbacks", "readback_bytes", "allocations")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
