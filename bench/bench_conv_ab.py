"""Single conv shapes of two source trees A/B in ONE process: each tree exports the shapes as
.so files, then one process loads both and calls before, after and PyTorch eager alternately
(a loaded machine swings consecutive bench_conv.py runs 2-4x; the in-process ratio holds).

    cd BEFORE_TREE && PYTHONPATH=. python /path/bench_conv_ab.py export base mb2.dw96s2 ...
    cd AFTER_TREE  && PYTHONPATH=. python bench/bench_conv_ab.py export head mb2.dw96s2 ...
    cd AFTER_TREE  && PYTHONPATH=. python bench/bench_conv_ab.py run mb2.dw96s2 ...

Shapes by bench_conv.py's names (symbolic batch, height and width, compiled once each),
batches 1 and 8. Environment: ``T`` threads (default 2; 1: the calling thread's CPU time),
``EPI=1`` conv + bias + ReLU fused, ``REPS`` rounds (default 9, >= 50 ms per side each),
``AB_DIR`` where the .so files go (default /tmp/conv_ab). Prints markdown rows: min / median
ms of before, after and eager, the ratios, the load average."""
import os, sys, time, statistics
T = os.environ.get("T", "2")
os.environ["RELAX_MLIR_NUM_THREADS"] = T
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.getcwd() + "/bench")
import numpy as np
from bench_conv import conv_module, MOBILENETV2
EPI = os.environ.get("EPI") == "1"
DIR = os.environ.get("AB_DIR", "/tmp/conv_ab")
os.makedirs(DIR, exist_ok=True)
shapes = {s[0]: s for s in MOBILENETV2}
mode, rest = sys.argv[1], sys.argv[2:]
import relax_mlir
if mode == "export":
    tag, names = rest[0], rest[1:]
    for nm in names:
        _, c, o, k, s, p, g, h = shapes[nm]
        relax_mlir.compile(conv_module(c, o, k, s, p, g, 8, h, EPI)).export(f"{DIR}/{tag}_{nm}{'_e' if EPI else ''}.so")
    sys.exit()
import torch
torch.set_num_threads(int(T))
clock = time.thread_time if T == "1" else time.perf_counter
rng = np.random.default_rng(0)
print(f"threads {T}, {'cpu' if T == '1' else 'wall'} ms, min / median over rounds; epilogue {EPI}")
for nm in rest:
    _, c, o, k, s, p, g, h = shapes[nm]
    sfx = "_e" if EPI else ""
    exes = {t: relax_mlir.load(f"{DIR}/{t}_{nm}{sfx}.so") for t in ("base", "head")}
    w = rng.standard_normal((o, 1, k, k)).astype(np.float32); tw = torch.from_numpy(w)
    b = rng.standard_normal((o, 1, 1)).astype(np.float32); tb = torch.from_numpy(b).reshape(-1) if EPI else None
    prm = (w, b) if EPI else (w,)
    for n in (1, 8):
        x = rng.standard_normal((n, c, h, h)).astype(np.float32); tx = torch.from_numpy(x)
        def eager():
            with torch.no_grad():
                y = torch.nn.functional.conv2d(tx, tw, tb, stride=s, padding=p, groups=g)
                return torch.relu(y) if EPI else y
        want = eager().numpy()
        fns = {"base": lambda e=exes["base"]: e(x, *prm), "head": lambda e=exes["head"]: e(x, *prm), "eager": eager}
        for kk in ("base", "head"):
            got = fns[kk](); assert np.abs(got - want).max() / np.abs(want).max() < 1e-4
        ts = {kk: [] for kk in fns}
        for r in range(int(os.environ.get("REPS", "9"))):
            for kk, f in fns.items():
                f(); t0 = clock(); m = 0
                while True:
                    f(); m += 1
                    if clock() - t0 > 0.05: break
                ts[kk].append((clock() - t0) / m * 1e3)
        mn = {kk: min(v) for kk, v in ts.items()}; md = {kk: statistics.median(v) for kk, v in ts.items()}
        print(f"| {nm} | {n} | {mn['base']:.3f} / {md['base']:.3f} | {mn['head']:.3f} / {md['head']:.3f} | "
              f"{mn['eager']:.3f} / {md['eager']:.3f} | {mn['base']/mn['eager']:.2f} | {mn['head']/mn['eager']:.2f} | "
              f"{mn['head']/mn['base']:.2f} / {md['head']/md['base']:.2f} | {os.getloadavg()[0]:.1f} |", flush=True)
