"""Transform-dialect schedules (relax-apply-schedules) end to end: each schedule is
applied to the kernel it is meant for (the recorded ``relax.schedule``), and ONE compiled
executable per program gives numpy's answer at sizes 1, primes, 64 and 513 of every
symbol: the peeled remainders (M mod 6 rows, N mod 64 columns, a symbolic innermost
dim) are exercised at each size."""

from __future__ import annotations

import os

import numpy as np
import pytest

import relax_mlir
from relax_mlir.pipelines.cpu import graph_stage
from relax_mlir.transforms.pipeline import run_pipeline

SIZES = [1, 7, 13, 64, 127, 513]
rng = np.random.default_rng(0)


def T(dims: list, dt: str = "f32") -> str:
    static = "x".join(str(d) if isinstance(d, int) else "?" for d in dims)
    enc = ", ".join(str(d) if isinstance(d, int) else f'"{d}"' for d in dims)
    return f"tensor<{static}x{dt}, #relax.shape<[{enc}]>>"


def program(params: list[tuple[str, list]], body: list[str], results: list[tuple[str, list]]) -> str:
    ps = ", ".join(f"%{n}: {T(d)}" for n, d in params)
    rt = ", ".join(T(d) for _, d in results)
    rs = ", ".join(f"%{n}" for n, _ in results)
    lines = "\n".join("  " + b for b in body)
    return f"func.func @main({ps}) -> ({rt}) attributes {{relax.function}} {{\n{lines}\n  return {rs} : {rt}\n}}\n"


def op(res: str, name: str, args: list[tuple[str, list]], out: list, attrs: str = "") -> str:
    a = ", ".join(f"%{n}" for n, _ in args)
    ts = ", ".join(T(d) for _, d in args)
    return f'%{res} = "relax.{name}"({a}){attrs} : ({ts}) -> {T(out)}'


def schedules_applied(src: str) -> dict[str, str]:
    """Kernel name -> the schedule relax-apply-schedules gave it ("" for none)."""
    ctx = relax_mlir.make_context()
    from mlir import ir
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(src)
        run_pipeline(m, "builtin.module(" + ", ".join(graph_stage(dispatch=False)) + ", relax-apply-schedules)")
        out = {}
        for f in m.body.operations:
            f = f.operation
            if "relax.kernel" in f.attributes:
                name = ir.StringAttr(f.attributes["sym_name"]).value
                out[name] = ir.StringAttr(f.attributes["relax.schedule"]).value if "relax.schedule" in f.attributes else ""
        return out


def compile_scheduled(src: str):
    return relax_mlir.compile(src, options={"dispatch": False, "schedules": True})


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- matmul ---------------------------------------------------------------------------

MATMUL_CASES = {
    # (K, N): static panels (exact), N not a multiple of 64 (peeled columns), all symbolic.
    "static": (96, 256),
    "odd_n": (50, 200),
    "symbolic": ("k", "n"),
    # B's rows a multiple of 4 KB apart: M >= 128 runs on a packed copy of B (one K block,
    # then two K blocks of 512).
    "packed": (64, 1024),
    "packed_k_blocks": (1024, 2048),
    # ... a K that the packed block of 512 does not divide (the last, partial block reads B
    # in place), and N, K symbolic (packed too: the stride is unknown; M >= 128 below).
    "packed_k_rest": (700, 1024),
    "packed_symbolic": ("k", "n"),
}


@pytest.mark.parametrize("case", list(MATMUL_CASES))
def test_matmul(case):
    K, N = MATMUL_CASES[case]
    src = program([("a", ["m", K]), ("b", [K, N])], [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])],
                  [("r", ["m", N])])
    assert list(schedules_applied(src).values()) == ["matmul"]
    exe = compile_scheduled(src)
    for i, m in enumerate(SIZES + ([128, 131] if case.startswith("packed") else [])):
        k = K if isinstance(K, int) else [1, 5, 64, 129, 17, 300, 1100, 512][i]
        n = N if isinstance(N, int) else [3, 64, 1, 97, 130, 65, 300, 2048][i]
        a, b = f32(m, k), f32(k, n)
        (r,) = [exe(a, b)]
        ref = a.astype(np.float64) @ b.astype(np.float64)
        assert r.shape == (m, n)
        np.testing.assert_allclose(r, ref, rtol=1e-4, atol=1e-4 * np.sqrt(k))


