"""relax_mlir.load() under bad luck and bad intent (issue 9): special files, oversized files,
a file rewritten under a loaded library, load() in a loop (flat memory), the memfd-less
fallback, fork() after BLAS work (MKL's GNU OpenMP), and MLIR's memrefCopy built into
exported models. Anything that could crash or hang runs in a fresh process with a timeout:
a signal or a hang fails the test instead of the test run."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import relax_mlir
from irtext import ADD_PROGRAM
from relax_mlir import LoadError
from relax_mlir.runtime import aot

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="export links with cc")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ADD = ADD_PROGRAM


def run_fresh(code: str, *args: str, env=None, timeout: int = 120) -> str:
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=REPO, **(env or {})), timeout=timeout)
    assert r.returncode == 0, f"fresh process failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-4000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def add_so(tmp_path_factory):
    return relax_mlir.compile(ADD).export(tmp_path_factory.mktemp("hard") / "add.so")


SPECIAL = """
import json, os, sys
import relax_mlir
out = {}
for p in sys.argv[1:]:
    try:
        relax_mlir.load(p)
        out[p] = None
    except relax_mlir.LoadError as e:
        out[p] = str(e)
print(json.dumps(out))
"""


def test_only_regular_files_are_loaded(tmp_path):
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    d = tmp_path / "dir.so"
    d.mkdir()
    paths = [str(fifo), str(d), "/dev/zero", "/dev/null"]
    got = json.loads(run_fresh(SPECIAL, *paths, timeout=60))   # a FIFO must not block, /dev/zero not be read
    assert got == {str(fifo): f"{fifo} is a FIFO: only a regular file is loaded",
                   str(d): f"{d} is a directory: only a regular file is loaded",
                   "/dev/zero": "/dev/zero is a character device: only a regular file is loaded",
                   "/dev/null": "/dev/null is a character device: only a regular file is loaded"}


def test_size_bound(add_so, monkeypatch):
    size = os.path.getsize(add_so)
    monkeypatch.setattr(aot, "MAX_LIBRARY_BYTES", size - 1)
    with pytest.raises(LoadError, match=rf"add.so is too large for a relax-mlir library \({size} bytes, at most {size - 1}\)"):
        relax_mlir.load(add_so)
    monkeypatch.setattr(aot, "MAX_LIBRARY_BYTES", size)
    x = np.ones((3, 4), np.float32)
    assert relax_mlir.load(add_so)(x).tolist() == (2 * x).tolist()


def test_same_content_one_image(add_so, tmp_path):
    """Two loads of the same bytes (also under another name) share one library image (their
    scratch memory is per session, see test_sessions.py); other bytes get their own image."""
    a = relax_mlir.load(add_so)
    copy = tmp_path / "copy.so"
    shutil.copyfile(add_so, copy)
    b = relax_mlir.load(copy)
    assert a._resolver.lib is b._resolver.lib
    other = relax_mlir.compile(ADD.replace("linalg.add", "linalg.sub")).export(tmp_path / "other.so")
    c = relax_mlir.load(other)
    assert c._resolver.lib is not a._resolver.lib
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert (a(x).tolist(), b(x).tolist(), c(x).tolist()) == ((2 * x).tolist(), (2 * x).tolist(), np.zeros((2, 4)).tolist())


LOAD_LOOP = """
import gc, sys
import relax_mlir
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
for _ in range(20):
    relax_mlir.load(sys.argv[1])
gc.collect()
before = rss()
for _ in range(200):
    relax_mlir.load(sys.argv[1])
gc.collect()
print(rss() - before)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS from /proc")
def test_load_in_a_loop_reaches_flat_rss(tmp_path):
    """200 more loads of a 4-function library grow RSS by less than 2 MiB (measured: ~0.2 MiB;
    8 MiB, ~41 KiB per load, when every load created its ctypes types anew)."""
    import test_aot   # its 4-function module
    so = relax_mlir.compile(test_aot.CHECKS).export(tmp_path / "checks.so")
    growth = int(run_fresh(LOAD_LOOP, str(so)))
    assert growth < 2 * 1024 * 1024, f"RSS grew by {growth} bytes over 200 loads"


