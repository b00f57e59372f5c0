"""Time one compiled matmul executable at M=16,128,512 with A/B at page offsets (1-thread CPU time)."""
import os, sys, time, statistics
os.environ.setdefault("RELAX_MLIR_NUM_THREADS", "1")
import numpy as np
from threadpoolctl import threadpool_limits
sys.path.insert(0, os.environ.get("PYTHONPATH", "."))
import relax_mlir
sys.path.insert(0, os.path.join(os.environ.get("PYTHONPATH", "."), "bench"))
from bench_kernels import single_op

def aligned(shape, off, rng):
    n = int(np.prod(shape))
    buf = np.empty(n + 4096, np.float32)
    base = buf.ctypes.data
    start = ((-base) % 4096 + off) // 4
    a = buf[start:start + n].reshape(shape)
    a[...] = rng.standard_normal(shape, dtype=np.float32)
    return a

def med(fn, n=9, inner=3):
    fn(); ts = []
    for _ in range(n):
        t0 = time.process_time()
        for _ in range(inner): fn()
        ts.append((time.process_time() - t0) / inner)
    return statistics.median(ts) * 1e3

ROUNDS = int(os.environ.get('ROUNDS', '7'))
def main():
    sym = "sym" in sys.argv
    shapes = [(512, 2048), (2048, 512)]
    if "kn1" in sys.argv: shapes = shapes[:1]
    if "kn2" in sys.argv: shapes = shapes[1:]
    ms = [16, 128, 512]
    offs = [(0, 0), (16, 64), (2048, 16)]
    rng = np.random.default_rng(0)
    print("load", os.getloadavg())
    for k, n in shapes:
        pass
        K, N = ("k", "n") if sym else (k, n)
        t0 = time.process_time()
        exe = relax_mlir.compile(single_op("matmul", [["m", K], [K, N]], ["m", N]), options={"dispatch": False})
        print(f"K={k} N={n} sym={sym} compile {time.process_time()-t0:.2f}s")
        for m in ms:
            row = []
            for oa, ob in offs:
                a = aligned((m, k), oa, rng); b = aligned((k, n), ob, rng)
                got = exe(a, b); want = a @ b
                err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                assert err < 1e-3, err
                ts, tns = [], []
                exe(a, b)
                with threadpool_limits(1):
                    for _ in range(ROUNDS):
                        ts.append(med(lambda: exe(a, b), 1, 2)); tns.append(med(lambda: a @ b, 1, 2))
                t, tn = min(ts), min(tns)
                row.append(f"A+{oa} B+{ob}: {t:.3f}/{tn:.3f}={t/tn:.2f}")
            print(f"  M={m}: " + "  ".join(row), flush=True)
    print("load", os.getloadavg())

if __name__ == "__main__":
    main()
