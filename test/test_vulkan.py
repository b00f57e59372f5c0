"""The vulkan target end to end on whatever Vulkan device the machine has (Mesa's lavapipe
on CI: `make setup` installs it): every numerics case of the cpu target, the demo MLP and
transformer block, run-time shape errors identical to the cpu target's, weights kept on
the device, one command-buffer submission per call, clear errors for bad input, take's
out-of-range indices the cpu's IndexOutOfRangeError (checked after the call's sync).
Each executable is compiled ONCE and run at several sizes (1, odd, >= 64)."""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402

OK, DEVICE = vkrt.available()
pytestmark = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

import gpu_checks  # noqa: E402
import test_ops_numerics as numerics  # noqa: E402

#: cases of the cpu numerics suite the vulkan target does not run yet, with the reason
KNOWN = {}


def _case_params():
    out = []
    for c in numerics.CASES:
        marks = [pytest.mark.xfail(reason=KNOWN[c.id], strict=True)] if c.id in KNOWN else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _case_params())
def test_vulkan_numerics(case):
    numerics.check_case(case, target="vulkan")


# -- the demo models: one compile, several sizes, equal to numpy and to the cpu target -----------

@pytest.fixture(scope="module")
def mlp():
    return gpu_checks.mlp("vulkan", max_batch=512)


@pytest.mark.parametrize("n", [1, 7, 67, 130])
def test_vulkan_mlp(mlp, n):
    gpu_checks.check_mlp(*mlp, n)


def test_vulkan_one_submission_per_call(mlp):
    exe, _, params = mlp
    # two fused matmul kernels (zero fill, matmul, bias (+ relu)), each one launch with the
    # fill and the epilogue folded in: n = 3 rows the GEMV (M <= 4; subgroup shuffles),
    # n = 64 the tiled one
    for n, dispatches in ((3, 2), (64, 2)):
        before = exe.vulkan_stats
        exe(np.ones((n, 512), np.float32), *params)
        after = exe.vulkan_stats
        readbacks = 1 if vkrt.device().readback is not None else 0   # a discrete GPU: see the next test
        staged = vkrt.device().staged           # RELAX_MLIR_VULKAN_STAGING: test_vulkan_staging.py
        assert {k: after[k] - before[k] for k in after} == {
            "calls": 1, "submits": 1, "dispatches": dispatches, "copies": 0, "readbacks": readbacks,
            "readback_bytes": readbacks * n * 512 * 4, "uploads": 5,
            "upload_bytes": n * 512 * 4 + sum(p.nbytes for p in params), "staged_in": 5 if staged else 0,
            "staged_bytes": (n * 512 * 4 + sum(p.nbytes for p in params)) if staged else 0,
            "allocations": after["allocations"] - before["allocations"]}


def test_vulkan_descriptor_pool_exhaustion_as_the_driver_reports_it(mlp, monkeypatch):
    """NVIDIA's driver reports an exhausted descriptor pool as -1000069000, which the
    ``vulkan`` package (its constant has the wrong sign) raises as a KeyError: the runtime
    must take a new pool, as for the mapped VkErrorOutOfPoolMemory."""
    exe, cpu, params = mlp
    vk = vkrt.device().vk
    real, failed = vk.vkAllocateDescriptorSets, []

    def every_other_fails(device, info):
        if len(failed) < 2:
            failed.append(1)
            raise KeyError(-1000069000)
        return real(device, info)
    monkeypatch.setattr(vk, "vkAllocateDescriptorSets", every_other_fails)
    x = np.linspace(-1, 1, 3 * 512, dtype=np.float32).reshape(3, 512)
    np.testing.assert_allclose(exe(x, *params), cpu(x, *params), rtol=1e-4, atol=1e-5)
    assert len(failed) == 2


