"""Matmul schedule configs side by side in one process: per case one executable per config
(``MatmulConfig`` fields overridden for every kernel) and numpy, timed in alternation
round by round, best of ``--rounds`` (library dispatch off; bench_prefetch.py's measure).

    RELAX_MLIR_NUM_THREADS=1 .venv/bin/python bench/bench_matmul_configs.py --rounds 15 \\
        --configs "pack_block_m=0;pack_block_m=96" --kn 512x2048,2048x512 --m 128,512

``--configs``: ``;``-separated configs, each space-separated ``field=value`` (empty: the
defaults); ``--kn``: the (K, N) cases, ``--sym`` adds each with M, N, K all symbolic;
``--batch B``: a ``B x M x K @ B x K x N`` batch matmul instead. With one thread of ours the
clock is the calling thread's CPU time and numpy is limited to one BLAS thread; otherwise
wall time, numpy on its default threads. Ratios: ours / numpy (lower is better).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
import relax_mlir.backends.cpu.schedules as schedules  # noqa: E402
import relax_mlir.backends.cpu.schedules.matmul as matmul  # noqa: E402
from bench_kernels import single_op  # noqa: E402
from bench_prefetch import interleaved  # noqa: E402
from relax_mlir.backends.cpu.apply_schedules import num_threads  # noqa: E402


def parse_config(text: str) -> dict:
    out = {}
    for item in text.split():
        key, _, val = item.partition("=")
        out[key.strip()] = eval(val, {})  # noqa: S307 - a bench's command line: ints, tuples, bools
    return out


def compile_with(src: str, overrides: dict):
    """Compile with the host's ``MatmulConfig`` fields replaced by ``overrides`` (upper-case
    keys: globals of :mod:`relax_mlir.backends.cpu.schedules.matmul`, e.g. ``CRITICAL_STRIDE``)."""
    base = schedules.config_for
    fields = {k: v for k, v in overrides.items() if not k.isupper()}
    globs = {k: v for k, v in overrides.items() if k.isupper()}
    old = {k: getattr(matmul, k) for k in globs}
    schedules.config_for = lambda t: dataclasses.replace(base(t), **fields)
    for k, v in globs.items():
        setattr(matmul, k, v)
    try:
        return relax_mlir.compile(src, options={"dispatch": False})
    finally:
        schedules.config_for = base
        for k, v in old.items():
            setattr(matmul, k, v)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default=";")
    ap.add_argument("--kn", default="512x2048,2048x512")
    ap.add_argument("--m", default="128,512")
    ap.add_argument("--sym", action="store_true", help="M, N, K symbolic as well")
    ap.add_argument("--only-sym", action="store_true", help="only M, N, K symbolic")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    configs = [parse_config(c) for c in args.configs.split(";")]
    one = num_threads() == 1
    clock = time.thread_time if one else time.perf_counter
    rng = np.random.default_rng(0)
    print(f"cores: {os.cpu_count()}, our threads: {num_threads()}, load average at start: {os.getloadavg()}")
    print("configs: " + " | ".join(f"[{i}] {c or 'defaults'}" for i, c in enumerate(configs)))
    for kn in args.kn.split(","):
        k, n = (int(x) for x in kn.split("x"))
        for sym in ([True] if args.only_sym else [False, True] if args.sym else [False]):
            K, N = ("k", "n") if sym else (k, n)
            if args.batch:
                src = single_op("matmul", [[args.batch, "m", K], [args.batch, K, N]], [args.batch, "m", N])
            else:
                src = single_op("matmul", [["m", K], [K, N]], ["m", N])
            exes = [compile_with(src, c) for c in configs]
            lead = (args.batch,) if args.batch else ()
            b = rng.standard_normal(lead + (k, n), dtype=np.float32)
            for m in (int(x) for x in args.m.split(",")):
                a = rng.standard_normal(lead + (m, k), dtype=np.float32)
                want = a @ b
                for e in exes:
                    err = float(np.max(np.abs(e(a, b) - want)) / (np.max(np.abs(want)) + 1e-6))
                    assert err < 1e-3, err
                fns = [lambda e=e: e(a, b) for e in exes] + [lambda: np.matmul(a, b)]
                if one:
                    with threadpool_limits(1):
                        t = interleaved(fns, args.rounds, clock)
                else:
                    t = interleaved(fns, args.rounds, clock)
                name = f"{'B=%d ' % args.batch if args.batch else ''}K={k} N={n}{' sym' if sym else ''}"
                cells = " ".join(f"[{i}] {t[i]:7.3f} {t[i] / t[-1]:5.2f}" for i in range(len(exes)))
                print(f"{name:22s} M={m:5d} np {t[-1]:7.3f} ms | {cells} | load {os.getloadavg()[0]:.1f}",
                      flush=True)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
