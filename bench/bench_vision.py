"""CNNs through the torch.export importer against PyTorch eager and ONNX Runtime (issue 28).

    PYTHONPATH=. python bench/bench_vision.py [--size 224] [--batches 1 8] [--models resnet18 mobilenetv2]
                                              [--convs] [--no-nets] [--reps 5] [--threads 2] [--no-ort]

- ``resnet18``: a ResNet-18-shaped net written here in plain ``torch.nn`` (torchvision is not
  needed): 7x7/2 stem + BatchNorm + ReLU + 3x3/2 max pool, four stages of two basic blocks
  (64, 128, 256, 512 channels; strided 1x1 conv + BatchNorm shortcuts), adaptive average pool,
  a 1000-way linear head. Random init, ``eval()`` (BatchNorm with running statistics).
- ``mobilenetv2``: a MobileNetV2-shaped net: 3x3/2 stem, inverted residual blocks (1x1 expand,
  depthwise 3x3, 1x1 project, ReLU6, residual add where the shape allows), the 1x1 to 1280
  head, adaptive average pool, dropout (inactive in eval), linear.
- ``--convs``: single conv2d shapes from both nets, ours against eager (batch ``--batches``).
- ``--baseline DIR``: also the relax_mlir of another source tree (``git archive main | tar -x
  -C DIR``), compiled the same way in a worker process and timed interleaved with the rest
  (column ``before``).
- ``--lift``: where relax-lift-params' work goes (issue 28): per net and batch, the bound call
  (``@main`` alone), the weights' transform alone, and a plain call ``exe["main"](x, *weights)``
  (both), interleaved; with ``--baseline`` the same three of the other tree (its worker's
  round trip) in the same rounds.
- ``--pools``: the nets' pooling layers (3x3/2 max pool, a 3x3/2 average pool of the same
  size, the adaptive average pools of the heads), ours against eager.

Ours: the model exported ONCE with a dynamic batch (``torch.export.Dim``), imported and
compiled ONCE; every batch runs through that executable (parameters bound once). ONNX Runtime:
ONE session exported with the same dynamic batch axis. Every side gets ``--threads`` threads
(torch's intra-op threads, our kernels' OpenMP/BLAS threads, ORT's ``intra_op_num_threads``);
calls interleaved per round, median over rounds (``bench_peers.interleaved``); figures measured
with load average > 0.5 are marked ``*``. ``--size`` shrinks the images for quick runs (the
spatial sizes of the single-conv shapes scale with it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)


# -- the nets (plain torch.nn) -------------------------------------------------------------------

def _nets():
    import torch
    from torch import nn

    def conv_bn(cin, cout, k, s, act=None, groups=1):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act())
        return nn.Sequential(*layers)

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(conv_bn(cin, cout, 3, stride, nn.ReLU), conv_bn(cout, cout, 3, 1))
            self.short = (conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.short(x))

    class ResNet18(nn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hid = cin * expand
            layers = [conv_bn(cin, hid, 1, 1, nn.ReLU6)] if expand != 1 else []
            layers += [conv_bn(hid, hid, 3, stride, nn.ReLU6, groups=hid), conv_bn(hid, cout, 1, 1)]
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    class MobileNetV2(nn.Module):
        SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1))

        def __init__(self, classes=1000):
            super().__init__()
            layers, cin = [conv_bn(3, 32, 3, 2, nn.ReLU6)], 32
            for t, c, n, s in self.SETTINGS:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers.append(conv_bn(cin, 1280, 1, 1, nn.ReLU6))
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

        def forward(self, x):
            return self.head(torch.flatten(self.pool(self.features(x)), 1))

    return {"resnet18": ResNet18, "mobilenetv2": MobileNetV2}


def make_net(name: str):
    """The named net, random init with non-trivial BatchNorm statistics, in eval mode."""
    import torch

    torch.manual_seed(0)
    net = _nets()[name]()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return net.eval()


#: conv2d shapes of the nets at 224x224: (name, cin, cout, kernel, stride, input size, groups)
CONVS = [
    ("r18 stem 7x7/2", 3, 64, 7, 2, 224, 1),
    ("r18 3x3 64", 64, 64, 3, 1, 56, 1),
    ("r18 3x3/2 64->128", 64, 128, 3, 2, 56, 1),
    ("r18 1x1/2 64->128", 64, 128, 1, 2, 56, 1),
    ("r18 3x3 128", 128, 128, 3, 1, 28, 1),
    ("r18 3x3 256", 256, 256, 3, 1, 14, 1),
    ("r18 3x3 512", 512, 512, 3, 1, 7, 1),
    ("mv2 stem 3x3/2", 3, 32, 3, 2, 224, 1),
    ("mv2 dw3x3 32", 32, 32, 3, 1, 112, 32),
    ("mv2 1x1 16->96", 16, 96, 1, 1, 112, 1),
    ("mv2 dw3x3/2 96", 96, 96, 3, 2, 112, 96),
    ("mv2 1x1 144->24", 144, 24, 1, 1, 56, 1),
    ("mv2 dw3x3 576", 576, 576, 3, 1, 14, 576),
    ("mv2 1x1 320->1280", 320, 1280, 1, 1, 7, 1),
]


# -- sides ----------------------------------------------------------------------------------------

def compile_ours(model, example, max_batch: int, fold: bool = True):
    """torch.export with a dynamic batch, import, compile once: (CompiledModule, seconds).
    ``fold=False``: without relax-fold-batch-norm (taken out of the pass table for this
    compile), for the ``--fold-ab`` column."""
    import torch

    from relax_mlir.frontend.torch import compile as tcompile
    from relax_mlir.transforms import PASSES

    if not fold:
        saved = PASSES.pop("relax-fold-batch-norm")
        try:
            return compile_ours(model, example, max_batch)
        finally:
            PASSES["relax-fold-batch-norm"] = saved

    b = torch.export.Dim("batch", max=max_batch)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = tcompile(model, (example,), dynamic_shapes=({0: b},))
    return fn, time.perf_counter() - t0


class Baseline:
    """Another source tree's relax_mlir (``--baseline DIR``, e.g. ``git archive`` of main) in a
    worker process of its own, compiled the same way; ``run(n)`` runs it once on batch ``n``'s
    input (the worker keeps the inputs) and the caller's clock times the round trip (a pipe
    message: microseconds), so it interleaves with the other sides like a local call."""

    def __init__(self, tree: str, name: str, args):
        import subprocess
        cmd = [sys.executable, os.path.abspath(__file__), "--serve", name, "--baseline", tree,
               "--size", str(args.size), "--threads", str(args.threads), "--batches", *map(str, args.batches)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.err = {}
        for n in args.batches:   # "n err" lines once compiled
            k, e = self.proc.stdout.readline().split()
            self.err[int(k)] = float(e)

    def run(self, n: int, what: str = "bound") -> None:
        """Batch ``n`` once: the bound call, or (``--lift``) ``transform`` (the weights'
        transform alone) or ``plain`` (``exe["main"](x, *weights)``)."""
        self.proc.stdin.write(f"{n} {what}\n")
        self.proc.stdout.readline()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def serve(args) -> None:
    """The worker of :class:`Baseline`: compile net ``args.serve`` with the relax_mlir of
    ``args.baseline``, print each batch's rel err, then run batch ``n`` for each line ``n``."""
    sys.path.insert(0, os.path.abspath(args.baseline))
    import torch

    net = make_net(args.serve)
    fn, _ = compile_ours(net, torch.randn(2, 3, args.size, args.size), max(args.batches + [2]))
    xs = {}
    for bsz in args.batches:
        x = torch.randn(bsz, 3, args.size, args.size, generator=torch.Generator().manual_seed(bsz))
        with torch.no_grad():
            ref = net(x).numpy()
        xs[bsz] = x.numpy()
        err = float(np.abs(np.asarray(fn.run(xs[bsz])) - ref).max() / max(1e-30, float(np.abs(ref).max())))
        print(bsz, err, flush=True)
    main = fn.exe["main"]
    transform = fn.exe["main_transform_params"] if "main_transform_params" in fn.exe.functions else None
    for line in sys.stdin:
        n, what = line.split()
        if what == "transform" and transform is not None:
            transform(*fn.params)
        elif what == "plain":
            main(xs[int(n)], *fn.params)
        else:
            fn.run(xs[int(n)])
        print("done", flush=True)