def test_vulkan_results_read_back_through_host_cached_buffers(monkeypatch):
    """Where the buffers' memory is not host-cached (a discrete GPU's BAR), each result is
    copied into a host-cached buffer in the call's command buffer and read there. Lavapipe's
    one memory type is cached, so the test makes a readback pool of that same type: the
    copies and the reads from them run exactly as on such a GPU."""
    dev = vkrt.device()
    monkeypatch.setattr(dev, "readback", vkrt._ReadbackPool(dev, dev.memory_type))
    N3, V3 = 'tensor<?x3xf32, #relax.shape<["n", 3]>>', "tensor<3xf32>"
    src = f"""
    func.func @main(%x: {N3}) -> ({N3}, {V3}, {N3}) attributes {{relax.function}} {{
      %e = "relax.exp"(%x) : ({N3}) -> {N3}
      %s = "relax.sum"(%e) {{axes = array<i64: 0>}} : ({N3}) -> {V3}
      return %e, %s, %x : {N3}, {V3}, {N3}
    }}
    """
    exe = relax_mlir.compile(src, target="vulkan")
    for n in (1, 5, 300):
        x = np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3)
        before = exe.vulkan_stats["readbacks"]
        e, s, x2 = exe(x)
        np.testing.assert_allclose(e, np.exp(x), rtol=1e-6)
        np.testing.assert_allclose(s, np.exp(x).sum(0), rtol=1e-5)
        np.testing.assert_array_equal(x2, x)
        assert exe.vulkan_stats["readbacks"] - before == 3


def test_vulkan_weights_stay_on_the_device(mlp):
    exe, _, params = mlp
    gpu_checks.check_weights_stay_on_the_device(exe, params)


def test_vulkan_shape_errors_are_the_cpus(mlp):
    gpu_checks.check_shape_errors_are_the_cpus(*mlp)


def test_vulkan_block():
    gpu_checks.check_block("vulkan")


# -- run-time checks inside the compiled code and bad input -------------------------------------------

def test_vulkan_match_cast_failure_is_the_cpus():
    gpu_checks.check_match_cast_failure_is_the_cpus("vulkan")


def test_vulkan_buffer_beyond_the_device_limit_is_a_memory_error():
    # 4 GiB of f32: beyond lavapipe's (and most devices') storage-buffer range
    gpu_checks.check_buffer_beyond_the_device_is_a_memory_error("vulkan", 1024)


def test_vulkan_rejected_spirv_is_a_spirv_error():
    dev = vkrt.device()
    with pytest.raises(vkrt.SpirvError, match="not a SPIR-V binary"):
        vkrt._shader_module(dev, b"\x00" * 16, "@bad")


def test_vulkan_unknown_device_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RELAX_MLIR_VULKAN_DEVICE", "no-such-gpu")
    with pytest.raises(vkrt.VulkanUnavailable, match="RELAX_MLIR_VULKAN_DEVICE='no-such-gpu' names no device"):
        relax_mlir.compile(gpu_checks.MATCH_CAST, target="vulkan")


def test_vulkan_threads_call_one_executable(mlp):
    """Each thread records into its own command buffer; the queue is shared."""
    gpu_checks.check_threads_call_one_executable(*mlp)


def test_vulkan_graph_calls_and_returned_parameters():
    gpu_checks.check_graph_calls_and_returned_parameters("vulkan")


def test_vulkan_constant_arrays_reach_the_kernels():
    gpu_checks.check_constant_arrays("vulkan")