#: Column counts around the register tile (64), its remainder (a 32-column tile, then masked
#: 16-column tiles) and the 256-column panels, and rows around the row tile (6), the small-M and packed variants (M =
#: 1: GEMV, 5: small M, 39 / 40: either side of packing, 131: packed, 5 remainder rows).
REST_N = [1, 2, 15, 17, 63, 64, 65, 127, 200, 257, 1000, 2053]
REST_M = [1, 5, 39, 40, 131]


@pytest.mark.parametrize("K", ["k", 600])
def test_matmul_symbolic_column_rest(K):
    """N symbolic: the last N mod 64 columns run a 32-column tile, then masked 16-column tiles
    (their contractions unmasked), and the fill of C is fused into the panel loop, masked for
    the last panel. ONE
    executable per K (symbolic, cycling through 1 to 1100, or 600: one packed K block of 512
    and a partial one) gives numpy's answer at every (M, N) of the grid, every variant."""
    src = program([("a", ["m", K]), ("b", [K, "n"])],
                  [op("r", "matmul", [("a", ["m", K]), ("b", [K, "n"])], ["m", "n"])], [("r", ["m", "n"])])
    assert list(schedules_applied(src).values()) == ["matmul"]
    exe = compile_scheduled(src)
    ks = [1, 7, 64, 129, 513, 1100] if K == "k" else [K]
    for i, (m, n) in enumerate((m, n) for m in REST_M for n in REST_N):
        k = ks[i % len(ks)]
        a, b = f32(m, k), f32(k, n)
        r = exe(a, b)
        assert r.shape == (m, n)
        np.testing.assert_allclose(r, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4 * np.sqrt(k),
                                   err_msg=f"m={m} n={n} k={k}")


#: The decode GEMV's column counts: below, at and around one register (16) and the 32-column
#: tile, primes, and the ones the benchmarks track; its K: below and at the k block of 8 rows
#: and the benchmarks' 512 and 2048.
GEMV_N = [1, 2, 15, 16, 17, 31, 33, 100, 200, 2053]
GEMV_K = [1, 7, 512, 2048]


@pytest.mark.parametrize("kn", [("k", "n"), (512, "n"), ("k", 200)])
def test_gemv_symbolic_column_rest(kn):
    """M = 1 (the M <= 1 variant: rows outside the column tiles, A's k block read once per
    k block, the last N mod 32 columns in ONE masked 32-column tile), next to M = 0, 2, 3 (the
    M <= 3 variant) and 5: ONE executable per case gives numpy's answer at every N and K of the
    grid that its signature admits."""
    K, N = kn
    src = program([("a", ["m", K]), ("b", [K, N])],
                  [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])], [("r", ["m", N])])
    exe = compile_scheduled(src)
    ns = GEMV_N if N == "n" else [N]
    ks = GEMV_K if K == "k" else [K]
    for i, (n, k) in enumerate((n, k) for n in ns for k in ks):
        b = f32(k, n)
        for m in (1, [0, 2, 3, 5][i % 4]):
            a = f32(m, k)
            r = exe(a, b)
            assert r.shape == (m, n)
            np.testing.assert_allclose(r, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                                       atol=1e-4 * np.sqrt(k), err_msg=f"m={m} n={n} k={k}")


