"""Q5_0, Q5_1 and the K-quants (Q4_K, Q5_K, Q6_K) on the GPU targets' quantized GEMV and GEMM
(relax_mlir/backends/gpu/quant_gemv.py ``decode_runs``, shared by the GEMV's lanes and the GEMM's
weight stager).

* vulkan (lavapipe): numerics against gguf's dequantizer at M = 1, 3, 17, 64 (the shuffling
  GEMV below qgemm_min_rows rows, the GEMM tiles from there), K = 256 and 768, N odd and even,
  every case of a format through ONE executable (two functions); a fused prologue
  (silu(gate) * up) and epilogue (residual add);
* a tiny Llama GGUF of mixed formats (Q4_K, Q5_K, Q6_K, Q5_0, Q5_1, Q8_0, Q4_0: a Q4_K_M-like
  file) through CausalLM.from_gguf(target="vulkan"): the cpu target's tokens, every quantized
  matmul of a decode step on the shuffling GEMV;
* cuda: the kernels' PTX per format (shuffles, the wide quant loads) and the host path with the
  fake driver (the grids).
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
from test_gpu_quant import _Labels  # noqa: E402  (each launch's kernel label)
from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's route)

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

FORMATS = ("q5_0", "q5_1", "q4_k", "q5_k", "q6_k")
K_QUANTS = ("q4_k", "q5_k", "q6_k")


def _weights(fmt: str, n: int, k: int, rng):
    """(raw rows as int8, gguf's dequantization as f64): Q5_0 / Q5_1 quantized by gguf; the
    K-quants (gguf cannot quantize them) random blocks with f16 scales of a sane size (every
    6-bit scale / minimum and quant bit pattern appears)."""
    gguf = pytest.importorskip("gguf")
    qt = getattr(gguf.GGMLQuantizationType, fmt.upper())
    if fmt in K_QUANTS:
        block, size = gguf.GGML_QUANT_SIZES[qt]
        raw = rng.integers(0, 256, (n, k // block, size), dtype=np.uint8)

        def f16(lo, hi):
            return rng.uniform(lo, hi, (n, k // block)).astype(np.float16).view(np.uint8).reshape(n, k // block, 2)
        if fmt == "q6_k":
            raw[..., 208:210] = f16(1e-4, 1e-3)   # d; the 16 int8 scales random
        else:
            raw[..., 0:2], raw[..., 2:4] = f16(1e-3, 1e-2), f16(1e-3, 1e-2)   # d, dmin
        raw = raw.reshape(n, -1)
    else:
        w = rng.standard_normal((n, k)).astype(np.float32)
        raw = np.ascontiguousarray(gguf.quants.quantize(w, qt)).view(np.uint8).reshape(n, -1)
    return raw.view(np.int8), gguf.quants.dequantize(raw, qt).reshape(n, k).astype(np.float64)


def _fn(name: str, fmt: str, n: int, k: int, prologue: bool = False, residual: bool = False) -> str:
    """@name: y = x @ dequantize(w)^T (``prologue``: x = silu(g) * u; ``residual``: + r)."""
    X, W = f'tensor<?x{k}xf32, #relax.shape<["m", {k}]>>', f"tensor<{n}x{row_bytes(fmt, k)}xi8>"
    Y = f'tensor<?x{n}xf32, #relax.shape<["m", {n}]>>'
    args = ([f"%g: {X}", f"%u: {X}"] if prologue else [f"%x: {X}"]) + [f"%w: {W}"] + ([f"%r: {Y}"] if residual else [])
    lines = ([f'%s = "relax.silu"(%g) : ({X}) -> {X}', f'%x = "relax.multiply"(%s, %u) : ({X}, {X}) -> {X}']
             if prologue else [])
    lines.append(f'%y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({X}, {W}) -> {Y}')
    if residual:
        lines.append(f'%z = "relax.add"(%y, %r) : ({Y}, {Y}) -> {Y}')
    body = "\n  ".join(lines)
    return (f'func.func @{name}({", ".join(args)}) -> {Y} attributes {{relax.function}} {{\n  {body}\n'
            f'  return %{"z" if residual else "y"} : {Y}\n}}\n')


def _per() -> int:
    return rules.QuantMatmul().default(Target.detect("vulkan"), "q4_k")["qgemv_subgroups"]


def _route(n: int, m: int, per: int) -> list:
    """The launch of one call: the shuffling GEMV (grid ceil(N / subgroups), M) below
    qgemm_min_rows rows, the GEMM tiles (ceil(N / 64), ceil(M / 64)) from there."""
    if m < rules.QGEMM_MIN_ROWS:
        return [(True, (-(-n // per), m, 1))]
    return [(False, (-(-n // 64), -(-m // 64), 1))]


#: (N, K) of each format's executable: K one super-block and three, N odd and even
_SHAPES = [(33, 256), (64, 768)]


@needs_vulkan
@pytest.mark.parametrize("fmt", FORMATS)
def test_vulkan_run_format_matmul(routes, fmt):
    """M = 1, 3, 17, 64 at both shapes through ONE executable: the GEMV (shuffles) and the
    GEMM tiles; the only error is the f32 summation order."""
    exe = relax_mlir.compile("\n".join(_fn(f"f{i}", fmt, n, k) for i, (n, k) in enumerate(_SHAPES)),
                             target="vulkan")
    rng = np.random.default_rng(len(fmt) + ord(fmt[1]))
    per = _per()
    for i, (n, k) in enumerate(_SHAPES):
        raw, deq = _weights(fmt, n, k, rng)
        for m in (1, 3, 17, 64):
            x = rng.standard_normal((m, k)).astype(np.float32)
            y, launched = routes.call(exe[f"f{i}"], x, raw)
            ref = x.astype(np.float64) @ deq.T
            np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0, err_msg=f"{fmt} {m}x{n}x{k}")
            assert launched == _route(n, m, per), (fmt, m, n, k, launched)


@needs_vulkan
@pytest.mark.parametrize("fmt", ["q5_1", "q4_k", "q6_k"])
def test_vulkan_run_format_prologue_epilogue(routes, fmt):
    """silu(g) * u fused before and a residual add after (the MLP's down projection): one
    launch per call, the GEMV and the GEMM tiles alike."""
    n, k = 40, 512
    exe = relax_mlir.compile(_fn("main", fmt, n, k, prologue=True, residual=True), target="vulkan")
    rng = np.random.default_rng(9)
    raw, deq = _weights(fmt, n, k, rng)
    per = _per()
    for m in (1, 5, 17):
        g, u = (rng.standard_normal((m, k)).astype(np.float32) for _ in range(2))
        r = rng.standard_normal((m, n)).astype(np.float32)
        y, launched = routes.call(exe, g, u, raw, r)
        x = g.astype(np.float64) / (1 + np.exp(-g.astype(np.float64))) * u
        ref = x @ deq.T + r
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0, err_msg=f"{fmt} {m}")
        assert launched == _route(n, m, per), (m, launched)


def test_run_length():
    """Elements per lane step: 32 / lanes_per_block, at most what one scale covers."""
    assert [quant_gemv.run_length("q4_k", lanes) for lanes in (1, 2, 4, 8, 16)] == [32, 16, 8, 4, 2]
    assert [quant_gemv.run_length(f, 1) for f in ("q5_0", "q5_1", "q5_k", "q6_k")] == [16, 16, 32, 16]


@needs_vulkan
@pytest.mark.parametrize("lanes", [1, 8])
def test_vulkan_run_format_lane_knob(routes, lanes):
    """qgemv_lanes_per_block at its ends (runs of 32, split for Q6_K's 16-element scales; runs
    of 4, lavapipe's subgroup of 8 lanes at most): the same numbers."""
    n, k = 9, 256
    exe = relax_mlir.compile("\n".join(_fn(f, f, n, k) for f in ("q6_k", "q5_0")), target="vulkan",
                             options={"schedule_config": f"qgemm=1:qgemv_lanes_per_block={lanes}"})
    rng = np.random.default_rng(lanes)
    for fmt in ("q6_k", "q5_0"):
        raw, deq = _weights(fmt, n, k, rng)
        x = rng.standard_normal((2, k)).astype(np.float32)
        y, launched = routes.call(exe[fmt], x, raw)
        ref = x.astype(np.float64) @ deq.T
        np.testing.assert_allclose(y, ref, atol=1e-5 * np.abs(ref).max(), rtol=0, err_msg=fmt)
        assert [s for s, _ in launched] == [True]


# -- a tiny Q4_K_M-like Llama on vulkan ------------------------------------------------------

@needs_vulkan
def test_vulkan_mixed_kquant_llama_generates_the_cpu_tokens(tmp_path, monkeypatch):
    """test/llm's mixed-format file (Q4_K, Q5_K, Q6_K, Q5_0, Q5_1 projections, Q8_0 / Q4_0 in
    one layer, a Q6_K embedding, a Q8_0 lm head) through CausalLM.from_gguf(target="vulkan"):
    the cpu target's greedy tokens; a decode step's quantized matmuls (q, k, v or qkv, o, gate,
    up, down per layer; the lm head) all on the shuffling GEMV."""
    pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "llm"))
    import transformers
    from test_gguf import write_gguf
    from test_quantized import MIXED_CFG, MIXED_TYPES, T, _source_model

    from relax_mlir.llm import CausalLM
    src, sd = _source_model(transformers.LlamaConfig(**MIXED_CFG))
    path = tmp_path / "mixed.gguf"
    write_gguf(path, "llama", sd, src.config, MIXED_TYPES, T.F32)
    seen = _Labels(monkeypatch)
    g = CausalLM.from_gguf(str(path), max_seq_len=32, target="vulkan")
    c = CausalLM.from_gguf(str(path), max_seq_len=32)
    assert g.config.layer_formats == c.config.layer_formats
    ids = np.random.default_rng(5).integers(0, MIXED_CFG["vocab_size"], 6).astype(np.int64)
    toks = g.generate(ids, 8, eos_token_id=[])
    np.testing.assert_array_equal(toks, c.generate(ids, 8, eos_token_id=[]))
    del seen.labels[:]
    g.decode(3)
    quant = [(name, s) for name, s in seen.labels if "quantized_matmul" in name]
    # layers 0 and 2: q, k, v apart (7 matmuls); layer 1: qkv fused (5); the lm head
    assert len(quant) == 7 + 5 + 7 + 1 and all(s for _, s in quant), seen.labels


# -- cuda: PTX and the host path -------------------------------------------------------------

#: the widest quant-byte load each format's layout allows (Q5_1, K-quants 4-byte aligned
#: fields: 32-bit loads; Q5_0, Q6_K 2-byte aligned: vector<2xi8>)
_WIDE = {"q5_0": "ld.global.v2.b8", "q5_1": "ld.global.b32", "q4_k": "ld.global.b32", "q5_k": "ld.global.b32",
         "q6_k": "ld.global.v2.b8"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_cuda_run_format_ptx(fmt):
    """The prologue program (N = 64, K = 256): two kernels, the GEMV (128 threads, 5 butterfly
    shuffles, no barrier, the quant bytes in the widest loads the layout allows, the f16
    scales converted, FMAs) and the GEMM tiles (barriers, no shuffle)."""
    from test_gpu_quant import _ptx
    ptx = {name: p.replace("\x00A", "\n").replace("\x009", "\t")
           for name, p in _ptx(fmt, _fn("main", fmt, 64, 256, prologue=True)).items()}
    assert len(ptx) == 2, list(ptx)
    gemv = [p for p in ptx.values() if "shfl.sync.bfly.b32" in p]
    gemm = [p for p in ptx.values() if "bar.sync" in p]
    assert len(gemv) == 1 and len(gemm) == 1 and "shfl.sync" not in gemm[0], list(ptx)
    (p,) = gemv
    assert ".maxntid 128, 1, 1" in p and p.count("shfl.sync.bfly.b32") == 5 and "bar.sync" not in p
    loads = [x.split()[0] for x in p.splitlines() if x.strip().startswith("ld.global")]
    assert _WIDE[fmt] in loads, loads
    assert "cvt.f32.f16" in p and "fma.rn.f32" in p


FAKE_RUN = r'''
out = []
for fmt, n, k in (("q5_0", 33, 64), ("q5_1", 7, 32), ("q4_k", 320, 256), ("q5_k", 9, 256), ("q6_k", 40, 512)):
    rb = {"q5_0": 22, "q5_1": 24, "q4_k": 144, "q5_k": 176, "q6_k": 210}[fmt] * k // (256 if fmt.endswith("_k") else 32)
    exe = relax_mlir.compile(sys.argv[2].replace("FMT", fmt).replace("NN", str(n)).replace("KK", str(k))
                             .replace("RB", str(rb)), target="cuda")
    for m in (1, 3, 20):
        before = launches()
        y = exe(np.ones((m, k), np.float32), np.zeros((n, rb), np.int8))
        out.append([fmt, list(y.shape), [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
print("FAKE-RUN " + json.dumps(out))
'''


def test_fake_run_run_format_host_path(tmp_path):
    """The PTX loads through the (fake) driver; one launch per call: the GEMV's grid
    (ceil(N / 4), M, 1) at M = 1, 3, the GEMM's (ceil(N / 64), ceil(M / 64), 1) at 20."""
    import test_cuda
    from test_gpu_quant import FAKE_SRC
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_RUN, FAKE_SRC)
    want = []
    for fmt, n in (("q5_0", 33), ("q5_1", 7), ("q4_k", 320), ("q5_k", 9), ("q6_k", 40)):
        want += [[fmt, [1, n], [[-(-n // 4), 1, 1]]], [fmt, [3, n], [[-(-n // 4), 3, 1]]],
                 [fmt, [20, n], [[-(-n // 64), 1, 1]]]]
    assert got == want


@pytest.mark.parametrize("fmt", FORMATS)
def test_cuda_run_format_numerics(fmt):
    """On a CUDA device (skipped elsewhere): M = 1, 3, 64 at N odd and large through ONE
    executable per shape, against gguf's dequantizer."""
    from relax_mlir.runtime import cuda
    ok, why = cuda.available()
    if not ok:
        pytest.skip(f"no CUDA device: {why}")
    rng = np.random.default_rng(13)
    for n, k in _SHAPES + [(32000, 768)]:
        exe = relax_mlir.compile(_fn("main", fmt, n, k), target="cuda")
        raw, deq = _weights(fmt, n, k, rng)
        for m in (1, 3, 64):
            x = rng.standard_normal((m, k)).astype(np.float32)
            ref = x.astype(np.float64) @ deq.T
            np.testing.assert_allclose(exe(x, raw), ref, atol=1e-5 * np.abs(ref).max(), rtol=0,
                                       err_msg=f"{fmt} {m}x{n}x{k}")


def test_rule_lists_the_run_formats_and_k_quants_need_whole_super_blocks():
    """The rule's formats (its "dtypes" on a target with a subgroup size) include the run
    formats; a K-quant weight must hold whole 256-element super-blocks (relax.quantized_matmul's
    own check, before any rule runs): K = 128 of Q4_K is refused with a diagnostic."""
    from relax_mlir.target import GPU_DEFAULTS
    cuda = Target(kind="cuda", dispatch_policy="off", **GPU_DEFAULTS["cuda"])
    assert set(FORMATS) <= set(rules.QuantMatmul().dtypes(cuda))
    X, W = 'tensor<?x128xf32, #relax.shape<["m", 128]>>', "tensor<4x72xi8>"
    Y = 'tensor<?x4xf32, #relax.shape<["m", 4]>>'
    src = (f'func.func @main(%x: {X}, %w: {W}) -> {Y} attributes {{relax.function}} {{\n'
           f'  %y = "relax.quantized_matmul"(%x, %w) {{format = "q4_k"}} : ({X}, {W}) -> {Y}\n  return %y : {Y}\n}}')
    with pytest.raises(relax_mlir.CompileError, match="72 row bytes is not a whole number of q4_k blocks"):
        relax_mlir.compile(src, target="vulkan")


@needs_vulkan
@pytest.mark.skipif(__import__("shutil").which("spirv-val") is None, reason="spirv-val (spirv-tools) not installed")
@pytest.mark.parametrize("fmt", ["q5_1", "q4_k", "q6_k"])
def test_vulkan_run_format_spirv(tmp_path, fmt):
    """The GEMV (shuffles) and the GEMM kernels validate for Vulkan 1.1 (the quant bytes in
    scalar loads: a vector<Nxi8> load of the emulated 8-bit storage becomes an OpLoad through a
    non-logical pointer, which spirv-val rejects though lavapipe runs it)."""
    from mlir import ir
    from gpu_checks import validated_spirv
    from test_gpu_rules import _SHUFFLE_CAPABILITY
    ctx = relax_mlir.make_context()
    with ctx:
        m = ir.Module.parse(_fn("main", fmt, 33, 256, prologue=True))
        m.operation.attributes["relax.target"] = Target.detect("vulkan").to_attr()
        relax_mlir.run_pipeline(m, "builtin.module(vulkan)")
        shuffles = [_SHUFFLE_CAPABILITY in path.read_bytes() for path in validated_spirv(m, tmp_path).values()]
    assert sorted(shuffles) == [False, True], shuffles