def test_vulkan_minilm_real_weights_match_pytorch():
    """all-MiniLM-L6-v2 (torch.export, real weights) on the Vulkan device: one compile,
    two shapes, embeddings equal to PyTorch's."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from relax_mlir.frontend.torch import compile as torch_compile
    from relax_mlir.frontend.torch import minilm

    model, tok = minilm.sentence_encoder(), minilm.tokenizer()
    b, s = torch.export.Dim("batch", max=8), torch.export.Dim("seq", max=64)
    ex = (torch.ones((2, 8), dtype=torch.int64), torch.ones((2, 8), dtype=torch.int64))
    enc = torch_compile(model, ex, dynamic_shapes={"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s}},
                        target="vulkan")
    for sentences in (["A man is eating food.", "The new movie is awesome!"], ["A cat."]):
        batch = tok(sentences, padding=True, return_tensors="pt")
        with torch.no_grad():
            want = model(batch["input_ids"], batch["attention_mask"]).numpy()
        got = np.asarray(enc(batch["input_ids"].numpy(), batch["attention_mask"].numpy()))
        assert got.shape == want.shape == (len(sentences), 384)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- the cpu suite's defined-semantics edge cases (docs/semantics.md), on one vulkan executable --

_EDGE_KNOWN = {
    "test_bool_arithmetic_is_numpy_s": "max over booleans: SPIR-V has no i1 UMax (the kernel would need i8)",
}
# (1.0 // 0.1 was 10 on lavapipe, FRem's rounding: relax-spirv-arith computes fmod exactly now)


@pytest.fixture(scope="module")
def edge_vulkan():
    # max_i1 does not compile for SPIR-V yet (see _EDGE_KNOWN); everything else is one executable
    funcs = re.split(r"(?=func\.func )", numerics.EDGE_SRC)
    return relax_mlir.compile("".join(f for f in funcs if "@max_i1(" not in f), target="vulkan")


@pytest.mark.parametrize("fn,args", gpu_checks.edge_params(numerics, _EDGE_KNOWN))
def test_vulkan_edge_semantics(edge_vulkan, fn, args):
    fn(edge_vulkan, *args)


# -- scheduled kernels (relax-gpu-tile-matmul, relax-gpu-row-reductions): one executable, every shape -

from kernel_harness import graph_module  # noqa: E402


def _dispatches(exe, *args):
    """(result, dispatches of one call)."""
    before = exe.vulkan_stats["dispatches"]
    y = exe(*args)
    return y, exe.vulkan_stats["dispatches"] - before


@pytest.fixture(scope="module")
def tiled_matmul():
    return relax_mlir.compile(graph_module("matmul", [["n", "k"], ["k", "m"]], ["f32", "f32"]), target="vulkan")


#: (M, N, K): 1, odd, a tile edge (64), more than one tile in each dim, K = 0, both routes
_MNK = [(1, 1, 1), (1, 200, 65), (7, 33, 129), (129, 7, 33), (33, 129, 7), (64, 64, 64), (130, 1, 300),
        (200, 150, 1), (3, 5, 0), (33, 65, 0), (32, 32, 1), (65, 129, 513)]


@pytest.mark.parametrize("mnk", _MNK, ids=[f"{m}x{n}x{k}" for m, n, k in _MNK])
def test_vulkan_tiled_matmul_any_shape(tiled_matmul, mnk):
    m, n, k = mnk
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    y, dispatches = _dispatches(tiled_matmul, a, b)
    assert y.shape == (m, n)
    np.testing.assert_allclose(y, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    # one launch with the fill folded in: the tiled route (M, N >= 32) or the small one; M = 0
    # or N = 0: an empty grid, nothing dispatched
    assert dispatches == (1 if m and n else 0)


def test_vulkan_tiled_batch_matmul():
    exe = relax_mlir.compile(graph_module("matmul", [["b", "n", "k"], ["b", "k", "m"]], ["f32", "f32"]),
                             target="vulkan")
    for bnmk in ((1, 1, 1, 1), (3, 7, 5, 33), (2, 65, 70, 17), (3, 33, 129, 1)):
        nb, n, m, k = bnmk
        rng = np.random.default_rng(sum(bnmk))
        a = rng.standard_normal((nb, n, k)).astype(np.float32)
        b = rng.standard_normal((nb, k, m)).astype(np.float32)
        y, dispatches = _dispatches(exe, a, b)
        np.testing.assert_allclose(y, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4,
                                   err_msg=str(bnmk))
        assert dispatches == 1


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


#: op, input shapes, attrs, numpy reference (float64 inputs)
_ROWS = {
    "softmax": ([["a", "n"]], "", _np_softmax),
    "rms_norm": ([["a", "n"], ["n"]], "", lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w),
    "layer_norm": ([["a", "n"], ["n"], ["n"]], "", _np_layer_norm),
    "sum": ([["a", "n"]], "axes = array<i64: 1>", lambda x: x.sum(-1)),
    "max": ([["a", "n"]], "axes = array<i64: -1>, keepdims = true", lambda x: x.max(-1, keepdims=True)),
    "mean": ([["a", "n"]], "axes = array<i64: 1>", lambda x: x.mean(-1)),
}

#: (rows, width): width 1, odd, wider than a workgroup, 1000+; below 1024 rows a workgroup
#: per row, from 1024 rows on a thread per row (relax-gpu-row-reductions' workgroup-rows)
_ROW_SIZES = [(1, 1), (3, 1), (5, 7), (2, 33), (9, 129), (2, 1000), (3, 1537), (1023, 130),
              (1024, 1), (1100, 33), (1025, 1001)]


@pytest.mark.parametrize("op", sorted(_ROWS))
def test_vulkan_row_kernels_any_width(op):
    shapes, attrs, ref = _ROWS[op]
    exe = relax_mlir.compile(graph_module(op, shapes, ["f32"] * len(shapes), attrs), target="vulkan")
    for a, n in _ROW_SIZES:
        rng = np.random.default_rng(a * 10000 + n)
        dims = {"a": a, "n": n}
        args = [(3 * rng.standard_normal([dims[d] for d in s]) - 1).astype(np.float32) for s in shapes]
        y, dispatches = _dispatches(exe, *args)
        want = ref(*[x.astype(np.float64) for x in args])
        assert y.shape == want.shape
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4, err_msg=f"{op} rows={a} width={n}")
        assert dispatches == 1, (op, a, n)   # the whole row kernel is one launch


def test_vulkan_row_kernel_more_rows_than_the_grid():
    # 70000 rows > 65535 workgroups: workgroups take rows w, w + 65535, ...
    exe = relax_mlir.compile(graph_module("softmax", [["a", "n"]], ["f32"]), target="vulkan")
    x = np.random.default_rng(7).standard_normal((70000, 3)).astype(np.float32)
    np.testing.assert_allclose(exe(x), _np_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(__import__("shutil").which("spirv-val") is None, reason="spirv-val (spirv-tools) not installed")
def test_vulkan_scheduled_kernels_pass_spirv_val(tmp_path):
    """Tiled matmul, both row-kernel forms (workgroup memory, barriers) and the vector
    elementwise kernel (a storage buffer of vec4, relax-spirv-vector-buffers) validate for
    Vulkan 1.0."""
    import shutil
    import subprocess
    ctx = relax_mlir.make_context()
    names = []
    disassembly = {}
    for op, shapes, attrs in (("matmul", [["m", "k"], ["k", "n"]], ""), ("layer_norm", [["a", "n"], ["n"], ["n"]], ""),
                              ("add", [["m", "n"], ["n"]], "")):
        m = graph_module(op, shapes, ["f32"] * len(shapes), attrs, ctx=ctx)
        with ctx:
            relax_mlir.run_pipeline(m, "builtin.module(vulkan)")
            for name, path in gpu_checks.validated_spirv(m, tmp_path, "vulkan1.0").items():
                names.append(name)
                if shutil.which("spirv-dis"):
                    disassembly[name] = subprocess.run(["spirv-dis", str(path)], capture_output=True,
                                                       text=True).stdout
    # matmul: the tiled kernel + the small one of the size guard; layer_norm: both row forms
    # add: the vector kernel + the scalar one
    assert names == ["relax_matmul_f32_r2_r2_kernel", "relax_matmul_f32_r2_r2_kernel_0",
                     "relax_layer_norm_axes1_eps1em05_f32_r2_r1_r1_kernel",
                     "relax_layer_norm_axes1_eps1em05_f32_r2_r1_r1_kernel_0",
                     "relax_add_f32_r2_r1_kernel", "relax_add_f32_r2_r1_kernel_0"]
    if disassembly:   # vec4 elements of the buffers, loaded and stored whole, no pointer bitcast
        vec, scalar = disassembly["relax_add_f32_r2_r1_kernel"], disassembly["relax_add_f32_r2_r1_kernel_0"]
        assert re.search(r"OpTypeRuntimeArray %v4float", vec) and "OpBitcast" not in vec
        assert len(re.findall(r"OpLoad %v4float .* Aligned 16", vec)) == 2
        assert len(re.findall(r"OpStore .* Aligned 16", vec)) == 1
        assert "v4float" not in scalar


# -- elementwise kernels: 4 elements per thread with vector loads behind a run-time guard ------

@pytest.fixture(scope="module")
def vector_elementwise():
    """The VECTOR_ELEMENTWISE executable, compiled once, and the labels of the kernels each
    call launches (Recorder.launch wrapped for the module)."""
    mp = pytest.MonkeyPatch()
    launched: list[str] = []
    init, launch = vkrt.Kernel.__init__, vkrt.Recorder.launch

    def kernel_init(self, dev, module, entry, kinds, label):
        init(self, dev, module, entry, kinds, label)
        self.label = label

    def recorder_launch(self, kernel, grid, args):
        launched.append(kernel.label)
        return launch(self, kernel, grid, args)

    mp.setattr(vkrt.Kernel, "__init__", kernel_init)
    mp.setattr(vkrt.Recorder, "launch", recorder_launch)
    try:
        yield relax_mlir.compile(gpu_checks.VECTOR_ELEMENTWISE, target="vulkan"), launched
    finally:
        mp.undo()


@pytest.mark.parametrize("nm", gpu_checks.VECTOR_SIZES, ids=[f"{n}x{m}" for n, m in gpu_checks.VECTOR_SIZES])
def test_vulkan_vector_elementwise_any_shape(vector_elementwise, nm):
    exe, _ = vector_elementwise
    gpu_checks.check_vector_elementwise(exe, *nm)


def test_vulkan_vector_elementwise_takes_the_vector_kernel_when_aligned(vector_elementwise):
    """Each elementwise op has two kernels: the vector one runs when the innermost extent
    and every view's element offset are multiples of 4, the scalar one otherwise."""
    exe, launched = vector_elementwise
    x = np.ones((3, 8), np.float32)

    def kernels(fn, *args):
        del launched[:]
        fn(*args)
        return list(launched)

    main_vec = kernels(exe, x, np.ones(8, np.float32), np.ones((3, 1), np.float32))
    main_scalar = kernels(exe, x[:, :7].copy(), np.ones(7, np.float32), np.ones((3, 1), np.float32))
    assert len(main_vec) == len(main_scalar) == 1 and main_vec != main_scalar   # one fused kernel
    # @slices: each op reads its view in place (relax-gpu-forward-copies: no copy out of it),
    # one launch each. m = 9: x[:, 1:] is 8 wide at element offset 1, x[:, 4:] 5 wide.
    # m = 12: x[:, 1:] 11 wide; x[:, 4:] 8 wide at offset 4, row stride 12.
    at9 = kernels(exe["slices"], np.ones((3, 9), np.float32), np.ones((3, 8), np.float32), np.ones((3, 5), np.float32))
    at12 = kernels(exe["slices"], np.ones((3, 12), np.float32), np.ones((3, 11), np.float32),
                   np.ones((3, 8), np.float32))
    assert len(at9) == len(at12) == 2
    assert at9[0] == at12[0]     # the add on the view at offset 1: scalar although 8 wide at m = 9
    assert at9[1] != at12[1]     # the multiply: scalar at m = 9 (5 wide), vector at m = 12


