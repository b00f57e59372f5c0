"""Executable-owned state (relax.state_read / relax.state_write): each session owns its
state buffers, the compiled code reads rows in place and writes rows in place, two
sessions are two independent histories, exported libraries keep it; and
``bind_params`` (weights converted once) gives the same results and errors."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import relax_mlir
from irtext import ADD_PROGRAM, T, seg
from relax_mlir.runtime.abi import ExecutableMetadata, MetadataError

X = T("?x3", ["s", 3])
POS = T("?x0", ["p", 0], "i8")
ALL = T("?x3", ["p + s", 3])
HIST = T("?x3", ["p", 3])
CALL_SEG = "operandSegmentSizes = array<i32: 1, 1" + ", 0" * 62 + ">, resultSegmentSizes = " + seg(1)
# @append writes 2*x at rows [p, p + s) of "h", then reads rows [0, p + s) back (after
# the write: state ops run in program order) and returns them + 1; @history returns
# rows [0, p) as they are (a result is the caller's: a copy, never the state itself);
# @nested appends through relax.call (the callee gets the same state buffers).
SRC = f"""
module attributes {{relax.state = {{h = {T("?x3", ["cap", 3])}, z = tensor<4xi32>}}, relax.upper_bounds = {{cap = 64 : i64}}}} {{
  func.func @append(%x: {X}, %pos: {POS}) -> {ALL} attributes {{relax.function}} {{
    %two = "relax.add"(%x, %x) : ({X}, {X}) -> {X}
    "relax.state_write"(%two) {{state = "h", offset = "p"}} : ({X}) -> ()
    %all = "relax.state_read"() {{state = "h", end = "p + s"}} : () -> {ALL}
    %one = "relax.full"() {{shape = #relax.shape<[]>, value = 1.0 : f64, dtype = f32}} : () -> tensor<f32>
    %r = "relax.add"(%all, %one) : ({ALL}, tensor<f32>) -> {ALL}
    return %r : {ALL}
  }}
  func.func @history(%pos: {POS}) -> {HIST} attributes {{relax.function}} {{
    %h = "relax.state_read"() {{state = "h", end = "p"}} : () -> {HIST}
    return %h : {HIST}
  }}
  func.func @nested(%x: {X}, %pos: {POS}) -> {ALL} attributes {{relax.function}} {{
    %r = "relax.call"(%x, %pos) {{callee = @append, {CALL_SEG}}} : ({X}, {POS}) -> {ALL}
    return %r : {ALL}
  }}
}}
"""


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(SRC)


def pos(p: int) -> np.ndarray:
    return np.empty((p, 0), np.int8)


def data(s: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((s, 3)).astype(np.float32)


def test_metadata_lists_the_states(exe):
    assert exe.states == ["h", "z"]
    assert exe.metadata["states"] == [{"name": "h", "shape": ["cap", "3"], "dtype": "f32", "max_rows": 64},
                                      {"name": "z", "shape": ["4"], "dtype": "i32", "max_rows": 4}]
    sess = exe.session()
    assert sess.state["h"].shape == (64, 3) and sess.state["h"].dtype == np.float32
    assert sess.state["z"].shape == (4,) and sess.state["z"].dtype == np.int32
    assert sess.state["h"].ctypes.data % 64 == 0 and sess.state_bytes == 64 * 12 + 16
    assert exe.session(rows={"h": 5}).state["h"].shape == (5, 3)
    with pytest.raises(ValueError, match=r"state 'h': 65 rows requested, its capacity is at most 64"):
        exe.session(rows=65)
    with pytest.raises(KeyError, match="no state q"):
        exe.session(rows={"q": 1})


def test_sessions_accumulate_independently_in_place(exe):
    a, b = exe.session(), exe.session()
    h = a.state["h"]
    ptr = h.ctypes.data
    hist_a, hist_b, p_a, p_b = [], [], 0, 0
    for step, s in enumerate((1, 5, 40)):           # 1, odd, large: through one executable
        xa, xb = data(s, step), data(s, 10 + step)
        out = a["append"](xa, pos(p_a))
        before = h.copy()
        hist_a.append(2 * xa)
        np.testing.assert_allclose(out, np.concatenate(hist_a) + 1, rtol=0, atol=0)
        p_a += s
        if step < 2:
            out_b = b["nested"](xb, pos(p_b))
            hist_b.append(2 * xb)
            np.testing.assert_allclose(out_b, np.concatenate(hist_b) + 1, rtol=0, atol=0)
            p_b += s
        np.testing.assert_array_equal(h, before)    # b's calls did not touch a's state
    assert a.state["h"] is h and h.ctypes.data == ptr
    np.testing.assert_array_equal(h[:46], np.concatenate(hist_a))
    np.testing.assert_array_equal(h[46:], 0)
    np.testing.assert_array_equal(b.state["h"][:6], np.concatenate(hist_b))
    np.testing.assert_array_equal(b.state["h"][6:], 0)
    # only the written rows move: one more row changes exactly 12 bytes of the buffer
    before = h.copy()
    a["append"](data(1, 99), pos(46))
    assert int((h != before).sum()) * h.itemsize == 12
    # a result is the caller's copy: a later write does not change it
    hist = a["history"](pos(47))
    np.testing.assert_array_equal(hist, h[:47])
    assert not np.shares_memory(hist, h)
    a["append"](np.zeros((3, 3), np.float32), pos(0))
    np.testing.assert_array_equal(hist[:3], before[:3])
    # Python writes into the state are what the next call reads; reset_state zeroes in place
    h[:2] = 7.0
    np.testing.assert_array_equal(a["history"](pos(2)), np.full((2, 3), 7.0, np.float32))
    a.reset_state()
    assert a.state["h"] is h and not h.any() and b.state["h"][:6].any()


def test_beyond_capacity_is_a_shape_error(exe):
    sess = exe.session(rows=8)
    sess["append"](data(6, 1), pos(0))
    before = sess.state["h"].copy()
    with pytest.raises(relax_mlir.ShapeError) as e:
        sess["append"](data(3, 2), pos(6))
    assert str(e.value) == ("@append: relax.state_write at -:5:5: rows [p, p + s) = [6, 9) of state 'h' "
                            "exceed its capacity of 8 rows with s = 3, p = 6")
    np.testing.assert_array_equal(sess.state["h"], before)     # nothing was written
    with pytest.raises(relax_mlir.ShapeError) as e:
        sess["history"](pos(9))
    assert str(e.value) == ("@history: relax.state_read at -:12:10: rows [0, p) = [0, 9) of state 'h' "
                            "exceed its capacity of 8 rows with p = 9")
    # the session works normally afterwards
    np.testing.assert_array_equal(sess["history"](pos(6)), before[:6])


def test_default_session_per_thread_has_state(exe):
    out = exe["append"](np.ones((2, 3), np.float32), pos(0))
    np.testing.assert_array_equal(out, np.full((2, 3), 3.0, np.float32))
    np.testing.assert_array_equal(exe["history"](pos(2)), np.full((2, 3), 2.0, np.float32))


@pytest.mark.skipif(shutil.which("cc") is None, reason="export needs a C compiler")
def test_exported_library_keeps_state(exe, tmp_path):
    lib = relax_mlir.load(exe.export(tmp_path / "state.so"))
    assert lib.states == ["h", "z"] and lib.metadata["states"] == exe.metadata["states"]
    s1, s2 = lib.session(), lib.session()
    s1["append"](np.ones((2, 3), np.float32), pos(0))
    out = s1["append"](np.ones((1, 3), np.float32), pos(2))
    np.testing.assert_array_equal(out, np.full((3, 3), 3.0, np.float32))
    assert not s2.state["h"].any()


def test_version_2_metadata_still_loads():
    """A library of metadata version 2 (before state) has no state arguments: it loads and runs."""
    exe = relax_mlir.compile(ADD_PROGRAM)
    old = {k: v for k, v in exe.metadata.items() if k != "states"}
    old["version"] = 2
    assert ExecutableMetadata.from_json(old).states == ()
    from relax_mlir.runtime.executable import Executable
    again = Executable(exe._resolver, old)
    np.testing.assert_array_equal(again(np.ones((3, 4), np.float32)), np.full((3, 4), 2.0, np.float32))
    with pytest.raises(MetadataError, match=r"version 4; this relax_mlir reads 'relax-mlir-executable' versions 2, 3"):
        ExecutableMetadata.from_json(dict(old, version=4))


N4 = T("?x4", ["n", 4])
MUL = f"""
func.func @main(%x: {N4}, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.matmul"(%x, %w) : ({N4}, tensor<4x4xf32>) -> {N4}
  %1 = "relax.add"(%0, %b) : ({N4}, tensor<4xf32>) -> {N4}
  return %1 : {N4}
}}
func.func @pair(%x: {N4}, %y: {N4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({N4}, {N4}) -> {N4}
  return %0 : {N4}
}}
"""


def test_bind_params_converts_once_and_checks_the_same():
    exe = relax_mlir.compile(MUL)
    w = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    step = exe["main"].bind_params(w, b)
    assert repr(step) == "<relax_mlir prepared call of @main: 1 argument(s), 2 bound>"
    for n in (1, 7, 300):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(step(x), x @ w + b, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(step(x), exe(x, w, b))
    sess = exe.session()
    np.testing.assert_array_equal(sess["main"].bind_params(w, b)(np.ones((2, 4), np.float32)),
                                  exe(np.ones((2, 4), np.float32), w, b))
    # a relation between a leading and a bound argument (both (n, 4)): same error either way
    y = np.ones((3, 4), np.float32)
    pair = exe["pair"].bind_params(y)
    np.testing.assert_array_equal(pair(y), y + y)
    with pytest.raises(relax_mlir.ShapeError) as e1:
        pair(np.ones((2, 4), np.float32))
    with pytest.raises(relax_mlir.ShapeError) as e2:
        exe["pair"](np.ones((2, 4), np.float32), y)
    assert str(e1.value) == str(e2.value) == "@pair: argument #1: expected shape (n, 4) with n = 2, got (3, 4)"
    with pytest.raises(relax_mlir.ShapeError, match=r"@main: argument #1: expected shape \(4, 4\), got \(4, 5\)"):
        exe["main"].bind_params(np.zeros((4, 5), np.float32), b)
    with pytest.raises(TypeError, match=r"@main: argument #2 has dtype float64, expected float32 \(f32\)"):
        exe["main"].bind_params(w, b.astype(np.float64))
    with pytest.raises(TypeError, match=r"@main takes 1 argument\(s\) besides the 2 bound, got 2"):
        step(w, w)
