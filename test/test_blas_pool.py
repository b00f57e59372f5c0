"""One thread pool per process: OpenBLAS's parallel jobs on our OpenMP team
(relax_mlir/runtime/blas_pool.c, libraries.share_blas_threads)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from relax_mlir.runtime import libraries, openmp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(libraries.openmp_library() is None,
                                reason="no OpenMP runtime (intel-openmp) in this Python")

PRELUDE = r'''
import ctypes, json, os, sys
import numpy as np
from relax_mlir.runtime import openmp as L
L.init_openmp("test_blas_pool")
out = {"pools": L.shared_blas_pools}
numpy_blas = [p for p in L._loaded_openblas() if "numpy" in p]
out["numpy_blas"] = numpy_blas
if numpy_blas:
    lib = ctypes.CDLL(numpy_blas[0])
    cb = ctypes.c_void_p.in_dll(lib, "openblas_threads_callback_").value if hasattr(lib, "openblas_threads_callback_") else None
    out["callback_is_ours"] = bool(cb) and cb == ctypes.cast(L._blas_pool_library().relax_blas_pool_run, ctypes.c_void_p).value if L._blas_pool else False
    out["callback_set"] = bool(cb)
rng = np.random.default_rng(0)
errs = []
for m, k, n in ((1, 1, 1), (7, 300, 513), (256, 1024, 1024), (1023, 517, 1031)):
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((m, k)).astype(dt); b = rng.standard_normal((k, n)).astype(dt)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        errs.append(float(np.abs(a @ b - ref).max() / max(1.0, np.abs(ref).max())))
out["max_rel_err"] = max(errs)
if L._blas_pool:
    out["calls"] = ctypes.c_long.in_dll(L._blas_pool_library(), "relax_blas_pool_calls").value
    out["extra"] = ctypes.c_long.in_dll(L._blas_pool_library(), "relax_blas_pool_extra_threads").value
if os.environ.get("FORK_CHECK"):
    pid = os.fork()
    if pid == 0:   # the child's numpy runs on the child's OpenMP team (libiomp5 re-creates it)
        a = rng.standard_normal((256, 1024)).astype(np.float32); b = rng.standard_normal((1024, 1024)).astype(np.float32)
        os._exit(0 if np.allclose(a @ b, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3) else 3)
    out["child_status"] = os.waitpid(pid, 0)[1]
print("RESULT " + json.dumps(out))
'''


def _run(**env) -> dict:
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env)
    r = subprocess.run([sys.executable, "-c", PRELUDE], capture_output=True, text=True, env=e, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stdout[-2000:] + r.stderr[-3000:]
    return json.loads(lines[0][len("RESULT "):])


def _numpy_openblas_with_callback(res: dict) -> bool:
    return bool(res["numpy_blas"]) and any(res["pools"].get(p) for p in res["numpy_blas"])


@pytest.fixture(scope="module")
def shared():
    res = _run()
    if not res["numpy_blas"] or not _numpy_openblas_with_callback(res):
        pytest.skip(f"numpy's BLAS is not an OpenBLAS with openblas_set_threads_callback_function: {res['pools']}")
    return res


def test_numpy_openblas_runs_on_our_team(shared):
    assert shared["callback_is_ours"]
    assert shared["max_rel_err"] < 1e-4
    if (os.cpu_count() or 1) > 1:
        assert shared["calls"] > 0          # its threaded products came through the pool
        assert shared["extra"] == 0         # the team took every job


def test_share_blas_threads_off():
    res = _run(RELAX_MLIR_SHARE_BLAS_THREADS="0")
    assert res["pools"] == {}
    if res["numpy_blas"]:
        assert not res["callback_set"]
    assert res["max_rel_err"] < 1e-4


def test_numpy_in_a_forked_child(shared):
    assert _run(FORK_CHECK="1")["child_status"] == 0


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS runs one job per call on one core")
def test_short_team_runs_the_other_jobs_on_threads(shared):
    # a team smaller than OpenBLAS's job count (here OMP_THREAD_LIMIT=1): the jobs it cannot
    # take run on threads of their own, concurrently (OpenBLAS's level-3 jobs wait on each other)
    res = _run(OMP_THREAD_LIMIT="1")
    assert res["max_rel_err"] < 1e-4
    assert res["calls"] > 0 and res["extra"] > 0


@pytest.mark.parametrize("numjobs", [1, 2, 3, 5])
def test_pool_runs_every_job_concurrently(numjobs):
    # each job waits until all of them have started: only a pool that runs them at once passes
    libraries.init_openmp("test_blas_pool")
    pool = openmp._blas_pool_library()
    barrier = threading.Barrier(numjobs, timeout=30)
    seen, elsize = [], 16
    data = (ctypes.c_char * (elsize * numjobs))()
    DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)

    def job(thread_num, jobdata, dojob_data):
        seen.append((thread_num, (jobdata - ctypes.addressof(data)) // elsize, dojob_data))
        barrier.wait()

    cb = DOJOB(job)
    pool.relax_blas_pool_run.argtypes = [ctypes.c_int, DOJOB, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p,
                                         ctypes.c_int]
    pool.relax_blas_pool_run(1, cb, numjobs, elsize, ctypes.addressof(data), 7)
    assert sorted(seen) == [(i, i, 7) for i in range(numjobs)]
    assert not barrier.broken


def test_no_c_compiler_shares_nothing_and_compiles(tmp_path):
    # the pool is C built on first use: without a compiler OpenBLAS keeps its own workers and
    # compile() still works (dispatch off: nothing else needs the compiler)
    code = r'''
import numpy as np, relax_mlir
from relax_mlir.frontend import models
from relax_mlir.runtime import openmp as L
cfg = models.MLPConfig()
exe = relax_mlir.compile(models.mlp_module(relax_mlir.make_context(), cfg), options={"dispatch": False})
params = models.mlp_params(cfg, np.random.default_rng(0))
x = np.random.default_rng(1).standard_normal((64, cfg.d_in)).astype(np.float32)
assert np.allclose(exe(x, *params), models.mlp_reference(x, *params), rtol=1e-4, atol=1e-4)
print("RESULT", sorted(v for v in L.shared_blas_pools.values() if v), L.share_blas_threads_error is not None)
'''
    env = dict(os.environ, PYTHONPATH=ROOT, CC="/nonexistent/cc", RELAX_MLIR_CACHE=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RESULT [] True" in r.stdout, r.stdout


def test_loaded_model_shares_without_a_compiler(shared, tmp_path):
    """An exported model with threaded kernels carries its own copy of the pool: a process that
    only loads it (no compiler, empty build cache) moves numpy's OpenBLAS jobs to the model's
    OpenMP team, and numpy and the model stay right."""
    import relax_mlir
    from relax_mlir.frontend import models
    cfg = models.MLPConfig()
    so = relax_mlir.compile(models.mlp_module(relax_mlir.make_context(), cfg),
                            options={"dispatch": False}).export(tmp_path / "mlp.so")
    code = r'''
import ctypes, json, sys
import numpy as np
import relax_mlir
from relax_mlir.frontend import models
from relax_mlir.runtime import openmp as L
exe = relax_mlir.load(sys.argv[1])
cfg = models.MLPConfig()
params = models.mlp_params(cfg, np.random.default_rng(0))
x = np.random.default_rng(1).standard_normal((64, cfg.d_in)).astype(np.float32)
ok = bool(np.allclose(exe(x, *params), models.mlp_reference(x, *params), rtol=1e-4, atol=1e-4))
a = np.random.default_rng(2).standard_normal((256, 1024)).astype(np.float32)
ok = ok and bool(np.allclose(a @ a.T, a.astype(np.float64) @ a.T.astype(np.float64), rtol=1e-3, atol=1e-3))
calls = ctypes.c_long.in_dll(L._blas_pool[0], "relax_blas_pool_calls").value if L._blas_pool else -1
print("RESULT " + json.dumps({"ok": ok, "pools": L.shared_blas_pools, "calls": calls}))
'''
    empty = tmp_path / "no-cache"
    env = dict(os.environ, PYTHONPATH=ROOT, CC="/nonexistent/cc", RELAX_MLIR_CACHE=str(empty),
               XDG_CACHE_HOME=str(empty), HOME=str(empty))
    r = subprocess.run([sys.executable, "-c", code, str(so)], capture_output=True, text=True, env=env, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    res = json.loads(lines[0][len("RESULT "):])
    assert res["ok"] and not empty.exists()
    assert any(res["pools"].get(p) for p in shared["numpy_blas"])
    if (os.cpu_count() or 1) > 1:
        assert res["calls"] > 0
