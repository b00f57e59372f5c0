"""The quantized GEMV rule (relax_mlir/backends/gpu/quant_gemv.py): relax.quantized_matmul on
Q8_0 / Q4_0 / Q4_1 and f16 / bf16 weights as a subgroup-per-column launch with shuffles.

* vulkan (lavapipe): numerics against gguf's dequantizer at M = 1, odd and large, K of 1 to
  32 blocks, N odd and large, several sizes through ONE executable, with the route each call
  took (the shuffling kernel and its grid); Q4_K told apart from Q4_0 (Q5_0, Q5_1 and the
  K-quants: test_gpu_kquant.py);
* f16 / bf16 (numpy's own f16, bf16 as f32's high half): M = 1, 3, 17, K odd (16-bit loads),
  even, a multiple of 8 (128-bit loads), N odd and large, through ONE executable; a weight view
  misaligned for the loads takes the generic kernel (the run-time guard);
* a tiny GGUF through CausalLM.from_gguf(target="vulkan") generates the cpu target's tokens
  (Q8_0, Q4_0, Q4_1, F16, BF16; a bf16 safetensors directory; a random model with f16 / bf16
  projections);
* cuda: the kernel's PTX (shuffles, the wide byte loads) and its host path with the fake
  driver (the kernel loads; its grid).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import quant_gemv, rules  # noqa: E402
from relax_mlir.ops.quant import row_bytes  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from relax_mlir.target import Target  # noqa: E402
from test_gpu_rules import _SHUFFLE_CAPABILITY, _Routes, routes  # noqa: E402,F401  (routes: the fixture, each launch's route)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from bench_gpu import quant_blocks  # noqa: E402  (random blocks + a numpy dequantizer: no gguf needed)

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")


def _half_weights(fmt: str, n: int, k: int, rng):
    """(f16 / bf16 rows (n, 2k) as int8, their values as f64): bf16 = f32's high 16 bits."""
    w = rng.standard_normal((n, k)).astype(np.float32)
    if fmt == "f16":
        h = w.astype(np.float16)
        return h.view(np.int8).reshape(n, 2 * k), h.astype(np.float64)
    bits = (w.view(np.uint32) >> 16).astype(np.uint16)
    return bits.view(np.int8).reshape(n, 2 * k), (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _program(fmt: str, n: int, k: int, prologue: bool = False) -> str:
    """y = x @ dequantize(w)^T (with ``prologue``: x = silu(g) * u, fused into the kernel)."""
    X, W = f'tensor<?x{k}xf32, #relax.shape<["m", {k}]>>', f"tensor<{n}x{row_bytes(fmt, k)}xi8>"
    Y = f'tensor<?x{n}xf32, #relax.shape<["m", {n}]>>'
    if not prologue:
        return f'''
func.func @main(%x: {X}, %w: {W}) -> {Y} attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({X}, {W}) -> {Y}
  return %y : {Y}
}}'''
    return f'''
func.func @main(%g: {X}, %u: {X}, %w: {W}) -> {Y} attributes {{relax.function}} {{
  %s = "relax.silu"(%g) : ({X}) -> {X}
  %x = "relax.multiply"(%s, %u) : ({X}, {X}) -> {X}
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({X}, {W}) -> {Y}
  return %y : {Y}
}}'''


def _weights(fmt: str, n: int, k: int, rng):
    """(raw rows, dequantized f64) from gguf's quantizer and dequantizer (skip without gguf)."""
    gguf = pytest.importorskip("gguf")
    Q = gguf.GGMLQuantizationType
    QTYPE = {"q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "q4_1": Q.Q4_1, "q4_k": Q.Q4_K}
    if fmt == "q4_k":
        raw = rng.integers(0, 256, (n, row_bytes(fmt, k)), dtype=np.uint8)
        raw.reshape(n, k // 256, -1)[..., 0:4] = np.array([1e-2, 3e-2], np.float16).view(np.uint8)
    else:
        w = rng.standard_normal((n, k)).astype(np.float32)
        raw = np.ascontiguousarray(gguf.quants.quantize(w, QTYPE[fmt])).view(np.uint8).reshape(n, -1)
    return raw.view(np.int8), gguf.quants.dequantize(raw, QTYPE[fmt]).reshape(n, k).astype(np.float64)


def _subgroups(t: Target) -> int:
    return rules.QuantMatmul().default(t, "q4_0")["qgemv_subgroups"]


#: (N, K): one block, odd N, N below and above a workgroup's columns, long K
_SHAPES = [(7, 32), (33, 96), (300, 1024)]


@needs_vulkan
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q4_1"])
@pytest.mark.parametrize("n,k", _SHAPES, ids=[f"{n}x{k}" for n, k in _SHAPES])
def test_vulkan_quantized_gemv(routes, fmt, n, k):
    """Every M through one executable, one shuffling launch per call, grid
    (ceil(N / subgroups per workgroup), M) (qgemm=1: the GEMV for every M; the GEMM route
    from 8 rows is test_gpu_quant_gemm.py's)."""
    exe = relax_mlir.compile(_program(fmt, n, k), target="vulkan", options={"schedule_config": "qgemm=1"})
    rng = np.random.default_rng(n + k)
    raw, deq = _weights(fmt, n, k, rng)
    per = _subgroups(Target.detect("vulkan"))
    for m in (1, 3, 64):
        x = rng.standard_normal((m, k)).astype(np.float32)
        y, launched = routes.call(exe, x, raw)
        ref = x.astype(np.float64) @ deq.T
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
        assert launched == [(True, (-(-n // per), m, 1))]


@needs_vulkan
@pytest.mark.parametrize("fmt", ["q4_0", "q8_0", *quant_gemv.HALF_FORMATS])
def test_vulkan_quantized_gemv_fused_prologue(routes, fmt):
    """silu(g) * u fused into the quantized (or f16 / bf16) matmul (the MLP's down
    projection): one launch, the prologue computed per element of x inside the GEMV."""
    half = fmt in quant_gemv.HALF_FORMATS
    n, k = (24, 72) if half else (40, 128)
    exe = relax_mlir.compile(_program(fmt, n, k, prologue=True), target="vulkan")
    rng = np.random.default_rng(3)
    raw, deq = (_half_weights if half else _weights)(fmt, n, k, rng)
    for m in (1, 5):
        g, u = (rng.standard_normal((m, k)).astype(np.float32) for _ in range(2))
        y, launched = routes.call(exe, g, u, raw)
        x = g.astype(np.float64) / (1 + np.exp(-g.astype(np.float64))) * u
        ref = x @ deq.T
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
        assert [s for s, _ in launched] == [True]


@needs_vulkan
def test_vulkan_k_quants_told_apart(routes):
    """Q4_K's bytes per 32 elements (18) equal Q4_0's: the rule tells them apart by the block
    size the kernel divides k by, and decodes Q4_K as Q4_K on the shuffling GEMV (the run
    formats: test_gpu_kquant.py)."""
    n, k = 5, 512
    exe = relax_mlir.compile(_program("q4_k", n, k), target="vulkan")
    rng = np.random.default_rng(4)
    raw, deq = _weights("q4_k", n, k, rng)
    x = rng.standard_normal((2, k)).astype(np.float32)
    y, launched = routes.call(exe, x, raw)
    ref = x.astype(np.float64) @ deq.T
    np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
    assert [s for s, _ in launched] == [True]


#: (N, K) of the f16 / bf16 GEMV: K odd (16-bit loads), 2 mod 4 (32-bit), 4 mod 8 (64-bit), a
#: multiple of 8 (128-bit); N 1, odd, below and above a workgroup's columns
_HALF_SHAPES = [(1, 1), (7, 33), (5, 6), (9, 20), (33, 96), (300, 1000)]


@needs_vulkan
@pytest.mark.parametrize("fmt", quant_gemv.HALF_FORMATS)
@pytest.mark.parametrize("n,k", _HALF_SHAPES, ids=[f"{n}x{k}" for n, k in _HALF_SHAPES])
def test_vulkan_half_gemv(routes, fmt, n, k):
    """M = 1, 3, 17 through one executable, one shuffling launch per call, grid
    (ceil(N / subgroups per workgroup), M); f32 accumulation (the only error: summation order)
    (qgemm=1: the GEMV for every M)."""
    exe = relax_mlir.compile(_program(fmt, n, k), target="vulkan", options={"schedule_config": "qgemm=1"})
    rng = np.random.default_rng(n * 7 + k)
    raw, deq = _half_weights(fmt, n, k, rng)
    per = _subgroups(Target.detect("vulkan"))
    for m in (1, 3, 17):
        x = rng.standard_normal((m, k)).astype(np.float32)
        y, launched = routes.call(exe, x, raw)
        ref = x.astype(np.float64) @ deq.T
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0, err_msg=f"{fmt} {m}x{n}x{k}")
        assert launched == [(True, (-(-n // per), m, 1))]


def test_half_width():
    """Elements per lane load: the knob, halved until it divides K."""
    assert [quant_gemv.half_width(k, 8) for k in (1, 33, 6, 20, 96, 1000, 4096)] == [1, 1, 2, 4, 8, 8, 8]
    assert [quant_gemv.half_width(k, 4) for k in (96, 6)] == [4, 2]


def _view_program(fmt: str, n: int, k: int, offset: int) -> str:
    """The weight a relax.view at byte ``offset`` of a flat byte tensor (as relax_mlir/llm's
    stacked layers)."""
    X, W = f'tensor<?x{k}xf32, #relax.shape<["m", {k}]>>', f"tensor<{n}x{2 * k}xi8>"
    Y = f'tensor<?x{n}xf32, #relax.shape<["m", {n}]>>'
    B = f"tensor<1x{offset + 2 * n * k}xi8>"
    return f'''
func.func @main(%x: {X}, %b: {B}) -> {Y} attributes {{relax.function}} {{
  %w = "relax.view"(%b) {{dtype = i8, offset = {offset} : i64, shape = #relax.shape<[{n}, {2 * k}]>}} : ({B}) -> {W}
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({X}, {W}) -> {Y}
  return %y : {Y}
}}'''


@needs_vulkan
@pytest.mark.parametrize("fmt,k,offset,shuffles", [("f16", 64, 16, True), ("f16", 64, 2, False),
                                                   ("bf16", 64, 4, False), ("bf16", 33, 2, True),
                                                   ("bf16", 33, 1, False)])
def test_vulkan_half_gemv_alignment_guard(routes, fmt, k, offset, shuffles):
    """A weight whose bytes start where the lane loads would be misaligned (128-bit loads at
    K = 64, 16-bit ones at odd K) runs the generic kernel (no shuffles), with equal results."""
    n = 5
    exe = relax_mlir.compile(_view_program(fmt, n, k, offset), target="vulkan")
    rng = np.random.default_rng(k + offset)
    raw, deq = _half_weights(fmt, n, k, rng)
    b = np.concatenate([np.zeros(offset, np.int8), raw.reshape(-1)])[None]
    x = rng.standard_normal((2, k)).astype(np.float32)
    y, launched = routes.call(exe, x, b)
    ref = x.astype(np.float64) @ deq.T
    np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
    assert launched and all(s == shuffles for s, _ in launched), launched
    assert (len(launched) == 1) == shuffles


@needs_vulkan
@pytest.mark.parametrize("fmt,k", [("f16", 8), ("bf16", 3), ("q4_0", 32)])
def test_vulkan_gemv_past_the_grid_limit(routes, fmt, k):
    """More output columns than a grid may have workgroups (65535 on lavapipe, at one column
    per workgroup; e.g. a 152k-row lm head): the grid is capped and the workgroups stride over
    the column groups; every column right."""
    n = 70001
    exe = relax_mlir.compile(_program(fmt, n, k), target="vulkan")
    rng = np.random.default_rng(k)
    raw, deq = _half_weights(fmt, n, k, rng) if fmt in quant_gemv.HALF_FORMATS else _weights(fmt, n, k, rng)
    x = rng.standard_normal((2, k)).astype(np.float32)
    y, launched = routes.call(exe, x, raw)
    ref = x.astype(np.float64) @ deq.T
    np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
    assert launched == [(True, (65535, 2, 1))]


@needs_vulkan
@pytest.mark.parametrize("offset,shuffles", [(16, True), (4, False)])
def test_vulkan_half_gemv_x_alignment_guard(routes, offset, shuffles):
    """x read in 128-bit loads (K a multiple of 8): an x whose bytes start off a 16-byte
    boundary (a relax.view at byte 4) runs the generic kernel, with equal results."""
    n, k, m = 6, 64, 2
    X, W, Y = f"tensor<{m}x{k}xf32>", f"tensor<{n}x{2 * k}xi8>", f"tensor<{m}x{n}xf32>"
    B = f"tensor<1x{offset + 4 * m * k}xi8>"
    src = f'''
func.func @main(%b: {B}, %w: {W}) -> {Y} attributes {{relax.function}} {{
  %x = "relax.view"(%b) {{dtype = f32, offset = {offset} : i64, shape = #relax.shape<[{m}, {k}]>}} : ({B}) -> {X}
  %y = "relax.quantized_matmul"(%x, %w) {{format = "f16"}} : ({X}, {W}) -> {Y}
  return %y : {Y}
}}'''
    exe = relax_mlir.compile(src, target="vulkan")
    rng = np.random.default_rng(offset)
    raw, deq = _half_weights("f16", n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    b = np.concatenate([np.zeros(offset, np.int8), x.reshape(-1).view(np.int8)])[None]
    y, launched = routes.call(exe, b, raw)
    ref = x.astype(np.float64) @ deq.T
    np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
    assert launched and all(s == shuffles for s, _ in launched), launched


# -- the epilogue at the store (relax-fuse-ops{quant-epilogue=true}) ------------------------

def _epilogue_program(fmt: str, n: int, k: int, bias: bool = True, view: int = -1) -> str:
    """y = silu(x @ dequantize(w)^T + r [+ b]): the residual add, a bias and an activation
    after the matmul, which the GPU targets fuse into its kernel; with ``view`` >= 0 the
    weight is a relax.view at that byte offset of a flat byte tensor (the alignment guard)."""
    X, W = f'tensor<?x{k}xf32, #relax.shape<["m", {k}]>>', f"tensor<{n}x{row_bytes(fmt, k)}xi8>"
    Y, B = f'tensor<?x{n}xf32, #relax.shape<["m", {n}]>>', f"tensor<{n}xf32>"
    V = f"tensor<1x{view + n * row_bytes(fmt, k)}xi8>"
    args = [f"%x: {X}", f"%v: {V}" if view >= 0 else f"%w: {W}", f"%r: {Y}"] + ([f"%b: {B}"] if bias else [])
    lines = [f'%w = "relax.view"(%v) {{dtype = i8, offset = {view} : i64, shape = #relax.shape<[{n}, '
             f'{row_bytes(fmt, k)}]>}} : ({V}) -> {W}'] if view >= 0 else []
    lines += [f'%y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({X}, {W}) -> {Y}',
              f'%z = "relax.add"(%y, %r) : ({Y}, {Y}) -> {Y}']
    if bias:
        lines.append(f'%zb = "relax.add"(%z, %b) : ({Y}, {B}) -> {Y}')
    lines.append(f'%o = "relax.silu"(%{"zb" if bias else "z"}) : ({Y}) -> {Y}')
    body = "\n  ".join(lines)
    return (f'func.func @main({", ".join(args)}) -> {Y} attributes {{relax.function}} {{\n'
            f'  {body}\n  return %o : {Y}\n}}\n')


def _epilogue_ref(x, deq, r, b):
    z = x.astype(np.float64) @ deq.T + r + (b if b is not None else 0)
    return z / (1 + np.exp(-z))


#: (format, N, K): every format the GEMV takes; N odd, below and above a workgroup's columns;
#: K one block and many (Q8_0 / Q4), odd (16-bit loads) and a multiple of 8 (f16 / bf16)
_EPI_SHAPES = [("q8_0", 33, 96), ("q8_0", 300, 1024), ("q4_0", 7, 32), ("q4_0", 301, 512), ("q4_1", 33, 256),
               ("f16", 7, 33), ("f16", 300, 1000), ("bf16", 33, 20), ("bf16", 301, 512)]


@needs_vulkan
@pytest.mark.parametrize("fmt,n,k", _EPI_SHAPES, ids=[f"{f}-{n}x{k}" for f, n, k in _EPI_SHAPES])
def test_vulkan_quantized_gemv_epilogue(routes, fmt, n, k):
    """A residual add, a bias add and silu after the quantized matmul: ONE kernel (relax-fuse-ops
    with quant-epilogue on the GPU targets), one launch per call that applies them at the store
    (the shuffling GEMV below qgemm_min_rows rows, the GEMM tiles from there); M = 1, 3, 17, 130
    through one executable."""
    exe = relax_mlir.compile(_epilogue_program(fmt, n, k), target="vulkan")
    rng = np.random.default_rng(n + k)
    raw, deq = (_half_weights if fmt in quant_gemv.HALF_FORMATS else _weights)(fmt, n, k, rng)
    b = rng.standard_normal(n).astype(np.float32)
    per = _subgroups(Target.detect("vulkan"))
    for m in (1, 3, 17, 130):
        x, r = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
        y, launched = routes.call(exe, x, raw, r, b)
        ref = _epilogue_ref(x, deq, r, b)
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0, err_msg=f"{fmt} {m}x{n}x{k}")
        if m < rules.QGEMM_MIN_ROWS:   # the GEMV; from there the GEMM tiles, the same epilogue at the store
            assert launched == [(True, (-(-n // per), m, 1))], (m, launched)
        else:
            assert launched == [(False, (-(-n // 64), -(-m // 64), 1))], (m, launched)


@needs_vulkan
@pytest.mark.parametrize("fmt,k,offset", [("f16", 64, 2), ("bf16", 33, 1)])
def test_vulkan_quantized_matmul_epilogue_on_the_generic_kernel(routes, fmt, k, offset):
    """The fused kernel where the GEMV does not run: an f16 / bf16 weight misaligned for the
    lane loads (the run-time guard's else branch: the fill, the generic and the epilogue, a
    launch each); equal results, no shuffles."""
    n = 5
    exe = relax_mlir.compile(_epilogue_program(fmt, n, k, bias=False, view=offset), target="vulkan")
    rng = np.random.default_rng(k + offset)
    raw, deq = (_half_weights if fmt in quant_gemv.HALF_FORMATS else _weights)(fmt, n, k, rng)
    v = np.concatenate([np.zeros(offset, np.int8), raw.reshape(-1)])[None]
    for m in (1, 3):
        x, r = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
        y, launched = routes.call(exe, x, v, r)
        ref = _epilogue_ref(x, deq, r, None)
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0)
        assert not any(s for s, _ in launched), launched
        assert len(launched) == 3, launched   # the guard's else branch: a launch per op


@needs_vulkan
@pytest.mark.skipif(__import__("shutil").which("spirv-val") is None, reason="spirv-val (spirv-tools) not installed")
@pytest.mark.parametrize("fmt", ["q4_1", "bf16"])
def test_vulkan_quantized_gemv_epilogue_spirv(tmp_path, fmt):
    """The GEMV and GEMM kernels with the epilogue fused (and the fallback's kernels) validate
    for Vulkan 1.1 (subgroup shuffles): one of them shuffles."""
    from mlir import ir
    from gpu_checks import validated_spirv
    ctx = relax_mlir.make_context()
    with ctx:
        m = ir.Module.parse(_epilogue_program(fmt, 33, 96))
        m.operation.attributes["relax.target"] = Target.detect("vulkan").to_attr()
        relax_mlir.run_pipeline(m, "builtin.module(vulkan)")
        shuffles = [_SHUFFLE_CAPABILITY in path.read_bytes() for path in validated_spirv(m, tmp_path).values()]
    # the GEMM tiles (no shuffle), the GEMV (shuffles), bf16 also the fallback's three
    assert sorted(shuffles) == [False] * (4 if fmt == "bf16" else 1) + [True], shuffles


# -- a tiny GGUF on vulkan -------------------------------------------------------------------

class _Labels(_Routes):
    """As test_gpu_rules' routes, with each launch's kernel label (the runtime's ``Kernel.label``)."""

    def __init__(self, mp: pytest.MonkeyPatch):
        super().__init__(mp)
        # the LLM's executables are built anew while the recorder is on (an earlier test of the
        # process may have compiled the same config: its kernels were made before the patches)
        from relax_mlir.llm import causal_lm
        mp.setattr(causal_lm, "_EXECUTABLES", {})
        launch = vkrt.Recorder.launch
        labels = self.labels = []

        def recorder_launch(self, kernel, grid, args):
            labels.append((kernel.label.split("::")[0], kernel.shuffles))
            return launch(self, kernel, grid, args)

        mp.setattr(vkrt.Recorder, "launch", recorder_launch)


@needs_vulkan
@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q4_1", "f16", "bf16"])
def test_vulkan_causal_lm_from_gguf_generates_the_cpu_tokens(tmp_path, monkeypatch, fmt):
    """Greedy tokens equal; in a decode step every quantized matmul (qkv, o, gate, up, and
    down with silu(gate) * up fused in, per layer; the lm head) is the shuffling GEMV (f16 /
    bf16: GGUF F16 / BF16 projections kept as stored); o and down with their residual add."""
    pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "llm"))
    from test_gguf import write_gguf
    from test_quantized import CFG, FORMATS, _source_model
    import transformers

    from relax_mlir.llm import CausalLM
    src, sd = _source_model(transformers.LlamaConfig(**CFG))
    path = tmp_path / f"{fmt}.gguf"
    write_gguf(path, "llama", sd, src.config, {}, FORMATS[fmt])
    seen = _Labels(monkeypatch)
    g = CausalLM.from_gguf(str(path), max_seq_len=32, target="vulkan")
    c = CausalLM.from_gguf(str(path), max_seq_len=32)
    assert dict(g.config.formats)["down"] == fmt
    ids = np.random.default_rng(5).integers(0, CFG["vocab_size"], 6).astype(np.int64)
    np.testing.assert_array_equal(g.generate(ids, 8, eos_token_id=[]), c.generate(ids, 8, eos_token_id=[]))
    del seen.labels[:]
    g.decode(3)
    quant = [(name, s) for name, s in seen.labels if "quantized_matmul" in name]
    assert len(quant) == 5 * CFG["num_hidden_layers"] + 1 and all(s for _, s in quant), seen.labels
    # the o and down projections take their residual add (relax-fuse-ops{quant-epilogue=true})
    assert sum("quantized_matmul_add" in name for name, _ in quant) == 2 * CFG["num_hidden_layers"], quant


@needs_vulkan
def test_vulkan_from_pretrained_bf16_safetensors(tmp_path, monkeypatch):
    """A tiny HF Llama saved in bf16 (safetensors) through CausalLM.from_pretrained: its
    projections stay bf16 rows on vulkan, the cpu target's greedy tokens, every matmul of a
    decode step on the shuffling GEMV."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "llm"))
    from test_quantized import CFG, _source_model

    from relax_mlir.llm import CausalLM
    src, _ = _source_model(transformers.LlamaConfig(**CFG))
    src.to(torch.bfloat16).save_pretrained(tmp_path)
    seen = _Labels(monkeypatch)
    g = CausalLM.from_pretrained(str(tmp_path), max_seq_len=32, target="vulkan")
    c = CausalLM.from_pretrained(str(tmp_path), max_seq_len=32)
    assert dict(g.config.formats)["qkv"] == "bf16"
    ids = np.arange(2, 8, dtype=np.int64)
    np.testing.assert_array_equal(g.generate(ids, 8, eos_token_id=[]), c.generate(ids, 8, eos_token_id=[]))
    del seen.labels[:]
    g.decode(3)
    mm = [(name, s) for name, s in seen.labels if "quantized_matmul" in name]
    assert len(mm) == 5 * CFG["num_hidden_layers"] + 1 and all(s for _, s in mm), seen.labels


@needs_vulkan
@pytest.mark.parametrize("fmt", quant_gemv.HALF_FORMATS)
def test_vulkan_random_half_model(monkeypatch, fmt):
    """CausalLM.random with f16 / bf16 projections and lm head (the llm CLI's --random-format,
    what the device check times against f32 weights): the cpu target's greedy tokens, and the
    6 half-format matmuls of a decode step (qkv, o, gate, up, down per layer; the lm head) on
    the shuffling GEMV."""
    from dataclasses import replace

    from relax_mlir.llm import CausalLM
    from relax_mlir.llm.cli import SIZES
    c = replace(SIZES["tiny"], formats=tuple((r, fmt) for r in ("qkv", "o", "gate", "up", "down", "lm_head")))
    seen = _Labels(monkeypatch)
    g = CausalLM.random(c, max_seq_len=24, std=0.3, target="vulkan")
    cpu = CausalLM.random(c, max_seq_len=24, std=0.3)
    ids = np.arange(3, 9, dtype=np.int64)
    toks = g.generate(ids, 8, eos_token_id=[])
    np.testing.assert_array_equal(toks, cpu.generate(ids, 8, eos_token_id=[]))
    assert len(set(toks[6:].tolist())) > 2, toks   # not a degenerate repetition
    del seen.labels[:]
    g.decode(3)
    half = [(name, s) for name, s in seen.labels if "quantized_matmul" in name]
    assert len(half) == 5 * c.num_layers + 1 and all(s for _, s in half), seen.labels
    assert sum("quantized_matmul_add" in name for name, _ in half) == 2 * c.num_layers, half


def test_random_model_formats_are_checked():
    """CausalLM.random makes f32 weights or f16 / bf16 ones (one of them): other formats,
    or both halves at once, need a file."""
    from dataclasses import replace

    from relax_mlir.llm import CausalLM
    from relax_mlir.llm.cli import SIZES
    for formats in ((("qkv", "q8_0"),), (("qkv", "f16"), ("o", "bf16"))):
        with pytest.raises(ValueError, match="CausalLM.random makes f32 weights"):
            CausalLM.random(replace(SIZES["tiny"], formats=formats))


# -- cuda: PTX and the host path -------------------------------------------------------------

def _ptx(fmt: str, src: str = "", config: str = "") -> dict:
    """Kernel name -> PTX of ``src`` (default: the prologue program on ``fmt``; ``config``: the
    cuda pipeline's schedule-config)."""
    import subprocess
    pipeline = f"cuda{{schedule-config={config}}}" if config else "cuda"
    r = subprocess.run([sys.executable, "-c", "from relax_mlir.tools.relax_opt import main; import sys; "
                        "sys.exit(main())", "-", f"--pass-pipeline=builtin.module({pipeline})"],
                       input=src or _program(fmt, 64, 256, prologue=True), capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr[-2000:]
    out = {}
    for line in r.stdout.splitlines():
        if "gpu.binary @" in line and "assembly = \"" in line:
            out[line.split("gpu.binary @")[1].split(" ")[0]] = \
                line.split("assembly = \"")[1].encode().decode("unicode_escape")
    return out


@pytest.mark.parametrize("fmt,load", [("q8_0", "ld.global.v2.b8"), ("q4_0", "ld.global.v2.b8"),
                                      ("q4_1", "ld.global.b32")])
def test_cuda_quantized_gemv_ptx(fmt, load):
    """One kernel: 128 threads (4 warps, a column each), 5 butterfly shuffles (32 lanes), the
    quant bytes in vector loads as wide as the block layout's alignment (Q4_1's quants are
    4-byte aligned: one 32-bit load per lane and block; Q8_0's and Q4_0's 2-byte aligned),
    the f16 scales converted, FMAs. (qgemm=1: the GEMV alone, no GEMM route.)"""
    ptx = _ptx(fmt, config="qgemm=1")
    assert len(ptx) == 1, list(ptx)
    (p,) = ptx.values()
    p = p.replace("\x00A", "\n").replace("\x009", "\t")   # MLIR's \0A, \09 escapes
    assert ".maxntid 128, 1, 1" in p
    assert p.count("shfl.sync.bfly.b32") == 5
    loads = [x.split()[0] for x in p.splitlines() if x.strip().startswith("ld.global")]
    assert load in loads and "ld.global.b8" not in loads, loads   # no byte-by-byte loads (LLVM 22: untyped .b8)
    assert "cvt.f32.f16" in p and "fma.rn.f32" in p
    assert "bar.sync" not in p


@pytest.mark.parametrize("fmt", quant_gemv.HALF_FORMATS)
def test_cuda_half_gemv_ptx(fmt):
    """f16 / bf16 (K = 256: 8 elements per lane load, the prologue silu(g) * u fused): the GEMV
    kernel reads only 128-bit words: per chunk one of the weight (8 halves) and two each of g
    and u (8 floats), no byte loads; it converts each 16-bit half in registers
    (f16: cvt.f32.f16 of the word's halves; bf16: shifts and masks, no f16 conversion),
    FMAs, 5 butterfly shuffles, no barrier; the other kernels are the generic kernel behind
    the alignment guard (no shuffles)."""
    ptx = {name: p.replace("\x00A", "\n").replace("\x009", "\t") for name, p in _ptx(fmt).items()}
    gemv = [p for p in ptx.values() if "shfl.sync.bfly.b32" in p]
    assert len(gemv) == 1 and len(ptx) > 1, list(ptx)
    (p,) = gemv
    assert ".maxntid 128, 1, 1" in p and p.count("shfl.sync.bfly.b32") == 5
    loads = [x.split()[0] for x in p.splitlines() if x.strip().startswith("ld.global")]
    assert loads == ["ld.global.v4.b32"] * 5, loads
    assert "fma.rn.f32" in p and "bar.sync" not in p
    assert ("cvt.f32.f16" in p) == (fmt == "f16")
    if fmt == "bf16":
        assert "shl.b32" in p and "and.b32" in p


@pytest.mark.parametrize("fmt,kernels", [("q8_0", 2), ("q4_1", 2), ("f16", 5)])
def test_cuda_quantized_gemv_epilogue_ptx(fmt, kernels):
    """With a residual add, a bias and silu fused after it: the GEMV kernel (5 butterfly
    shuffles, no barrier) loads the residual and the bias once per output after the shuffles,
    computes silu (its division: rcp.rn.f32) and stores once; the GEMM kernel of many rows
    (barriers, no shuffle) applies the same epilogue at its stores; no other kernel for Q8_0 /
    Q4_1 (C never materialized); f16 keeps the fallback's three kernels (the fill, the generic,
    the epilogue) behind the alignment guard."""
    ptx = {name: p.replace("\x00A", "\n").replace("\x009", "\t")
           for name, p in _ptx(fmt, _epilogue_program(fmt, 64, 256)).items()}
    assert len(ptx) == kernels, list(ptx)
    gemm = [p for p in ptx.values() if "bar.sync" in p and "shfl.sync.bfly.b32" not in p]
    assert len(gemm) == 1 and "rcp.rn.f32" in gemm[0], list(ptx)
    gemv = [p for p in ptx.values() if "shfl.sync.bfly.b32" in p]
    assert len(gemv) == 1, list(ptx)
    (p,) = gemv
    assert p.count("shfl.sync.bfly.b32") == 5 and "bar.sync" not in p
    assert [x.split()[0] for x in p.splitlines() if x.strip().startswith("st.global")] == ["st.global.b32"]
    store = p[p.rindex("shfl.sync.bfly.b32"):]   # after the last shuffle: lane 0's epilogue and store
    assert [x.split()[0] for x in store.splitlines() if x.strip().startswith("ld.global")] == ["ld.global.b32"] * 2
    assert "rcp.rn.f32" in store and "st.global.b32" in store   # silu's division, then the one store


FAKE_QGEMV = r'''
import gguf
RB = {"q4_0": 18, "q8_0": 34, "q4_1": 20, "f16": 64, "bf16": 64}   # bytes per 32 elements
out = []
for fmt, n, k in (("q4_0", 320, 128), ("q8_0", 33, 64), ("q4_1", 7, 32), ("f16", 40, 64), ("bf16", 9, 33)):
    rb = k * RB[fmt] // 32
    exe = relax_mlir.compile(sys.argv[2].replace("FMT", fmt).replace("NN", str(n)).replace("KK", str(k))
                             .replace("RB", str(rb)), target="cuda")
    for m in (1, 3):
        before = launches()
        epi = [np.ones((m, n), np.float32)] if len(sys.argv) > 3 else []   # the residual
        y = exe(np.ones((m, k), np.float32), np.zeros((n, rb), np.int8), *epi)
        out.append([fmt, list(y.shape), [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
print("FAKE-RUN " + json.dumps(out))
'''

FAKE_SRC = '''
func.func @main(%x: tensor<?xKKxf32, #relax.shape<["m", KK]>>, %w: tensor<NNxRBxi8>) -> tensor<?xNNxf32, #relax.shape<["m", NN]>> attributes {relax.function} {
  %y = "relax.quantized_matmul"(%x, %w) {format = "FMT"} : (tensor<?xKKxf32, #relax.shape<["m", KK]>>, tensor<NNxRBxi8>) -> tensor<?xNNxf32, #relax.shape<["m", NN]>>
  return %y : tensor<?xNNxf32, #relax.shape<["m", NN]>>
}'''


FAKE_EPI_SRC = '''
func.func @main(%x: tensor<?xKKxf32, #relax.shape<["m", KK]>>, %w: tensor<NNxRBxi8>, %r: tensor<?xNNxf32, #relax.shape<["m", NN]>>) -> tensor<?xNNxf32, #relax.shape<["m", NN]>> attributes {relax.function} {
  %y = "relax.quantized_matmul"(%x, %w) {format = "FMT"} : (tensor<?xKKxf32, #relax.shape<["m", KK]>>, tensor<NNxRBxi8>) -> tensor<?xNNxf32, #relax.shape<["m", NN]>>
  %z = "relax.add"(%y, %r) : (tensor<?xNNxf32, #relax.shape<["m", NN]>>, tensor<?xNNxf32, #relax.shape<["m", NN]>>) -> tensor<?xNNxf32, #relax.shape<["m", NN]>>
  return %z : tensor<?xNNxf32, #relax.shape<["m", NN]>>
}'''


def test_fake_run_quantized_gemv_epilogue_host_path(tmp_path):
    """With the residual add fused (the down projection's): still one launch per call, the
    GEMV's grid, for every format."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_QGEMV, FAKE_EPI_SRC, "epilogue")
    assert got == [["q4_0", [1, 320], [[80, 1, 1]]], ["q4_0", [3, 320], [[80, 3, 1]]],
                   ["q8_0", [1, 33], [[9, 1, 1]]], ["q8_0", [3, 33], [[9, 3, 1]]],
                   ["q4_1", [1, 7], [[2, 1, 1]]], ["q4_1", [3, 7], [[2, 3, 1]]],
                   ["f16", [1, 40], [[10, 1, 1]]], ["f16", [3, 40], [[10, 3, 1]]],
                   ["bf16", [1, 9], [[3, 1, 1]]], ["bf16", [3, 9], [[3, 3, 1]]]]


def test_fake_run_quantized_gemv_host_path(tmp_path):
    """The PTX loads through the (fake) driver; one launch per call, grid (ceil(N / 4), M, 1)
    (f16 / bf16: the GEMV behind its alignment guard, which the driver's buffers pass)."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_QGEMV, FAKE_SRC)
    assert got == [["q4_0", [1, 320], [[80, 1, 1]]], ["q4_0", [3, 320], [[80, 3, 1]]],
                   ["q8_0", [1, 33], [[9, 1, 1]]], ["q8_0", [3, 33], [[9, 3, 1]]],
                   ["q4_1", [1, 7], [[2, 1, 1]]], ["q4_1", [3, 7], [[2, 3, 1]]],
                   ["f16", [1, 40], [[10, 1, 1]]], ["f16", [3, 40], [[10, 3, 1]]],
                   ["bf16", [1, 9], [[3, 1, 1]]], ["bf16", [3, 9], [[3, 3, 1]]]]


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q4_1"])
def test_bench_dequantizer_matches_gguf(fmt):
    """The numpy dequantizer the device checks use (bench_gpu.quant_blocks) is gguf's."""
    gguf = pytest.importorskip("gguf")
    raw, deq = quant_blocks(fmt, 5, 96, np.random.default_rng(1))
    qt = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0,
          "q4_1": gguf.GGMLQuantizationType.Q4_1}[fmt]
    np.testing.assert_array_equal(deq, gguf.quants.dequantize(raw.view(np.uint8), qt).reshape(5, 96))


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0", "q4_1", "f16", "bf16"])
def test_cuda_quantized_gemv_numerics(fmt):
    """On a CUDA device (skipped elsewhere): the quantized GEMV against numpy at M = 1, 3, 64,
    N odd and large, through ONE executable per shape (random blocks, numpy's dequantizer:
    no gguf needed on the device; f16 / bf16 also at odd K and K = 4 mod 8)."""
    from relax_mlir.runtime import cuda
    ok, why = cuda.available()
    if not ok:
        pytest.skip(f"no CUDA device: {why}")
    rng = np.random.default_rng(12)
    half = fmt in quant_gemv.HALF_FORMATS
    for n, k in _SHAPES + [(32000, 768)] + ([(7, 33), (9, 20)] if half else []):
        exe = relax_mlir.compile(_program(fmt, n, k), target="cuda")
        raw, deq = _half_weights(fmt, n, k, rng) if half else quant_blocks(fmt, n, k, rng)
        for m in (1, 3, 64):
            x = rng.standard_normal((m, k)).astype(np.float32)
            ref = x.astype(np.float64) @ deq.T.astype(np.float64)
            np.testing.assert_allclose(exe(x, raw), ref, atol=1e-5 * np.abs(ref).max(), rtol=0,
                                       err_msg=f"{fmt} {m}x{n}x{k}")


def test_rule_selection_and_space():
    """Defaults per target: 4 lanes per block; 4 warps per workgroup on cuda, one subgroup on
    vulkan; no known subgroup size: no rule (the kernel stays a row reduction)."""
    from dataclasses import replace

    from relax_mlir.target import GPU_DEFAULTS
    cuda = Target(kind="cuda", dispatch_policy="off", **GPU_DEFAULTS["cuda"])
    vk = Target(kind="vulkan", dispatch_policy="off", **GPU_DEFAULTS["vulkan"])
    lavapipe = replace(vk, subgroup_size=8, max_threads_per_block=1024)
    r = rules.QuantMatmul()
    assert r.default(cuda, "q4_0") == {"qgemv_lanes_per_block": 4, "qgemv_halves": 8, "qgemv_columns": 1,
                                       "qgemv_subgroups": 4, "qgemm": 2, "qgemm_min_rows": 16}
    assert r.default(lavapipe, "q4_0") == {"qgemv_lanes_per_block": 4, "qgemv_halves": 8, "qgemv_columns": 1,
                                           "qgemv_subgroups": 1, "qgemm": 2, "qgemm_min_rows": 16}
    assert r.dtypes(vk) == () and r.dtypes(cuda) == quant_gemv.FORMATS
    with pytest.raises(ValueError, match="qgemv_lanes_per_block must be a power of two up to 16 and the subgroup"):
        r.space(lavapipe).check(dict(r.default(lavapipe, "q4_0"), qgemv_lanes_per_block=16))
    with pytest.raises(ValueError, match="qgemv_halves must be 1, 2, 4 or 8"):
        r.space(lavapipe).check(dict(r.default(lavapipe, "f16"), qgemv_halves=16))
    with pytest.raises(ValueError, match="qgemv_columns must be 1, 2, 4 or 8"):
        r.space(lavapipe).check(dict(r.default(lavapipe, "f16"), qgemv_columns=3))
    with pytest.raises(ValueError, match="256 threads per quantized-GEMV workgroup exceed the target's 128"):
        r.space(replace(cuda, max_threads_per_block=128)).check(dict(r.default(cuda, "q4_0"), qgemv_subgroups=8))
