"""Tune the GPU rules' knobs of a random-init Llama's kernels (prefill, qkv, attend and the
decode step's) on the device of ``--target``, within ``--budget`` seconds; the database
and a summary table (markdown) go where ``--db`` / ``--summary`` say.

    python bench/tune_gpu_llm.py --target cuda --size 134m --decode --budget 60 --db gpu_tuning.db

``relax_mlir.compile(..., tuning_db=DB)`` (``relax-mlir llm`` builds the same module)
then applies the records for the same device and size bucket.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="vulkan", choices=("vulkan", "cuda"))
    ap.add_argument("--size", default="134m")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds for the whole search")
    ap.add_argument("--trials", type=int, default=16, help="at most N candidates per kernel")
    ap.add_argument("--min-time", type=float, default=0.02, help="seconds of calls per size and candidate")
    ap.add_argument("--format", default="f32",
                    help="the projections' and lm head's weight format (f32, f16, bf16, q8_0, q4_0, q4_1: the "
                         "quantized-matmul rule's kernels)")
    ap.add_argument("--decode", action="store_true",
                    help="also measure at one new token (s = 1) against KV lengths of the representative "
                         "sizes (default: every symbol at each size only, as the cpu tuner)")
    ap.add_argument("--db", required=True)
    ap.add_argument("--summary", default=None, help="a markdown table of the results (default: stdout only)")
    args = ap.parse_args(argv)

    import relax_mlir
    from mlir import ir

    from relax_mlir.llm.cli import SIZES
    from relax_mlir.llm.model import LlamaModel

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        c = SIZES[args.size]
        if args.format != "f32":
            from dataclasses import replace
            c = replace(c, formats=tuple((r, args.format) for r in ("qkv", "o", "gate", "up", "down", "lm_head")))
        LlamaModel(c).build(module)
    t0 = time.monotonic()
    from relax_mlir.tuning.gpu import tune_gpu
    results = tune_gpu(module, args.db, args.target, args.budget, args.trials, min_time=args.min_time,
                       log=lambda s: print(s, flush=True), fixed={"s": 1} if args.decode else None,
                       also_free=True)
    lines = [f"GPU tuning of the {args.size} model ({args.format} weights) on {args.target}: {len(results)} kernel(s) in "
             f"{time.monotonic() - t0:.0f} s (budget {args.budget:.0f} s), database {args.db}", "",
             "| kernel | rule | sizes | default ms | recorded ms | best speedup | trials | recorded | config |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        best = r.best.times if r.recorded else r.default.times
        cfg = " ".join(f"{k}={v}" for k, v in r.best.config.items()) if r.recorded else "(default)"
        lines.append(f"| {r.task.name} | {r.task.schedule} | {r.task.sizes} | {1e3 * sum(r.default.times):.3f} | "
                     f"{1e3 * sum(best):.3f} | {r.speedup:.2f} | {len(r.trials)} | {'yes' if r.recorded else 'no'} | "
                     f"{cfg} |")
    text = "\n".join(lines)
    print(text)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
