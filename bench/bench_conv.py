"""Single conv2d shapes of ResNet-18 and MobileNetV2 (224x224 pyramid): ours against PyTorch
eager (oneDNN), same threads, interleaved.

    PYTHONPATH=. python bench/bench_conv.py [--batches 1 8] [--reps 5] [--threads 2]
                                            [--nets resnet18 mobilenetv2] [--only NAME...]
                                            [--no-blas] [--no-direct] [--simd avx2] [--epilogue]
                                            [--static-size]

Each distinct conv (channels, kernel, stride, padding, groups) is compiled ONCE with symbolic
batch, height and width and run at every batch: column ``generated`` is
groups 1: relax-conv-gemm's im2col + the scheduled matmul (``gemm=generated direct=off``;
depthwise: the direct kernel), ``direct`` relax-conv-gemm's direct kernel (``direct=all``:
packed weight, register tiles of output pixels x channels, no im2col), ``pointwise`` (1x1
stride-1 shapes) relax-conv-gemm's pointwise route (``pointwise=on``, the default: one batch
matmul over the images, the weight shared, no copies; the other columns run with it off),
``blas`` the same with ``cpu.CONV_GEMM_DEFAULT = "blas"`` (im2col + one BLAS GEMM
per image; groups 1 only). All sides get ``--threads`` threads (torch intra-op; our OpenMP
and BLAS). Timings: interleaved rounds, one warm-up call each, median and minimum (the
minimum is the steadier figure on a loaded machine); the highest load average seen is
printed per row (``*``: above 0.5). Ratio = ours / eager (below 1: we are faster).
``--cpu-time`` (with ``--threads 1``): each call's CPU time of the calling thread instead of
wall time (both sides then run on that thread), which a loaded machine disturbs far less
than the wall clock: time waiting for a core is not counted. ``--epilogue``: each conv
followed by a bias add ((O, 1, 1), a folded BatchNorm's shift) and a ReLU, fused into its
kernel (eager: ``relu(conv2d(x, w, b))``). ``--static-size``: the image size static, the batch
symbolic, as bench_vision exports the nets (a pointwise conv's epilogue then runs in the batch
matmul's tasks, docs/conv.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

# (name, C, O, k, stride, pad, groups, input H (= W))
RESNET18 = [
    ("r18.stem7x7s2", 3, 64, 7, 2, 3, 1, 224),
    ("r18.l1.3x3", 64, 64, 3, 1, 1, 1, 56),
    ("r18.l2.3x3s2", 64, 128, 3, 2, 1, 1, 56),
    ("r18.l2.1x1s2", 64, 128, 1, 2, 0, 1, 56),
    ("r18.l2.3x3", 128, 128, 3, 1, 1, 1, 28),
    ("r18.l3.3x3s2", 128, 256, 3, 2, 1, 1, 28),
    ("r18.l3.1x1s2", 128, 256, 1, 2, 0, 1, 28),
    ("r18.l3.3x3", 256, 256, 3, 1, 1, 1, 14),
    ("r18.l4.3x3s2", 256, 512, 3, 2, 1, 1, 14),
    ("r18.l4.1x1s2", 256, 512, 1, 2, 0, 1, 14),
    ("r18.l4.3x3", 512, 512, 3, 1, 1, 1, 7),
]
MOBILENETV2 = [
    ("mb2.stem3x3s2", 3, 32, 3, 2, 1, 1, 224),
    ("mb2.dw32", 32, 32, 3, 1, 1, 32, 112),
    ("mb2.pw32_16", 32, 16, 1, 1, 0, 1, 112),
    ("mb2.pw16_96", 16, 96, 1, 1, 0, 1, 112),
    ("mb2.dw96s2", 96, 96, 3, 2, 1, 96, 112),
    ("mb2.pw96_24", 96, 24, 1, 1, 0, 1, 56),
    ("mb2.pw24_144", 24, 144, 1, 1, 0, 1, 56),
    ("mb2.dw144", 144, 144, 3, 1, 1, 144, 56),
    ("mb2.pw144_24", 144, 24, 1, 1, 0, 1, 56),
    ("mb2.dw144s2", 144, 144, 3, 2, 1, 144, 56),
    ("mb2.pw144_32", 144, 32, 1, 1, 0, 1, 28),
    ("mb2.pw32_192", 32, 192, 1, 1, 0, 1, 28),
    ("mb2.dw192", 192, 192, 3, 1, 1, 192, 28),
    ("mb2.pw192_32", 192, 32, 1, 1, 0, 1, 28),
    ("mb2.dw192s2", 192, 192, 3, 2, 1, 192, 28),
    ("mb2.pw192_64", 192, 64, 1, 1, 0, 1, 14),
    ("mb2.pw64_384", 64, 384, 1, 1, 0, 1, 14),
    ("mb2.dw384", 384, 384, 3, 1, 1, 384, 14),
    ("mb2.pw384_64", 384, 64, 1, 1, 0, 1, 14),
    ("mb2.pw384_96", 384, 96, 1, 1, 0, 1, 14),
    ("mb2.pw96_576", 96, 576, 1, 1, 0, 1, 14),
    ("mb2.dw576", 576, 576, 3, 1, 1, 576, 14),
    ("mb2.pw576_96", 576, 96, 1, 1, 0, 1, 14),
    ("mb2.dw576s2", 576, 576, 3, 2, 1, 576, 14),
    ("mb2.pw576_160", 576, 160, 1, 1, 0, 1, 7),
    ("mb2.pw160_960", 160, 960, 1, 1, 0, 1, 7),
    ("mb2.dw960", 960, 960, 3, 1, 1, 960, 7),
    ("mb2.pw960_160", 960, 160, 1, 1, 0, 1, 7),
    ("mb2.pw960_320", 960, 320, 1, 1, 0, 1, 7),
    ("mb2.pw320_1280", 320, 1280, 1, 1, 0, 1, 7),
]
NETS = {"resnet18": RESNET18, "mobilenetv2": MOBILENETV2}


def conv_module(c: int, o: int, k: int, s: int, p: int, g: int, max_batch: int = 8, max_size: int = 224,
                epilogue: bool = False, static_size: bool = False) -> str:
    """One relax.conv2d with symbolic batch, height and width, bounded as a torch.export
    ``Dim(max=...)`` bounds them (intermediates then live in the session workspace);
    ``epilogue``: then + bias (O, 1, 1) and relu; ``static_size``: the image ``max_size`` x
    ``max_size`` static (as a net exported at one image size), the batch symbolic."""
    xt = f'tensor<?x{c}x?x?xf32, #relax.shape<["n", {c}, "h", "w"]>>'
    wt = f"tensor<{o}x{c // g}x{k}x{k}xf32>"
    yt = f"tensor<?x{o}x?x?xf32>"
    bounds = f"relax.upper_bounds = {{n = {max_batch} : i64, h = {max_size} : i64, w = {max_size} : i64}}"
    if static_size:
        h, oh = max_size, (max_size + 2 * p - k) // s + 1
        xt = f'tensor<?x{c}x{h}x{h}xf32, #relax.shape<["n", {c}, {h}, {h}]>>'
        yt = f"tensor<?x{o}x{oh}x{oh}xf32>"
        bounds = f"relax.upper_bounds = {{n = {max_batch} : i64}}"
    bt = f"tensor<{o}x1x1xf32>"
    tail = (f'  %1 = "relax.add"(%0, %b) : ({yt}, {bt}) -> {yt}\n  %2 = "relax.relu"(%1) : ({yt}) -> {yt}\n'
            f"  return %2 : {yt}\n" if epilogue else f"  return %0 : {yt}\n")
    return (f"func.func @main(%x: {xt}, %w: {wt}{f', %b: {bt}' if epilogue else ''}) -> {yt} "
            f"attributes {{relax.function, {bounds}}} {{\n"
            f'  %0 = "relax.conv2d"(%x, %w) {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}>, '
            f"groups = {g} : i64}} : ({xt}, {wt}) -> {yt}\n{tail}}}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nets", nargs="+", default=list(NETS), choices=list(NETS))
    ap.add_argument("--only", nargs="*", default=None, help="shape names (prefixes) to run")
    ap.add_argument("--no-blas", action="store_true", help="skip the BLAS route's column")
    ap.add_argument("--no-direct", action="store_true", help="skip the direct kernel's column")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time each call by the calling thread's CPU time (needs --threads 1)")
    ap.add_argument("--no-pointwise", action="store_true", help="skip the pointwise route's column")
    ap.add_argument("--simd", default=None, choices=["avx512", "avx2"],
                    help="size every side's tiles for this SIMD unit (the JIT still targets the host's "
                         "features: an AVX2-sized run on an AVX-512 host is an approximation)")
    ap.add_argument("--epilogue", action="store_true", help="conv + bias + relu, fused (eager: the same ops)")
    ap.add_argument("--static-size", action="store_true",
                    help="the image size static (the batch symbolic), as the nets are exported")
    args = ap.parse_args()
    if args.cpu_time and args.threads != 1:
        ap.error("--cpu-time measures the calling thread: use it with --threads 1")
    os.environ.setdefault("RELAX_MLIR_NUM_THREADS", str(args.threads))
    os.environ.setdefault("RELAX_BLAS_NUM_THREADS", str(args.threads))

    import torch

    import relax_mlir
    from relax_mlir.pipelines import cpu

    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    unit = "ms (CPU time)" if args.cpu_time else "ms"
    print(f"threads {args.threads}; {unit}: median (min) over interleaved rounds; ratios ours / torch eager of the "
          "medians (of the minimums); * = load average above 0.5")
    print(f"{'shape':16s} {'batch':>5s} {'GFLOP':>7s} {'generated':>16s} {'direct':>16s} {'blas':>16s} "
          f"{'eager':>16s} {'gen/eager':>12s} {'direct/eager':>12s} {'blas/eager':>12s} {'pointwise':>16s} "
          f"{'pw/eager':>12s} {'load':>5s}")
    for net in args.nets:
        for name, c, o, k, s, p, g, h in NETS[net]:
            if args.only is not None and not any(name.startswith(x) for x in args.only):
                continue
            src = conv_module(c, o, k, s, p, g, max(args.batches), h, args.epilogue, args.static_size)
            exes = {}
            options = None
            if args.simd:
                from relax_mlir.compiler import CompileOptions
                from relax_mlir.target import Target, simd_named
                options = CompileOptions(target=Target.from_options(None, simd=simd_named(args.simd)))
            for col, mode, pw in (("generated", "off", "off"), ("direct", "all", "off"), ("pointwise", "off", "on")):
                if col == "direct" and (g != 1 or args.no_direct):
                    continue
                if col == "pointwise" and (g != 1 or k != 1 or s != 1 or p != 0 or args.no_pointwise):
                    continue
                default, cpu.CONV_DIRECT_DEFAULT = cpu.CONV_DIRECT_DEFAULT, mode
                pw_default, cpu.CONV_POINTWISE_DEFAULT = cpu.CONV_POINTWISE_DEFAULT, pw
                try:
                    exes[col] = relax_mlir.compile(src, options=options)
                finally:
                    cpu.CONV_DIRECT_DEFAULT = default
                    cpu.CONV_POINTWISE_DEFAULT = pw_default
            if g == 1 and not args.no_blas:
                default, cpu.CONV_GEMM_DEFAULT = cpu.CONV_GEMM_DEFAULT, "blas"
                try:
                    exes["blas"] = relax_mlir.compile(src, options=options)
                finally:
                    cpu.CONV_GEMM_DEFAULT = default
            w = rng.standard_normal((o, c // g, k, k)).astype(np.float32)
            tw = torch.from_numpy(w)
            b = rng.standard_normal((o, 1, 1)).astype(np.float32)
            tb = torch.from_numpy(b).reshape(-1) if args.epilogue else None
            params = (w, b) if args.epilogue else (w,)

            def torch_conv(tx):
                y = torch.nn.functional.conv2d(tx, tw, tb, stride=s, padding=p, groups=g)
                return torch.relu(y) if args.epilogue else y
            for n in args.batches:
                x = rng.standard_normal((n, c, h, h)).astype(np.float32)
                tx = torch.from_numpy(x)
                with torch.no_grad():
                    want = torch_conv(tx).numpy()
                for exe in exes.values():
                    err = np.abs(exe(x, *params) - want).max() / np.abs(want).max()
                    assert err < 1e-4, (name, n, err)

                def eager():
                    with torch.no_grad():
                        torch_conv(tx)

                fns = {k: (lambda e=e: e(x, *params)) for k, e in exes.items()}
                fns["eager"] = eager
                clock = time.thread_time if args.cpu_time else time.perf_counter
                med, low, load = timed(fns, args.reps, args.min_time, clock=clock)
                oh = (h + 2 * p - k) // s + 1
                gflop = 2 * n * o * oh * oh * (c // g) * k * k / 1e9

                def cell(k):
                    return f"{med[k]:7.3f} ({low[k]:6.3f})" if k in med else f"{'-':>16s}"

                def ratio(k):
                    return (f"{med[k] / med['eager']:5.2f} ({low[k] / low['eager']:4.2f})" if k in med
                            else f"{'-':>12s}")

                mark = "*" if load > 0.5 else ""
                print(f"{name:16s} {n:5d} {gflop:7.3f} {cell('generated')} {cell('direct')} {cell('blas')} "
                      f"{cell('eager')} {ratio('generated')} {ratio('direct')} {ratio('blas')} "
                      f"{cell('pointwise')} {ratio('pointwise')} {load:4.1f}{mark}",
                      flush=True)


def timed(fns: dict, reps: int, min_time: float, max_rounds: int = 60, clock=time.perf_counter):
    """Median and minimum ms of each function by ``clock``, called one after the other per
    round (one warm-up call each), at least ``reps`` rounds and ``min_time`` seconds (wall);
    the highest load average seen."""
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    load = os.getloadavg()[0]
    start, rounds = time.perf_counter(), 0
    while rounds < reps or (time.perf_counter() - start < min_time and rounds < max_rounds):
        for k, f in fns.items():
            t0 = clock()
            f()
            times[k].append(clock() - t0)
        rounds += 1
        load = max(load, os.getloadavg()[0])
    return ({k: statistics.median(v) * 1e3 for k, v in times.items()},
            {k: min(v) * 1e3 for k, v in times.items()}, load)

if __name__ == "__main__":
    main()
