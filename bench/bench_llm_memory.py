"""Peak RSS of ``CausalLM.from_gguf`` + generate per GGUF file, against issue 25's budget
(1.5x the file size + KV cache + 300 MB), with decode tok/s on the side.

    PYTHONPATH=. python bench/bench_llm_memory.py [--files f32 f16 q8_0 q4_1 q4_k_m]
        [--dir ~/.cache/relax-mlir/bench-gguf] [--threads 1] [--before /path/to/older/tree]

Each (file, tree) runs in its own fresh child process (``RELAX_MLIR_NUM_THREADS`` /
``RELAX_BLAS_NUM_THREADS`` = ``--threads``): the RSS after the imports, after ``from_gguf``
(``max_seq_len`` = prompt + new + 8; the compile cache as the user has it), and the peak
(VmHWM) after a 128-token prefill and 3 rounds of 32 greedy decode steps; tok/s is the best
round. ``--before``: a second tree (e.g. ``git archive`` of an older commit) whose children
run interleaved with this one's, file by file, for before/after tables. Files are the ones
``bench_llamacpp.py`` makes (run it once first).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = {"f32": "F32", "f16": "F16", "q8_0": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1", "q4_k_m": "Q4_K_M",
         "q6_k": "Q6_K"}

CHILD = r"""
import json, sys, time

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024     # MiB

import numpy as np
from relax_mlir.llm import CausalLM
path, prompt, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = {"imports": status("VmRSS")}
t0 = time.perf_counter()
lm = CausalLM.from_gguf(path, max_seq_len=prompt + new + 8)
out["load_s"] = time.perf_counter() - t0
out["loaded"], out["loaded_peak"] = status("VmRSS"), status("VmHWM")
ids = (np.arange(prompt) * 7919 % 30000 + 100).tolist()
best = 0.0
for _ in range(3):
    tok = int(np.argmax(lm.prefill(ids)))
    toks = []
    t0 = time.perf_counter()
    for _ in range(new):
        toks.append(tok)
        tok = int(np.argmax(lm.decode(tok)))
    best = max(best, new / (time.perf_counter() - t0))
out.update(tok_s=best, tokens=toks, peak=status("VmHWM"), kv=lm.cache.nbytes / 2**20)
print("@@" + json.dumps(out))
"""


def run(tree: str, path: str, args) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "RELAX_MLIR_NUM_THREADS": str(args.threads),
           "RELAX_BLAS_NUM_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads)}
    r = subprocess.run([sys.executable, "-c", CHILD, path, str(args.prompt_len), str(args.new)], env=env,
                       capture_output=True, text=True, cwd=tree)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("@@")]
    if r.returncode or not lines:
        raise RuntimeError(f"{tree} on {path} failed:\n{r.stderr[-2000:]}")
    return json.loads(lines[-1][2:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", nargs="+", default=["f32", "f16", "q8_0", "q4_1", "q4_k_m"], choices=sorted(NAMES))
    ap.add_argument("--dir", default=os.path.expanduser("~/.cache/relax-mlir/bench-gguf"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--before", help="an older tree to compare with (its children interleaved with this one's)")
    args = ap.parse_args()
    trees = ([("before", os.path.abspath(args.before))] if args.before else []) + [("after", HERE)]
    print(f"load avg {os.getloadavg()[0]:.2f}; threads {args.threads}", flush=True)
    print("| file | MB | budget MB (1.5x + KV + 300) | tree | RSS after imports | after load | peak | "
          "peak / budget | decode tok/s | load s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for f in args.files:
        path = os.path.join(args.dir, f"SmolLM2-135M-Instruct.{NAMES[f]}.gguf")
        size = os.path.getsize(path) / 2**20
        res = {}
        for name, tree in trees:
            res[name] = r = run(tree, path, args)
            budget = 1.5 * size + r["kv"] + 300
            print(f"| {NAMES[f]} | {size:.0f} | {budget:.0f} | {name} | {r['imports']:.0f} | {r['loaded']:.0f} | "
                  f"{r['peak']:.0f} | {r['peak'] / budget:.2f} | {r['tok_s']:.1f} | {r['load_s']:.1f} |", flush=True)
            time.sleep(0.5)
        if len(res) == 2 and res["before"]["tokens"] != res["after"]["tokens"]:
            print(f"  {NAMES[f]}: the greedy tokens differ between the trees", flush=True)
    print(f"load avg {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
