"""The cuda target's tensor-core routes run on lavapipe through relax-emulate-mma (the vulkan
pipeline's ``emulate-tensor-cores`` option), checked against numpy:

* the emulator itself on hand-built probe kernels (one ``mma.sync`` per warp, fragments loaded
  per the PTX ISA's tables written out here, or through ``ldmatrix`` x1 / x2 / x2.trans / x4
  from workgroup memory; f32 and f16 accumulators; tf32): a wrong lane -> (row, col) map in the
  emulator fails these whatever mma.py does;
* the matmul rule's route (``f16_gemm=2``, backends/gpu/mma.py) at exact, odd and large sizes,
  K not a multiple of 16, batched, with a fused epilogue, f16 and f32 outputs, several sizes
  through ONE executable per case.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import arith, memref, nvgpu, vector

sys.path.insert(0, __file__.rsplit("/", 1)[0])

import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import emulate_mma, rules, tile_matmul  # noqa: E402
from relax_mlir.backends.gpu.launch_builder import Launch, barrier, index, load, to_f32  # noqa: E402
from relax_mlir.backends.gpu.matmul_routes import finish  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from test_gpu_rules import LINEAR  # noqa: E402

OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

EMULATED = {"emulate_tensor_cores": True}


def _tf32(x: np.ndarray) -> np.ndarray:
    """f32 -> tf32 as cvt.rna.tf32.f32: nearest, ties away from zero (13 low bits dropped)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


# -- the emulator on probe kernels -------------------------------------------------------------

#: the PTX ISA's fragment tables (mma.m16n8k16 and m16n8k8 .f16, mma.m16n8k8 .tf32), per element
#: i of a lane with g = lane / 4, t = lane % 4: (row, col) of A (M x K), B (K x N), C (M x N)
PTX = {
    "f16": dict(k=16, a=lambda g, t, i: (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)), na=8,
                b=lambda g, t, i: (2 * t + (i & 1) + 8 * (i >> 1), g), nb=4),
    "f16k8": dict(k=8, a=lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)), na=4,
                  b=lambda g, t, i: (2 * t + (i & 1), g), nb=2),
    "tf32": dict(k=8, a=lambda g, t, i: (g + 8 * (i & 1), t + 4 * (i >> 1)), na=4,
                 b=lambda g, t, i: (t + 4 * i, g), nb=2),
}
C_AT = lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1))   # noqa: E731
WARPS, GROUPS = 2, 2    # a workgroup of 2 warps, 2 workgroups: M = 64 rows, one 16-row tile per warp

PROBE = """
func.func @main(%a: tensor<64x{k}x{t}>, %b: tensor<{k}x8x{t}>) -> tensor<64x8xf32> attributes {{relax.function}} {{
  %y = "relax.matmul"(%a, %b) {{out_dtype = f32}} : (tensor<64x{k}x{t}>, tensor<{k}x8x{t}>) -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}}
"""


def _ix(v: ir.Value, k: int) -> ir.Value:
    return arith.AddIOp(v, index(k)).result if k else v


def _lin(*terms) -> ir.Value:
    out = None
    for v, k in terms:
        x = v if k == 1 else arith.MulIOp(v, index(k)).result
        out = x if out is None else arith.AddIOp(out, x).result
    return out