# -- arith / math semantics the SPIR-V lowering must keep (relax-spirv-arith, relax-spirv-f64-math,
# relax-spirv-float-controls): one executable, sizes 1, odd and large, against numpy -

def _sizes_case(n: int, rng, edge: np.ndarray) -> np.ndarray:
    """n values: the edge values first (as many as fit), then random ones."""
    return np.concatenate([edge, rng.standard_normal(max(0, n - edge.size)) * 4])[:n]


@pytest.fixture(scope="module")
def semantics_exe():
    t32, t64 = 'tensor<?xf32, #relax.shape<["n"]>>', 'tensor<?xf64, #relax.shape<["n"]>>'
    ti32, ti64 = 'tensor<?xi32, #relax.shape<["n"]>>', 'tensor<?xi64, #relax.shape<["n"]>>'
    unary = ["exp", "log", "tanh", "erf", "sin", "cos", "sigmoid"]
    body = "\n".join(f'  %u{i} = "relax.{o}"(%d) : ({t64}) -> {t64}' for i, o in enumerate(unary))
    outs = ([f"%u{i}" for i in range(len(unary))]
            + ["%p64", "%p32", "%s32", "%sin32", "%cos32", "%r32", "%m32", "%fm32", "%m64", "%fm64"])
    types = [t64] * (len(unary) + 1) + [t32] * 5 + [ti32, ti32, ti64, ti64]
    src = f'''func.func @main(%d: {t64}, %e: {t64}, %x: {t32}, %y: {t32}, %a: {ti32}, %b: {ti32}, %c: {ti64}, %g: {ti64})
    -> ({", ".join(types)}) attributes {{relax.function}} {{
{body}
  %p64 = "relax.power"(%d, %e) : ({t64}, {t64}) -> {t64}
  %p32 = "relax.power"(%x, %y) : ({t32}, {t32}) -> {t32}
  %z = "relax.subtract"(%x, %x) : ({t32}, {t32}) -> {t32}
  %s32 = "relax.multiply"(%z, %y) : ({t32}, {t32}) -> {t32}
  %sin32 = "relax.sin"(%x) : ({t32}) -> {t32}
  %cos32 = "relax.cos"(%x) : ({t32}) -> {t32}
  %r32 = "relax.mod"(%x, %y) : ({t32}, {t32}) -> {t32}
  %m32 = "relax.mod"(%a, %b) : ({ti32}, {ti32}) -> {ti32}
  %fm32 = "relax.floor_mod"(%a, %b) : ({ti32}, {ti32}) -> {ti32}
  %m64 = "relax.mod"(%c, %g) : ({ti64}, {ti64}) -> {ti64}
  %fm64 = "relax.floor_mod"(%c, %g) : ({ti64}, {ti64}) -> {ti64}
  return {", ".join(outs)} : {", ".join(types)}
}}'''
    return unary, relax_mlir.compile(src, target="vulkan")


