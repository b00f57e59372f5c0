"""A/B of two source trees on one vision net: each tree's relax_mlir compiles the net in a worker
process of its own (bench_vision's ``--serve``, so both sides pay the same pipe round trip),
calls alternate (ABBA), and each call's wall time is kept: p10 / p25 / median ms and B/A.
Low percentiles are the readable figures on a shared 2-vCPU machine, whose load makes a
2-thread region wait for the other core at random.

    PYTHONPATH=. python bench/bench_ab_trees.py TREE_A TREE_B [--model mobilenetv2|resnet18]
                                               [--batches 1 8] [--threads 2] [--calls 60]
"""
import os, sys, time, argparse
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vision as bv
ap = argparse.ArgumentParser()
ap.add_argument("a"); ap.add_argument("b")
ap.add_argument("--model", default="mobilenetv2"); ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
ap.add_argument("--threads", type=int, default=2); ap.add_argument("--calls", type=int, default=60)
a = ap.parse_args()
args = argparse.Namespace(size=224, threads=a.threads, batches=a.batches)
A, B = bv.Baseline(a.a, a.model, args), bv.Baseline(a.b, a.model, args)
print("errs", A.err, B.err)
q = lambda v, f: sorted(v)[int(f * (len(v) - 1))]
for n in a.batches:
    ts = {"A": [], "B": []}
    calls = a.calls if n == 1 else max(10, a.calls // 4)
    A.run(n); B.run(n)
    for i in range(calls):
        for k, s in (("A", A), ("B", B)) if i % 2 == 0 else (("B", B), ("A", A)):
            t0 = time.perf_counter(); s.run(n); ts[k].append((time.perf_counter() - t0) * 1e3)
    print(f"{a.model} batch {n} threads {a.threads}: " + " ".join(
        f"{k} p10/p25/med {q(v,.1):.2f}/{q(v,.25):.2f}/{q(v,.5):.2f} ms" for k, v in ts.items()) +
        f" | B/A p10 {q(ts['B'],.1)/q(ts['A'],.1):.2f} p25 {q(ts['B'],.25)/q(ts['A'],.25):.2f} med {q(ts['B'],.5)/q(ts['A'],.5):.2f}"
        f" | load {os.getloadavg()[0]:.1f}", flush=True)
A.close(); B.close()
