"""Ahead of time: Executable.export(path) -> one .so; relax_mlir.load(path) in a FRESH process.

Each model is compiled and exported once; every loaded run happens in a new ``python -c``
process (no compiler state inherited), whose results come back through .npz files and
are compared with numpy here, and whose error messages are compared with the JIT's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import relax_mlir
from irtext import T, seg
from relax_mlir import LoadError, ShapeError
from relax_mlir.frontend.models import MLPConfig, mlp_module, mlp_params, mlp_reference

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="export links with cc")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))




N4, K4 = T("?x4", ["n", 4]), T("?x4", ["2*k", 4])
NK, M4, M8 = T("?x?", ["n", "k"]), T("?x4", ["m", 4]), T("?x8", ["m", 8])

# match_cast, a parameter pattern (2*k) and legalized ops with run-time asserts
CHECKS = f"""
func.func @add_kernel(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {{relax.kernel}} {{
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}}
func.func @even(%x: {N4}) -> {K4} attributes {{relax.function}} {{
  %0 = "relax.match_cast"(%x) {{shape = #relax.shape<["2*k", 4]>}} : ({N4}) -> {K4}
  %1 = "relax.call_tir"(%0, %0) {{callee = @add_kernel, operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({K4}, {K4}) -> {K4}
  return %1 : {K4}
}}
func.func @twice(%x: {K4}) -> {K4} attributes {{relax.function}} {{
  %0 = "relax.call_tir"(%x, %x) {{callee = @add_kernel, operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({K4}, {K4}) -> {K4}
  return %0 : {K4}
}}
func.func @mm(%a: {NK}, %b: {M4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.matmul"(%a, %b) : ({NK}, {M4}) -> {N4}
  return %0 : {N4}
}}
func.func @rs(%x: {N4}, %y: {M8}) -> {M8} attributes {{relax.function}} {{
  %0 = "relax.reshape"(%x) {{shape = #relax.shape<["m", 8]>}} : ({N4}) -> {M8}
  return %0 : {M8}
}}
"""

DPS = f"""
func.func @main(%x: {N4}, %y: {N4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.call_dps_library"(%x, %y) {{callee = "dps_add", operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({N4}, {N4}) -> {N4}
  return %0 : {N4}
}}
"""

MLP = MLPConfig(16, 32, 8)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def fresh(code: str, *args: str) -> str:
    """Run ``code`` in a new Python process (sys.argv[1:] = args); returns its stdout."""
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                       timeout=120)
    assert r.returncode == 0, f"fresh process failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("aot")


@pytest.fixture(scope="module")
def mlp_so(out):
    ctx = relax_mlir.make_context()
    exe = relax_mlir.compile(str(mlp_module(ctx, MLP)))
    return exe.export(str(out / "mlp.so"))


@pytest.fixture(scope="module")
def checks(out):
    exe = relax_mlir.compile(CHECKS)
    return exe, exe.export(out / "checks.so")


@pytest.fixture(scope="module")
def dps(out):
    lib = out / "libdps.so"
    src = os.path.join(REPO, "test", "Inputs", "dps_lib.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), src], check=True)
    exe = relax_mlir.compile(DPS, libraries=[str(lib)])
    return str(lib), exe.export(str(out / "dps_model.so"))


RUN_NPZ = """
import sys, json, numpy as np
import relax_mlir
exe = relax_mlir.load(sys.argv[1])
inp = np.load(sys.argv[2])
calls = json.loads(sys.argv[4])
res = {}
for i, (fn, names) in enumerate(calls):
    res[f"r{i}"] = exe[fn](*[inp[n] for n in names])
np.savez(sys.argv[3], **res)
print(json.dumps({m: m in sys.modules for m in ("mlir", "sympy", "relax_mlir.shapes", "relax_mlir.transforms")}))
"""


def run_loaded(so: str, tmp, inputs: dict, calls: list) -> tuple[list, dict]:
    np.savez(tmp / "in.npz", **inputs)
    mods = json.loads(fresh(RUN_NPZ, str(so), str(tmp / "in.npz"), str(tmp / "res.npz"), json.dumps(calls)))
    res = np.load(tmp / "res.npz")
    return [res[f"r{i}"] for i in range(len(calls))], mods


def test_mlp_fresh_process(mlp_so, tmp_path):
    params = mlp_params(MLP, np.random.default_rng(0))
    sizes = [1, 7, 64, 300]
    inputs = {f"p{i}": p for i, p in enumerate(params)}
    inputs.update({f"x{n}": rnd(n, MLP.d_in) for n in sizes})
    calls = [["main", [f"x{n}", "p0", "p1", "p2", "p3"]] for n in sizes]
    results, mods = run_loaded(mlp_so, tmp_path, inputs, calls)
    for n, r in zip(sizes, results):
        np.testing.assert_allclose(r, mlp_reference(inputs[f"x{n}"], *params), rtol=1e-4, atol=1e-4)
    # loading and calling built nothing: no MLIR bindings, no sympy, no passes
    assert mods == {"mlir": False, "sympy": False, "relax_mlir.shapes": False, "relax_mlir.transforms": False}


def test_checks_numerics_fresh_process(checks, tmp_path):
    _, so = checks
    inputs = {"x2": rnd(2, 4), "x64": rnd(64, 4), "a": rnd(5, 3), "b": rnd(3, 4), "r4": rnd(4, 4), "y2": rnd(2, 8)}
    calls = [["even", ["x2"]], ["even", ["x64"]], ["twice", ["x64"]], ["mm", ["a", "b"]], ["rs", ["r4", "y2"]]]
    (e2, e64, t64, mm, rs), _ = run_loaded(so, tmp_path, inputs, calls)
    np.testing.assert_allclose(e2, 2 * inputs["x2"], rtol=1e-6)
    np.testing.assert_allclose(e64, 2 * inputs["x64"], rtol=1e-6)
    np.testing.assert_allclose(t64, 2 * inputs["x64"], rtol=1e-6)
    np.testing.assert_allclose(mm, inputs["a"] @ inputs["b"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rs, inputs["r4"].reshape(2, 8))


ERRORS = """
import sys, json, numpy as np
import relax_mlir
exe = relax_mlir.load(sys.argv[1])
r = lambda *s: np.ones(s, np.float32)
cases = [("even", (r(7, 4),)), ("twice", (r(7, 4),)), ("mm", (r(2, 3), r(5, 4))), ("rs", (r(4, 4), r(3, 8))),
         ("twice", (r(7, 4, 1),)), ("twice", (np.ones((8, 4)),)), ("twice", ())]
out = []
for fn, args in cases:
    try:
        exe[fn](*args)
        out.append(None)
    except (relax_mlir.ShapeError, TypeError) as e:
        out.append([type(e).__name__, str(e)])
ok = exe["even"](r(8, 4))
out.append(float(ok.sum()))
print(json.dumps(out))
"""


def test_shape_errors_after_load(checks):
    exe, so = checks
    loaded = json.loads(fresh(ERRORS, str(so)))
    r = lambda *s: np.ones(s, np.float32)  # noqa: E731
    cases = [("even", (r(7, 4),)), ("twice", (r(7, 4),)), ("mm", (r(2, 3), r(5, 4))), ("rs", (r(4, 4), r(3, 8))),
             ("twice", (r(7, 4, 1),)), ("twice", (np.ones((8, 4)),)), ("twice", ())]
    for (fn, args), got in zip(cases, loaded):
        with pytest.raises((ShapeError, TypeError)) as e:
            exe[fn](*args)
        assert got == [type(e.value).__name__, str(e.value)]   # the same messages as the JIT's
    assert loaded[0][0] == "ShapeError" and "@even: relax.match_cast" in loaded[0][1]
    assert "with n = 7, got (7, 4)" in loaded[0][1]
    assert loaded[2][1].endswith("k == m does not hold with n = 2, k = 3, m = 5 (3 != 5)")
    assert loaded[3][1].endswith("4*n == 8*m does not hold with n = 4, m = 3 (16 != 24)")
    assert loaded[-1] == 64.0   # and the next call works


def test_user_library_fresh_process(dps, tmp_path):
    lib, so = dps
    inputs = {f"{v}{n}": rnd(n, 4, seed=i) for n in (1, 5, 64) for i, v in enumerate("xy")}
    calls = [["main", [f"x{n}", f"y{n}"]] for n in (1, 5, 64)]
    results, _ = run_loaded(so, tmp_path, inputs, calls)
    for n, r in zip((1, 5, 64), results):
        np.testing.assert_allclose(r, inputs[f"x{n}"] + inputs[f"y{n}"], rtol=1e-6)
    # the user library is a dependency of the model (rpath), not something to pass again
    assert relax_mlir.load(so).libraries == [os.path.abspath(lib)]


def test_load_in_process_and_reexport(checks, tmp_path):
    _, so = checks
    exe = relax_mlir.load(so)
    assert set(exe.functions) == {"even", "twice", "mm", "rs"}
    x = rnd(6, 4)
    np.testing.assert_allclose(exe["even"](x), 2 * x, rtol=1e-6)
    copy = exe.export(tmp_path / "copy.so")        # a loaded Executable exports its file
    np.testing.assert_allclose(relax_mlir.load(copy)["twice"](x), 2 * x, rtol=1e-6)


def _load_error(path, match):
    with pytest.raises(LoadError, match=match):
        relax_mlir.load(path)


def test_corrupted_truncated_foreign(checks, dps, tmp_path):
    _, so = checks
    data = open(so, "rb").read()
    bad = bytearray(data)
    bad[len(data) // 3] ^= 0xFF
    (tmp_path / "corrupt.so").write_bytes(bytes(bad))
    _load_error(tmp_path / "corrupt.so", r"corrupted \(checksum mismatch\)")
    (tmp_path / "trunc.so").write_bytes(data[: len(data) // 2])
    _load_error(tmp_path / "trunc.so", r"not a relax-mlir library .*truncated")
    (tmp_path / "trunc_tail.so").write_bytes(data[:-10])
    _load_error(tmp_path / "trunc_tail.so", r"not a relax-mlir library")
    (tmp_path / "head_cut.so").write_bytes(data[100:])
    _load_error(tmp_path / "head_cut.so", r"truncated or extended")
    _load_error(dps[0], r"libdps.so is not a relax-mlir library \(a shared library without")
    (tmp_path / "text.so").write_text("hello")
    _load_error(tmp_path / "text.so", r"not a relax-mlir library \(not a shared library")
    (tmp_path / "empty.so").write_bytes(b"")
    _load_error(tmp_path / "empty.so", r"not a relax-mlir library")
    _load_error(tmp_path / "missing.so", r"cannot read .*missing.so")
    assert issubclass(LoadError, RuntimeError)


def test_version_mismatch(checks, tmp_path, monkeypatch):
    from relax_mlir.runtime import aot
    exe, _ = checks
    monkeypatch.setattr(aot, "FORMAT_VERSION", 99)
    path = exe.export(tmp_path / "v99.so")
    monkeypatch.undo()
    _load_error(path, rf"format version 99; this relax_mlir reads version {aot.FORMAT_VERSION}")


OVERWRITE = """
import sys, numpy as np
import relax_mlir
p, mlp, dims = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3:]]
first = relax_mlir.load(p)
x = np.arange(24, dtype=np.float32).reshape(6, 4)
assert first["even"](x).tolist() == (2 * x).tolist()
with open(mlp, "rb") as src, open(p, "r+b") as dst:   # the SAME inode, rewritten in place
    dst.truncate(0)
    dst.write(src.read())
assert first["twice"](x).tolist() == (2 * x).tolist()  # the running code is a private copy
second = relax_mlir.load(p)                              # loads what the file holds now
print(sorted(first.functions), sorted(second.functions), second(np.ones((3, dims[0]), np.float32),
      *[np.ones(d, np.float32) for d in ([dims[0], dims[1]], [dims[1]], [dims[1], dims[2]], [dims[2]])]).shape)
"""


def test_overwrite_in_place_then_load_again(checks, mlp_so, tmp_path):
    """load(p); p rewritten in place; load(p) again: no SIGBUS (a fresh process: a signal
    fails the test), the first Executable keeps working, the second is the new library."""
    _, so = checks
    p = tmp_path / "model.so"
    shutil.copyfile(so, p)
    out = fresh(OVERWRITE, str(p), str(mlp_so), str(MLP.d_in), str(MLP.d_hidden), str(MLP.d_out))
    assert out.split("\n")[0] == f"['even', 'mm', 'rs', 'twice'] ['main'] (3, {MLP.d_out})"


def test_export_does_not_recompile(checks, tmp_path, monkeypatch):
    from relax_mlir.transforms import pipeline
    exe, _ = checks
    monkeypatch.setattr(pipeline, "run_pipeline", lambda *a, **k: pytest.fail("export ran a pipeline"))
    exe.export(tmp_path / "again.so")


# -- a self-contained artifact (issue 8 section 6) -----------------------------------------

def _build_machine_paths() -> list[str]:
    """Paths of this machine that an exported file must not name: the build cache (where the
    BLAS shim library lives), the venv and its site-packages (where the BLAS wheel lives)."""
    import site
    import sysconfig

    from relax_mlir.runtime.libraries import cache_dir
    paths = {str(cache_dir()), os.path.expanduser("~/.cache"), sys.prefix, os.path.realpath(sys.prefix),
             sysconfig.get_paths()["purelib"]} | set(site.getsitepackages())
    return sorted(p for p in paths if len(p) > 1)


def _dynamic_section(so: str) -> list[str]:
    r = subprocess.run(["readelf", "-d", so], capture_output=True, text=True, check=True)
    return [ln for ln in r.stdout.splitlines() if any(t in ln for t in ("(NEEDED)", "(RPATH)", "(RUNPATH)"))]


def test_export_names_no_build_machine_path(mlp_so):
    data = open(mlp_so, "rb").read()
    for p in _build_machine_paths():
        assert p.encode() not in data, f"{mlp_so} names {p}"
    if shutil.which("readelf"):
        dyn = _dynamic_section(mlp_so)
        assert not [ln for ln in dyn if "PATH" in ln]                    # no rpath at all
        needed = sorted(ln.split("[")[1].rstrip("]") for ln in dyn)
        from relax_mlir.runtime.libraries import blas_requirement
        blas = relax_mlir.load(mlp_so).metadata["blas"]
        from relax_mlir.backends.cpu.apply_schedules import threaded_codegen
        from relax_mlir.runtime.libraries import shim_openmp
        # threaded kernels (count read at run time), or a shim on libiomp5 (MKL; OpenBLAS's quantized kernels)
        openmp = ["libiomp5.so"] if threaded_codegen() or shim_openmp(blas) else []
        # by soname only (libm: the f64 attention's exp)
        assert needed == sorted([blas_requirement(blas)["soname"], "libc.so.6", "libm.so.6"] + openmp)


FRESH_DIR_RUN = """
import sys, json, numpy as np
class NotInstalled:   # as on a machine with numpy only: no MLIR wheels, no sympy
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mlir", "llvm", "sympy"):
            raise ImportError(f"{name} is not installed")
sys.meta_path.insert(0, NotInstalled())
import relax_mlir
exe = relax_mlir.load("model.so")
inp = np.load("in.npz")
np.savez("out.npz", *[exe(inp[f"x{i}"], *[inp[f"p{j}"] for j in range(4)]) for i in range(int(sys.argv[1]))])
print(json.dumps([m for m in ("mlir", "sympy", "relax_mlir.runtime.libraries") if m in sys.modules]))
"""


def test_export_loads_from_fresh_dir_without_build_cache(mlp_so, tmp_path):
    """The file copied alone to a fresh directory loads in a fresh process whose build cache
    (RELAX_MLIR_CACHE, XDG_CACHE_HOME, HOME) is elsewhere and empty: the shim is inside, the
    BLAS comes from the running Python's wheel."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    shutil.copyfile(mlp_so, d / "model.so")
    params = mlp_params(MLP, np.random.default_rng(5))
    sizes = [1, 7, 300]
    xs = [rnd(n, MLP.d_in, seed=9) for n in sizes]
    np.savez(d / "in.npz", **{f"x{i}": x for i, x in enumerate(xs)}, **{f"p{j}": p for j, p in enumerate(params)})
    empty = tmp_path / "no-cache"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(empty), "XDG_CACHE_HOME": str(empty),
           "RELAX_MLIR_CACHE": str(empty), "PYTHONPATH": REPO}
    r = subprocess.run([sys.executable, "-c", FRESH_DIR_RUN, str(len(sizes))], cwd=d, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ['["relax_mlir.runtime.libraries"]']   # no MLIR bindings, no sympy
    assert not empty.exists()                                          # nothing built, nothing cached
    out = np.load(d / "out.npz")
    for i, x in enumerate(xs):
        np.testing.assert_allclose(out[f"arr_{i}"], mlp_reference(x, *params), rtol=1e-4, atol=1e-4)


def test_user_library_shipped_beside_the_model(tmp_path):
    """libraries= are not linked by path: shipped beside the model, they are found there after
    the original is gone."""
    build, ship = tmp_path / "build", tmp_path / "ship"
    build.mkdir()
    ship.mkdir()
    lib = build / "libdps.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), os.path.join(REPO, "test", "Inputs", "dps_lib.c")],
                   check=True)
    so = relax_mlir.compile(DPS, libraries=[str(lib)]).export(build / "model.so")
    assert str(build).encode() in open(so, "rb").read()   # recorded (the fallback), not linked:
    if shutil.which("readelf"):
        assert not [ln for ln in _dynamic_section(so) if "dps" in ln or "PATH" in ln]
    shutil.copyfile(so, ship / "model.so")
    shutil.copyfile(lib, ship / "libdps.so")
    shutil.rmtree(build)
    x, y = rnd(5, 4), rnd(5, 4, seed=1)
    np.savez(tmp_path / "in.npz", x=x, y=y)
    (r,), _ = run_loaded(ship / "model.so", tmp_path, {"x": x, "y": y}, [["main", ["x", "y"]]])
    np.testing.assert_allclose(r, x + y, rtol=1e-6)
    ship_lib = (ship / "libdps.so").rename(ship / "elsewhere.so")
    with pytest.raises(LoadError, match=r"model.so needs the library libdps.so \(libraries= at export: .*build/libdps.so\); "
                                        r"put it beside the model: not found"):
        relax_mlir.load(ship / "model.so")
    assert ship_lib.exists()


MISSING_BLAS = """
import sys
import relax_mlir
from relax_mlir.runtime import wheels
wheels._wheel_library = lambda package, soname: None     # as if the wheel were not installed
try:
    relax_mlir.load(sys.argv[1])
except relax_mlir.LoadError as e:
    print(e)
"""


def test_missing_blas_wheel_is_a_load_error(mlp_so):
    from relax_mlir.runtime.libraries import blas_requirement
    req = blas_requirement(relax_mlir.load(mlp_so).metadata["blas"])
    msg = fresh(MISSING_BLAS, str(mlp_so)).strip()
    assert msg.startswith(f"{mlp_so} needs the '{req['provider']}' BLAS ({req['soname']}), which is not installed "
                          f"in this Python ({sys.executable}): pip install {req['package']} "
                          f"(or put {req['soname']} on LD_LIBRARY_PATH)")


def test_replaced_by_rename_then_load_again(checks, mlp_so, tmp_path):
    """load(p); another library renamed over p (a new inode at the same path); load(p) gives
    the new library's functions, the first Executable keeps its own (never dlopen's cache
    by path: each image is a private copy)."""
    _, so = checks
    p = tmp_path / "model.so"
    shutil.copyfile(so, p)
    first = relax_mlir.load(p)
    shutil.copyfile(mlp_so, tmp_path / "next.so")
    os.replace(tmp_path / "next.so", p)
    second = relax_mlir.load(p)
    assert sorted(first.functions) == ["even", "mm", "rs", "twice"] and sorted(second.functions) == ["main"]
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    assert first["twice"](x).tolist() == (2 * x).tolist()
    shutil.copyfile(so, tmp_path / "back.so")
    os.replace(tmp_path / "back.so", p)
    assert sorted(relax_mlir.load(p).functions) == ["even", "mm", "rs", "twice"]


def test_truncated_elf_with_a_valid_trailer_is_a_load_error(checks, tmp_path):
    """Regression (SIGBUS): an ELF part cut short whose trailer was recomputed (so the checksum
    holds) reached the dynamic loader, which mapped segments past the end of the file; the
    ELF headers are checked first: a LoadError naming the file, never a crash."""
    import hashlib
    from relax_mlir.runtime import aot
    _, so = checks
    data = open(so, "rb").read()
    _, version, deps_len, length, _, code = aot._TRAILER.unpack(data[-aot._TRAILER.size:])
    elf, deps = data[:length // 3], data[length:length + deps_len]
    body = elf + deps
    p = tmp_path / "cut.so"
    p.write_bytes(body + aot._TRAILER.pack(aot.MAGIC, version, deps_len, len(elf), hashlib.sha256(body).digest(), code))
    with pytest.raises(LoadError, match=r"cut\.so: truncated ELF image \((its header tables|segment \d+ ends)"):
        relax_mlir.load(p)
    p.write_bytes(b"\0" * 64 + deps + aot._TRAILER.pack(aot.MAGIC, version, deps_len, 64,
                                                       hashlib.sha256(b"\0" * 64 + deps).digest(), code))
    with pytest.raises(LoadError, match=r"cut\.so: the library part is not a 64-bit little-endian ELF file"):
        relax_mlir.load(p)
