"""Dispatch policy benchmark (issue 12, item 5): the ``min-flops`` rule against the (default)
``measured`` policy (the calibration table, with its run-time split), same source, same
pipeline, one executable each, on the MLP (x: (n, 512), hidden 2048) at n = 1, 16, 128, 512
and on a random-init Llama's prefill (128 tokens) and decode step.

    PYTHONPATH=. python bench/bench_dispatch_policy.py [--rounds 7] [--layers 2] [--table PATH]
        [--tuning-db tune.db ...]

``--tuning-db`` (repeatable): one more MLP executable per database, compiled with
``tuning_db`` (relax-dispatch-library follows its dispatch decisions, relax-apply-schedules
its configs); the table gets a column per database.

One thread on both sides (RELAX_MLIR_NUM_THREADS=1, BLAS held to one thread), process CPU
time, best of ``--rounds`` interleaved rounds (each round times flops then measured), so a
burst of load from other processes hits both alike; ``--threads N``: N threads on both
sides, wall-clock time (``calibrate_dispatch.py``'s clock; the measured policy then takes the
calibration table of N threads). The load average is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# first: sets RELAX_MLIR_NUM_THREADS / RELAX_BLAS_NUM_THREADS from --threads before the runtimes load
from calibrate_dispatch import THREADS, interleaved_best_ms as best_cpu_ms  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402

POLICIES = ("flops", "measured")


def with_policy(policy: str, build):
    old = os.environ.get("RELAX_MLIR_DISPATCH_POLICY")
    os.environ["RELAX_MLIR_DISPATCH_POLICY"] = policy
    try:
        return build()
    finally:
        if old is None:
            del os.environ["RELAX_MLIR_DISPATCH_POLICY"]
        else:
            os.environ["RELAX_MLIR_DISPATCH_POLICY"] = old


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--table", default="")
    ap.add_argument("--no-llm", action="store_true")
    ap.add_argument("--tuning-db", action="append", default=[], help="a `relax-mlir tune` database (repeatable)")
    ap.add_argument("--threads", type=int, default=1, help="threads of both sides (read before the runtimes load)")
    args = ap.parse_args()
    if args.table:
        os.environ["RELAX_MLIR_DISPATCH_TABLE"] = args.table
    l0 = os.getloadavg()
    rng = np.random.default_rng(0)
    cfg = models.MLPConfig()
    params = models.mlp_params(cfg, rng)
    src = str(models.mlp_module(relax_mlir.make_context(), cfg))
    exes = [with_policy(p, lambda: relax_mlir.compile(src)) for p in POLICIES]
    exes += [relax_mlir.compile(src, tuning_db=db) for db in args.tuning_db]
    rows = []
    with threadpool_limits(THREADS):
        for n in (1, 16, 128, 512):
            x = rng.standard_normal((n, cfg.d_in)).astype(np.float32)
            a = [x, *params]
            want = models.mlp_reference(*a)
            for e in exes:
                np.testing.assert_allclose(e(*a), want, rtol=1e-3, atol=1e-3)
            inner = max(1, 64 // n)
            rows.append((f"MLP n={n}", *best_cpu_ms([lambda e=e: e(*a) for e in exes], args.rounds, inner)))
        if not args.no_llm:
            import torch
            from transformers import LlamaConfig, LlamaForCausalLM

            from relax_mlir.llm import CausalLM
            torch.manual_seed(0)
            lcfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                               num_hidden_layers=args.layers, num_attention_heads=12, num_key_value_heads=12,
                               max_position_embeddings=2048)
            hf = LlamaForCausalLM(lcfg).eval()
            lms = [with_policy(p, lambda: CausalLM.from_hf(hf, max_seq_len=256)) for p in POLICIES]
            ids = np.random.default_rng(0).integers(0, lcfg.vocab_size, 128).astype(np.int64)
            outs = [lm.prefill(ids) for lm in lms]
            np.testing.assert_allclose(outs[0], outs[1], rtol=1e-3, atol=1e-3)
            pad = [float("nan")] * len(args.tuning_db)
            rows.append(("Llama prefill 128", *best_cpu_ms([lambda lm=lm: lm.prefill(ids) for lm in lms],
                                                           args.rounds, 1), *pad))

            def decode(lm):
                def run():
                    lm.prefill(ids[:16])
                    for t in range(16):
                        lm.decode(int(ids[16 + t]))
                return run
            # prefill 16 + 16 decode steps (the prefill part is ~1/8 of a 128-token prefill)
            rows.append(("Llama prefill 16 + decode 16", *best_cpu_ms([decode(lm) for lm in lms], args.rounds, 1),
                         *pad))
    l1 = os.getloadavg()
    print(f"load average {l0[0]:.2f} -> {l1[0]:.2f}; "
          f"{'1 thread, CPU ms' if THREADS == 1 else f'{THREADS} threads, wall ms'}, best of {args.rounds} interleaved rounds; "
          f"BLAS {exes[0].metadata.get('blas')}; table {os.environ.get('RELAX_MLIR_DISPATCH_TABLE', 'checked-in')}")
    dbs = [os.path.basename(db) for db in args.tuning_db]
    print("| case | flops ms | measured (default) ms | measured/flops |"
          + "".join(f" {d} ms | {d}/flops |" for d in dbs))
    print("|---|---:|---:|---:|" + "---:|---:|" * len(dbs))
    for name, tf, tm, *tt in rows:
        print(f"| {name} | {tf:.3f} | {tm:.3f} | {tm / tf:.2f} |" + "".join(f" {t:.3f} | {t / tf:.2f} |" for t in tt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