def test_batch_matmul_symbolic_column_rest():
    """The same for a batch matmul, batch, M, N and K all symbolic: each batch zeroes its C
    in the batch loop (vector stores, masked), the column remainder in masked tiles."""
    A, B, Y = ["bt", "m", "k"], ["bt", "k", "n"], ["bt", "m", "n"]
    src = program([("a", A), ("b", B)], [op("r", "matmul", [("a", A), ("b", B)], Y)], [("r", Y)])
    exe = compile_scheduled(src)
    for i, (m, n) in enumerate((m, n) for m in REST_M for n in [1, 17, 63, 65, 200, 257]):
        bt, k = [1, 3, 2][i % 3], [5, 130, 513][i % 3]
        a, b = f32(bt, m, k), f32(bt, k, n)
        np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k),
                                   err_msg=f"bt={bt} m={m} n={n} k={k}")


def test_fused_epilogue_symbolic_column_rest():
    """matmul + bias + relu with N symbolic: the matmul's masked tiles are lowered in a second
    stage (contractions unmasked first), the epilogue's schedule after it."""
    K = 96
    X, Y = ["m", K], ["m", "n"]
    src = program([("x", X), ("w", [K, "n"]), ("b", ["n"])],
                  [op("p", "matmul", [("x", X), ("w", [K, "n"])], Y), op("q", "add", [("p", Y), ("b", ["n"])], Y),
                   op("r", "relu", [("q", Y)], Y)],
                  [("r", Y)])
    assert set(schedules_applied(src).values()) == {"matmul+elementwise"}
    exe = compile_scheduled(src)
    for m, n in [(1, 17), (5, 200), (40, 63), (131, 257)]:
        x, w, b = f32(m, K), f32(K, n), f32(n)
        np.testing.assert_allclose(exe(x, w, b), np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-4, atol=1e-4)


# ---- elementwise and broadcast --------------------------------------------------------

@pytest.mark.parametrize("inner", [1024, 100, "n"])
def test_elementwise_chains(inner):
    X, W = ["m", inner], [inner]
    src = program([("x", X), ("y", X), ("w", W)],
                  [op("a", "add", [("x", X), ("y", X)], X), op("r", "relu", [("a", X)], X),
                   op("b", "multiply", [("x", X), ("w", W)], X)],
                  [("r", X), ("b", X)])
    assert sorted(schedules_applied(src).values()) == ["elementwise", "elementwise"]
    exe = compile_scheduled(src)
    for i, m in enumerate(SIZES):
        n = inner if isinstance(inner, int) else [1, 63, 64, 65, 130, 7][i]
        x, y, w = f32(m, n), f32(m, n), f32(n)
        r, b = exe(x, y, w)
        np.testing.assert_array_equal(r, np.maximum(x + y, 0))
        np.testing.assert_array_equal(b, x * w)


