"""The call path of relax_mlir.runtime.executable: generated argument stubs (the descriptor
words of plain arrays, or None for the general path), per-session call frames reused by
every call, result arrays on one owner type for every size; the general path for every
argument the stub refuses; no leak, no sharing between sessions or threads.

One compiled executable for the whole file.
"""

from __future__ import annotations

import gc
import re
import threading

import numpy as np
import pytest

import relax_mlir
from irtext import T
from relax_mlir import ShapeError
from relax_mlir.runtime.executable import _Allocation, _Frame

N4 = T("?x4", ["n", 4])
MK = T("?x?", ["m", "k"])
K8 = T("?x8", ["k", 8])
M8 = T("?x8", ["m", 8])
SRC = f"""
func.func @main(%x: {N4}, %y: {N4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({N4}, {N4}) -> {N4}
  return %0 : {N4}
}}
func.func @pair(%x: {N4}) -> ({N4}, {N4}) attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %x) : ({N4}, {N4}) -> {N4}
  %1 = "relax.multiply"(%x, %x) : ({N4}, {N4}) -> {N4}
  return %0, %1 : {N4}, {N4}
}}
func.func @mm(%a: {MK}, %b: {K8}) -> {M8} attributes {{relax.function}} {{
  %0 = "relax.matmul"(%a, %b) : ({MK}, {K8}) -> {M8}
  return %0 : {M8}
}}
"""


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(SRC)


