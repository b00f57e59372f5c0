"""Bias + activation kernels (GELU erf and tanh forms, SiLU, sigmoid; ReLU as the memory floor)
against PyTorch eager and numpy, one thread, side by side in one process.

    .venv/bin/python bench/bench_activations.py                  # 4096 x 1536 (MiniLM's FFN, batch 32)
    .venv/bin/python bench/bench_activations.py --only gelu --rounds 41 --rows 4096 --cols 1536

Each case is ``relax.add(x, b)`` (bias over the last dim) then the activation, rows symbolic,
compiled once with library dispatch off: relax-fuse-ops makes the two one elementwise kernel,
as after MiniLM's ``x @ W + b`` (the matmul goes to BLAS, the bias and the activation to this
kernel). Columns, all the best of ``--rounds`` interleaved rounds of the calling thread's CPU time
(ms), one thread everywhere (RELAX_MLIR_NUM_THREADS=1, torch.set_num_threads(1), numpy's
BLAS pool held to 1):

* ``ours``: the fused bias + activation executable;
* ``torch act``: torch's activation alone on the biased input (computed beforehand);
* ``torch b+act``: ``act(x + b)`` in torch eager (two kernels, as eager runs the FFN);
Inputs start on 64-byte boundaries (as results of our kernels and torch's do).

* ``np add``: numpy's ``x + b``, the same memory traffic as ours (read x, write a fresh
  array) with no math: the floor an elementwise kernel can reach;
* ratios ours / each (lower is better) and the maximum absolute error against float64.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

os.environ["RELAX_MLIR_NUM_THREADS"] = "1"

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import relax_mlir  # noqa: E402
from bench_kernels import T  # noqa: E402

ACTS = ("gelu", "gelu_tanh", "silu", "sigmoid", "relu")


def program(act: str, cols: int) -> str:
    x, b = T(["m", cols]), T([cols])
    return (f"func.func @main(%x: {x}, %b: {b}) -> {x} attributes {{relax.function}} {{\n"
            f'  %a = "relax.add"(%x, %b) : ({x}, {b}) -> {x}\n'
            f'  %r = "relax.{act}"(%a) : ({x}) -> {x}\n  return %r : {x}\n}}\n')


def reference(act: str, a: np.ndarray) -> np.ndarray:
    """float64 reference of the activation (math.erf / tanh per element)."""
    a = a.astype(np.float64)
    if act == "gelu":
        erf = np.vectorize(math.erf)
        return 0.5 * a * (1 + erf(a / math.sqrt(2)))
    if act == "gelu_tanh":
        return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
    if act == "silu":
        return a / (1 + np.exp(-a))
    if act == "sigmoid":
        return 1 / (1 + np.exp(-a))
    return np.maximum(a, 0)


def torch_act(act: str):
    import torch.nn.functional as F
    import torch
    return {"gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "silu": F.silu,
            "sigmoid": torch.sigmoid, "relu": torch.relu}[act]


def aligned(a: np.ndarray, align: int = 64) -> np.ndarray:
    """A copy of ``a`` whose data starts on an ``align``-byte boundary, as our kernels' and torch's
    results do (numpy's large arrays start 16 or 32 bytes past one: every 64-byte vector load
    then spans two cache lines, 5-10 % slower at this size, measured)."""
    buf = np.empty(a.nbytes + align, np.uint8)
    off = (-buf.ctypes.data) % align
    out = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def keep_heap() -> bool:
    """glibc: serve the 24 MiB results from a heap that is never trimmed (mallopt), so no side
    pays page faults for a fresh mmap per call. Without it the first case of a run read 3x
    slower on every side (numpy's add included) until malloc's dynamic mmap threshold settled."""
    import ctypes
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30))
    except (OSError, AttributeError):
        return False


def interleaved_best_ms(fns, rounds: int) -> list[float]:
    """Best-of-``rounds`` CPU time (ms) of the calling thread for each of ``fns``, the rounds
    interleaved (a burst of load hits all alike). The thread's time, not the process's: at
    the start of a run the process's time also counted other threads (the first case read
    3x slower on every side, the numpy add included)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.thread_time()
            fn()
            best[i] = min(best[i], time.thread_time() - t0)
    return [b * 1e3 for b in best]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=1536)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--only", default="", help="comma-separated activations (default: all)")
    args = ap.parse_args()
    heap = keep_heap()
    import torch
    torch.set_num_threads(1)
    acts = [a for a in args.only.split(",") if a] or list(ACTS)
    rng = np.random.default_rng(0)
    x = aligned(rng.standard_normal((args.rows, args.cols), dtype=np.float32) * 2)
    b = aligned(rng.standard_normal(args.cols, dtype=np.float32))
    tx, tb = torch.from_numpy(x), torch.from_numpy(b)
    ta = tx + tb
    sample = slice(0, min(args.rows, 64))     # the float64 reference on a slice (math.erf is slow)
    print(f"{args.rows} x {args.cols} f32, one thread, best of {args.rounds} interleaved rounds (CPU ms);"
          f" load average at start {os.getloadavg()[0]:.1f}; results from an untrimmed heap: {heap}")
    print(f"{'act':10s} {'ours':>7s} {'torch act':>9s} {'torch b+act':>11s} {'np add':>7s}"
          f" {'/t act':>7s} {'/t b+act':>8s} {'/np add':>7s} {'max err':>9s} {'load':>5s}")
    for i, act in enumerate(acts):
        exe = relax_mlir.compile(program(act, args.cols), options={"dispatch": False})
        f = torch_act(act)
        got = exe(x, b)
        err = float(np.abs(got[sample] - reference(act, x[sample] + b)).max())
        with threadpool_limits(1):
            ours, t_act, t_both, np_add = interleaved_best_ms(
                [lambda: exe(x, b), lambda: f(ta), lambda: f(tx + tb), lambda: np.add(x, b)], args.rounds)
        print(f"{act:10s} {ours:7.2f} {t_act:9.2f} {t_both:11.2f} {np_add:7.2f} {ours / t_act:7.2f}"
              f" {ours / t_both:8.2f} {ours / np_add:7.2f} {err:9.2e} {os.getloadavg()[0]:5.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
