"""relax_mlir.compile / Executable: correctness at several sizes, every run-time check path, leaks.

Hand-written relax IR with hand-written linalg kernels (call_tir), compiled ONCE per module.
"""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import relax_mlir
from irtext import T, seg
from relax_mlir import ShapeError




N4 = T("?x4", ["n", 4])
K4 = T("?x4", ["2*k", 4])
U4 = T("?x4", ["?", 4])

SRC = f"""
func.func @add_kernel(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {{relax.kernel}} {{
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}}
func.func @scale_kernel(%a: tensor<?x?xf32>, %out: tensor<?x?xf32>, %n: index) -> tensor<?x?xf32> attributes {{relax.kernel}} {{
  %f = arith.index_cast %n : index to i64
  %s = arith.sitofp %f : i64 to f32
  %r = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
       ins(%a : tensor<?x?xf32>) outs(%out : tensor<?x?xf32>) {{
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %s : f32
      linalg.yield %y : f32
  }} -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}}
func.func @main(%x: {N4}, %y: {N4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.call_tir"(%x, %y) {{callee = @add_kernel, operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({N4}, {N4}) -> {N4}
  return %0 : {N4}
}}
func.func @scale(%x: {N4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.call_tir"(%x) {{callee = @scale_kernel, tir_vars = #relax.shape<["n"]>, operandSegmentSizes = {seg(1)}, resultSegmentSizes = {seg(1, 8)}}} : ({N4}) -> {N4}
  return %0 : {N4}
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
func.func @caller(%a: {N4}, %b: {N4}) -> ({N4}, tensor<2xi64>) attributes {{relax.function}} {{
  %0 = "relax.call"(%a, %b) {{callee = @main, operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({N4}, {N4}) -> {N4}
  %1 = "relax.call"(%0) {{callee = @even, operandSegmentSizes = {seg(1)}, resultSegmentSizes = {seg(1, 8)}}} : ({N4}) -> {U4}
  %2 = "relax.shape_of"(%1) : ({U4}) -> tensor<2xi64>
  return %0, %2 : {N4}, tensor<2xi64>
}}
func.func @ident(%x: {N4}) -> {N4} attributes {{relax.function}} {{
  return %x : {N4}
}}
"""


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(SRC)