# ---- row reductions and normalizations -------------------------------------------------


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rms_norm(x, w, eps=1e-5):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def layer_norm(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


@pytest.mark.parametrize("row", [1024, 100, 40, "n"])
def test_row_kernels(row):
    """1024: 64-lane chunks; 100, 40: the whole row as one vector; "n" (symbolic, e.g.
    attention scores): 64-lane chunks and a scalar remainder."""
    X, W = ["m", row], [row]
    norm = " {axes = array<i64: -1>, epsilon = 1.0e-5 : f64}"
    src = program([("x", X), ("w", W), ("g", W)],
                  [op("s", "softmax", [("x", X)], X, " {axis = -1 : i64}"),
                   op("n", "rms_norm", [("x", X), ("w", W)], X, norm),
                   op("l", "layer_norm", [("x", X), ("w", W), ("g", W)], X, norm)],
                  [("s", X), ("n", X), ("l", X)])
    assert list(schedules_applied(src).values()) == ["rows", "rows", "rows"]
    exe = compile_scheduled(src)
    for i, m in enumerate(SIZES):
        r = row if isinstance(row, int) else [1, 63, 64, 65, 130, 700][i]
        x, w, g = f32(m, r) * 4, f32(r), f32(r)
        s, n, l = exe(x, w, g)
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(s, softmax(x64), rtol=2e-5, atol=1e-7)
        np.testing.assert_allclose(n, rms_norm(x64, w), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(l, layer_norm(x64, w, g), rtol=1e-4, atol=1e-5)


def test_softmax_extremes():
    """-inf-like masks and large logits through the vectorized exp (relax-expand-math)."""
    X = ["m", 128]
    src = program([("x", X)], [op("s", "softmax", [("x", X)], X, " {axis = -1 : i64}")], [("s", X)])
    exe = compile_scheduled(src)
    x = f32(5, 128) * 30
    x[:, ::3] = -1e9
    np.testing.assert_allclose(exe(x), softmax(x.astype(np.float64)), rtol=2e-5, atol=1e-7)


def test_one_row_softmax_is_left_to_plain_loops():
    """A rank-1 softmax has no row loop to distribute (tiling it asserted in MLIR 22 and
    killed the process: found by test/fuzz, program seed 6): unscheduled, still exact."""
    X = ["n"]
    src = program([("x", X)], [op("s", "softmax", [("x", X)], X, " {axis = 0 : i64}")], [("s", X)])
    assert set(schedules_applied(src).values()) == {""}
    exe = compile_scheduled(src)
    for n in (1, 7, 513):
        x = f32(n)
        np.testing.assert_allclose(exe(x), softmax(x.astype(np.float64)), rtol=2e-6, atol=1e-8)


def test_static_empty_kernels_are_left_to_plain_loops():
    """A matmul (0, m) x (m, 0) has a static 0 dim: tiling it asserted in MLIR 22 and killed
    the process (found by the long program fuzz, seed 11000071); unscheduled it is exact."""
    A, B, C = [0, "m"], ["m", 0], [0, 0]
    src = program([("a", A), ("b", B)], [op("c", "matmul", [("a", A), ("b", B)], C)], [("c", C)])
    exe = compile_scheduled(src)
    for m in (1, 7):
        assert exe(f32(0, m), f32(m, 0)).shape == (0, 0)


def test_multi_output_kernels_keep_their_result_order():
    """divide(x, x) and sigmoid of it fused into one two-result kernel: the scheduled loop
    returned them swapped (found by the long program fuzz, seed 13000211); such kernels
    stay on plain loops."""
    X = [1, "n"]
    src = program([("x", X)], [op("d", "divide", [("x", X), ("x", X)], X),
                               op("s", "sigmoid", [("d", X)], X)], [("d", X), ("s", X)])
    exe = compile_scheduled(src)
    for n in (1, 40):
        d, s = exe(np.full((1, n), 2.0, np.float32))
        np.testing.assert_array_equal(d, np.ones((1, n), np.float32))
        np.testing.assert_allclose(s, np.full((1, n), 1 / (1 + np.exp(-1.0))), rtol=1e-6)


def test_schedules_off_is_plain_loops():
    X = ["m", 64]
    src = program([("x", X), ("y", X)], [op("a", "add", [("x", X), ("y", X)], X)], [("a", X)])
    exe = relax_mlir.compile(src, options={"dispatch": False, "schedules": False})
    assert "vector<" not in exe.llvm_dialect_text()
    exe_on = compile_scheduled(src)
    assert "vector<64xf32>" in exe_on.llvm_dialect_text()
    x, y = f32(3, 64), f32(3, 64)
    np.testing.assert_array_equal(exe(x, y), x + y)
    np.testing.assert_array_equal(exe_on(x, y), x + y)


# ---- threads --------------------------------------------------------------------------

NO_OPENMP = pytest.mark.skipif(not __import__("relax_mlir.backends.cpu.apply_schedules", fromlist=["x"]).openmp_library(),
                               reason="no OpenMP runtime (libiomp5) in this environment")


@NO_OPENMP
def test_openmp_threads(monkeypatch):
    """The schedules' scf.forall loops become OpenMP parallel regions whatever
    RELAX_MLIR_NUM_THREADS says at compile time (1 here): the count is read at run time
    (exe.num_threads: the variable when the executable was made, or set since). ONE
    executable gives numpy's answers with 1, 2 and 3 threads (on 2 cores) switched between
    calls, at M = 1 (the GEMV variant) and above."""
    from relax_mlir.runtime.libraries import default_threads
    from relax_mlir.backends.cpu.apply_schedules import openmp_libraries
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "1")
    X, K, N = ["m", 1024], 64, 512
    src = program([("x", X), ("a", ["m", K]), ("b", [K, N]), ("y", X)],
                  [op("s", "softmax", [("x", X)], X, " {axis = -1 : i64}"),
                   op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N]),
                   op("e", "add", [("x", X), ("y", X)], X)],
                  [("s", X), ("r", ["m", N]), ("e", X)])
    exe = compile_scheduled(src)
    text = exe.llvm_dialect_text()
    # softmax, add, and the matmul's three register-tiled variants (N panels; small M, 6-row
    # tiles, packed B from M = 40); its GEMV variants (relax-specialize-ranges, M <= 1 and
    # M = 2-3) have no split: B is only 64 x 512 (128 KB, below the 1 MiB threshold).
    assert text.count("omp.parallel") == 5
    assert text.count("llvm.mlir.addressof @_mlir_relax_num_threads") == 5
    assert [p.endswith("libiomp5.so") for p in openmp_libraries({})] == [True]
    assert openmp_libraries({"schedules": False}) == []
    assert exe.num_threads == 1
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "2")
    assert exe.num_threads == 1   # read when the executable was made...
    exe.num_threads = None        # ... or now
    assert exe.num_threads == 2
    exe.num_threads = 0
    assert exe.num_threads == default_threads()
    with pytest.raises(TypeError, match="num_threads: an int or None, got 1.5"):
        exe.num_threads = 1.5
    for m in SIZES:
        x, y, a, b = f32(m, 1024), f32(m, 1024), f32(m, K), f32(K, N)
        for t in (1, 2, 3):
            exe.num_threads = t
            assert exe.num_threads == t
            s, r, e = exe(x, a, b, y)
            np.testing.assert_allclose(s, softmax(x.astype(np.float64)), rtol=2e-5, atol=1e-7)
            np.testing.assert_allclose(r, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
            np.testing.assert_array_equal(e, x + y)


@NO_OPENMP
@pytest.mark.parametrize("n", [2053, "n"])
def test_gemv_run_time_split(n):
    """A GEMV whose B is above the threshold (K x N = 520 x 2053: 4.3 MB) splits its columns
    in one chunk per thread, sized at run time (whole 32-column tiles, the last chunk the
    remainder): right for 1 to 5 threads (more threads than cores), for every M of the GEMV
    variant and the tiled ones above it, and for a symbolic N from 1 column up."""
    K = 520
    src = program([("a", ["m", K]), ("b", [K, n])],
                  [op("r", "matmul", [("a", ["m", K]), ("b", [K, n])], ["m", n])], [("r", ["m", n])])
    exe = compile_scheduled(src)
    assert "relax.thread_chunk" not in exe.llvm_dialect_text()   # (an attribute of the tensor-level IR)
    # the GEMV variants' splits (M <= 1, M = 2-3) and the panels of the small-M, 6-row and
    # packed large-M variants (N = 2053: the first 2048 columns; the last 5, split off, on one thread)
    assert exe.llvm_dialect_text().count("omp.parallel") == 5
    for cols in ([2053] if n != "n" else [1, 31, 2053]):
        b = f32(K, cols)
        for m in (1, 2, 3, 7, 64, 130):
            a = f32(m, K)
            want = a.astype(np.float64) @ b
            for t in (1, 2, 3, 5):
                exe.num_threads = t
                np.testing.assert_allclose(exe(a, b), want, rtol=1e-4, atol=1e-3)


THREADED_LOAD = """
import json, sys
import numpy as np
import relax_mlir
exe = relax_mlir.load(sys.argv[1])
at_load = exe.num_threads
rng = np.random.default_rng(3)
out = []
for m in (1, 7, 300):
    a = rng.standard_normal((m, 64)).astype(np.float32)
    b = rng.standard_normal((64, 512)).astype(np.float32)
    for t in (1, 2, 3):
        exe.num_threads = t
        out.append(bool(np.allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)))
import os
maps = open("/proc/self/maps").read()
pid = os.fork()   # OpenMP's pool exists now: the child's next threaded call must complete
if pid == 0:
    a = rng.standard_normal((33, 64)).astype(np.float32)
    b = rng.standard_normal((64, 512)).astype(np.float32)
    os._exit(0 if np.allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3) else 3)
_, status = os.waitpid(pid, 0)
print(json.dumps({"ok": out, "iomp5": "libiomp5.so" in maps, "blocktime": os.environ.get("KMP_BLOCKTIME"),
                  "child": os.waitstatus_to_exitcode(status), "threads_at_load": at_load,
                  "threads_now": exe.num_threads, "omp_dynamic": os.environ.get("OMP_DYNAMIC")}))
"""


@NO_OPENMP
def test_openmp_threads_export(monkeypatch, tmp_path):
    """A module with OpenMP-threaded kernels exports: the library depends on libiomp5 by
    soname (recorded in its dependency record, no path of this venv), and load() in a fresh
    process opens the intel-openmp wheel's runtime first (with our KMP_BLOCKTIME; OMP_DYNAMIC
    not left in the environment) and runs it, also in a child forked after a threaded call.
    Compiled with RELAX_MLIR_NUM_THREADS=2, the library runs with the variable as set where
    it is loaded (3), and with 1, 2, 3 threads set between calls."""
    import json
    import subprocess
    import sys
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "2")
    src = program([("a", ["m", 64]), ("b", [64, 512])],
                  [op("r", "matmul", [("a", ["m", 64]), ("b", [64, 512])], ["m", 512])], [("r", ["m", 512])])
    exe = compile_scheduled(src)
    assert "omp.parallel" in exe.llvm_dialect_text()
    assert exe.num_threads == 2
    path = exe.export(tmp_path / "threaded.so")
    data = open(path, "rb").read()
    assert b'"openmp":{"package":"intel-openmp","soname":"libiomp5.so"}' in data
    assert os.path.realpath(sys.prefix).encode() not in data   # no rpath into this venv
    env = {k: v for k, v in os.environ.items() if k not in ("KMP_BLOCKTIME", "OMP_DYNAMIC", "KMP_DYNAMIC_MODE")}
    r = subprocess.run([sys.executable, "-c", THREADED_LOAD, str(path)], capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                RELAX_MLIR_NUM_THREADS="3"),
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"ok": [True] * 9, "iomp5": True, "blocktime": "1",
                                                             "child": 0, "threads_at_load": 3, "threads_now": 3,
                                                             "omp_dynamic": None}