def rnd(*shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def test_stub_words_of_plain_arrays(exe):
    x, y = rnd(3, 4), rnd(3, 4, seed=1)
    px, py = x.ctypes.data, y.ctypes.data
    # pointer, pointer, offset 0, sizes, row-major strides (elements), per argument
    assert exe["main"]._args((x, y), ()) == (px, px, 0, 3, 4, 4, 1, py, py, 0, 3, 4, 4, 1)
    a, b = rnd(5, 6), rnd(6, 8)
    pa, pb = a.ctypes.data, b.ctypes.data
    assert exe["mm"]._args((a, b), ()) == (pa, pa, 0, 5, 6, 6, 1, pb, pb, 0, 6, 8, 8, 1)


class Dl:
    """Any object with the DLPack protocol."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.mark.parametrize("case", ["read-only", "strided", "misaligned", "subclass", "dlpack", "dtype", "rank",
                                  "relation", "static"])
def test_stub_refuses_what_the_general_path_handles(exe, case):
    x = rnd(3, 4)
    if case == "read-only":
        a = x.copy()
        a.flags.writeable = False
    elif case == "strided":
        a = rnd(3, 8)[:, ::2]
    elif case == "misaligned":
        raw = np.zeros(3 * 4 * 4 + 1, np.uint8)
        a = raw[1:].view(np.float32).reshape(3, 4)
        a[...] = x
        assert not a.flags["ALIGNED"]
    elif case == "subclass":
        a = x.view(np.matrix)
    elif case == "dlpack":
        a = Dl(x.copy())
    elif case == "dtype":
        a = x.astype(np.float64)
    elif case == "rank":
        a = x.reshape(12)
    elif case == "relation":
        a = rnd(5, 4)
    else:
        a = rnd(3, 5)
    assert exe["main"]._args((a, x), ()) is None
    if case in ("dtype", "rank", "relation", "static"):
        with pytest.raises((TypeError, ShapeError)) as e:
            exe(a, x)
        want = {"dtype": "@main: argument #0 has dtype float64, expected float32 (f32)",
                "rank": "@main: argument #0: expected rank 2 for shape (n, 4), got rank 1 (shape (12,))",
                "relation": "@main: argument #1: expected shape (n, 4) with n = 5, got (3, 4)",
                "static": "@main: argument #0: expected shape (n, 4), got (3, 5)"}[case]
        assert str(e.value) == want
    else:
        np.testing.assert_array_equal(exe(a, x), (a.a if case == "dlpack" else np.asarray(a)) + x)


def test_c_contiguous_with_odd_strides_gets_row_major_descriptor(exe):
    # a C-contiguous array whose size-1 dim has a stride no row-major layout has
    x = rnd(1, 4)
    odd = np.lib.stride_tricks.as_strided(x, shape=(1, 4), strides=(4096, 4))
    assert odd.flags["C_CONTIGUOUS"]
    p = odd.ctypes.data
    assert exe["main"]._args((odd, odd), ()) == (p, p, 0, 1, 4, 4, 1) * 2
    np.testing.assert_array_equal(exe(odd, odd), x + x)


def test_frame_made_once_per_session_and_function(exe):
    sess = exe.session()
    x = rnd(7, 4)
    np.testing.assert_array_equal(sess["main"](x, x), x + x)
    frame = sess._frames[exe["main"]]
    assert isinstance(frame, _Frame)
    for n in (1, 9, 64):
        y = rnd(n, 4)
        np.testing.assert_array_equal(sess["main"](y, y), y + y)
    sess["pair"](x)
    assert sess._frames[exe["main"]] is frame
    assert list(sess._frames) == [exe["main"], exe["pair"]]
    # the argument tuple is the frame's result struct, the session's workspace, then one
    # descriptor per parameter (consecutive: 2 * (3 + 2 * 2) words)
    assert frame.args == (ctypes_addr(frame.res), sess._addrs[0], frame.base, frame.base + 56)
    # another session has its own frames
    other = exe.session()
    other["main"](x, x)
    assert other._frames[exe["main"]] is not frame


def ctypes_addr(obj) -> int:
    import ctypes
    return ctypes.addressof(obj)


@pytest.mark.parametrize("n", [1, 5, 33, 200])
def test_results_are_views_of_one_owner_type(exe, n):
    x = rnd(n, 4)
    s, p = exe["pair"](x)
    np.testing.assert_array_equal(s, x + x)
    np.testing.assert_array_equal(p, x * x)
    for r in (s, p):
        assert type(r.base) is _Allocation      # one ctypes type for every size
        assert r.base is not x and not r.flags["OWNDATA"] and r.flags["C_CONTIGUOUS"] and r.flags["WRITEABLE"]
        start = ctypes_addr(r.base)   # the allocation; the data at its aligned start
        assert start <= r.ctypes.data < start + 64
    assert s.base is not p.base
    # a view outlives the array it was taken from: it keeps the allocation
    v = s[n - 1:]
    del s
    gc.collect()
    np.testing.assert_array_equal(v, (x + x)[n - 1:])


def test_empty_result_and_argument(exe):
    z = np.zeros((0, 4), np.float32)
    assert exe["main"]._args((z, z), ()) is None   # no data address to take: the general path
    out = exe(z, z)
    assert out.shape == (0, 4) and out.dtype == np.float32


def test_prepared_call_stub_checks_the_relations_with_the_bound(exe):
    b = rnd(6, 8)
    step = exe["mm"].bind_params(b)
    a = rnd(3, 6)
    pa = a.ctypes.data
    assert step._args((a,), step._shapes) == (pa, pa, 0, 3, 6, 6, 1)
    np.testing.assert_allclose(step(a), a @ b, rtol=1e-5, atol=1e-5)
    bad = rnd(3, 5)
    assert step._args((bad,), step._shapes) is None
    with pytest.raises(ShapeError) as e:
        step(bad)
    with pytest.raises(ShapeError) as e2:
        exe["mm"](bad, b)
    assert str(e.value) == str(e2.value) == "@mm: argument #1: expected shape (k, 8) with k = 5, got (6, 8)"
    sess = exe.session()
    sstep = sess["mm"].bind_params(b)
    for m in (1, 4, 9):
        a = rnd(m, 6)
        np.testing.assert_allclose(sstep(a), a @ b, rtol=1e-5, atol=1e-5)
    frame = sess._frames[exe["mm"]]
    assert sstep._last[0] is frame
    # the bound descriptor replaces the frame's own for the trailing parameter
    assert sstep._last[1] == frame.args[:-1] + sstep._bound_addrs


def test_threads_each_their_own_frame(exe):
    errors: list = []
    frames: dict = {}

    def work(seed: int) -> None:
        try:
            for i in range(200):
                n = 1 + (seed * 7 + i) % 40
                x = rnd(n, 4, seed=seed)
                got = exe(x, x)
                if not np.array_equal(got, x + x):
                    errors.append((seed, i))
            frames[seed] = exe._default_session()._frames[exe["main"]]
        except Exception as e:   # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({id(f) for f in frames.values()}) == 4


def test_one_session_refuses_a_second_concurrent_call(exe):
    sess = exe.session()
    sess["main"](rnd(2, 4), rnd(2, 4))
    sess._busy.acquire()   # as if a call were running in another thread
    try:
        with pytest.raises(RuntimeError, match=re.escape("@main: this session is running another call")):
            sess["main"](rnd(2, 4), rnd(2, 4))
    finally:
        sess._busy.release()
    np.testing.assert_array_equal(sess["main"](rnd(2, 4), rnd(2, 4)), rnd(2, 4) + rnd(2, 4))


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_rss_flat_over_distinct_sizes(exe):
    step = exe["mm"].bind_params(rnd(6, 8))
    xs = [rnd(n, 4) for n in range(1, 301)]
    ys = [rnd(n, 6) for n in range(1, 301)]

    def loop(calls: int) -> None:
        for i in range(calls):
            exe["pair"](xs[i % 300])
            step(ys[i % 300])

    loop(600)   # warm up allocator pools
    gc.collect()
    before = _rss_kb()
    loop(6000)
    gc.collect()
    grown = _rss_kb() - before
    # the results are up to 2 x 4.7 KB: one leaked per call would be tens of MB; a ctypes
    # type per distinct size would be ~1 KB each
    assert grown < 1000, f"RSS grew by {grown} KiB over 6,000 calls of 300 sizes"


def test_plain_arrays_run_in_the_generated_call_alone(exe):
    fn = exe["main"]
    assert fn._entry.__code__.co_filename == "<call of @main>"
    env = fn._entry.__globals__
    general = env["_general"]

    def refuse(session, args):
        raise AssertionError("the general path ran")

    env["_general"] = refuse
    try:
        for n in (1, 6, 130):
            x, y = rnd(n, 4), rnd(n, 4, seed=3)
            np.testing.assert_array_equal(exe(x, y), x + y)
            np.testing.assert_array_equal(exe.session()["main"](x, y), x + y)
        with pytest.raises(AssertionError, match="the general path ran"):
            exe(rnd(3, 4).astype(np.float64), rnd(3, 4))
    finally:
        env["_general"] = general


# -- wide functions: more C arguments than ctypes passes (relax-packed-entries) ----------

def _wide_src(nparams: int) -> str:
    t = T("?", ["n"])
    params = ", ".join(f"%p{i}: {t}" for i in range(nparams))
    return f"""
func.func @wide({params}) -> {t} attributes {{relax.function}} {{
  %0 = "relax.add"(%p0, %p{nparams // 2}) : ({t}, {t}) -> {t}
  %1 = "relax.multiply"(%0, %p{nparams - 1}) : ({t}, {t}) -> {t}
  return %1 : {t}
}}"""


def _wide_args(nparams: int, n: int) -> list:
    args = [np.full(n, i % 7 + 1, np.float32) for i in range(nparams)]
    args[0] = np.arange(n, dtype=np.float32)
    return args


def _check_wide(fn, nparams: int, sizes=(1, 5, 33)) -> None:
    for n in sizes:   # one compiled executable, several sizes
        a = _wide_args(nparams, n)
        np.testing.assert_array_equal(fn(*a), (a[0] + a[nparams // 2]) * a[-1])
    bad = _wide_args(nparams, 3)
    bad[-1] = np.zeros(4, np.float32)
    with pytest.raises(ShapeError, match=rf"^@wide: argument #{nparams - 1}: expected shape \(n,\) with n = 3, "
                                         r"got \(4,\)$"):
        fn(*bad)


def test_a_function_wider_than_ctypes_is_callable():
    """Regression: 1100 parameters (1102 C arguments) raised ctypes.ArgumentError (too many
    arguments); the wide entry takes one pointer to the argument array. opt_level=0: LLVM's
    -O3 on 5500 scalar arguments takes minutes."""
    from relax_mlir.compiler import CompileOptions
    from relax_mlir.runtime import abi
    nparams = 1100
    exe = relax_mlir.compile(_wide_src(nparams), options=CompileOptions(opt_level=0))
    fn = exe["wide"]
    assert fn.packed and fn._fn is None and 1 + 1 + nparams > abi.MAX_DIRECT_ARGS
    _check_wide(fn, nparams)
    step = fn.bind_params(*_wide_args(nparams, 6)[1:])   # a PreparedCall's frame is packed too
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(step(x), (x + (nparams // 2) % 7 + 1) * ((nparams - 1) % 7 + 1))


def test_packed_entry_jit_export_and_load(tmp_path, monkeypatch):
    """The packed entry below a lowered limit (the mechanism, cheaply): JIT, exported and
    loaded, a PreparedCall; narrow functions keep the direct call."""
    from relax_mlir.runtime import abi
    monkeypatch.setattr(abi, "MAX_DIRECT_ARGS", 6)
    exe = relax_mlir.compile(_wide_src(9) + SRC)
    assert exe["wide"].packed and not exe["main"].packed
    _check_wide(exe["wide"], 9)
    loaded = relax_mlir.load(exe.export(tmp_path / "wide.so"))
    assert loaded["wide"].packed
    _check_wide(loaded["wide"], 9)
    x = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(loaded["main"](x, x), 2 * x)
    step = loaded["wide"].bind_params(*_wide_args(9, 2)[1:])
    np.testing.assert_array_equal(step(np.array([1, 2], np.float32)), [(1 + 5) * 2, (2 + 5) * 2])
