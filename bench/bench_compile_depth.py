"""Compile time and peak RSS against depth: a Llama of SmolLM2-135M's shape (hidden 576,
9 heads / 3 KV heads, inter 1536, vocab 49152) at 2/12/30/60 layers, each in a FRESH
process (peak RSS is per process), through ``CausalLM``'s compile (``compile_model``):

* ``jit``: RELAX_MLIR_CACHE_DIR=off: passes, then the ExecutionEngine (LLVM in process);
* ``cold``: an empty compile cache: passes, then export (opt + llc + cc) and load;
* ``cached``: the same cache again: build the model's module, hash it, load the entry.

    .venv/bin/python bench/bench_compile_depth.py                  # 2 12 30 60
    .venv/bin/python bench/bench_compile_depth.py --layers 30 60 --modes cold cached
    .venv/bin/python bench/bench_compile_depth.py --baseline /tmp/old-tree   # before/after

Each line: seconds for the whole compile_model call (wall, and the CPU seconds of the
process and its children: opt, llc and cc of an export), its phases, and the process's peak
RSS (MB). ``--baseline DIR``: the same configs also with the relax_mlir of another source
tree (e.g. ``git archive`` of an older commit), interleaved config by config. The machine's
load average is printed: the machine is shared, compare ratios (CPU seconds vary less).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
def cpu():
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))
t0 = time.perf_counter()
from relax_mlir.llm import causal_lm as clm
from relax_mlir.llm.model import LMConfig
L = int(sys.argv[1])
c = LMConfig(vocab_size=49152, hidden_size=576, num_layers=L, num_heads=9, num_kv_heads=3, head_dim=64,
             intermediate_size=1536, rms_norm_eps=1e-5, max_positions=2048)
c1, t1 = cpu(), time.perf_counter()
exe, _ = clm.compile_model(c)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "compile_s": t2 - t1, "cpu_s": cpu() - c1, "hit": exe.cache_hit,
                  "phases": {k: round(v, 2) for k, v in exe.compile_phases.items()},
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run(layers: int, cache: str, tree: str = HERE) -> dict:
    env = dict(os.environ, RELAX_MLIR_CACHE_DIR=cache, PYTHONPATH=tree)
    # cwd: `python -c` puts the working directory first on sys.path, before PYTHONPATH
    out = subprocess.run([sys.executable, "-c", CHILD, str(layers)], env=env, capture_output=True, text=True,
                         cwd=tree)
    if out.returncode != 0:
        raise SystemExit(f"{layers} layers failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, nargs="+", default=[2, 12, 30, 60])
    ap.add_argument("--modes", nargs="+", default=["jit", "cold", "cached"], choices=["jit", "cold", "cached"])
    ap.add_argument("--baseline", metavar="DIR", help="also run the relax_mlir of this source tree, interleaved")
    args = ap.parse_args()
    trees = [("this", HERE)] + ([("base", os.path.abspath(args.baseline))] if args.baseline else [])
    print(f"cores {os.cpu_count()}, load average at start {os.getloadavg()[0]:.1f}")
    print(f"{'tree':>5} {'layers':>6} {'mode':>6} {'wall s':>7} {'CPU s':>6} {'RSS MB':>7}  phases")
    for L in args.layers:
        for name, tree in trees:
            with tempfile.TemporaryDirectory(prefix="relax-bench-cache-") as d:
                for mode in args.modes:
                    r = run(L, "off" if mode == "jit" else d, tree)
                    print(f"{name:>5} {L:>6} {mode:>6} {r['compile_s']:7.2f} {r['cpu_s']:6.2f} {r['rss_mb']:7.0f}  "
                          f"{r['phases']}", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
