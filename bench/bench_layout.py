"""relax-convert-layout A/B (issue 28): each net compiled twice in ONE process, with the cpu
pipeline's default layout (NCHW between layers) and with ``layout=NHWC`` (relax-convert-layout:
channels-last kernels), timed interleaved against each other and PyTorch eager.

    PYTHONPATH=. python bench/bench_layout.py [--size 224] [--batches 1 8]
                                              [--models mobilenetv2 resnet18] [--reps 5] [--threads 2]

Each net is exported once with a dynamic batch and each variant compiled once; every batch
runs through that executable (parameters bound once). Reports the median ms per call, the
ratio NHWC / NCHW, the max relative error of each variant against eager, and the highest
load average seen during the rounds (figures with load > 0.5 are marked ``*``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--models", nargs="+", default=["mobilenetv2", "resnet18"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    from bench_peers import interleaved
    from bench_vision import make_net
    from relax_mlir.frontend.torch import compile as tcompile

    torch.set_num_threads(args.threads)
    os.environ.setdefault("RELAX_MLIR_NUM_THREADS", str(args.threads))
    rng = np.random.default_rng(0)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} threads={args.threads} size={args.size}")
    for name in args.models:
        net = make_net(name)
        example = torch.randn(2, 3, args.size, args.size)
        b = torch.export.Dim("batch", max=max(2, *args.batches))
        fns = {}
        for label, opts in (("NCHW", None), ("NHWC", {"layout": "NHWC"})):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fns[label] = tcompile(net, (example,), dynamic_shapes=({0: b},), options=opts)
            print(f"{name}: {label} compiled in {time.perf_counter() - t0:.0f} s", flush=True)
        for n in args.batches:
            x = rng.standard_normal((n, 3, args.size, args.size), dtype=np.float32)
            with torch.no_grad():
                ref = net(torch.from_numpy(x)).numpy()
            errs = {k: float(np.abs(f.run(x) - ref).max() / np.abs(ref).max()) for k, f in fns.items()}

            def eager(x=x):
                with torch.no_grad():
                    net(torch.from_numpy(x))

            ms, load = interleaved({"NCHW": lambda x=x: fns["NCHW"].run(x), "NHWC": lambda x=x: fns["NHWC"].run(x),
                                    "eager": eager}, args.reps)
            star = "*" if load > 0.5 else ""
            print(f"{name} b{n}: NCHW {ms['NCHW']:.1f} ms, NHWC {ms['NHWC']:.1f} ms "
                  f"(NHWC/NCHW {ms['NHWC'] / ms['NCHW']:.2f}x), eager {ms['eager']:.1f} ms; "
                  f"rel err NCHW {errs['NCHW']:.1e} NHWC {errs['NHWC']:.1e}; load {load:.1f}{star}", flush=True)


if __name__ == "__main__":
    main()
