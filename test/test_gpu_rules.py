"""GPU schedule rules (relax_mlir.backends.gpu): the selection per kernel kind, element type
and target, the knob spaces (the tuning hook), and the kernels they build:

* selection and configs on hand-written kernels (no device);
* vulkan (lavapipe here): the GEMV (subgroup shuffles) and f16 matmuls (f32 accumulation)
  against numpy at sizes 1, odd and large, several sizes through ONE executable, with the
  route each call took (the kernel that shuffles, its grid);
* cuda: the GEMV's and the f16 matmul's PTX (every machine), and the host path of a
  decode-sized GEMV against the fake driver (the launch's grid; kernels do not run there).
"""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import replace

import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import rules  # noqa: E402
from relax_mlir.target import GPU_DEFAULTS, Target  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from kernel_harness import graph_module  # noqa: E402

CUDA = Target(kind="cuda", dispatch_policy="off", **GPU_DEFAULTS["cuda"])
VULKAN = Target(kind="vulkan", dispatch_policy="off", **GPU_DEFAULTS["vulkan"])      # no subgroup size
LAVAPIPE = replace(VULKAN, subgroup_size=8, max_threads_per_block=1024, shared_memory_bytes=32768)

_MM = """
func.func private @mm_{t}(%a: memref<?x?x{t}>, %b: memref<?x?x{t}>, %c: memref<?x?x{t}>)
    attributes {{relax.kernel, relax.kernel_kind = "output-fusable"}} {{
  linalg.matmul ins(%a, %b : memref<?x?x{t}>, memref<?x?x{t}>) outs(%c : memref<?x?x{t}>)
  return
}}"""
_ROW = """
func.func private @row_{t}(%x: memref<?x?x{t}>, %s: memref<?x{t}>)
    attributes {{relax.kernel, relax.kernel_kind = "reduction"}} {{
  %z = arith.constant 0.0 : {t}
  linalg.fill ins(%z : {t}) outs(%s : memref<?x{t}>)
  linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}} ins(%x : memref<?x?x{t}>) outs(%s : memref<?x{t}>) {{
  ^bb0(%v: {t}, %o: {t}):
    %r = arith.addf %v, %o : {t}
    linalg.yield %r : {t}
  }}
  return
}}"""
_ADD = """
func.func private @add_{t}(%x: memref<?x{t}>, %y: memref<?x{t}>, %o: memref<?x{t}>)
    attributes {{relax.kernel, relax.kernel_kind = "elementwise"}} {{
  linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}} ins(%x, %y : memref<?x{t}>, memref<?x{t}>) outs(%o : memref<?x{t}>) {{
  ^bb0(%a: {t}, %b: {t}, %c: {t}):
    %r = {op} %a, %b : {t}
    linalg.yield %r : {t}
  }}
  return
}}"""


@pytest.fixture(scope="module")
def kernels():
    """Kernel funcs by name: matmuls on f32, f16 and i32, row sums on f32 and f16, adds on
    f32, f16 and i32."""
    text = "".join([_MM.format(t=t) for t in ("f32", "f16", "i32")] + [_ROW.format(t=t) for t in ("f32", "f16")]
                   + [_ADD.format(t=t, op="arith.addf" if t[0] == "f" else "arith.addi") for t in ("f32", "f16", "i32")])
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(text)
        yield {ir.StringAttr(o.attributes["sym_name"]).value: o.operation for o in m.body.operations}


def _chosen(fn, target, **kw):
    return [(s.rule.name, s.dtype) for s in rules.select(fn, target, **kw)]