COMPILE_LOOP = """
import gc, sys
import relax_mlir
src = open(sys.argv[1]).read()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
for _ in range(10):
    relax_mlir.compile(src)
growth = []
for window in range(2):     # a leak grows in every window; malloc's trimming noise does not
    gc.collect()
    before = rss()
    for _ in range(40):
        relax_mlir.compile(src)
    gc.collect()
    growth.append(rss() - before)
print(min(growth))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS from /proc")
def test_compile_in_a_loop_reaches_flat_rss(tmp_path):
    """40 more compiles grow RSS by less than 256 KiB in at least one of two windows (a leak
    grows in both; ~420 KiB per window, ~10 KiB per compile, when every Executable created
    its ctypes types anew). RSS alone is noisy on a loaded machine: single windows measured
    between -2 MiB and +0.3 MiB."""
    (tmp_path / "add.mlir").write_text(ADD)
    growth = int(run_fresh(COMPILE_LOOP, str(tmp_path / "add.mlir"), timeout=400))
    assert growth < 256 * 1024, f"RSS grew by {growth} bytes over 40 compiles"


def test_without_memfd_a_private_file_is_removed(add_so, tmp_path, monkeypatch):
    """Where memfd is unavailable, a private temporary copy is opened and removed at once."""
    monkeypatch.setattr(aot, "_memfd", lambda data, name: None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    variant = relax_mlir.compile(ADD.replace("linalg.add", "linalg.mul")).export(tmp_path / "mul.so")
    before = sorted(os.listdir(tmp_path))
    exe = relax_mlir.load(variant)
    assert sorted(os.listdir(tmp_path)) == before == ["mul.so"]
    x = np.full((2, 4), 3, np.float32)
    assert exe(x).tolist() == (x * x).tolist()
    assert exe.export(tmp_path / "again.so") and open(tmp_path / "again.so", "rb").read() == open(variant, "rb").read()


FORK = """
import multiprocessing, os, sys
import numpy as np
import relax_mlir
from relax_mlir.frontend.models import MLPConfig, mlp_module, mlp_params, mlp_reference
cfg = MLPConfig(64, 96, 32)
jit = relax_mlir.compile(str(mlp_module(relax_mlir.make_context(), cfg)))
assert jit.metadata["blas"] == sys.argv[2], jit.metadata
loaded = relax_mlir.load(jit.export(sys.argv[1]))
ps = mlp_params(cfg, np.random.default_rng(0))
x = np.random.default_rng(1).standard_normal((300, 64)).astype(np.float32)
ref = mlp_reference(x, *ps)
def ok(exe):
    return bool(np.allclose(exe(x, *ps), ref, rtol=1e-4, atol=1e-4))
assert ok(jit) and ok(loaded)           # the parent's OpenMP pool exists now
pid = os.fork()
if pid == 0:
    os._exit(0 if ok(jit) and ok(loaded) and ok(jit) else 3)
_, status = os.waitpid(pid, 0)
def work(i):
    return ok(jit if i % 2 else loaded)
with multiprocessing.get_context("fork").Pool(2) as pool:
    res = pool.map_async(work, range(4)).get(timeout=60)
