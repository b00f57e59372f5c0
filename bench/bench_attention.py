"""Decode attention kernels alone, plain loops vs the ``contraction`` schedule: the scores
``sum(q * K, -1)`` and the mix ``sum(p * V, axis=kv_len)`` at Llama 134M's shapes (G=1,
KV=12, hd=64) and KV lengths 144, 512, 2048. The per-call Python overhead is taken out:
R independent copies in one program; per kernel = (time(R copies) - time(1)) / (R - 1).

    PYTHONPATH=. python bench/bench_attention.py
"""
import os
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
import numpy as np
import relax_mlir
from test_schedules import op, program
G, KV, D = 1, 12, 64
Q, Q5, K = [1, G * KV, D], [1, G, 1, KV, D], ["p", KV, D]
M, S, P5, O = [1, G, "p", KV, D], [1, G, "p", KV], [1, G, "p", KV, 1], [1, G, KV, D]

def scores(R):
    body = []
    for i in range(R):
        body += [op(f"q5{i}", "reshape", [(f"q{i}", Q)], Q5, f" {{shape = #relax.shape<[1, {G}, 1, {KV}, {D}]>}}"),
                 op(f"m{i}", "multiply", [(f"q5{i}", Q5), ("k", K)], M),
                 op(f"s{i}", "sum", [(f"m{i}", M)], S, " {axes = array<i64: -1>}")]
    return program([(f"q{i}", Q) for i in range(R)] + [("k", K)], body, [(f"s{i}", S) for i in range(R)])

def mix(R):
    body = []
    for i in range(R):
        body += [op(f"e{i}", "expand_dims", [(f"pr{i}", S)], P5, " {axis = array<i64: 4>}"),
                 op(f"mv{i}", "multiply", [(f"e{i}", P5), ("v", K)], M),
                 op(f"o{i}", "sum", [(f"mv{i}", M)], O, " {axes = array<i64: 2>}")]
    return program([(f"pr{i}", S) for i in range(R)] + [("v", K)], body, [(f"o{i}", O) for i in range(R)])

rng = np.random.default_rng(0)
R = 16
def timeit(f):
    f()
    best = 1e9
    for _ in range(7):
        t = time.perf_counter(); [f() for _ in range(5)]; best = min(best, (time.perf_counter() - t) / 5)
    return best
for name, gen in (("scores", scores), ("mix", mix)):
    exes = {(on, r): relax_mlir.compile(gen(r), options={"dispatch": False, "schedules": on}) for on in (False, True) for r in (1, R)}
    for p in (144, 512, 2048):
        b = rng.standard_normal((p, KV, D)).astype(np.float32)
        a = [rng.standard_normal((1, KV * G, D) if name == "scores" else (1, G, p, KV)).astype(np.float32) for _ in range(R)]
        row = []
        for on in (False, True):
            t1 = timeit(lambda: exes[(on, 1)](a[0], b))
            tR = timeit(lambda: exes[(on, R)](*a, b))
            k = (tR - t1) / (R - 1)
            row.append(f"{'schedule' if on else 'loops'} {k*1e3:.4f} ms {2*G*KV*D*p/k/1e9:.2f} GFLOP/s")
        print(f"{name} p={p}: " + " | ".join(row), flush=True)
