"""Our OpenMP threads: the wait policy and dynamic team sizes set when the runtime loads
(bench/bench_contention.py), the thread count read at run time (relax-omp-threads), and the
work threshold under which a parallel region stays on the calling thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from relax_mlir.runtime.libraries import default_threads, env_threads
from relax_mlir.backends.cpu import apply_schedules
from relax_mlir.backends.cpu.apply_schedules import openmp_libraries, openmp_wait_policy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_OPENMP = pytest.mark.skipif(not apply_schedules.openmp_library(),
                               reason="no OpenMP runtime (libiomp5) in this environment")


def test_blocktime_default_and_user_value(monkeypatch):
    monkeypatch.setenv("KMP_BLOCKTIME", "")   # records the original value for the teardown
    monkeypatch.delenv("KMP_BLOCKTIME")
    openmp_wait_policy()
    assert os.environ["KMP_BLOCKTIME"] == "1"
    monkeypatch.setenv("KMP_BLOCKTIME", "200")
    openmp_wait_policy()
    assert os.environ["KMP_BLOCKTIME"] == "200"


@NO_OPENMP
def test_linked_when_a_runtime_is_installed_whatever_the_count(monkeypatch):
    """The compiled code does not depend on RELAX_MLIR_NUM_THREADS (read at run time): the
    runtime is linked whenever it is installed and the schedules are on."""
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "1")
    monkeypatch.setattr(apply_schedules, "openmp_library", lambda: "/x/libiomp5.so")
    assert openmp_libraries({"schedules": True}) == ["/x/libiomp5.so"]
    assert openmp_libraries({"schedules": "false"}) == []
    assert os.environ["KMP_BLOCKTIME"] == "1"
    monkeypatch.setattr(apply_schedules, "openmp_library", lambda: None)
    assert openmp_libraries({"schedules": True}) == []


@pytest.mark.parametrize("raw, want", [("", None), ("0", None), ("-3", None), ("3", 3), (" 7 ", 7), ("two", 1)])
def test_env_threads(monkeypatch, raw, want):
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", raw)
    assert env_threads() == (default_threads() if want is None else want)


RUN_TIME_COUNT = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import relax_mlir
from test_schedules import program, op
K, N = 512, 2048          # B: 4 MB, above the 1 MiB threshold
src = program([("a", ["m", K]), ("b", [K, N])], [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])],
              [("r", ["m", N])])
exe = relax_mlir.compile(src, options={"dispatch": False})
small = relax_mlir.compile(program([("x", ["m", 1024])], [op("r", "relu", [("x", ["m", 1024])], ["m", 1024])],
                                   [("r", ["m", 1024])]), options={"dispatch": False})
tasks = lambda: len(os.listdir("/proc/self/task"))
a, b, x = np.ones((1, K), np.float32), np.ones((K, N), np.float32), np.ones((8, 1024), np.float32)
base = tasks()
out = {"env": [os.environ.get("OMP_DYNAMIC"), os.environ.get("KMP_DYNAMIC_MODE")],
       "regions": [exe.llvm_dialect_text().count("omp.parallel"), small.llvm_dialect_text().count("omp.parallel")]}
small.num_threads = 3
small(x)                  # 64 KB: below the threshold, no worker started
out["small"] = tasks() - base
exe.num_threads = 1
exe(a, b)
out["one"] = tasks() - base
exe.num_threads = 3       # more threads than cores: OpenMP starts 2 workers
out["ok"] = bool(np.array_equal(exe(a, b), np.full((1, N), K, np.float32)))
out["three"] = tasks() - base
import ctypes
from relax_mlir.runtime import libraries
out["dynamic"] = libraries._wheel_handles["libiomp5.so"].omp_get_dynamic()
print(json.dumps(out))
"""


def _run_time_count(**env) -> dict:
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_DYNAMIC", "KMP_DYNAMIC_MODE", "KMP_BLOCKTIME", "RELAX_MLIR_DYNAMIC_THREADS")}
    r = subprocess.run([sys.executable, "-c", RUN_TIME_COUNT, os.path.join(ROOT, "test")], capture_output=True,
                       text=True, env=dict(base, PYTHONPATH=ROOT, RELAX_MLIR_NUM_THREADS="1", **env), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@NO_OPENMP
def test_thread_count_read_at_run_time():
    """Compiled with RELAX_MLIR_NUM_THREADS=1, an executable set to 3 threads runs its GEMV
    (4 MB) on 3 (OpenMP starts exactly 2 workers: fixed team sizes, the default, so the
    machine's load does not decide); a 64 KB kernel set to 3 threads starts none. The matmul
    holds five parallel regions: its GEMV (M <= 1, M = 2-3), small-M (M <= 16),
    register-tiled and packed-B (M >= 40) variants."""
    assert _run_time_count() == {"env": [None, None], "regions": [5, 1], "small": 0,
                                 "one": 0, "ok": True, "three": 2, "dynamic": 0}


@NO_OPENMP
def test_dynamic_team_sizes_opt_in():
    """RELAX_MLIR_DYNAMIC_THREADS=1 starts libiomp5 with dynamic team sizes (load balance: a
    region gets only the cores nobody else is running on), and OMP_DYNAMIC is not left in the
    environment (libgomp, PyTorch's runtime, reads it too); results are unchanged."""
    out = _run_time_count(RELAX_MLIR_DYNAMIC_THREADS="1")
    assert (out["env"], out["dynamic"], out["small"], out["one"], out["ok"]) == ([None, "load_balance"], 1, 0, 0,
                                                                                   True)


@NO_OPENMP
def test_user_omp_dynamic_kept():
    """An OMP_DYNAMIC the user set is what libiomp5 reads, and it stays in the environment."""
    out = _run_time_count(OMP_DYNAMIC="true")
    assert (out["env"][0], out["dynamic"], out["ok"]) == ("true", 1, True)


ONE_RUNTIME = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import relax_mlir
from relax_mlir.runtime import aot
from test_schedules import program, op
K, N = 64, 48
src = program([("a", ["m", K]), ("b", [K, N])], [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])],
              [("r", ["m", N])])