@pytest.mark.parametrize("name,expected", [
    ("mm_f32", [("matmul", "f32")]), ("mm_f16", [("matmul", "f16")]), ("mm_i32", []),
    ("row_f32", [("rows", "f32")]), ("row_f16", []),
    ("add_f32", [("elementwise", "f32")]), ("add_i32", [("elementwise", "i32")]),
    ("add_f16", [("elementwise", "f16")]),
])
def test_one_rule_per_kind_and_dtype(kernels, name, expected):
    """[] is the generic fallback (the naive parallel-loop route): integer matmuls, rows
    accumulating in 16 bits (legalized f16 / bf16 row kernels accumulate in f32: the rows
    rule's, test_gpu_half_kernels.py). Both GPU targets select alike."""
    for t in (CUDA, VULKAN, LAVAPIPE):
        assert _chosen(kernels[name], t) == expected


def test_a_kernel_without_a_kind_is_offered_to_every_rule(kernels):
    fn = kernels["mm_f32"]
    del fn.attributes["relax.kernel_kind"]
    try:
        assert _chosen(fn, CUDA) == [("matmul", "f32")]    # the row rule: no generic; elementwise: no generic
    finally:
        fn.attributes["relax.kernel_kind"] = ir.StringAttr.get("output-fusable", fn.context)


def test_matmul_defaults_follow_the_target(kernels):
    fn = kernels["mm_f32"]
    gemm = {"threads": 8, "per_thread": 8, "tile_k": 16, "min_size": 32}
    # cuda: warps of 32, 8 lanes x 4 columns, 4 lanes along K, 4 warps per block share K
    tc = {"f16_gemm": 1, "f32_gemm": 1, "tc_warps_m": 2, "tc_warps_n": 2, "tc_warp_m": 32, "tc_warp_n": 32,
          "tc_tile_k": 32}
    assert rules.select(fn, CUDA)[0].config == {**gemm, **tc, "gemv_rows": 4, "gemv_lanes": 8,
                                                "gemv_k_subgroups": 4}
    # lavapipe: subgroups of 8, 2 lanes along N (4 along K), one subgroup per workgroup
    assert rules.select(fn, LAVAPIPE)[0].config == {**gemm, "gemv_rows": 4, "gemv_lanes": 2, "gemv_k_subgroups": 1}
    # no known subgroup width: no shuffles, no GEMV knobs
    assert rules.select(fn, VULKAN)[0].config == gemm
    assert [k.name for k in rules.Matmul().space(VULKAN).knobs] == list(gemm)


def test_configs_override_knobs_and_are_checked(kernels):
    fn = kernels["mm_f32"]
    assert rules.select(fn, CUDA, config={"gemv_lanes": 4})[0].config["gemv_lanes"] == 4
    with pytest.raises(ValueError, match="4096 threads per GEMM workgroup exceed the target's 1024"):
        rules.select(fn, CUDA, config={"threads": 64})
    with pytest.raises(ValueError, match="threads per GEMV workgroup exceed the target's 128"):
        rules.select(fn, replace(CUDA, max_threads_per_block=128), config={"gemv_k_subgroups": 8})
    with pytest.raises(ValueError, match="GEMM blocks of A and B \\(8192 bytes\\) exceed 4096 bytes"):
        rules.select(fn, replace(CUDA, shared_memory_bytes=4096))
    with pytest.raises(ValueError, match="gemv_rows must be below min_size"):
        rules.select(fn, CUDA, config={"gemv_rows": 8, "min_size": 8})
    with pytest.raises(ValueError, match="threads must be a power of two"):
        rules.select(kernels["row_f32"], CUDA, config={"threads": 96})
    with pytest.raises(ValueError, match="256 threads per workgroup exceed the target's 128"):
        rules.select(kernels["add_f32"], VULKAN, config={"threads": 256})
    # the recorded attribute is the same hook
    fn.attributes[rules.CONFIG_ATTR] = ir.DictAttr.get(
        {"gemv_lanes": ir.IntegerAttr.get(ir.IntegerType.get_signless(64, fn.context), 16)}, fn.context)
    try:
        assert rules.select(fn, CUDA)[0].config["gemv_lanes"] == 16
    finally:
        del fn.attributes[rules.CONFIG_ATTR]