print(os.waitstatus_to_exitcode(status), res, ok(jit), ok(loaded))
"""


@pytest.mark.parametrize("provider", ["mkl", "openblas"])
def test_fork_after_blas(provider, tmp_path):
    """fork() and multiprocessing after a BLAS matmul: the child's next matmul completes
    (GNU OpenMP hung there with MKL) and is right; the parent keeps working."""
    from relax_mlir.runtime.libraries import blas_providers
    if provider not in blas_providers():
        pytest.skip(f"{provider} not installed")
    out = run_fresh(FORK, str(tmp_path / "mlp.so"), provider, env={"RELAX_BLAS": provider}, timeout=180)
    assert out.split("\n")[0] == "0 [True, True, True, True] True True"


def test_memref_copy_runtime(tmp_path):
    """The memrefCopy built into exported models (aot.RUNTIME_C) against numpy, on strided,
    offset, transposed, rank-0 and empty views."""
    src, lib = tmp_path / "rt.c", tmp_path / "librt.so"
    src.write_text(aot.RUNTIME_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-std=c11", "-o", str(lib), str(src)], check=True)
    copy = ctypes.CDLL(str(lib)).memrefCopy
    from relax_mlir.runtime.executable import descriptor_class

    class Unranked(ctypes.Structure):
        _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]

    def unranked(view: np.ndarray, base: np.ndarray):
        d = descriptor_class(view.ndim)()
        d.allocated = d.aligned = base.ctypes.data
        d.offset = (view.__array_interface__["data"][0] - base.ctypes.data) // view.itemsize
        for i in range(view.ndim):
            d.sizes[i], d.strides[i] = view.shape[i], view.strides[i] // view.itemsize
        return Unranked(view.ndim, ctypes.cast(ctypes.pointer(d), ctypes.c_void_p)), d

    rng = np.random.default_rng(0)
    for shape, sl in [((5, 7, 6), np.s_[1:4, ::2, 5:0:-2]), ((9,), np.s_[::3]), ((4, 6), np.s_[:, :0]), ((), ())]:
        sbase = rng.standard_normal(shape)
        src_view = sbase[sl].T if sbase.ndim > 1 else sbase[sl]
        dbase = np.full((src_view.size * 2 + 3,), np.nan)
        dst_view = dbase[3:3 + src_view.size * 2:2].reshape(src_view.shape) if src_view.ndim else dbase[3:4].reshape(())
        (s, keep_s), (d, keep_d) = unranked(src_view, sbase), unranked(dst_view, dbase)
        copy(ctypes.c_int64(8), ctypes.byref(s), ctypes.byref(d))
        np.testing.assert_array_equal(dst_view, src_view)
        assert int(np.isnan(dbase).sum()) == dbase.size - src_view.size


def test_two_loads_of_one_file_threads(tmp_path):
    """One exported file loaded twice (two names): its static arena is shared, so its calls
    are serialized across both Executables; threads calling both get right results."""
    from concurrent.futures import ThreadPoolExecutor

    from relax_mlir.frontend.models import MLPConfig, mlp_module, mlp_params, mlp_reference
    cfg = MLPConfig(16, 32, 8, max_batch=512)   # upper bound: one static arena
    so = relax_mlir.compile(str(mlp_module(relax_mlir.make_context(), cfg))).export(tmp_path / "a.so")
    shutil.copyfile(so, tmp_path / "b.so")
    exes = [relax_mlir.load(so), relax_mlir.load(tmp_path / "b.so")]
    ps = mlp_params(cfg, np.random.default_rng(0))
    xs = [np.random.default_rng(i).standard_normal((1 + 37 * i, 16)).astype(np.float32) for i in range(8)]

    def work(i):
        return all(np.allclose(exes[(i + j) % 2](xs[i], *ps), mlp_reference(xs[i], *ps), rtol=1e-4, atol=1e-4)
                   for j in range(30))
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(work, range(8))) == [True] * 8


def test_export_records_the_cpu_level_and_load_checks_it(add_so, monkeypatch):
    """An export is compiled for the host's x86-64 level and says so; a CPU lacking one of
    its features gets a LoadError naming it (never SIGILL at the first call)."""
    import platform

    from relax_mlir.runtime import cpu

    req = cpu.export_requirement()
    flags = cpu.cpu_flags()
    if platform.machine() == "x86_64" and set(cpu.X86_V4) <= flags:
        assert (req["mcpu"], req["flags"]) == ("x86-64-v4", cpu.X86_V4)
    elif platform.machine() == "x86_64" and set(cpu.X86_V3) <= flags:
        assert (req["mcpu"], req["flags"]) == ("x86-64-v3", cpu.X86_V3)
    else:
        assert (req["mcpu"], req["flags"]) == (None, [])
    assert cpu.llc_flags({"mcpu": "x86-64-v3", "mattr": "+avx2"}) == ["-mcpu=x86-64-v3", "-mattr=+avx2"]
    assert cpu.export_requirement("skylake", None)["flags"] == []      # explicit: not checked
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"sse", "sse2", "avx"}))
    assert cpu.missing_features({"flags": ["avx", "avx2", "fma"]}) == ["avx2", "fma"]
    if req["flags"]:
        with pytest.raises(relax_mlir.LoadError, match=f"compiled for {req['mcpu']}; this CPU lacks avx2"):
            relax_mlir.load(add_so)
