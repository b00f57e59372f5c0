import os, sys, time
os.environ["RELAX_MLIR_NUM_THREADS"] = "1"
import numpy as np
from threadpoolctl import threadpool_limits
sys.path.insert(0, os.environ["PYTHONPATH"]); sys.path.insert(0, os.environ["PYTHONPATH"] + "/bench"); sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir
from bench_kernels import single_op
from pgoff import aligned
rng = np.random.default_rng(0)
print("load", os.getloadavg())
for k, n in ((512, 2048), (2048, 512)):
    exes = {}
    for mode in ("", "ab"):
        os.environ["PACK"] = mode; os.environ["HOIST"] = "22"
        exes[mode or "-"] = relax_mlir.compile(single_op("matmul", [["m", k], [k, n]], ["m", n]), options={"dispatch": False})
    for m in (16, 128, 512):
        for oa, ob in ((0, 0), (16, 64)):
            a = aligned((m, k), oa, rng); b = aligned((k, n), ob, rng)
            res = {key: [] for key in list(exes) + ["np"]}
            with threadpool_limits(1):
                for r in range(int(os.environ.get("ROUNDS", 15))):
                    for key, e in exes.items():
                        t0 = time.process_time(); e(a, b); e(a, b); res[key].append((time.process_time() - t0) / 2)
                    t0 = time.process_time(); a @ b; a @ b; res["np"].append((time.process_time() - t0) / 2)
            mn = {key: min(v) * 1e3 for key, v in res.items()}
            print(f"K={k} N={n} M={m} A+{oa} B+{ob}: " + " ".join(f"{key} {v:.3f}" for key, v in mn.items())
                  + f"  ratio unpacked {mn['-']/mn['np']:.2f} packed {mn['ab']/mn['np']:.2f}", flush=True)
print("load", os.getloadavg())