def rnd(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("n", [1, 7, 64, 129])
def test_main_sizes(exe, n):
    x, y = rnd(n, 4), rnd(n, 4) + 1
    np.testing.assert_allclose(exe(x, y), x + y, rtol=1e-6)
    np.testing.assert_allclose(exe["scale"](x), x * n, rtol=1e-6)
    np.testing.assert_allclose(exe["ident"](x), x)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_match_cast_and_call(exe, n):
    x, y = rnd(n, 4), rnd(n, 4)
    np.testing.assert_allclose(exe["even"](x), 2 * x, rtol=1e-6)
    np.testing.assert_allclose(exe["twice"](x), 2 * x, rtol=1e-6)
    r, shape = exe["caller"](x, y)
    np.testing.assert_allclose(r, x + y, rtol=1e-6)
    assert shape.dtype == np.int64 and list(shape) == [n, 4]


def test_metadata_and_compile_time(exe):
    import json
    json.dumps(exe.metadata)
    assert exe.compile_time_s > 0
    main = exe.metadata["functions"]["main"]
    assert main["params"] == [{"shape": ["n", "4"], "dtype": "f32"}] * 2
    assert {"main", "scale", "even", "twice", "caller", "ident"} <= set(exe.functions)


def test_non_contiguous_and_dlpack(exe):
    x = rnd(8, 8)[:, ::2]
    assert not x.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(exe(x, x), 2 * x, rtol=1e-6)

    class Dl:  # any object with the DLPack protocol
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = rnd(3, 4)
    np.testing.assert_allclose(exe(Dl(a), a), 2 * a, rtol=1e-6)


def still_works(exe):
    x = rnd(5, 4)
    np.testing.assert_allclose(exe(x, x), 2 * x, rtol=1e-6)


def test_wrong_dtype(exe):
    x = np.ones((3, 4))
    with pytest.raises(TypeError, match=r"^@main: argument #0 has dtype float64, expected float32 \(f32\)$"):
        exe(x, x)
    still_works(exe)


def test_wrong_arity(exe):
    with pytest.raises(TypeError, match=r"@main takes 2 argument\(s\), got 1"):
        exe(rnd(3, 4))
    still_works(exe)


def test_wrong_rank(exe):
    with pytest.raises(ShapeError, match=re.escape(
            "@main: argument #1: expected rank 2 for shape (n, 4), got rank 1 (shape (4,))")):
        exe(rnd(3, 4), rnd(4))
    still_works(exe)


def test_wrong_static_dim(exe):
    with pytest.raises(ShapeError, match=re.escape("@main: argument #0: expected shape (n, 4), got (3, 5)")):
        exe(rnd(3, 5), rnd(3, 5))
    still_works(exe)


def test_inconsistent_symbols(exe):
    with pytest.raises(ShapeError, match=re.escape(
            "@main: argument #1: expected shape (n, 4) with n = 3, got (5, 4)")):
        exe(rnd(3, 4), rnd(5, 4))
    still_works(exe)


def test_param_pattern_divisibility(exe):
    with pytest.raises(ShapeError, match=re.escape("@twice: argument #0: expected shape (2*k, 4), got (7, 4)")):
        exe["twice"](rnd(7, 4))
    still_works(exe)


def test_failing_match_cast(exe):
    with pytest.raises(ShapeError, match=r"^@even: relax.match_cast at .* of argument #0: "
                                         r"expected shape \(2\*k, 4\) with n = 7, got \(7, 4\)"):
        exe["even"](rnd(7, 4))
    still_works(exe)


def test_failure_inside_callee_propagates(exe):
    with pytest.raises(ShapeError, match=r"^@even: relax.match_cast .* with n = 3, got \(3, 4\)"):
        exe["caller"](rnd(3, 4), rnd(3, 4))
    still_works(exe)


def test_unknown_function(exe):
    with pytest.raises(KeyError):
        exe["nope"]


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_no_leak(exe):
    x = rnd(64, 4)
    bad = rnd(7, 4)
    for _ in range(500):  # warm up allocator pools
        exe(x, x)
    gc.collect()
    before = _rss_kb()
    for i in range(10_000):
        exe(x, x)
        if i % 10 == 0:
            try:
                exe["even"](bad)  # failure path frees its placeholder results too
            except ShapeError:
                pass
    gc.collect()
    grown = _rss_kb() - before
    # one 64x4 f32 result is 1 KiB: leaking it 10,000 times would be ~10 MB
    assert grown < 3000, f"RSS grew by {grown} KiB over 10,000 calls"


LEGALIZED = """
func.func @mm(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
func.func @rs(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x8xf32, #relax.shape<["m", 8]>>) -> tensor<?x8xf32, #relax.shape<["m", 8]>> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["m", 8]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["m", 8]>>
  return %0 : tensor<?x8xf32, #relax.shape<["m", 8]>>
}
"""

needs_legalize = pytest.mark.skipif("relax-legalize" not in relax_mlir.PASSES, reason="relax-legalize not registered")


@pytest.fixture(scope="module")
def legal():
    return relax_mlir.compile(LEGALIZED)


@needs_legalize
@pytest.mark.parametrize("n,k", [(1, 1), (7, 3), (65, 64)])
def test_matmul_sizes(legal, n, k):
    a, b = rnd(n, k), rnd(k, 4)
    np.testing.assert_allclose(legal["mm"](a, b), a @ b, rtol=1e-4, atol=1e-4)


@needs_legalize
def test_failing_assert_matmul(legal):
    with pytest.raises(ShapeError, match=r"^@mm: relax.assert at .*: relax.matmul: .*k == m does not hold "
                                         r"with n = 2, k = 3, m = 5 \(3 != 5\)$"):
        legal["mm"](rnd(2, 3), rnd(5, 4))
    a, b = rnd(2, 3), rnd(3, 4)
    np.testing.assert_allclose(legal["mm"](a, b), a @ b, rtol=1e-4, atol=1e-4)


@needs_legalize
def test_failing_assert_reshape(legal):
    x = rnd(4, 4)
    np.testing.assert_allclose(legal["rs"](x, rnd(2, 8)), x.reshape(2, 8))
    with pytest.raises(ShapeError, match=r"^@rs: relax.assert at .*: relax.reshape: element count: "
                                         r"4\*n == 8\*m does not hold with n = 4, m = 3 \(16 != 24\)$"):
        legal["rs"](x, rnd(3, 8))
    np.testing.assert_allclose(legal["rs"](x, rnd(2, 8)), x.reshape(2, 8))


DPS = f"""
func.func @main(%x: {N4}, %y: {N4}) -> {N4} attributes {{relax.function}} {{
  %0 = "relax.call_dps_library"(%x, %y) {{callee = "dps_add", operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({N4}, {N4}) -> {N4}
  return %0 : {N4}
}}
"""


@pytest.mark.skipif(__import__("shutil").which("cc") is None, reason="no C compiler")
def test_call_dps_library(tmp_path):
    import os
    import subprocess
    lib = tmp_path / "libdps.so"
    src = os.path.join(os.path.dirname(__file__), "Inputs", "dps_lib.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), src], check=True)
    exe = relax_mlir.compile(DPS, libraries=[str(lib)])
    for n in (1, 5, 64):
        x, y = rnd(n, 4), rnd(n, 4)
        np.testing.assert_allclose(exe(x, y), x + y, rtol=1e-6)


# -- issue 9: sizes a run-time input makes invalid never crash the process -----------------
# Each case runs in a subprocess: before the fix these died of SIGFPE or SIGSEGV (or
# silently returned shape (0,)), which would take pytest down with them.

_HARDEN = '''
import sys
import numpy as np
import relax_mlir
sys.path.insert(0, {testdir!r})
from irtext import T

def zeros(shape, params):
    out = T("x".join("?" if isinstance(d, str) else str(d) for d in shape), shape)
    args = ", ".join(f"%p{{i}}: {{T('x'.join('?' * len(p)), p)}}" for i, p in enumerate(params))
    attr = ", ".join(f'"{{d}}"' if isinstance(d, str) else str(d) for d in shape)
    return relax_mlir.compile(f"""func.func @main({{args}}) -> {{out}} attributes {{{{relax.function}}}} {{{{
  %0 = "relax.zeros"() {{{{shape = #relax.shape<[{{attr}}]>}}}} : () -> {{out}}
  return %0 : {{out}}
}}}}""")

def f32(*shape):
    return np.zeros(shape, np.float32)

{body}
try:
    bad()
    print("NO ERROR")
except (relax_mlir.ShapeError, MemoryError) as e:
    print(type(e).__name__ + ": " + str(e))
print("again:", good())
'''

_CASES = {
    "floordiv": ('exe = zeros(["n // m"], [["n"], ["m"]])\n'
                 'good = lambda: exe(f32(7), f32(2)).shape\nbad = lambda: exe(f32(7), f32(0))',
                 "ShapeError: @main: relax.call_tir at -:2:8: division by zero in the dimension n // m "
                 "with n = 7, m = 0", "(3,)"),
    "mod": ('exe = zeros(["n % m"], [["n"], ["m"]])\n'
            'good = lambda: exe(f32(7), f32(4)).shape\nbad = lambda: exe(f32(7), f32(0))',
            "ShapeError: @main: relax.call_tir at -:2:8: division by zero in the dimension n % m "
            "with n = 7, m = 0", "(3,)"),
    "negative": ('exe = zeros(["n - m"], [["n"], ["m"]])\n'
                 'good = lambda: exe(f32(7), f32(4)).shape\nbad = lambda: exe(f32(1), f32(3))',
                 "ShapeError: @main: result #0 of relax.call_tir at -:2:8: negative size -m + n = -2 in "
                 "shape (-m + n,) with n = 1, m = 3", "(3,)"),
    "overflow": ('exe = zeros(["n*n*n*n"], [["n"]])\n'
                 'good = lambda: exe(f32(3)).shape\nbad = lambda: exe(f32(2**16))',
                 "ShapeError: @main: relax.call_tir at -:2:8: the dimension n*n*n*n overflows int64 "
                 "with n = 65536", "(81,)"),
    "malloc": ('exe = zeros(["n*m"], [["n", "a"], ["m", "b"]])\n'
               'good = lambda: exe(f32(3, 0), f32(5, 0)).shape\nbad = lambda: exe(f32(10**8, 0), f32(10**7, 0))',
               "MemoryError: @main: result #0 of relax.call_tir at -:2:8: cannot allocate 4000000000000000 "
               "bytes for shape (m*n,) of f32 with n = 100000000, a = 0, m = 10000000, b = 0", "(15,)"),
    "match_cast": ('out = T("?", ["m*k"])\n'
                   'exe = relax_mlir.compile(f"""func.func @main(%x: {T("?", ["n"])}, %y: {T("?", ["m"])}) -> {out} '
                   'attributes {{relax.function}} {{\\n'
                   '  %0 = \\"relax.match_cast\\"(%x) {{shape = #relax.shape<[\\"m*k\\"]>}} : ({T("?", ["n"])}) -> {out}\\n'
                   '  return %0 : {out}\\n}}""")\n'
                   'good = lambda: exe(f32(6), f32(2)).shape\nbad = lambda: exe(f32(7), f32(0))',
                   # m = 0: every k fits a size 0, none the size 7 (no division by m)
                   "ShapeError: @main: relax.match_cast at -:2:8 of argument #0: expected shape (k*m,) with n = 7, "
                   "m = 0, got (7,) (value dim 0: k*m divides (actual dim 0))", "(6,)"),
    "arange": ('out = T("?", ["(n + m - 1) // m"], "i64")\n'
               'exe = relax_mlir.compile(f"""func.func @main(%x: {T("?", ["n"])}, %y: {T("?", ["m"])}) -> {out} '
               'attributes {{relax.function}} {{\\n'
               '  %0 = \\"relax.arange\\"() {{end = \\"n\\", step = \\"m\\"}} : () -> {out}\\n'
               '  return %0 : {out}\\n}}""")\n'
               'good = lambda: exe(f32(7), f32(2)).tolist()\nbad = lambda: exe(f32(7), f32(0))',
               "ShapeError: @main: relax.call_tir at -:2:8: division by zero in the dimension (n - 1) // m "
               "with n = 7, m = 0", "[0, 2, 4, 6]"),
    "broadcast": ('out = T("?x1000000000000", ["n", 10**12])\n'
                  'exe = relax_mlir.compile(f"""func.func @main(%x: {T("?x1", ["n", 1])}) -> {out} '
                  'attributes {{relax.function}} {{\\n'
                  '  %0 = \\"relax.broadcast_to\\"(%x) {{shape = #relax.shape<[\\"n\\", 1000000000000]>}} : '
                  '({T("?x1", ["n", 1])}) -> {out}\\n'
                  '  return %0 : {out}\\n}}""")\n'
                  'good = lambda: exe(f32(0, 1)).shape\nbad = lambda: exe(f32(1, 1))',
                  "MemoryError: @main: result #0 of relax.call_tir at -:2:8: cannot allocate 4000000000000 bytes "
                  "for shape (n, 1000000000000) of f32 with n = 1", "(0, 1000000000000)"),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_invalid_sizes_never_crash(case):
    import os
    import subprocess
    import sys

    body, error, again = _CASES[case]
    script = _HARDEN.format(testdir=os.path.dirname(os.path.abspath(__file__)), body=body)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    assert r.stdout.splitlines() == [error, f"again: {again}"]


def test_param_pattern_division_by_zero():
    """A parameter pattern whose solution divides by another argument's dim that is 0: a
    ShapeError when the size is not 0 (none of k*0 equals it), never a division by zero."""
    mk = T("?", ["m*k"])
    exe = relax_mlir.compile(f"""func.func @main(%x: {mk}, %y: {T("?", ["m"])}) -> {mk} attributes {{relax.function}} {{
  return %x : {mk}
}}""")
    np.testing.assert_array_equal(exe(np.arange(6, dtype=np.float32), np.zeros(3, np.float32)), np.arange(6))
    with pytest.raises(ShapeError, match=re.escape("@main: argument #0: expected shape (k*m,), got (5,) "
                                                   "(argument #0 dim 0: k*m divides argument #0 dim 0)")):
        exe(np.zeros(5, np.float32), np.zeros(0, np.float32))
    assert exe(np.zeros(0, np.float32), np.zeros(0, np.float32)).shape == (0,)


def test_a_product_pattern_with_a_zero_factor_accepts_any_other_factor():
    """Regression: a parameter (m*k,) with m = 0 and an empty array raised ShapeError
    (k = n // m divided by zero) although every k fits. Now k is free there; where k sizes a
    value of the function, m = 0 leaves it undetermined: a ShapeError saying so; a k bound
    by another pattern (2*k) comes from that one."""
    M, MK, MxK, K2 = T("?", ["m"]), T("?", ["m*k"]), T("?x?", ["m", "k"]), T("?", ["2*k"])
    exe = relax_mlir.compile(f"""
func.func @dbl(%s: {M}, %x: {MK}) -> {MK} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %x) : ({MK}, {MK}) -> {MK}
  return %0 : {MK}
}}
func.func @rows(%s: {M}, %x: {MK}) -> {MxK} attributes {{relax.function}} {{
  %0 = "relax.reshape"(%x) {{shape = #relax.shape<["m", "k"]>}} : ({MK}) -> {MxK}
  return %0 : {MxK}
}}
func.func @two(%s: {M}, %x: {MK}, %y: {K2}) -> {K2} attributes {{relax.function}} {{
  %0 = "relax.add"(%y, %y) : ({K2}, {K2}) -> {K2}
  return %0 : {K2}
}}""")
    for m, k in ((0, 0), (0, 5), (1, 3), (4, 7)):   # one executable, several sizes
        s, x = np.ones(m, np.float32), np.arange(m * k, dtype=np.float32)
        np.testing.assert_array_equal(exe["dbl"](s, x), 2 * x)
        y = np.arange(2 * k, dtype=np.float32)
        np.testing.assert_array_equal(exe["two"](s, x, y), 2 * y)
        if m:
            np.testing.assert_array_equal(exe["rows"](s, x), x.reshape(m, k))
    with pytest.raises(ShapeError, match=r"^@rows: argument #1: expected shape \(k\*m,\) with m = 0, k = 0, got "
                                         r"\(0,\) \(argument #1 dim 0: k is undetermined when m = 0, and a value of "
                                         r"the function has a size in k\)$"):
        exe["rows"](np.ones(0, np.float32), np.zeros(0, np.float32))
    with pytest.raises(ShapeError, match=r"^@dbl: argument #1: expected shape \(k\*m,\) with m = 0, got \(3,\)"):
        exe["dbl"](np.ones(0, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ShapeError, match=r"^@two: argument #1: expected shape \(k\*m,\) with m = 2, got \(4,\)"):
        exe["two"](np.ones(2, np.float32), np.zeros(4, np.float32), np.zeros(6, np.float32))
