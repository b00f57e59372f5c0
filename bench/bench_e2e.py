"""End-to-end benchmark: the MLP and the transformer block, compiled ONCE by relax-mlir
and run at several sizes, side by side with numpy and PyTorch eager (CPU, 2 threads) in
one run. Prints milliseconds (median of repeated runs) and ratios to PyTorch.

    .venv/bin/python bench/bench_e2e.py            # needs torch==2.13.0 (make bench installs it)
    .venv/bin/python bench/bench_e2e.py --quick    # fewer repetitions
    .venv/bin/python bench/bench_e2e.py --no-dispatch   # generated code only (no BLAS)
    .venv/bin/python bench/bench_e2e.py --passes   # plus a table with each pass switched off
    .venv/bin/python bench/bench_e2e.py --compile-profile [--no-dispatch]
        # compile only: seconds per stage and per pass (MLIR's pass timing), no run

Timings on a shared 2-core machine are noisy: the load average is printed with every
table and a figure taken with load > 0.5 is marked with '*'.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402

THREADS = 2


def timeit(fn, reps: int, min_time: float = 0.2) -> float:
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < reps or (time.perf_counter() - start < min_time and len(times) < 50 * reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def load() -> float:
    return os.getloadavg()[0]


def torch_fns():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(THREADS)
    F = torch.nn.functional

    def mlp(x, w1, b1, w2, b2):
        with torch.no_grad():
            return F.relu(x @ w1 + b1) @ w2 + b2

    def block(x, norm1, wq, wk, wv, wo, norm2, w_gate, w_up, w_down, cfg=models.BlockConfig()):
        with torch.no_grad():
            s, d = x.shape
            H, Dh = cfg.heads, cfg.head_dim

            def rms(t, g):
                return t * torch.rsqrt((t * t).mean(-1, keepdim=True) + cfg.eps) * g

            h = rms(x, norm1)
            q = (h @ wq).view(s, H, Dh).transpose(0, 1)
            k = (h @ wk).view(s, H, Dh).transpose(0, 1)
            v = (h @ wv).view(s, H, Dh).transpose(0, 1)
            mask = torch.triu(torch.full((s, s), -1e9), 1)
            p = torch.softmax(q @ k.transpose(1, 2) / Dh ** 0.5 + mask, -1)
            x1 = x + (p @ v).transpose(0, 1).reshape(s, d) @ wo
            h2 = rms(x1, norm2)
            return x1 + (F.silu(h2 @ w_gate) * (h2 @ w_up)) @ w_down

    return torch, mlp, block


def run_case(name, exe, ref, params, make_x, sizes, tfns, reps, key):
    rows = []
    for n in sizes:
        x = make_x(n)
        args = [x] + params
        got = exe(*args)
        want = ref(*args)
        err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-6))
        l0 = load()
        t_rm = timeit(lambda: exe(*args), reps)
        t_np = timeit(lambda: ref(*args), reps)
        t_pt = None
        if tfns is not None:
            torch = tfns[0]
            targs = [torch.from_numpy(a) for a in args]
            t_pt = timeit(lambda: tfns[key](*targs), reps)
        busy = max(l0, load()) > 0.5
        rows.append((name, n, t_rm, t_np, t_pt, err, busy))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--passes", action="store_true",
                    help="also time each pass switched off (fusion, dispatch, plan_memory)")
    ap.add_argument("--no-dispatch", action="store_true",
                    help="generated code only: library dispatch off (issue 12's configuration)")
    ap.add_argument("--compile-profile", action="store_true",
                    help="compile the MLP and the block once each and print where the time goes; no run")
    ap.add_argument("--top", type=int, default=12, help="--compile-profile: passes listed per model")
    ap.add_argument("--repeat", type=int, default=1,
                    help="--compile-profile: compile each model this many times, print the best of each figure")
    args = ap.parse_args()
    opts = {"dispatch": False} if args.no_dispatch else None
    if args.compile_profile:
        return compile_profile(opts, args.top, args.repeat)
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    reps = 3 if args.quick else 10
    rng = np.random.default_rng(0)
    ctx = relax_mlir.make_context()
    tfns = torch_fns()

    mcfg = models.MLPConfig()
    t0 = time.perf_counter()
    mlp_exe = relax_mlir.compile(models.mlp_module(ctx, mcfg), target="cpu", options=opts)
    t_mlp = time.perf_counter() - t0
    bcfg = models.BlockConfig()
    t0 = time.perf_counter()
    blk_exe = relax_mlir.compile(models.block_module(ctx, bcfg), target="cpu", options=opts)
    t_blk = time.perf_counter() - t0

    rows = run_case("MLP 512-2048-512", mlp_exe, models.mlp_reference, models.mlp_params(mcfg, rng),
                    lambda n: rng.standard_normal((n, mcfg.d_in)).astype(np.float32),
                    [1, 16, 128, 512], tfns, reps, 1)
    rows += run_case("block d=256 h=4 ffn=512", blk_exe, models.block_reference,
                     models.block_params(bcfg, rng),
                     lambda s: rng.standard_normal((s, bcfg.d_model)).astype(np.float32),
                     [1, 16, 128, 512], tfns, reps, 2)

    print(f"compile time: MLP {t_mlp:.2f} s, block {t_blk:.2f} s (each compiled once, run at every size)")
    print(f"load average at end: {load():.2f}; '*' = measured with load > 0.5")
    print()
    print("| model | size | relax-mlir ms | numpy ms | torch ms | relax/torch | relax/numpy | rel err |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, trm, tnp, tpt, err, busy in rows:
        mark = "*" if busy else ""
        pt = f"{tpt:.3f}" if tpt is not None else "n/a"
        ratio = f"{trm / tpt:.2f}x" if tpt else "n/a"
        print(f"| {name} | {n} | {trm:.3f}{mark} | {tnp:.3f} | {pt} | {ratio} | {trm / tnp:.2f}x | {err:.1e} |")
    if args.passes:
        pass_table(ctx, rng, mcfg, bcfg, reps)
    return 0


_TIMING_ROW = re.compile(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)(\s+)(.*\S)\s*$")


def _pass_times(report: str) -> list[tuple[str, float]]:
    """(pass, seconds) from MLIR's pass timing reports (one per stage, in order; nested
    passes as 'anchor/pass'); the reports' 'Rest' and 'Total' rows are left out."""
    out: list[tuple[str, float]] = []
    stack: list[tuple[int, str]] = []
    for line in report.splitlines():
        m = _TIMING_ROW.match(line)
        if not m:
            continue
        secs, name = float(m.group(1)), m.group(3)
        depth = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if name == "Total" or name.startswith("(A)"):
            continue
        if name.endswith(" Pipeline"):   # 'func.func' Pipeline: its passes follow, indented
            stack.append((depth, name[:-len(" Pipeline")].strip("'")))
            continue
        out.append(("/".join([s for _, s in stack] + [name]), secs))
    return out


