"""Sessions: each caller's workspace (relax-plan-memory's static arena) is its own, so threads
call one executable at the same time and get numpy's answer; explicit sessions; one exported
library loaded twice shares nothing."""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

import relax_mlir
from irtext import T

X = T("?x256", ["n", 256])
# Without fusion every intermediate is planned into ONE static arena sized at n = 2048:
# a shared arena would mix the threads' intermediates.
SRC = f"""
func.func @main(%x: {X}) -> {X} attributes {{relax.function, relax.upper_bounds = {{n = 2048 : i64}}}} {{
  %0 = "relax.exp"(%x) : ({X}) -> {X}
  %1 = "relax.add"(%0, %x) : ({X}, {X}) -> {X}
  %2 = "relax.multiply"(%1, %x) : ({X}, {X}) -> {X}
  %3 = "relax.add"(%2, %0) : ({X}, {X}) -> {X}
  return %3 : {X}
}}
func.func @twice(%x: {X}) -> {X} attributes {{relax.function, relax.upper_bounds = {{n = 2048 : i64}}}} {{
  %0 = "relax.call"(%x) {{callee = @main, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : ({X}) -> {X}
  %1 = "relax.exp"(%0) : ({X}) -> {X}
  %2 = "relax.add"(%1, %0) : ({X}, {X}) -> {X}
  return %2 : {X}
}}
"""


MIB2 = 2048 * 256 * 4


def ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(x)
    return (e + x) * x + e


def ref_twice(x: np.ndarray) -> np.ndarray:
    y = ref(x)
    return np.exp(y) + y


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(SRC, options={"fusion": False})


def data(n: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, 256)) * 0.5).astype(np.float32)


def test_workspace_layout(exe):
    # @main: three (n, 256) f32 intermediates live at once at n = 2048: 3 * 2 MiB;
    # @twice: its own (one 2 MiB slot reused) after the workspace of @main it calls
    assert exe.metadata["functions"]["main"]["workspace_bytes"] == 3 * MIB2
    assert exe.metadata["functions"]["twice"]["workspace_bytes"] == 4 * MIB2
    assert exe.workspace_bytes == 4 * MIB2


def _hammer(fns, sizes, calls: int) -> list[str]:
    """Every thread calls its function ``calls`` times over ``sizes``; returns the mismatches."""
    errors: list[str] = []
    barrier = threading.Barrier(len(fns))

    def work(t: int, fn, r):
        barrier.wait()
        for k in range(calls):
            n = sizes[(k + t) % len(sizes)]
            x = data(n, 1000 * t + k)
            got = fn(x)
            want = r(x)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                errors.append(f"thread {t} call {k} n={n}: max error {np.max(np.abs(got - want))}")

    threads = [threading.Thread(target=work, args=(t, fn, r)) for t, (fn, r) in enumerate(fns)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def test_threads_one_executable(exe):
    fns = [(exe, ref), (exe["main"], ref), (exe["twice"], ref_twice), (exe, ref)]
    assert _hammer(fns, [1, 7, 640, 1333, 2048], 40) == []


def test_default_session_per_thread(exe):
    seen = []
    th = threading.Thread(target=lambda: seen.append(exe._default_session()))
    th.start()
    th.join()
    assert seen[0] is not exe._default_session()
    assert exe._default_session() is exe._default_session()


def test_explicit_sessions(exe):
    a, b = exe.session(), exe.session()
    assert a.workspace_bytes == 4 * MIB2 and b.workspace_bytes == 4 * MIB2
    assert a._desc.aligned % 64 == 0 and a._desc.aligned != b._desc.aligned
    for n in (1, 9, 2048):
        x = data(n, n)
        np.testing.assert_allclose(a["main"](x), ref(x), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b(x), ref(x), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(b["twice"](x), ref_twice(x), rtol=1e-5, atol=1e-5)
    assert repr(a["main"]) == "<relax_mlir function @main((n, 256) f32) -> ((n, 256) f32)>"
    # beyond the bound the arena would overflow: a ShapeError, and the session still works
    with pytest.raises(relax_mlir.ShapeError, match=r"n <= 2048"):
        a["main"](data(2049, 0))
    x = data(3, 3)
    np.testing.assert_allclose(a["main"](x), ref(x), rtol=1e-5, atol=1e-5)


def test_one_session_per_thread_across_sessions(exe):
    sessions = [exe.session() for _ in range(4)]
    fns = [(s["main"], ref) for s in sessions]
    assert _hammer(fns, [2, 31, 2000], 30) == []


@pytest.mark.skipif(shutil.which("cc") is None, reason="export needs a C compiler")
def test_exported_library_loaded_twice(exe, tmp_path):
    path = exe.export(tmp_path / "model.so")
    first, second = relax_mlir.load(path), relax_mlir.load(path)
    assert first._default_session() is not second._default_session()
    fns = [(first, ref), (second, ref), (first["twice"], ref_twice), (second["twice"], ref_twice)]
    assert _hammer(fns, [1, 64, 2048, 1000], 30) == []