def test_every_default_is_a_valid_point_of_its_space(kernels):
    for t in (CUDA, VULKAN, LAVAPIPE):
        for name in ("mm_f32", "mm_f16", "row_f32", "add_f32", "add_i32"):
            for s in rules.select(kernels[name], t):
                assert s.rule.space(t).valid(s.config)


# -- vulkan: the GEMV and f16 on lavapipe ------------------------------------------------------

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

_SHUFFLE_CAPABILITY = struct.pack("<II", (2 << 16) | 17, 65)    # OpCapability GroupNonUniformShuffle


class _Routes:
    """Per call of an executable: (shuffles?, grid) of each launch (Kernel / Recorder
    wrapped while the executable is built and called)."""

    def __init__(self, mp: pytest.MonkeyPatch):
        self.codes: dict[str, bytes] = {}
        self.launched: list[tuple[bool, tuple]] = []
        shader, init, launch = vkrt.launch._shader_module, vkrt.Kernel.__init__, vkrt.Recorder.launch
        routes = self

        def shader_module(dev, code, label):
            routes.codes[label] = bytes(code)
            return shader(dev, code, label)

        def kernel_init(self, dev, module, entry, kinds, label):
            init(self, dev, module, entry, kinds, label)
            self.shuffles = _SHUFFLE_CAPABILITY in routes.codes[label.split("::")[0]]

        def recorder_launch(self, kernel, grid, args):
            routes.launched.append((kernel.shuffles, tuple(grid)))
            return launch(self, kernel, grid, args)

        mp.setattr(vkrt.launch, "_shader_module", shader_module)   # where VulkanRuntime calls it
        mp.setattr(vkrt.Kernel, "__init__", kernel_init)
        mp.setattr(vkrt.Recorder, "launch", recorder_launch)

    def call(self, fn, *args):
        del self.launched[:]
        return fn(*args), list(self.launched)


@pytest.fixture(scope="module")
def routes():
    mp = pytest.MonkeyPatch()
    try:
        yield _Routes(mp)
    finally:
        mp.undo()


def _gemv_columns() -> int:
    """Columns of C per GEMV workgroup on this device (the default config)."""
    t = Target.detect("vulkan")
    return rules.Matmul().default(t, "f32")["gemv_lanes"] * 4


@pytest.fixture(scope="module")
def matmul_f32(routes):
    return relax_mlir.compile(graph_module("matmul", [["m", "k"], ["k", "n"]], ["f32", "f32"]), target="vulkan")


#: (M, N, K, route): GEMV for M <= 4 with N a multiple of 4 (K = 0 and 1, odd K, large N
#: and K), the small route for an odd N or M = 5, the GEMM tiles from 32 x 32
_GEMV_CASES = [(1, 4, 1, "gemv"), (1, 8, 0, "gemv"), (1, 200, 65, "gemv"), (1, 4096, 1000, "gemv"),
               (3, 36, 129, "gemv"), (4, 1024, 300, "gemv"), (2, 12, 7, "gemv"), (1, 33, 7, "small"),
               (1, 1, 1, "small"), (5, 64, 64, "small"), (64, 96, 40, "gemm")]