@pytest.mark.parametrize("n", [1, 37, 4096])
def test_vulkan_arith_and_math_semantics_are_numpy_s(semantics_exe, n):
    """f64 transcendental math in f64 (GLSL.std.450 has it for 16/32 bits only), f32 sin / cos
    of any magnitude, pow and fmod with numpy's semantics for negative, zero and infinite
    operands (GL.Pow's are undefined, FRem's x rem inf NaN), Inf/NaN kept (inf - inf is NaN),
    signed mod / floor_mod exact for INT_MIN. 4096: the 4-wide vector kernels, 1 and 37 the
    scalar ones."""
    from scipy.special import erf
    unary, exe = semantics_exe
    rng = np.random.default_rng(n)
    inf, nan = np.inf, np.nan
    d = _sizes_case(n, rng, np.array([0.0, -0.0, 1e-310, 5e-324, 0.5, -2.5, 3.0, 6.5, 22.5, 709.7, 710.0, -745.0,
                                      -746.0, 1e8, inf, -inf, nan]))
    e = _sizes_case(n, rng, np.array([2.0, 3.0, -1.0, 0.5, -2.0, 0.0, nan, inf, 1.0, 2.0, 2.0, 3.0, 1.0]))
    pairs = [(-2, 3), (2 ** 63, 2), (-2, 0.5), (0, 0), (-0.0, 3), (-0.0, -3), (0, -1), (nan, 0), (1, nan), (-1, inf),
             (2, inf), (0.5, -inf), (-inf, 3), (-inf, -3), (-inf, 0.5), (-inf, -0.5), (inf, -0.5), (2, nan), (-1.5, -3),
             (2.5, 1.5), (3e38, 3.0), (-1e20, -inf), (-5.5, 2.0)]
    x = _sizes_case(n, rng, np.array([p[0] for p in pairs])).astype(np.float32)
    y = _sizes_case(n, rng, np.array([p[1] for p in pairs])).astype(np.float32)
    mn32, mn64 = np.iinfo(np.int32).min, np.iinfo(np.int64).min
    a = np.concatenate([[mn32, mn32, mn32, mn32, -7, 7, mn32], rng.integers(mn32, 2 ** 31, n)])[:n].astype(np.int32)
    b = np.concatenate([[7, -3, -1, mn32, 3, -3, 1], rng.integers(1, 100, n) * rng.choice([-1, 1], n)])[:n]
    b = b.astype(np.int32)
    c = np.concatenate([[mn64, mn64, mn64, -7], rng.integers(mn64, 2 ** 63 - 1, n)])[:n].astype(np.int64)
    g = np.concatenate([[7, -3, mn64, 3], rng.integers(1, 2 ** 40, n) * rng.choice([-1, 1], n)])[:n]
    g = g.astype(np.int64)
    got = [np.asarray(v) for v in exe(d, e, x, y, a, b, c, g)]
    with np.errstate(all="ignore"):
        want = [np.exp(d), np.log(d), np.tanh(d), erf(d), np.sin(d), np.cos(d), 1 / (1 + np.exp(-d)),
                np.power(d, e), np.power(x, y), (x - x) * y, np.sin(x), np.cos(x), np.fmod(x, y),
                np.fmod(a, b), np.mod(a, b), np.fmod(c, g), np.mod(c, g)]
    names = unary + ["power f64", "power f32", "inf - inf", "sin f32", "cos f32", "mod f32", "mod i32", "floor_mod i32",
                     "mod i64", "floor_mod i64"]
    for name, gv, wv in zip(names, got, want):
        if wv.dtype.kind == "i":
            np.testing.assert_array_equal(gv, wv, err_msg=name)
            continue
        # sin / cos beyond |x| ~ 1e9 are not reduced exactly (docs: relax-spirv-f64-math)
        wv = np.where(np.abs(d) > 1e6, gv, wv) if name in ("sin", "cos") else wv
        # GL.Pow (f32) is exp2(y log2 x) on the device: its error grows with |y log2 x|
        rtol = {"power f64": 1e-12, "power f32": 2e-5, "inf - inf": 0, "sin f32": 1e-6, "cos f32": 1e-6,
                "mod f32": 1e-6}.get(name, 4e-16 * 8)
        bad = np.isnan(gv) != np.isnan(wv)
        assert not bad.any(), f"{name}: NaN where numpy has {wv[bad][:4]} (got {gv[bad][:4]})"
        atol = 2e-6 if name in ("sin f32", "cos f32") else 1e-300   # GL.Sin inside [-pi, pi]
        np.testing.assert_allclose(gv, wv, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
        finite_zero = (wv == 0) & (gv == 0)
        assert (np.signbit(gv[finite_zero]) == np.signbit(wv[finite_zero])).all(), name


# -- relax.take's index check (mode "check"): deferred to the runtime on vulkan ---------------
from irtext import T  # noqa: E402

_TAKE_W = T("?x4", ["v", 4])
_TAKE_IDS = T("?", ["n"], "i64")
_TAKE_ROWS = T("?x4", ["n", 4])
_TAKE_SRC = f"""
module attributes {{relax.state = {{h = {T("?x4", ["cap", 4])}}}, relax.upper_bounds = {{cap = 64 : i64}}}} {{
  func.func @embed(%w: {_TAKE_W}, %ids: {_TAKE_IDS}) -> {_TAKE_ROWS} attributes {{relax.function}} {{
    %r = "relax.take"(%w, %ids) {{axis = 0 : i64}} : ({_TAKE_W}, {_TAKE_IDS}) -> {_TAKE_ROWS}
    return %r : {_TAKE_ROWS}
  }}
  func.func @doubled(%w: {_TAKE_W}, %ids: {_TAKE_IDS}) -> {_TAKE_ROWS} attributes {{relax.function}} {{
    %d = "relax.add"(%ids, %ids) : ({_TAKE_IDS}, {_TAKE_IDS}) -> {_TAKE_IDS}
    %r = "relax.take"(%w, %d) {{axis = 0 : i64}} : ({_TAKE_W}, {_TAKE_IDS}) -> {_TAKE_ROWS}
    %s = "relax.add"(%r, %r) : ({_TAKE_ROWS}, {_TAKE_ROWS}) -> {_TAKE_ROWS}
    return %s : {_TAKE_ROWS}
  }}
  func.func @token(%w: {_TAKE_W}, %tok: tensor<i32>) -> tensor<4xf32> attributes {{relax.function}} {{
    %r = "relax.take"(%w, %tok) {{axis = 0 : i64}} : ({_TAKE_W}, tensor<i32>) -> tensor<4xf32>
    return %r : tensor<4xf32>
  }}
  func.func @unsigned(%w: {_TAKE_W}, %ids: {T("?", ["n"], "ui32")}) -> {_TAKE_ROWS} attributes {{relax.function}} {{
    %r = "relax.take"(%w, %ids) {{axis = 0 : i64}} : ({_TAKE_W}, {T("?", ["n"], "ui32")}) -> {_TAKE_ROWS}
    return %r : {_TAKE_ROWS}
  }}
  func.func @cache(%w: {_TAKE_W}, %ids: {_TAKE_IDS}, %pos: {T("?x0", ["p", 0], "i8")}) -> {T("?x4", ["p + n", 4])} attributes {{relax.function}} {{
    %e = "relax.take"(%w, %ids) {{axis = 0 : i64}} : ({_TAKE_W}, {_TAKE_IDS}) -> {_TAKE_ROWS}
    "relax.state_write"(%e) {{state = "h", offset = "p"}} : ({_TAKE_ROWS}) -> ()
    %all = "relax.state_read"() {{state = "h", end = "p + n"}} : () -> {T("?x4", ["p + n", 4])}
    return %all : {T("?x4", ["p + n", 4])}
  }}
}}
"""


@pytest.fixture(scope="module")
def take_exes():
    """(vulkan, cpu) executables of _TAKE_SRC, each compiled once."""
    return relax_mlir.compile(_TAKE_SRC, target="vulkan"), relax_mlir.compile(_TAKE_SRC)


def _message(fn, *args) -> str:
    with pytest.raises(relax_mlir.IndexOutOfRangeError) as e:
        fn(*args)
    return str(e.value)


def test_vulkan_take_in_range_through_one_executable(take_exes):
    exe, cpu = take_exes
    rng = np.random.default_rng(0)
    for v, n in [(1, 1), (7, 5), (300, 257)]:
        w = rng.standard_normal((v, 4)).astype(np.float32)
        ids = rng.integers(-v, v, n).astype(np.int64)
        np.testing.assert_array_equal(exe["embed"](w, ids), w[ids])
        np.testing.assert_array_equal(exe["embed"](w, ids), cpu["embed"](w, ids))
        half = (ids // 2) if v > 1 else np.zeros(n, np.int64)
        np.testing.assert_array_equal(exe["doubled"](w, half), 2 * w[2 * half])
    w = rng.standard_normal((5, 4)).astype(np.float32)
    for t in (0, 4, -1, -5):
        np.testing.assert_array_equal(exe["token"](w, np.array(t, np.int32)), w[t])


@pytest.mark.parametrize("fn,ids", [("embed", [0, 5]), ("embed", [-6, 1, 2]), ("doubled", [1, 3]),
                                    ("doubled", [-3, 0]), ("token", 7), ("token", -6), ("unsigned", [4, 5]),
                                    ("unsigned", [2 ** 32 - 1])])
def test_vulkan_take_out_of_range_is_the_cpus_error(take_exes, fn, ids):
    """The worst index, the size, the op's location and the bound symbols: the cpu's
    message; the next call works normally."""
    exe, cpu = take_exes
    w = np.arange(20, dtype=np.float32).reshape(5, 4)
    a = np.array(ids, {"token": np.int32, "unsigned": np.uint32}.get(fn, np.int64))
    assert _message(exe[fn], w, a) == _message(cpu[fn], w, a)
    ok = np.array(1 if fn == "token" else [1, 4] if fn == "unsigned" else [1, -1], a.dtype)
    want = w[ok] if fn != "doubled" else 2 * w[2 * ok]
    np.testing.assert_array_equal(exe[fn](w, ok), want)


def test_vulkan_take_failure_leaves_the_state_as_the_cpu(take_exes):
    """A failed check before a state write: the rows are not written (as on the cpu target:
    nothing after the failed check runs); the session goes on normally."""
    exe, cpu = take_exes
    w = np.arange(20, dtype=np.float32).reshape(5, 4)
    g, c = exe.session(), cpu.session()
    pos = lambda p: np.empty((p, 0), np.int8)  # noqa: E731
    for s in (g, c):
        np.testing.assert_array_equal(s["cache"](w, np.array([1, 2], np.int64), pos(0)), w[[1, 2]])
    assert _message(g["cache"], w, np.array([3, 9], np.int64), pos(2)) == \
        _message(c["cache"], w, np.array([3, 9], np.int64), pos(2))
    np.testing.assert_array_equal(g.state["h"], c.state["h"])
    for s in (g, c):
        np.testing.assert_array_equal(s["cache"](w, np.array([4, -1, 0], np.int64), pos(2)), w[[1, 2, 4, -1, 0]])
    np.testing.assert_array_equal(g.state["h"], c.state["h"])