def probe_builder(kind: str, loads: str, acc: str):
    """A route for the probe's matmul: warp w of workgroup z multiplies rows 16 (2 z + w) ..
    of A by B with ONE mma.sync; ``loads``: "direct" (fragments from global memory per
    :data:`PTX`), "ldmatrix" (A by one x4, B by one x2.trans, from workgroup memory) or
    "ldmatrix1" (A by four x1, B by one x2 from B transposed in workgroup memory)."""
    spec = PTX[kind]
    K = spec["k"]

    def build(mm, m_, n_, fill_value, chain):
        a, b, c = mm.operands[0], mm.operands[1], mm.operands[2]
        et = ir.MemRefType(a.type).element_type
        f32t = ir.F32Type.get()
        out = chain[-1].opview.outputs[0] if chain else c
        shared = [WARPS * (16 * K + K * 8)] if loads != "direct" else []
        with mm.location:
            launch = Launch((index(GROUPS), index(1), index(1)), (32 * WARPS, 1, 1), shared, shared_type=et)
            with launch:
                tid, z = launch.thread_id[0], launch.block_id[0]
                lane = arith.RemUIOp(tid, index(32)).result
                warp = arith.DivUIOp(tid, index(32)).result
                g = arith.DivUIOp(lane, index(4)).result
                t = arith.RemUIOp(lane, index(4)).result
                row0 = _lin((z, 16 * WARPS), (warp, 16))
                per, w = (1, 4) if kind == "tf32" else (2, 8)   # elements per register, per 128-bit row
                if loads == "direct":   # the tables are (g, per * t) + a constant per element
                    av = []
                    for i in range(spec["na"]):
                        r, col = spec["a"](0, 0, i)
                        av.append(load(a, [_ix(_lin((row0, 1), (g, 1)), r), _ix(_lin((t, per)), col)]))
                    bv = []
                    for i in range(spec["nb"]):
                        r, col = spec["b"](0, 0, i)
                        bv.append(load(b, [_ix(_lin((t, per)), r), _ix(g, col)]))
                    fa = vector.FromElementsOp(ir.VectorType.get([spec["na"] // per, per], et), av).result
                    fb = vector.FromElementsOp(ir.VectorType.get([spec["nb"] // per, per], et), bv).result
                else:
                    sm = launch.shared[0]
                    sa = _lin((warp, 16 * K + K * 8))          # this warp's A (16 x K), then B (K x 8)
                    sb = _ix(sa, 16 * K)
                    for e in range(16 * K // 32):             # A block, row-major
                        at = _ix(_lin((lane, 16 * K // 32)), e)
                        r, col = arith.DivUIOp(at, index(K)).result, arith.RemUIOp(at, index(K)).result
                        memref.StoreOp(load(a, [arith.AddIOp(row0, r).result, col]), sm,
                                       [arith.AddIOp(sa, at).result])
                    for e in range(K * 8 // 32):              # B (K x 8), or B transposed (8 x K)
                        at = _ix(_lin((lane, K * 8 // 32)), e)
                        r, col = arith.DivUIOp(at, index(8)).result, arith.RemUIOp(at, index(8)).result
                        dst = at if loads == "ldmatrix" else _lin((col, K), (r, 1))
                        memref.StoreOp(load(b, [r, col]), sm, [arith.AddIOp(sb, dst).result])
                    barrier()
                    q, r8 = arith.DivUIOp(lane, index(8)).result, arith.RemUIOp(lane, index(8)).result
                    if loads == "ldmatrix":
                        # x4: tile q = rows 8 (q % 2), columns 8 (q / 2) of A; x2.trans: tile q = rows 8q of B
                        qa = _lin((arith.RemUIOp(q, index(2)).result, 8 * K), (r8, K),
                                  (arith.DivUIOp(q, index(2)).result, 8))
                        fa = nvgpu.LdMatrixOp(ir.VectorType.get([4, 2], et), sm, [arith.AddIOp(sa, qa).result],
                                              False, 4).result
                        qb = _lin((arith.RemUIOp(lane, index(16)).result, 8))
                        fb = nvgpu.LdMatrixOp(ir.VectorType.get([2, 2], et), sm, [arith.AddIOp(sb, qb).result],
                                              True, 2).result
                    else:
                        # four x1 (lane r < 8: row r of the tile), assembled; x2 on B^T (8 x K):
                        # tile q = columns 8q of B^T
                        fa = vector.BroadcastOp(ir.VectorType.get([4, per], et), arith.ConstantOp(et, 0.0).result).result
                        for reg in range(4):
                            at = _ix(_lin((r8, K)), (reg % 2) * 8 * K + (reg // 2) * w)
                            one = nvgpu.LdMatrixOp(ir.VectorType.get([1, per], et), sm, [arith.AddIOp(sa, at).result],
                                                   False, 1).result
                            fa = vector.InsertOp(vector.ExtractOp(one, [], [0]).result, fa, [], [reg]).result
                        qb = _lin((r8, K), (arith.RemUIOp(q, index(2)).result, w))
                        fb = nvgpu.LdMatrixOp(ir.VectorType.get([2, per], et), sm, [arith.AddIOp(sb, qb).result],
                                              False, 2).result
                ct = ir.F16Type.get() if acc == "f16" else f32t
                zero = vector.BroadcastOp(ir.VectorType.get([2, 2], ct), arith.ConstantOp(ct, 0.0).result).result
                shape = [ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for v in (16, 8, K)]
                d = nvgpu.MmaSyncOp(zero.type, fa, fb, zero, ir.ArrayAttr.get(shape),
                                    tf32Enabled=ir.UnitAttr.get() if kind == "tf32" else None).result
                for i in range(4):
                    r, col = C_AT(0, 0, i)
                    v = vector.ExtractOp(d, [], [i >> 1, i & 1]).result
                    finish(to_f32(v) if acc == "f16" else v,
                           [_ix(_lin((row0, 1), (g, 1)), r), _ix(_lin((t, 2)), col)], c, fill_value, chain, out)
    return build


@needs_vulkan
@pytest.mark.parametrize("kind,loads,acc", [
    ("f16", "direct", "f32"), ("f16", "direct", "f16"), ("f16", "ldmatrix", "f32"), ("f16", "ldmatrix1", "f32"),
    ("f16k8", "direct", "f32"),
    ("tf32", "direct", "f32"), ("tf32", "ldmatrix1", "f32")])
def test_emulated_mma_probe(monkeypatch, kind, loads, acc):
    """One mma.sync per warp (2 warps x 2 workgroups), fragments per the PTX tables, against
    numpy: f16 inputs exact in f32 (tolerance of the f32 sum; f16 accumulators: one f16
    rounding), tf32 inputs rounded as cvt.rna (the products of the rounded inputs: exact)."""
    build = probe_builder(kind, loads, acc)
    monkeypatch.setattr(rules.Matmul, "apply",
                        lambda self, fn, target, config, dtype: tile_matmul.tile_kernel(fn, [(None, build)], (dtype,)) > 0)
    t = "f32" if kind == "tf32" else "f16"
    K = PTX[kind]["k"]
    exe = relax_mlir.compile(PROBE.format(k=K, t=t), target="vulkan", options=EMULATED)
    rng = np.random.default_rng(7)
    for trial in range(2):
        a = rng.standard_normal((64, K)).astype(np.float16 if t == "f16" else np.float32)
        b = rng.standard_normal((K, 8)).astype(a.dtype)
        y = exe(a, b)
        if kind == "tf32":
            ref = _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)
            plain = a.astype(np.float64) @ b.astype(np.float64)
            assert np.abs(plain - ref).max() > 1e-4   # the rounding is visible at this tolerance
        else:
            ref = a.astype(np.float64) @ b.astype(np.float64)
        tol = 2e-3 if acc == "f16" else 1e-5
        np.testing.assert_allclose(y, ref, rtol=tol, atol=tol, err_msg=f"{kind} {loads} acc {acc} trial {trial}")


# -- the matmul rule's route (mma.py) ----------------------------------------------------------

def compile_emulated(monkeypatch, src: str, options: dict):
    """(executable, mma.sync ops relax-emulate-mma rewrote): proof the route was taken."""
    seen = []
    real = emulate_mma.emulate_kernel

    def spy(fn):
        fn.walk(lambda o: (seen.append(1) if o.operation.name == "nvgpu.mma.sync" else None)
                or ir.WalkResult.ADVANCE)
        return real(fn)

    monkeypatch.setattr(emulate_mma, "emulate_kernel", spy)
    return relax_mlir.compile(src, target="vulkan", options=options), len(seen)


def _check(exe, cases, dtype_out, batch: int = 0, epilogue: bool = True, seed: int = 3):
    rng = np.random.default_rng(seed)
    for m, n, k in cases:
        lead = (batch,) if batch else ()
        a = rng.standard_normal(lead + (m, k)).astype(np.float16)
        b = (rng.standard_normal(lead + (k, n)) / np.sqrt(k)).astype(np.float16)
        args = [a, b]
        ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
        if epilogue:
            bias = rng.standard_normal(n).astype(np.float16)
            args.append(bias)
            ref = np.maximum(ref + bias.astype(np.float64), 0)
        y = exe(*args)
        assert y.dtype == dtype_out and y.shape == ref.shape
        # f16 out: one f16 rounding of the f32 sum (and of the f16 bias add in the epilogue)
        tol = 4e-3 if dtype_out == np.float16 else 1e-4
        np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol, err_msg=f"{m}x{n}x{k}")


@needs_vulkan
def test_mma_route_linear_f16(monkeypatch):
    """f16 linear + bias + relu through f16_gemm=2: exact multiples, odd sizes, K not a
    multiple of 16, large-ish, and M or N below min_size (the other routes), one executable."""
    exe, mmas = compile_emulated(monkeypatch, LINEAR.format(t="f16"), {"schedule_config": "f16_gemm=2", **EMULATED})
    assert mmas > 0   # the route was taken (mma.sync per kernel: mma.py's choice)
    _check(exe, [(32, 32, 32), (64, 64, 64), (128, 128, 128), (33, 37, 97), (32, 40, 17), (256, 320, 200),
                 (40, 72, 1), (1, 64, 64), (5, 9, 30)], np.float16)


MATMUL_F32 = """
func.func @main(%x: tensor<?x?xf16, #relax.shape<["m", "k"]>>, %w: tensor<?x?xf16, #relax.shape<["k", "n"]>>)
    -> tensor<?x?xf32, #relax.shape<["m", "n"]>> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) {out_dtype = f32} : (tensor<?x?xf16, #relax.shape<["m", "k"]>>, tensor<?x?xf16, #relax.shape<["k", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
  return %y : tensor<?x?xf32, #relax.shape<["m", "n"]>>
}
"""

BATCHED = """
func.func @main(%x: tensor<?x?x?xf16, #relax.shape<["b", "m", "k"]>>, %w: tensor<?x?x?xf16, #relax.shape<["b", "k", "n"]>>)
    -> tensor<?x?x?xf16, #relax.shape<["b", "m", "n"]>> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x?x?xf16, #relax.shape<["b", "m", "k"]>>, tensor<?x?x?xf16, #relax.shape<["b", "k", "n"]>>) -> tensor<?x?x?xf16, #relax.shape<["b", "m", "n"]>>
  return %y : tensor<?x?x?xf16, #relax.shape<["b", "m", "n"]>>
}
"""


@needs_vulkan
def test_mma_route_f32_out(monkeypatch):
    """f16 x f16 -> f32 (out_dtype): the f32 sums stored as they are."""
    exe, mmas = compile_emulated(monkeypatch, MATMUL_F32, {"schedule_config": "f16_gemm=2", **EMULATED})
    assert mmas > 0   # the route was taken (mma.sync per kernel: mma.py's choice)
    _check(exe, [(32, 64, 128), (33, 37, 97), (64, 48, 16)], np.float32, epilogue=False)


@needs_vulkan
def test_mma_route_batched(monkeypatch):
    """batch_matmul: a grid z per batch element."""
    exe, mmas = compile_emulated(monkeypatch, BATCHED, {"schedule_config": "f16_gemm=2", **EMULATED})
    assert mmas > 0   # the route was taken (mma.sync per kernel: mma.py's choice)
    for batch, cases in ((3, [(32, 32, 32), (33, 41, 50)]), (1, [(64, 40, 24)])):
        _check(exe, cases, np.float16, batch=batch, epilogue=False)


@needs_vulkan
def test_route_needs_the_option(monkeypatch):
    """Without emulate-tensor-cores the vulkan target has no f16_gemm knob (a compile's
    schedule_config skips rules without it): the SIMT tiles, no nvgpu op; the option alone
    keeps the default route (f16_gemm=1)."""
    for options in ({"schedule_config": "f16_gemm=2"}, EMULATED):
        exe, mmas = compile_emulated(monkeypatch, LINEAR.format(t="f16"), options)
        assert mmas == 0
        _check(exe, [(40, 72, 33)], np.float16)


def test_pipeline_option():
    """emulate-tensor-cores: relax-emulate-mma after outlining, first of the SPIR-V stage (before the
    bf16 widening and the SPIR-V target), and the
    schedule told (relax-gpu-schedule{emulate-mma}, for relax-opt runs without a recorded target);
    off by default."""
    from relax_mlir.pipelines.vulkan import BF16_STAGE, stages
    off = [p for _, ps in stages() for p in ps]
    on = [p for _, ps in stages(emulate_tensor_cores=True) for p in ps]
    assert not any("emulate-mma" in p for p in off)
    at = on.index("relax-emulate-mma")
    assert on[at + 1:at + 1 + len(BF16_STAGE)] == BF16_STAGE and on[at - 1] == "cse"
    assert on[at + 1 + len(BF16_STAGE)].startswith("spirv-attach-target")
    assert [p for p in on if p.startswith("relax-gpu-schedule")][0].count(" emulate-mma=true") == 1


# -- TF32 for f32 matmuls (f32_gemm=2, backends/gpu/mma_tf32.py) --------------------------------

def test_tf32_route_ptx():
    """cuda, f32_gemm=2: the f32 matmul's large route is one mma.sync m16n8k8 tf32 per 8-deep K
    step, its 6 operands rounded by cvt.rna.tf32.f32 first; off by default (f32 stays on the
    SIMT tiles)."""
    from test_gpu_rules import _cuda_ptx
    on = [p for p in _cuda_ptx(LINEAR.format(t="f32"), "cuda{schedule-config=f32_gemm=2}").values() if "mma.sync" in p]
    assert len(on) == 1
    assert on[0].count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") == 1
    assert on[0].count("cvt.rna.tf32.f32") == 6
    assert ".maxntid 128, 1, 1" in on[0]
    assert not [p for p in _cuda_ptx(LINEAR.format(t="f32"), "cuda").values() if "mma.sync" in p]


@needs_vulkan
def test_tf32_route_emulated(monkeypatch):
    """The TF32 route on lavapipe: against numpy on the inputs rounded to tf32 (cvt.rna), at
    exact, odd and large sizes and K not a multiple of 8, with the bias + relu epilogue, one
    executable; the plain f32 product is farther away than the tolerance at K = 200 (the
    route's rounding is real)."""
    exe, mmas = compile_emulated(monkeypatch, LINEAR.format(t="f32"), {"schedule_config": "f32_gemm=2", **EMULATED})
    assert mmas == 1   # one mma.sync m16n8k8 per K step (mma_tf32.py)
    rng = np.random.default_rng(5)
    for m, n, k in ((32, 32, 32), (64, 128, 64), (33, 37, 97), (32, 40, 13), (256, 320, 200), (3, 70, 9)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        y = exe(a, b, bias)
        small = min(m, n) < 32   # the other routes: exact f32
        at = (a, b) if small else (_tf32(a), _tf32(b))
        ref = np.maximum(at[0].astype(np.float64) @ at[1].astype(np.float64) + bias, 0)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5, err_msg=f"{m}x{n}x{k}")
        if (m, n, k) == (256, 320, 200):
            plain = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
            assert np.abs(plain - y).max() > 1e-3


def test_tf32_never_tuned():
    """TF32 changes f32 results: the tuner's samples and neighbours never switch it on."""
    import random

    from test_gpu_rules import CUDA
    space = rules.Matmul().space(CUDA)
    base = rules.Matmul().default(CUDA, "f32")
    rng = random.Random(0)
    assert {space.sample(rng)["f32_gemm"] for _ in range(50)} == {1}
    assert all(c["f32_gemm"] == 1 for c in space.neighbors(base))
    space.check(dict(base, f32_gemm=2))   # still a valid explicit choice
