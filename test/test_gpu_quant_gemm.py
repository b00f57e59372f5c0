"""The quantized GEMM route (relax_mlir/backends/gpu/quant_gemm.py): relax.quantized_matmul at
M >= qgemm_min_rows (16) as tile_matmul's tiles with the weight decoded into workgroup memory,
the quantized GEMV below (an scf.if on the run-time M).

* vulkan (lavapipe): numerics against numpy per format (Q8_0, Q4_0, Q4_1, f16, bf16) at M = 1,
  3, 5, 17, 64, 130, N odd and large, K of one block to 1024 (half formats: odd K too), through
  ONE executable, with the route each call took (the GEMV: shuffles, grid (ceil(N / subgroups),
  M); the GEMM: no shuffles, grid (ceil(N / 64), ceil(M / 64))); the fused prologue
  silu(g) * u; ``schedule_config=qgemm=1`` keeps every M on the GEMV;
* a kernel with more than the fill, the quantized generic and its elementwise epilogue is left
  to the GEMV (takes);
* cuda: the PTX (a GEMM kernel with shared memory, barriers and the wide byte loads, next to
  the GEMV) and the fake driver's host path (the grid per M);
* a tiny Llama with f16 projections (CausalLM.random) prefills a 20-token prompt on the GEMM
  route and generates the cpu target's tokens.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import quant_gemm, quant_gemv, rules  # noqa: E402
from relax_mlir.backends.gpu.tile_matmul import MatmulTiles  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from relax_mlir.target import Target  # noqa: E402
from test_gpu_quant import _half_weights, _Labels, _program, _ptx  # noqa: E402
from test_gpu_rules import routes  # noqa: E402,F401  (the fixture: each launch's (shuffles, grid))

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from bench_gpu import quant_blocks  # noqa: E402  (random blocks + numpy's dequantizer, checked against gguf's)

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

MS = (1, 3, 5, 17, 64, 130)
MIN_ROWS = rules.QGEMM_MIN_ROWS


def _weights(fmt: str, n: int, k: int, rng):
    return _half_weights(fmt, n, k, rng) if fmt in quant_gemv.HALF_FORMATS else quant_blocks(fmt, n, k, rng)


def _expected_route(m: int, n: int) -> list:
    """The GEMV below MIN_ROWS (one subgroup per column on vulkan), the GEMM tiles from there."""
    if m < MIN_ROWS:
        per = rules.QuantMatmul().default(Target.detect("vulkan"), "q4_0")["qgemv_subgroups"]
        return [(True, (-(-n // per), m, 1))]
    return [(False, (-(-n // 64), -(-m // 64), 1))]


#: (format, N, K): one block and odd N; N past a 64-column tile and K of many K blocks;
#: half formats at odd K (K blocks past K)
_CASES = [(f, 37, 32) for f in ("q8_0", "q4_0", "q4_1")] + [(f, 300, 1024) for f in ("q8_0", "q4_0", "q4_1")] \
    + [(f, 37, 41) for f in quant_gemv.HALF_FORMATS] + [(f, 130, 1000) for f in quant_gemv.HALF_FORMATS]


@needs_vulkan
@pytest.mark.parametrize("fmt,n,k", _CASES, ids=[f"{f}-{n}x{k}" for f, n, k in _CASES])
def test_vulkan_quant_gemm_every_m(routes, fmt, n, k):
    """M = 1 ... 130 through ONE executable: the GEMV below 16 rows, the GEMM from there; f32
    accumulation against numpy on the same dequantized weights."""
    exe = relax_mlir.compile(_program(fmt, n, k), target="vulkan")
    rng = np.random.default_rng(n * 31 + k)
    raw, deq = _weights(fmt, n, k, rng)
    for m in MS:
        x = rng.standard_normal((m, k)).astype(np.float32)
        y, launched = routes.call(exe, x, raw)
        ref = x.astype(np.float64) @ deq.T.astype(np.float64)
        np.testing.assert_allclose(y, ref, atol=2e-5 * np.abs(ref).max(), rtol=0, err_msg=f"{fmt} {m}x{n}x{k}")
        assert launched == _expected_route(m, n), (m, launched)


@needs_vulkan
@pytest.mark.parametrize("fmt", ["q4_1", "f16"])
def test_vulkan_quant_gemm_fused_prologue(routes, fmt):
    """silu(g) * u fused into the quantized matmul (the MLP's down projection): computed per
    element of x where the GEMM stages A (and per element in the GEMV below 16 rows)."""
    n, k = (70, 96) if fmt == "q4_1" else (70, 72)
    exe = relax_mlir.compile(_program(fmt, n, k, prologue=True), target="vulkan")
    rng = np.random.default_rng(5)
    raw, deq = _weights(fmt, n, k, rng)
    for m in (2, 17, 70):
        g, u = (rng.standard_normal((m, k)).astype(np.float32) for _ in range(2))
        y, launched = routes.call(exe, g, u, raw)
        x = g.astype(np.float64) / (1 + np.exp(-g.astype(np.float64))) * u
        ref = x @ deq.T.astype(np.float64)
        np.testing.assert_allclose(y, ref, atol=2e-5 * np.abs(ref).max(), rtol=0, err_msg=f"{fmt} m={m}")
        assert launched == _expected_route(m, n), (m, launched)


@needs_vulkan
def test_vulkan_qgemm_off_keeps_the_gemv(routes):
    """schedule_config qgemm=1: every M on the GEMV (what bench_gpu.py --prefill compares)."""
    n, k = 20, 64
    exe = relax_mlir.compile(_program("q8_0", n, k), target="vulkan", options={"schedule_config": "qgemm=1"})
    rng = np.random.default_rng(6)
    raw, deq = _weights("q8_0", n, k, rng)
    for m in (3, 40):
        x = rng.standard_normal((m, k)).astype(np.float32)
        y, launched = routes.call(exe, x, raw)
        ref = x.astype(np.float64) @ deq.T.astype(np.float64)
        np.testing.assert_allclose(y, ref, atol=2e-5 * np.abs(ref).max(), rtol=0)
        assert [s for s, _ in launched] == [True] and launched[0][1][1] == m


@needs_vulkan
@pytest.mark.parametrize("min_rows", [2, 32])
def test_vulkan_qgemm_min_rows(routes, min_rows):
    """qgemm_min_rows moves the switch: the GEMM from that M on, the GEMV below."""
    n, k = 9, 32
    exe = relax_mlir.compile(_program("q4_0", n, k), target="vulkan",
                             options={"schedule_config": f"qgemm_min_rows={min_rows}"})
    rng = np.random.default_rng(min_rows)
    raw, deq = _weights("q4_0", n, k, rng)
    for m in (1, 2, 31, 32):
        x = rng.standard_normal((m, k)).astype(np.float32)
        y, launched = routes.call(exe, x, raw)
        ref = x.astype(np.float64) @ deq.T.astype(np.float64)
        np.testing.assert_allclose(y, ref, atol=2e-5 * np.abs(ref).max(), rtol=0)
        assert [s for s, _ in launched] == [m < min_rows], (m, launched)


_KERNEL = '''
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @k(%x: memref<?x32xf32>, %w: memref<3x34xi8>, %y: memref<?x3xf32>, %z: memref<?x3xf32>)
      attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c2 = arith.constant 2 : index
    linalg.fill ins(%cst : f32) outs(%y : memref<?x3xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x : memref<?x32xf32>) outs(%y : memref<?x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.addi %1, %c2 : index
      %3 = memref.load %w[%0, %2] : memref<3x34xi8>
      %4 = arith.sitofp %3 : i8 to f32
      %5 = arith.mulf %in, %4 : f32
      %6 = arith.addf %out, %5 : f32
      linalg.yield %6 : f32
    }
    EPILOGUE
    return
  }
}'''

_EPILOGUE = '''linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%y : memref<?x3xf32>) outs(%z : memref<?x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %7 = arith.addf %in, %in : f32
      linalg.yield %7 : f32
    }'''


def test_takes_the_fill_the_quantized_generic_and_its_epilogue():
    """The GEMM route takes the fill, the generic and an elementwise epilogue the matcher found
    (applied at its store); an op the match does not hold leaves the kernel to the GEMV."""
    from mlir import ir

    with relax_mlir.make_context(), ir.Location.unknown():
        for epilogue, in_match, want in (("", False, True), (_EPILOGUE, True, True), (_EPILOGUE, False, False)):
            mod = ir.Module.parse(_KERNEL.replace("EPILOGUE", epilogue))
            fn = mod.body.operations[0].operation
            ops = [o.operation for o in fn.regions[0].blocks[0].operations]
            fill, gen = ops[2], ops[3]
            chain = [ops[4]] if in_match else []
            m = quant_gemv._Match(fill, gen, fn.regions[0].blocks[0].arguments[1], "q8_0", None, chain)
            assert quant_gemm.takes(fn, m) is want


def test_tiles_check():
    """A K block must lie inside one 32-element weight block (tile_k divides 32)."""
    quant_gemm.check(MatmulTiles())
    assert quant_gemm.chunk(MatmulTiles()) == 16 and quant_gemm.chunk(MatmulTiles(16, 4, 16)) == 4
    with pytest.raises(ValueError, match="tile_k must divide 32"):
        quant_gemm.check(MatmulTiles(8, 8, 48))


def test_rule_knobs():
    """qgemm (1: GEMV only, 2: GEMM from qgemm_min_rows) in the rule's space, checked."""
    from relax_mlir.target import GPU_DEFAULTS
    cuda = Target(kind="cuda", dispatch_policy="off", **GPU_DEFAULTS["cuda"])
    r = rules.QuantMatmul()
    cfg = r.default(cuda, "q8_0")
    assert (cfg["qgemm"], cfg["qgemm_min_rows"]) == (2, 16)
    with pytest.raises(ValueError, match="qgemm must be 1"):
        r.space(cuda).check(dict(cfg, qgemm=3))
    with pytest.raises(ValueError, match="exceed 4096 bytes of workgroup memory"):
        from dataclasses import replace
        r.space(replace(cuda, shared_memory_bytes=4096)).check(cfg)
    r.space(replace(cuda, shared_memory_bytes=4096)).check(dict(cfg, qgemm=1))


# -- cuda: PTX and the host path -------------------------------------------------------------

def _unescape(p: str) -> str:
    return p.replace("\x00A", "\n").replace("\x009", "\t")


@pytest.mark.parametrize("fmt,load", [("q8_0", "ld.global.v2.b8"), ("q4_1", "ld.global.b32"), ("f16", None)])
def test_cuda_quant_gemm_ptx(fmt, load):
    """The GEMM kernel (8 x 8 threads, two 4 KiB shared blocks, two barriers, 64 FMAs per k, no shuffles)
    next to the GEMV's (shuffles); Q8_0 / Q4_1 quant bytes in the GEMV's wide loads, f16
    bytes one by one; the f16 scales converted."""
    ptx = {name: _unescape(p) for name, p in _ptx(fmt).items()}
    gemm = [p for p in ptx.values() if "bar.sync" in p]
    gemv = [p for p in ptx.values() if "shfl.sync.bfly.b32" in p]
    assert len(gemm) == 1 and len(gemv) == 1, list(ptx)
    (p,) = gemm
    assert ".maxntid 8, 8, 1" in p and p.count(".shared .align 16 .b8") == 2 and "[4096]" in p
    assert "shfl" not in p and p.count("bar.sync") == 2
    # the 8 x 8 register block per k: 64 FMAs between the two barriers (the stagers before them
    # multiply-add too: their inlined prologue and dequantization carry fastmath<contract>)
    lines = p.splitlines()
    first, second = [i for i, x in enumerate(lines) if "bar.sync" in x]
    assert sum("fma.rn.f32" in x for x in lines[first:second]) == 64 and "cvt.f32.f16" in p
    loads = [x.split()[0] for x in p.splitlines() if x.strip().startswith("ld.global")]
    if load is not None:
        assert load in loads, loads
    else:
        assert "ld.global.b8" in loads, loads


FAKE_QGEMM = r'''
out = []
for fmt, n, k, rb in (("q4_0", 70, 64, 36), ("f16", 40, 33, 66)):
    exe = relax_mlir.compile(sys.argv[2].replace("FMT", fmt).replace("NN", str(n)).replace("KK", str(k))
                             .replace("RB", str(rb)), target="cuda")
    for m in (1, 15, 16, 130):
        before = launches()
        y = exe(np.ones((m, k), np.float32), np.zeros((n, rb), np.int8))
        out.append([fmt, m, list(y.shape), [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
print("FAKE-RUN " + json.dumps(out))
'''


def test_fake_run_quant_gemm_host_path(tmp_path):
    """The PTX loads through the (fake) driver; one launch per call: the GEMV (grid
    (ceil(N / 4), M)) below 16 rows, the GEMM (grid (ceil(N / 64), ceil(M / 64))) from 16."""
    import test_cuda
    from test_gpu_quant import FAKE_SRC
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_QGEMM, FAKE_SRC)
    want = []
    for fmt, n in (("q4_0", 70), ("f16", 40)):
        want += [[fmt, 1, [1, n], [[-(-n // 4), 1, 1]]], [fmt, 15, [15, n], [[-(-n // 4), 15, 1]]],
                 [fmt, 16, [16, n], [[-(-n // 64), 1, 1]]], [fmt, 130, [130, n], [[-(-n // 64), 3, 1]]]]
    assert got == want


# -- a tiny Llama with f16 weights -------------------------------------------------------------

@needs_vulkan
def test_vulkan_random_f16_model_prefills_on_the_gemm(monkeypatch):
    """CausalLM.random with f16 projections and lm head on vulkan: a 20-token prompt's
    projections (qkv, o, gate, up, down per layer) take the GEMM (no shuffles), the lm head of
    the last position and the decode steps the GEMV; the cpu target's greedy tokens."""
    from dataclasses import replace

    from relax_mlir.llm import CausalLM
    from relax_mlir.llm.cli import SIZES
    c = replace(SIZES["tiny"], formats=tuple((r, "f16") for r in ("qkv", "o", "gate", "up", "down", "lm_head")))
    seen = _Labels(monkeypatch)
    g = CausalLM.random(c, max_seq_len=40, std=0.3, target="vulkan")
    cpu = CausalLM.random(c, max_seq_len=40, std=0.3)
    ids = np.random.default_rng(7).integers(0, c.vocab_size, 20).astype(np.int64)
    del seen.labels[:]
    logits = g.prefill(ids)
    mm = [s for name, s in seen.labels if "quantized_matmul" in name]
    gemm = [s for s in mm if not s]
    assert len(gemm) == 5 * c.num_layers, seen.labels
    np.testing.assert_allclose(logits, cpu.prefill(ids), atol=1e-4 * np.abs(logits).max(), rtol=0)
    toks = g.generate(ids, 8, eos_token_id=[])
    np.testing.assert_array_equal(toks, cpu.generate(ids, 8, eos_token_id=[]))