def test_fused_matmul_epilogue():
    """A fused group (relax-fuse-kernels): matmul + bias + relu in one kernel; the matmul
    gets the matmul schedule and the epilogue the elementwise one."""
    K, N = 96, 320
    X, Y = ["m", K], ["m", N]
    src = program([("x", X), ("w", [K, N]), ("b", [N])],
                  [op("p", "matmul", [("x", X), ("w", [K, N])], Y), op("q", "add", [("p", Y), ("b", [N])], Y),
                   op("r", "relu", [("q", Y)], Y)],
                  [("r", Y)])
    assert list(schedules_applied(src).values()) == ["matmul+elementwise"]
    exe = compile_scheduled(src)
    for m in SIZES:
        x, w, b = f32(m, K), f32(K, N), f32(N)
        np.testing.assert_allclose(exe(x, w, b), np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch", [4, "bt"])
def test_batch_matmul(batch):
    """Attention-like products: (batch, m, k) @ (batch, k, 64) with k = m symbolic."""
    A, B, Y = [batch, "m", "m"], [batch, "m", 64], [batch, "m", 64]
    src = program([("a", A), ("b", B)], [op("r", "matmul", [("a", A), ("b", B)], Y)], [("r", Y)])
    assert list(schedules_applied(src).values()) == ["batch_matmul"]
    exe = compile_scheduled(src)
    for i, m in enumerate(SIZES):
        bt = 4 if batch == 4 else [1, 3, 2, 1, 2, 1][i]
        a, b = f32(bt, m, m), f32(bt, m, 64)
        np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(m))