def bench_nets(args, tmp: str) -> None:
    import torch

    from bench_peers import interleaved, mark, ort_available, ort_session, ort_version

    why = None if args.ort else "--no-ort"
    why = why or ort_available()
    rows = []
    notes = []
    for name in args.models:
        net = make_net(name)
        example = torch.randn(2, 3, args.size, args.size)
        fn, cs = compile_ours(net, example, max(args.batches + [2]))
        notes.append(f"{name}: ours compiled once in {cs:.1f} s (export + import + compile, dynamic batch)")
        nofold = compile_ours(net, example, max(args.batches + [2]), fold=False)[0] if args.fold_ab else None
        base = Baseline(args.baseline, name, args) if args.baseline else None
        if base is not None:
            notes.append(f"{name}: 'before' = the relax_mlir of {args.baseline}, compiled the same way in a worker "
                         "process, timed round trip from here")
        sess = None
        if why is None:
            b = torch.export.Dim("batch", max=max(args.batches + [2]))
            sess, es = ort_session(net, (example,), ({0: b},), ["x"], os.path.join(tmp, f"{name}.onnx"),
                                   args.threads, False)
            notes.append(f"{name}: ORT {ort_version()} exported once in {es:.1f} s (dynamic batch), 1 session")
        for bsz in args.batches:
            x = torch.randn(bsz, 3, args.size, args.size, generator=torch.Generator().manual_seed(bsz))
            xn = x.numpy()

            def eager(x=x):
                with torch.no_grad():
                    return net(x).numpy()

            fns = {"ours": lambda xn=xn: fn.run(xn), "eager": eager}
            if nofold is not None:
                fns["ours, no BN fold"] = lambda xn=xn: nofold.run(xn)
            if base is not None:
                fns["before"] = lambda bsz=bsz: base.run(bsz)
            if sess is not None:
                fns["ORT"] = lambda xn=xn: sess.run(None, {"x": xn})[0]
            ref = eager()
            err = {k: float(np.abs(np.asarray(f()) - ref).max() / max(1e-30, float(np.abs(ref).max())))
                   for k, f in fns.items() if k not in ("eager", "before")}
            if base is not None:
                err["before"] = base.err[bsz]
            ms, load = interleaved(fns, args.reps, min_time=args.min_time, max_rounds=max(args.reps, 20))
            rows.append((name, bsz, ms, load, err))
            if nofold is not None:
                print(f"{name} batch {bsz}: ours {ms['ours']:.2f} ms, without relax-fold-batch-norm "
                      f"{ms['ours, no BN fold']:.2f} ms (load {load:.2f})", flush=True)
        if base is not None:
            base.close()
    if why is not None:
        notes.append(f"ORT skipped: {why}")
    header(args, notes)
    if args.baseline:
        print("| net | batch | before ms | ours ms | eager ms | ORT ms | before/eager | ours/eager | before/ORT "
              "| ours/ORT | ours/before | max rel err before, ours, ORT |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    else:
        print("| net | batch | ours ms | eager ms | ORT ms | ours/eager | ours/ORT | max rel err ours, ORT |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, bsz, ms, load, err in rows:
        o, e, r = ms["ours"], ms["eager"], ms.get("ORT")
        ort_err = "n/a" if "ORT" not in err else format(err["ORT"], ".1e")
        if args.baseline:
            b = ms["before"]
            print(f"| {name} | {bsz} | {mark(b, load)} | {mark(o, load)} | {mark(e, load)} | {mark(r, load)} | "
                  f"{b / e:.2f}x | {o / e:.2f}x | {'n/a' if r is None else f'{b / r:.2f}x'} | "
                  f"{'n/a' if r is None else f'{o / r:.2f}x'} | {o / b:.2f}x | "
                  f"{err['before']:.1e}, {err['ours']:.1e}, {ort_err} |")
            continue
        print(f"| {name} | {bsz} | {mark(o, load)} | {mark(e, load)} | {mark(r, load)} | {o / e:.2f}x | "
              f"{'n/a' if r is None else f'{o / r:.2f}x'} | {err['ours']:.1e}, {ort_err} |")
    print()


def bench_convs(args) -> None:
    import torch

    from bench_peers import interleaved, mark

    rows = []
    for label, cin, cout, k, s, h, g in CONVS:
        h = max(k, round(h * args.size / 224))
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False).eval()
        fn, cs = compile_ours(conv, torch.randn(2, cin, h, h), max(args.batches + [2]))
        for bsz in args.batches:
            x = torch.randn(bsz, cin, h, h)
            xn = x.numpy()

            def eager(x=x):
                with torch.no_grad():
                    return conv(x).numpy()

            ref = eager()
            got = fn.run(xn)
            err = float(np.abs(got - ref).max() / max(1e-30, float(np.abs(ref).max())))
            ms, load = interleaved({"ours": lambda xn=xn: fn.run(xn), "eager": eager}, args.reps,
                                   min_time=args.min_time / 2, max_rounds=max(args.reps, 20))
            ho = (h + 2 * (k // 2) - k) // s + 1
            gflop = 2 * bsz * cout * ho * ho * (cin // g) * k * k / 1e9
            rows.append((label, f"{bsz}x{cin}x{h}x{h}", ms, load, err, gflop, cs))
    print("Single conv2d shapes (no bias), ours vs PyTorch eager (oneDNN); one executable per shape, "
          "dynamic batch")
    print()
    print("| conv | input | ours ms | eager ms | ours/eager | ours GFLOP/s | eager GFLOP/s | rel err | compile s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, shape, ms, load, err, gf, cs in rows:
        o, e = ms["ours"], ms["eager"]
        print(f"| {label} | {shape} | {mark(o, load)} | {mark(e, load)} | {o / e:.2f}x | {gf / o * 1e3:.1f} | "
              f"{gf / e * 1e3:.1f} | {err:.1e} | {cs:.1f} |")
    print()


#: pooling layers of the nets at 224x224: (name, module factory, channels, input size)
POOLS = [
    ("r18 max 3x3/2 p1", lambda nn: nn.MaxPool2d(3, 2, 1), 64, 112),
    ("avg 3x3/2 p1", lambda nn: nn.AvgPool2d(3, 2, 1), 64, 112),
    ("r18 adaptive avg (1, 1)", lambda nn: nn.AdaptiveAvgPool2d((1, 1)), 512, 7),
    ("mv2 adaptive avg 1", lambda nn: nn.AdaptiveAvgPool2d(1), 1280, 7),
]


def bench_pools(args) -> None:
    import torch

    from bench_peers import interleaved, mark

    rows = []
    for label, make, c, h in POOLS:
        h = max(3, round(h * args.size / 224))
        mod = make(torch.nn).eval()
        fn, _ = compile_ours(mod, torch.randn(2, c, h, h), max(args.batches + [2]))
        for bsz in args.batches:
            x = torch.randn(bsz, c, h, h)
            xn = x.numpy()

            def eager(x=x):
                return mod(x).numpy()

            ref = eager()
            err = float(np.abs(fn.run(xn) - ref).max())
            ms, load = interleaved({"ours": lambda xn=xn: fn.run(xn), "eager": eager}, args.reps,
                                   min_time=args.min_time / 2, max_rounds=max(args.reps, 30))
            rows.append((label, f"{bsz}x{c}x{h}x{h}", ms, load, err))
    print("Pooling layers, ours vs PyTorch eager; one executable per layer, dynamic batch")
    print()
    print("| pooling | input | ours ms | eager ms | ours/eager | max abs diff |")
    print("|---|---|---:|---:|---:|---:|")
    for label, shape, ms, load, err in rows:
        print(f"| {label} | {shape} | {mark(ms['ours'], load)} | {mark(ms['eager'], load)} | "
              f"{ms['ours'] / ms['eager']:.2f}x | {err:.1e} |")
    print()


def header(args, notes: list[str]) -> None:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"{cpu}; {args.threads} threads; images {args.size}x{args.size}; load average "
          f"{os.getloadavg()[0]:.2f} at end ('*': measured with load > 0.5); "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    for n in notes:
        print(f"- {n}")
    print()


def bench_lift(args) -> None:
    """``--lift``: the bound call, ``@main_transform_params`` alone and a plain call per net and batch."""
    import torch

    from bench_peers import interleaved

    cols = ["bound", "transform", "plain"] + (["before bound", "before transform", "before plain"]
                                               if args.baseline else [])
    print("| net | weights (M) | transformed (M) | batch | " + " | ".join(f"{c} ms" for c in cols) + " | load |")
    print("|---|---:|---:|---:|" + "---:|" * len(cols) + "---:|")
    for name in args.models:
        net = make_net(name)
        fn, _ = compile_ours(net, torch.randn(2, 3, args.size, args.size), max(args.batches + [2]))
        main, transform = fn.exe["main"], fn.exe["main_transform_params"]
        bound = main.bind_params(*fn.params)
        nw = sum(p.size for p in fn.params) / 1e6
        nt = sum(a.size for a in bound.transformed) / 1e6
        base = Baseline(args.baseline, name, args) if args.baseline else None
        for b in args.batches:
            x = np.random.default_rng(b).standard_normal((b, 3, args.size, args.size)).astype(np.float32)
            fns = {"bound": lambda: bound(x), "transform": lambda: transform(*fn.params),
                   "plain": lambda: main(x, *fn.params)}
            if base is not None:
                for what in ("bound", "transform", "plain"):
                    fns[f"before {what}"] = lambda b=b, what=what: base.run(b, what)
            ms, load = interleaved(fns, args.reps, args.min_time)
            mark = "*" if load > 0.5 else ""
            print(f"| {name} | {nw:.2f} | {nt:.2f} | {b} | " + " | ".join(f"{ms[c]:.2f}{mark}" for c in cols)
                  + f" | {load:.1f} |", flush=True)
        if base is not None:
            base.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=224, help="image height and width (224; e.g. 64 for quick runs)")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--models", nargs="+", default=["resnet18", "mobilenetv2"], choices=["resnet18", "mobilenetv2"])
    ap.add_argument("--convs", action="store_true", help="also time the single conv2d shapes of both nets")
    ap.add_argument("--pools", action="store_true", help="also time the pooling layers of both nets")
    ap.add_argument("--no-nets", dest="nets", action="store_false", help="skip the whole nets")
    ap.add_argument("--lift", action="store_true",
                    help="also time the bound call, the weights' transform and a plain call (relax-lift-params)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds of interleaved rounds per row at least")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-ort", dest="ort", action="store_false")
    ap.add_argument("--fold-ab", action="store_true",
                    help="also time ours compiled without relax-fold-batch-norm (interleaved)")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="also time the relax_mlir of another source tree (e.g. git archive of main), interleaved")
    ap.add_argument("--serve", default=None, help=argparse.SUPPRESS)   # the --baseline worker
    args = ap.parse_args()

    # the same thread count everywhere: ours reads it when an executable is created
    os.environ.setdefault("RELAX_MLIR_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    if args.serve:
        serve(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        if args.nets:
            bench_nets(args, tmp)
        if not args.nets and (args.convs or args.pools):
            header(args, [])
        if args.convs:
            bench_convs(args)
        if args.pools:
            bench_pools(args)
        if args.lift:
            bench_lift(args)


if __name__ == "__main__":
    main()