def compile_profile(opts, top: int, repeat: int = 1) -> int:
    """Compile the MLP and the block (fresh context each, in this process, MLP first as the
    main table does) with MLIR's pass timing on, and print seconds per phase and the
    slowest passes (all stages together; a pass run twice is summed). With ``repeat`` the
    two are compiled that many times in turn and each figure is the best of its runs
    (the first compile of a process also pays one-time costs: imports, library loading)."""
    l0 = load()
    rows = []
    builds = [("MLP", lambda c: models.mlp_module(c, models.MLPConfig())),
              ("block", lambda c: models.block_module(c, models.BlockConfig()))]
    for name, build in builds * max(1, repeat):
        ctx = relax_mlir.make_context()
        t0 = time.perf_counter()
        module = build(ctx)
        t_build = time.perf_counter() - t0
        with tempfile.TemporaryFile(mode="w+") as err:   # MLIR prints its reports on fd 2
            sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(err.fileno(), 2)
            try:
                t0 = time.perf_counter()
                exe = relax_mlir.compile(module, target="cpu",
                                         options={**(opts or {}), "timing": True})
                total = time.perf_counter() - t0
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            err.seek(0)
            report = err.read()
        rows.append((name, t_build, total, exe.compile_phases, _pass_times(report)))
    print(f"compile profile ({'dispatch off' if opts else 'default options'}"
          f"{f', best of {repeat}' if repeat > 1 else ''}); load average {l0:.2f} -> {load():.2f}")
    for name, _ in builds:
        runs = [r for r in rows if r[0] == name]
        t_build, total = min(r[1] for r in runs), min(r[2] for r in runs)
        phases = {ph: min(r[3][ph] for r in runs) for ph in runs[0][3]}
        per_run = []
        for r in runs:
            summed: dict[str, float] = {}
            for p, s in r[4]:
                summed[p] = summed.get(p, 0.0) + s
            per_run.append(summed)
        passes = [(p, min(d.get(p, 0.0) for d in per_run)) for p in per_run[0]]
        print(f"\n{name}: compile {total:.2f} s (building the module: {t_build:.2f} s, not counted)")
        print("| phase | s |\n|---|---:|")
        for ph, s in phases.items():
            print(f"| {ph} | {s:.3f} |")
        summed = dict(passes)
        print(f"\n| pass (slowest {top}; all: {sum(summed.values()):.2f} s) | s |\n|---|---:|")
        for p, s in sorted(summed.items(), key=lambda kv: -kv[1])[:top]:
            print(f"| {p} | {s:.3f} |")
    return 0


SWITCHES = [("all on", {}), ("fusion off", {"fusion": False}), ("dispatch off", {"dispatch": False}),
            ("fusion + dispatch off", {"fusion": False, "dispatch": False}), ("plan-memory off", {"plan_memory": False})]


def pass_table(ctx, rng, mcfg, bcfg, reps) -> None:
    """Each pass's effect: the same model compiled with one pass switched off."""
    cases = [("MLP", lambda: models.mlp_module(ctx, mcfg), models.mlp_params(mcfg, rng), mcfg.d_in),
             ("block", lambda: models.block_module(ctx, bcfg), models.block_params(bcfg, rng), bcfg.d_model)]
    print()
    print("| model | size | " + " | ".join(f"{name} ms" for name, _ in SWITCHES) + " |")
    print("|---|---:|" + "---:|" * len(SWITCHES))
    for name, build, params, width in cases:
        exes = [relax_mlir.compile(build(), options=opts) for _, opts in SWITCHES]
        for n in [1, 16, 128, 512]:
            args = [rng.standard_normal((n, width)).astype(np.float32)] + params
            cells = []
            for _, exe in zip(SWITCHES, exes):
                t = timeit(lambda: exe(*args), reps)
                cells.append(f"{t:.3f}{'*' if load() > 0.5 else ''}")
            print(f"| {name} | {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
