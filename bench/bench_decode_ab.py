"""Decode tok/s, prefill time and peak RSS of two source trees on one GGUF file, one thread,
alternated in fresh processes (before/after a change on a loaded machine):

    python bench/bench_decode_ab.py FILE.gguf TREE_A TREE_B [ROUNDS]

Each child loads the file with ``CausalLM.from_gguf`` (the compile cache on), prefills 128
random tokens, times 32 greedy decode steps (wall and CPU), then the best of 3 prefills;
prints whether the greedy tokens of the two trees are equal and each tree's best."""
import json, os, subprocess, sys, time
CHILD = r'''
import json, os, sys, time, resource
import numpy as np
from relax_mlir.llm import CausalLM
path = sys.argv[1]
t0 = time.perf_counter()
lm = CausalLM.from_gguf(path, max_seq_len=512)
load = time.perf_counter() - t0
ids = list(np.random.default_rng(0).integers(0, lm.config.vocab_size, 128))
logits = lm.prefill(ids)
tok = int(np.argmax(logits)); toks = []
c0, w0 = time.process_time(), time.perf_counter()
for _ in range(32):
    toks.append(tok)
    tok = int(np.argmax(lm.decode(tok)))
w, c = time.perf_counter() - w0, time.process_time() - c0
pre, pre_cpu = [], []
for _ in range(3):
    t1, c1 = time.perf_counter(), time.process_time(); lm.prefill(ids)
    pre.append(time.perf_counter() - t1); pre_cpu.append(time.process_time() - c1)
pre, pre_cpu = min(pre), min(pre_cpu)
print(json.dumps({"tok_s": 32 / w, "tok_cpu_s": 32 / c, "prefill_ms": pre * 1e3, "prefill_cpu_ms": pre_cpu * 1e3, "load_s": load, "tokens": toks,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''
path, trees, rounds = sys.argv[1], sys.argv[2:4], int(sys.argv[4]) if len(sys.argv) > 4 else 3
print("load", os.getloadavg()[0])
res = {t: [] for t in trees}
for r in range(rounds):
    for t in trees:
        env = dict(os.environ, PYTHONPATH=t, RELAX_MLIR_NUM_THREADS="1", OMP_NUM_THREADS="1")
        out = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True, cwd=t)
        if out.returncode:
            print(out.stderr[-3000:]); sys.exit(1)
        d = json.loads(out.stdout.strip().splitlines()[-1])
        res[t].append(d)
        print(r, t, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in d.items() if k != "tokens"}, flush=True)
print("tokens equal:", res[trees[0]][0]["tokens"] == res[trees[1]][0]["tokens"])
for t in trees:
    print(t, "best tok/s", max(d["tok_s"] for d in res[t]), "best tok/CPU-s", max(d["tok_cpu_s"] for d in res[t]),
          "best prefill ms", min(d["prefill_ms"] for d in res[t]), "best prefill CPU ms", min(d["prefill_cpu_ms"] for d in res[t]))
print("load", os.getloadavg()[0])