rng = np.random.default_rng(0)
a, b = rng.standard_normal((5, K), np.float32), rng.standard_normal((K, N), np.float32)
if sys.argv[2] == "compile":
    exe = relax_mlir.compile(src, options={"schedules": False})   # no threaded kernel: MKL alone loads a runtime
    out = {"blas": exe.metadata.get("blas")}
    exe.export(sys.argv[3])
else:
    exe = relax_mlir.load(sys.argv[3])
    with open(sys.argv[3], "rb") as f:
        out = {"openmp": aot._check_trailer(sys.argv[3], f.read())[2]["openmp"]}
out["ok"] = bool(np.allclose(exe(a, b), a @ b, rtol=1e-4, atol=1e-4))
maps = open("/proc/self/maps").read()
out.update(iomp="libiomp5" in maps, gomp="libgomp" in maps, blocktime=os.environ.get("KMP_BLOCKTIME"))
print(json.dumps(out))
"""


@NO_OPENMP
@pytest.mark.parametrize("runtime", ["iomp", "gomp"])
def test_mkl_on_our_openmp_runtime(runtime, tmp_path):
    """The MKL shim runs MKL on libiomp5, the runtime of our kernels, loaded with our wait
    policy even when no kernel of the module is threaded (one team of threads in the
    process, no libgomp), in the JIT and in an exported model, which records the runtime
    as its dependency; ``RELAX_BLAS_OPENMP=gomp`` keeps MKL's GNU layer on libgomp."""
    from relax_mlir.runtime.libraries import blas_providers
    if "mkl" not in blas_providers():
        pytest.skip("mkl not installed")
    env = dict({k: v for k, v in os.environ.items() if k not in ("KMP_BLOCKTIME", "RELAX_BLAS_OPENMP")},
               PYTHONPATH=ROOT, RELAX_BLAS="mkl")
    if runtime == "gomp":
        env["RELAX_BLAS_OPENMP"] = "gomp"
    so = str(tmp_path / "mm.so")
    outs = []
    for stage in ("compile", "load"):
        r = subprocess.run([sys.executable, "-c", ONE_RUNTIME, os.path.join(ROOT, "test"), stage, so],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    jit, loaded = outs
    assert jit["blas"] == "mkl" and jit["ok"] and loaded["ok"]
    if runtime == "iomp":
        assert jit["iomp"] and not jit["gomp"] and jit["blocktime"] == "1"
        assert loaded["iomp"] and not loaded["gomp"] and loaded["blocktime"] == "1"
        assert loaded["openmp"] == {"package": "intel-openmp", "soname": "libiomp5.so"}
    else:
        assert jit["gomp"] and loaded["gomp"] and loaded["openmp"] is None


TORCH_FIRST = """
import ctypes, json, os, sys
if sys.argv[2] == "torch":
    import torch   # loads its libgomp with RTLD_GLOBAL
sys.path.insert(0, sys.argv[1])
import numpy as np
import relax_mlir
from relax_mlir.runtime import libraries
from test_schedules import program, op
K, N = 2048, 512
src = program([("a", ["m", K]), ("b", [K, N])], [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])],
              [("r", ["m", N])])
exe = relax_mlir.compile(src, options={"dispatch_policy": "flops"})
rng = np.random.default_rng(0)
b = rng.standard_normal((K, N), np.float32)
ok = []
for m in (1, 19, 130, 512):
    a = rng.standard_normal((m, K), np.float32)
    ok.append(bool(np.allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)))
shim = ctypes.CDLL(libraries.build_blas_shim("mkl")[0])
shim.relax_blas_threading_layer.restype = ctypes.c_char_p
print(json.dumps({"ok": ok, "layer": shim.relax_blas_threading_layer().decode()}))
"""


@NO_OPENMP
@pytest.mark.parametrize("first", ["torch", "none"])
def test_mkl_layer_with_torch_imported_first(first):
    """PyTorch puts its libgomp in the global scope: imported before relax_mlir, MKL's Intel
    layer would take libgomp's omp_get_thread_num inside libiomp5's regions (every thread
    computed the whole product: wrong results at M >= 19, measured). The shim then takes
    MKL's GNU layer on that libgomp; results are right either way."""
    from relax_mlir.runtime.libraries import blas_providers
    if "mkl" not in blas_providers():
        pytest.skip("mkl not installed")
    if first == "torch":
        pytest.importorskip("torch")
    env = dict({k: v for k, v in os.environ.items() if k != "RELAX_BLAS_OPENMP"}, PYTHONPATH=ROOT,
               RELAX_BLAS="mkl", RELAX_MLIR_NUM_THREADS="2", RELAX_BLAS_NUM_THREADS="2")
    r = subprocess.run([sys.executable, "-c", TORCH_FIRST, os.path.join(ROOT, "test"), first],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["ok"] == [True] * 4
    assert out["layer"] == ("gnu" if first == "torch" else "intel")
