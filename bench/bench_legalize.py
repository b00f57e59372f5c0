"""relax-legalize's time on two modules (after relax-infer-shapes, best of 3 each):

* ``llama``: a Llama of SmolLM2-135M's shape at 30 layers (126 ops, 69 distinct kernels);
* ``synthetic``: 1000 ops (add, exp, softmax, matmul over one shape, repeated): 4 kernels.

    .venv/bin/python bench/bench_legalize.py
    .venv/bin/python bench/bench_legalize.py --baseline /tmp/old-tree   # before/after, interleaved

``--baseline DIR``: the same modules also with the relax_mlir of another source tree (e.g. a
``git archive`` of an older commit), each measurement in a fresh process, the trees
alternating. The machine is shared: compare the ratios of one run; the load is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time
import relax_mlir
from mlir import ir
from relax_mlir.transforms.pipeline import run_pipeline
from relax_mlir.llm.model import LMConfig, LlamaModel

def llama():
    c = LMConfig(vocab_size=49152, hidden_size=576, num_layers=30, num_heads=9, num_kv_heads=3, head_dim=64,
                 intermediate_size=1536, rms_norm_eps=1e-5, max_positions=2048)
    with relax_mlir.make_context(), ir.Location.unknown():
        m = ir.Module.create()
        LlamaModel(c).build(m)
    return m

def synthetic(n=250):
    t = 'tensor<?x64xf32, #relax.shape<["n", 64]>>'
    lines = [f'func.func @f(%x: {t}, %w: tensor<64x64xf32>) -> {t} attributes {{relax.function}} {{']
    v = "%x"
    for i in range(n):
        lines += [f'  %a{i} = "relax.add"({v}, {v}) : ({t}, {t}) -> {t}',
                  f'  %e{i} = "relax.exp"(%a{i}) : ({t}) -> {t}',
                  f'  %s{i} = "relax.softmax"(%e{i}) {{axis = 1 : i64}} : ({t}) -> {t}',
                  f'  %m{i} = "relax.matmul"(%s{i}, %w) : ({t}, tensor<64x64xf32>) -> {t}']
        v = f"%m{i}"
    lines.append(f"  return {v} : {t}\n}}")
    return relax_mlir.parse("\n".join(lines), relax_mlir.make_context())

best = []
for _ in range(3):
    m = {"llama": llama, "synthetic": synthetic}[sys.argv[1]]()
    run_pipeline(m, "builtin.module(relax-infer-shapes)")
    t = time.perf_counter()
    run_pipeline(m, "builtin.module(relax-legalize)")
    best.append(time.perf_counter() - t)
print(min(best))
"""

HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run(module: str, tree: str) -> float:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", CHILD, module], env=env, capture_output=True, text=True, cwd=tree)
    if out.returncode != 0:
        raise SystemExit(f"{module} ({tree}) failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="another source tree to compare with (interleaved)")
    ap.add_argument("--modules", nargs="+", default=["llama", "synthetic"])
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for module in args.modules:
        now = run(module, HERE)
        line = f"{module:10s} relax-legalize {now * 1e3:7.1f} ms"
        if args.baseline:
            before = run(module, args.baseline)
            line += f"   baseline {before * 1e3:7.1f} ms   ratio {now / before:.2f}"
        print(line)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
