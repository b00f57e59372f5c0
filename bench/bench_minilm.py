"""all-MiniLM-L6-v2 (real weights) through the torch.export importer vs PyTorch eager, side by
side in one process: (batch, seq) = (1, 16), (8, 64), (32, 128) on ONE compiled executable.

    .venv/bin/python bench/bench_minilm.py [--reps 5]

Prints milliseconds (median of repeated runs, the two sides called in turn so that load
changes hit both alike; bench_peers.py adds ONNX Runtime and torch.compile), the ratio
relax/torch, the largest embedding difference, the compile time and the number of
compiles (1). Timings on a shared 2-core
machine are noisy: the load average is printed and a figure taken with load > 0.5 is
marked '*'. Both sides run with 2 threads; OMP_WAIT_POLICY=PASSIVE is set unless given
(both PyTorch and the oneMKL GNU threading layer use OpenMP; spinning workers on a loaded
2-core machine stalled batched BLAS calls by up to 100x).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SIZES = [(1, 16), (8, 64), (32, 128)]
THREADS = 2


def inputs(b: int, s: int, g):
    """(ids, mask) int64 torch tensors: random tokens after [CLS], rows padded to different
    lengths (row i keeps max(2, s - 3 i) tokens), so pooling and the attention mask matter."""
    import torch

    ids = torch.randint(1000, 30000, (b, s), generator=g)
    ids[:, 0] = 101
    mask = torch.ones(b, s, dtype=torch.int64)
    for i in range(b):
        mask[i, max(2, s - 3 * i):] = 0
    return ids, mask


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    import torch

    from bench_peers import interleaved
    from relax_mlir.frontend.torch import minilm

    torch.set_num_threads(THREADS)
    model = minilm.sentence_encoder()
    t0 = time.perf_counter()
    enc = minilm.compile_minilm(max_batch=32, max_seq=128, model=model)
    compile_s = time.perf_counter() - t0
    g = torch.Generator().manual_seed(0)
    rows = []
    for b, s in SIZES:
        ids, mask = inputs(b, s, g)
        ids_np, mask_np = ids.numpy(), mask.numpy()

        def ours():
            return enc.run(ids_np, mask_np)

        def eager():
            with torch.no_grad():
                return model(ids, mask)

        err = float(np.abs(ours() - eager().numpy()).max())
        ms, load = interleaved({"ours": ours, "eager": eager}, args.reps, min_time=0.5)
        rows.append((b, s, ms["ours"], ms["eager"], err, load))

    def mark(v, load):
        return f"{v:.2f}{'*' if load > 0.5 else ''}"

    print(f"all-MiniLM-L6-v2: compiled once in {compile_s:.1f} s (torch.export + import + compile; "
          f"the relax compile alone {enc.exe.compile_time_s:.1f} s); compiles: 1 for {len(SIZES)} shapes")
    print(f"load average at end: {os.getloadavg()[0]:.2f}; '*' = measured with load > 0.5; "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print()
    print("| (batch, seq) | relax-mlir ms | PyTorch eager ms | relax/torch | max abs diff |")
    print("|---|---:|---:|---:|---:|")
    for b, s, to, tt, err, load in rows:
        print(f"| ({b}, {s}) | {mark(to, load)} | {mark(tt, load)} | {to / tt:.2f}x | {err:.1e} |")


if __name__ == "__main__":
    main()