@needs_vulkan
@pytest.mark.parametrize("m,n,k,route", _GEMV_CASES, ids=[f"{m}x{n}x{k}" for m, n, k, _ in _GEMV_CASES])
def test_vulkan_gemv_any_shape(routes, matmul_f32, m, n, k, route):
    rng = np.random.default_rng(m * 10000 + n * 10 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    y, launched = routes.call(matmul_f32, a, b)
    np.testing.assert_allclose(y, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    assert len(launched) == 1
    shuffles, grid = launched[0]
    assert shuffles == (route == "gemv")
    if route == "gemv":
        cols = _gemv_columns()
        assert grid == (-(-n // cols), m, 1)


@needs_vulkan
def test_vulkan_gemv_unaligned_b_takes_the_small_route(routes, matmul_f32):
    """B starting 4 bytes into a buffer (a slice of a bigger array) is not 16-byte aligned for
    vector<4xf32> loads: the guard sends it to the small route."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((1, 20)).astype(np.float32)
    big = rng.standard_normal(20 * 8 + 1).astype(np.float32)
    b = big[1:].reshape(20, 8)     # a copy is staged per call: alignment is the pool's (aligned)
    y, launched = routes.call(matmul_f32, a, b)
    np.testing.assert_allclose(y, a @ b, rtol=1e-4, atol=1e-4)
    assert [s for s, _ in launched] == [True]


@needs_vulkan
def test_vulkan_batched_gemv(routes):
    exe = relax_mlir.compile(graph_module("matmul", [["b", "m", "k"], ["b", "k", "n"]], ["f32", "f32"]),
                             target="vulkan")
    for nb, m, n, k in ((1, 1, 4, 1), (3, 1, 40, 33), (2, 4, 64, 130), (5, 2, 12, 0)):
        rng = np.random.default_rng(nb + m + n + k)
        a = rng.standard_normal((nb, m, k)).astype(np.float32)
        b = rng.standard_normal((nb, k, n)).astype(np.float32)
        y, launched = routes.call(exe, a, b)
        np.testing.assert_allclose(y, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
        assert [(s, g[1:]) for s, g in launched] == [(True, (m, nb))]


LINEAR = """
func.func @main(%x: tensor<?x?x{t}, #relax.shape<["m", "k"]>>, %w: tensor<?x?x{t}, #relax.shape<["k", "n"]>>,
                %b: tensor<?x{t}, #relax.shape<["n"]>>) -> tensor<?x?x{t}, #relax.shape<["m", "n"]>>
    attributes {{relax.function}} {{
  %y = "relax.matmul"(%x, %w) : (tensor<?x?x{t}, #relax.shape<["m", "k"]>>, tensor<?x?x{t}, #relax.shape<["k", "n"]>>) -> tensor<?x?x{t}, #relax.shape<["m", "n"]>>
  %z = "relax.add"(%y, %b) : (tensor<?x?x{t}, #relax.shape<["m", "n"]>>, tensor<?x{t}, #relax.shape<["n"]>>) -> tensor<?x?x{t}, #relax.shape<["m", "n"]>>
  %r = "relax.relu"(%z) : (tensor<?x?x{t}, #relax.shape<["m", "n"]>>) -> tensor<?x?x{t}, #relax.shape<["m", "n"]>>
  return %r : tensor<?x?x{t}, #relax.shape<["m", "n"]>>
}}
"""


def _f16_ulps(y: np.ndarray, ref: np.ndarray, at: np.ndarray) -> float:
    """The largest difference of f16 arrays in units of f16 spacing at ``at``."""
    spacing = np.spacing(np.abs(at)).astype(np.float64)
    return float(np.max(np.abs(y.astype(np.float64) - ref.astype(np.float64)) / spacing)) if y.size else 0.0


@needs_vulkan
def test_vulkan_f16_linear_accumulates_in_f32(routes):
    """f16 x f16 + f16 bias, relu, through the three routes of one executable: products and
    sums in f32, rounded once to f16 (legalization's f32 C and truncation), then the bias add
    and relu in f16. So the result is numpy's f16 bias add of the correctly rounded product,
    up to 1 ulp of the product where the f32 sum lands next to a rounding boundary, at K up
    to 2000 (an f16 accumulator would be many ulps off there)."""
    exe = relax_mlir.compile(LINEAR.format(t="f16"), target="vulkan")
    for m, n, k, shuffles in ((1, 4, 1, True), (1, 256, 2000, True), (3, 36, 129, True), (1, 33, 7, False),
                              (7, 100, 300, False), (40, 72, 1000, False)):
        rng = np.random.default_rng(m + n + k)
        x = rng.standard_normal((m, k)).astype(np.float16)
        w = (rng.standard_normal((k, n)) / np.sqrt(max(k, 1))).astype(np.float16)
        b = rng.standard_normal(n).astype(np.float16)
        y, launched = routes.call(exe, x, w, b)
        assert y.dtype == np.float16 and y.shape == (m, n)
        product = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float16)
        ref = np.maximum(product + b, np.float16(0))
        assert _f16_ulps(y, ref, np.maximum(np.abs(product), np.abs(ref))) <= 1.0, (m, n, k)
        assert np.mean(y == ref) >= 0.9, (m, n, k)
        assert [s for s, _ in launched] == [shuffles]


@needs_vulkan
def test_vulkan_f32_linear_gemv_epilogue(routes):
    exe = relax_mlir.compile(LINEAR.format(t="f32"), target="vulkan")
    for m, n, k in ((1, 4, 3), (1, 512, 512), (2, 100, 17), (4, 2048, 768)):
        rng = np.random.default_rng(m + n + k)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
        y, launched = routes.call(exe, x, w, b)
        np.testing.assert_allclose(y, np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-4, atol=1e-4)
        assert [s for s, _ in launched] == [True]


@needs_vulkan
def test_vulkan_f16_elementwise_keeps_the_fallback():
    """16-bit elementwise ops: no rule (a vector<8xf16> has no Vulkan form), the naive route,
    exact against numpy's f16 arithmetic."""
    exe = relax_mlir.compile(graph_module("multiply", [["n", "m"], ["m"]], ["f16", "f16"]), target="vulkan")
    for n, m in ((1, 1), (3, 7), (65, 130)):
        rng = np.random.default_rng(n * m)
        x = rng.standard_normal((n, m)).astype(np.float16)
        s = rng.standard_normal(m).astype(np.float16)
        np.testing.assert_array_equal(exe(x, s), x * s)


# -- cuda: PTX everywhere -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_ptx():
    """PTX text per kernel of the f16 and f32 linear modules through the cuda pipeline."""
    import subprocess
    out = {}
    for t in ("f32", "f16"):
        r = subprocess.run([sys.executable, "-c", "from relax_mlir.tools.relax_opt import main; import sys; "
                            "sys.exit(main())", "-", "--pass-pipeline=builtin.module(cuda)"],
                           input=LINEAR.format(t=t), capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        assert r.returncode == 0, r.stderr[-2000:]
        for line in r.stdout.splitlines():
            if "gpu.binary @" in line and "assembly = \"" in line:
                name = line.split("gpu.binary @")[1].split(" ")[0]
                out[(t, name)] = line.split("assembly = \"")[1].encode().decode("unicode_escape")
    return out


@pytest.mark.parametrize("t", ["f32", "f16"])
def test_cuda_gemv_ptx(cuda_ptx, t):
    """One kernel per route; the GEMV's: 128-thread blocks, 128-bit loads of B (4 x f32 or
    8 x f16 per lane), f32 FMAs, butterfly shuffles (2 steps per column), one barrier, f16
    widened and narrowed."""
    ptx = {name: text for (tt, name), text in cuda_ptx.items() if tt == t}
    gemv = [text for text in ptx.values() if "shfl.sync.bfly" in text]
    assert len(gemv) == 1 and len(ptx) == 3
    g = gemv[0]
    assert ".maxntid 128, 1, 1" in g and "bar.sync" in g and "fma.rn.f32" in g
    columns = 4 if t == "f32" else 8
    assert g.count("shfl.sync.bfly.b32") == 2 * columns     # 2 steps (4 lanes along K) per column
    assert "ld.global.v4.b32" in g                           # 128 bits
    if t == "f16":
        assert "cvt.f32.f16" in g and "cvt.rn.f16.f32" in g


# -- cuda: the host path with the fake driver ---------------------------------------------------

FAKE_GEMV = r'''
out = {}
for t in ("f32", "f16"):
    exe = relax_mlir.compile(sys.argv[2].format(t=t), target="cuda")
    dt = np.float32 if t == "f32" else np.float16
    calls = []
    for m, n, k in ((1, 200, 65), (4, 4096, 1000), (1, 33, 7), (5, 64, 64), (40, 72, 33), (1, 8, 0)):
        before = launches()
        y = exe(np.ones((m, k), dt), np.ones((k, n), dt), np.ones(n, dt))
        calls.append([list(y.shape), str(y.dtype), [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
    out[t] = calls
print("FAKE-RUN " + json.dumps(out))
'''


def test_fake_run_gemv_host_path(tmp_path):
    """PTX of the three routes loaded by the (fake) driver; each call one launch whose grid
    is its route's: GEMV (ceil(N / columns), M, 1) for M <= 4 and N a multiple of the lane's
    vector (columns: 8 lanes x 4 f32 = 32, 8 lanes x 8 f16 = 64), else the small route
    (M, ceil(N / 64), 1), and the GEMM tiles (ceil(N / 64), ceil(M / 64), 1) from 32 x 32."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_GEMV, LINEAR)
    for t, dtype, cols in (("f32", "float32", 32), ("f16", "float16", 64)):
        assert got[t] == [
            [[1, 200], dtype, [[-(-200 // cols), 1, 1]]],   # GEMV
            [[4, 4096], dtype, [[4096 // cols, 4, 1]]],     # GEMV
            [[1, 33], dtype, [[1, 1, 1]]],                  # small: N odd
            [[5, 64], dtype, [[5, 1, 1]]],                  # small: M = 5
            [[40, 72], dtype, [[2, 1, 1]]],                 # GEMM tiles
            [[1, 8], dtype, [[1, 1, 1]]],                   # GEMV, K = 0
        ], t


@pytest.mark.skipif(__import__("shutil").which("spirv-val") is None, reason="spirv-val (spirv-tools) not installed")
@pytest.mark.parametrize("t", ["f32", "f16"])
def test_vulkan_gemv_passes_spirv_val(tmp_path, t):
    """The linear layer's kernels for a lavapipe-like target (subgroups of 8): the GEMV is
    SPIR-V 1.3 with GroupNonUniformShuffle (valid for Vulkan 1.2, the runtime's API version),
    every other kernel stays SPIR-V 1.0 (valid for Vulkan 1.0)."""
    import subprocess
    from mlir.dialects import gpu as gpu_d
    ctx = relax_mlir.make_context()
    with ctx:
        m = ir.Module.parse(LINEAR.format(t=t))
        LAVAPIPE.record(m.operation)
        relax_mlir.run_pipeline(m, "builtin.module(vulkan)")
        codes = {ir.StringAttr(o.attributes["sym_name"]).value:
                 gpu_d.ObjectAttr(ir.ArrayAttr(o.attributes["objects"])[0]).object
                 for o in m.body.operations if o.operation.name == "gpu.binary"}
    assert len(codes) == 3
    shuffling = [n for n, c in codes.items() if _SHUFFLE_CAPABILITY in c]
    assert len(shuffling) == 1
    for name, code in codes.items():
        path = tmp_path / f"{name}.spv"
        path.write_bytes(code)
        version = struct.unpack("<I", code[4:8])[0]
        assert version == (0x10300 if name in shuffling else 0x10000), name
        for env in ("vulkan1.2",) + (() if name in shuffling else ("vulkan1.0",)):
            r = subprocess.run(["spirv-val", "--target-env", env, str(path)], capture_output=True, text=True)
            assert r.returncode == 0, (name, env, r.stdout + r.stderr)


def test_tuning_database_configs_reach_the_rules(tmp_path):
    """relax-gpu-schedule{tuning-db=...} looks a kernel up as relax-apply-schedules does (its
    structural hash, the GPU target key, the module's size bucket) and builds it with the
    recorded knobs: 2 GEMV lanes along N instead of 8 (shuffles at offsets 2 .. 16); a record
    the rule rejects (more lanes than a warp) is ignored, the defaults built."""
    from relax_mlir.transforms.kernel_hash import structural_hash
    from relax_mlir.tuning.database import Database, module_bucket
    ctx = relax_mlir.make_context()

    def scheduled(config) -> str:
        db = tmp_path / f"tuning-{len(config)}-{config.get('gemv_lanes')}.db"
        with ctx, ir.Location.unknown():
            m = ir.Module.parse(_MM.format(t="f32"))
            fn = m.body.operations[0].operation
            with Database(str(db)) as d:
                d.record(structural_hash(fn), rules.target_key(CUDA), module_bucket(m.operation), "gpu_matmul",
                         config, 1.0, 2.0, [1], 1)
            relax_mlir.run_pipeline(m, f"builtin.module(relax-gpu-schedule{{kind=cuda tuning-db={db}}})")
            return str(m)

    def shuffle_offsets(text: str) -> list[int]:
        return sorted({int(o) for o in __import__("re").findall(r"gpu.shuffle  xor %\S+, %c(\d+)_i32", text)})

    assert shuffle_offsets(scheduled({"gemv_lanes": 2, "gemv_k_subgroups": 1})) == [2, 4, 8, 16]
    assert shuffle_offsets(scheduled({"gemv_lanes": 64})) == [8, 16]      # rejected: the defaults


def test_compile_passes_the_tuning_database_to_the_gpu_rules(tmp_path):
    from relax_mlir.compiler import _with_tuning_db
    stages = _with_tuning_db([("codegen", ["relax-gpu-schedule{kind=cuda workgroup-size=64}", "cse"])],
                             tmp_path / "t.db")
    assert stages == [("codegen", [f"relax-gpu-schedule{{kind=cuda workgroup-size=64 tuning-db={tmp_path}/t.db}}",
                                   "cse"])]


@needs_vulkan
def test_vulkan_schedule_config_option(routes):
    """compile(options={"schedule_config": ...}) sets knobs of every kernel whose rule has
    them: one lane along N (4 columns per workgroup, all 8 lanes along K) and 2 subgroups
    splitting K (a barrier and workgroup memory); a malformed or invalid value is a compile
    error."""
    exe = relax_mlir.compile(LINEAR.format(t="f32"), target="vulkan",
                             options={"schedule_config": "gemv_lanes=1:gemv_k_subgroups=2"})
    for m, n, k in ((1, 4, 1), (2, 40, 77), (4, 1000, 513)):
        rng = np.random.default_rng(m + n + k)
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
        y, launched = routes.call(exe, x, w, b)
        np.testing.assert_allclose(y, np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-4, atol=1e-4)
        assert launched == [(True, (-(-n // 4), m, 1))]
    with pytest.raises(relax_mlir.CompileError, match="schedule config: expected knob=integer, got 'gemv_lanes'"):
        relax_mlir.compile(LINEAR.format(t="f32"), target="vulkan", options={"schedule_config": "gemv_lanes"})
    with pytest.raises(relax_mlir.CompileError, match="gemv_lanes at most the subgroup"):
        relax_mlir.compile(LINEAR.format(t="f32"), target="vulkan", options={"schedule_config": "gemv_lanes=64"})


# -- cuda PTX (the tensor-core route, f16_gemm=2: test_gpu_mma_tiles.py) ------------------------

def _cuda_ptx(src: str, pipeline: str) -> dict:
    import subprocess
    r = subprocess.run([sys.executable, "-c", "from relax_mlir.tools.relax_opt import main; import sys; "
                        "sys.exit(main())", "-", f"--pass-pipeline=builtin.module({pipeline})"],
                       input=src, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr[-2000:]
    out = {}
    for line in r.stdout.splitlines():
        if "gpu.binary @" in line and "assembly = \"" in line:
            out[line.split("gpu.binary @")[1].split(" ")[0]] = line.split("assembly = \"")[1]
    return out