# ---- targets --------------------------------------------------------------------------

def test_register_tiles_per_target():
    """Tiles sized from the SIMD registers: 24 accumulators with 32 registers, 12 with 16."""
    from relax_mlir.backends.cpu.schedules.matmul import config_for
    from relax_mlir.backends.cpu.schedules.target import TARGETS, target_named
    got = {name: (c.rows, c.cols, c.gemv_cols) for name, c in
           ((n, config_for(target_named(n))) for n in TARGETS)}
    assert got == {"avx512": ((6, 1), 64, 256), "avx2": ((6, 1), 16, 32), "sse": ((6, 1), 8, 16),
                   "neon": ((6, 1), 16, 64)}
    with pytest.raises(ValueError, match="unknown schedule target 'vax'"):
        target_named("vax")


def test_host_target_matches_cpuinfo():
    from relax_mlir.runtime.cpu import cpu_flags
    from relax_mlir.backends.cpu.schedules.target import host_target
    import platform
    flags = cpu_flags()
    if platform.machine() != "x86_64" or not flags:
        pytest.skip("x86-64 Linux only")
    want = "avx512" if {"avx512f", "avx512vl"} <= flags else "avx2" if {"avx2", "fma"} <= flags else "sse"
    assert host_target().isa == want


ONES_RMS = """func.func @main(%x: tensor<?xi8, #relax.shape<["n"]>>) -> tensor<?x2xf32, #relax.shape<["n", 2]>> attributes {relax.function} {
  %0 = "relax.ones"() {dtype = f32, shape = #relax.shape<["n", 2]>} : () -> tensor<?x2xf32, #relax.shape<["n", 2]>>
  %1 = "relax.full"() {dtype = f32, shape = #relax.shape<[2]>, value = 1.000000e+00 : f64} : () -> tensor<2xf32>
  %2 = "relax.rms_norm"(%0, %1) {axes = array<i64: -1>} : (tensor<?x2xf32, #relax.shape<["n", 2]>>, tensor<2xf32>) -> tensor<?x2xf32, #relax.shape<["n", 2]>>
  return %2 : tensor<?x2xf32, #relax.shape<["n", 2]>>
}"""


def test_reduction_of_a_folded_constant():
    """rms_norm of ones: fusion folds the squares into `sum + 1.0`, a reduction that MLIR 22's
    vectorizer would combine once per vector (sqrt(2) instead of 1/sqrt(1 + eps): long fuzz
    seed 43001361); the kernel keeps plain loops and is right at every n."""
    exe = compile_scheduled(ONES_RMS)
    for n in (1, 5, 300):
        np.testing.assert_allclose(exe(np.zeros(n, np.int8)), np.full((n, 2), 1 / np.sqrt(1 + 1e-5), np.float32),
                                   rtol=1e-6)


@pytest.mark.parametrize("kn", [(512, 2048), ("k", "n")])
def test_matmul_result_is_not_copied(kn, tmp_path):
    """@main returns the buffer the kernel wrote: no second allocation and copy of the result
    per call (ownership-based deallocation cloned it when @main's guard still yielded it
    through scf.if: a malloc and an M*N*4-byte copy per call with N and K static)."""
    K, N = kn
    src = program([("a", ["m", K]), ("b", [K, N])], [op("r", "matmul", [("a", ["m", K]), ("b", [K, N])], ["m", N])],
                  [("r", ["m", N])])
    exe = relax_mlir.compile(src, options={"dispatch": False, "schedules": True, "dump_ir": str(tmp_path)})
    (llvm_ir,) = tmp_path.glob("*codegen.mlir")
    text = llvm_ir.read_text()
    main = text[text.index("llvm.func @_mlir_ciface_main("):]
    main = main[:main.index("\n  }\n")]
    assert "llvm.intr.memcpy" not in main
    a, b = f32(7, 512), f32(512, 2048)
    np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-2)
