"""The tensor-core GEMM of f16 / bf16 matmuls on cuda (relax_mlir/backends/gpu/mma.py,
``f16_gemm=2``): what can be checked without a GPU.

* PTX (every machine): per 32-deep K block, 128-bit global loads and shared stores of the
  staged blocks, ``ldmatrix.x4`` (A) and ``ldmatrix.x4.trans`` (B) from 16-byte aligned
  shared memory, m16n8k16 ``mma.sync`` with f32 accumulators (f16 through nvgpu, bf16
  through nvvm.mma.sync), no local-memory spills; 2-D with an epilogue, batched, other tiles;
* the rule: knob validation (threads, workgroup memory, whole staging chunks);
* the host path against the fake driver: the module loads, the grids are
  ``ceil(N / block_n) x ceil(M / block_m) x batch`` for symbolic sizes in ONE executable;
* numerics on a device only (RELAX_MLIR_TEST_TENSOR_CORES=1, set by bench/gpu_session.sh).
"""

from __future__ import annotations

import os
import re
import sys

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import mma, rules  # noqa: E402
from relax_mlir.target import GPU_DEFAULTS, Target  # noqa: E402
from test_gpu_rules import LINEAR, _cuda_ptx  # noqa: E402

CUDA = Target(kind="cuda", dispatch_policy="off", **GPU_DEFAULTS["cuda"])

BATCHED = """
func.func @main(%x: tensor<?x?x?x{t}, #relax.shape<["b", "m", "k"]>>, %w: tensor<?x?x?x{t}, #relax.shape<["b", "k", "n"]>>)
    -> tensor<?x?x?x{t}, #relax.shape<["b", "m", "n"]>> attributes {{relax.function}} {{
  %y = "relax.matmul"(%x, %w) : (tensor<?x?x?x{t}, #relax.shape<["b", "m", "k"]>>, tensor<?x?x?x{t}, #relax.shape<["b", "k", "n"]>>) -> tensor<?x?x?x{t}, #relax.shape<["b", "m", "n"]>>
  return %y : tensor<?x?x?x{t}, #relax.shape<["b", "m", "n"]>>
}}
"""

INSTR = r"(mma\.sync[.\w]*|ldmatrix[.\w]*|ld\.global\.v4[.\w]*|st\.shared\.v4[.\w]*|bar\.sync|\.local)"


def _tc_kernel(src: str, config: str = "f16_gemm=2") -> str:
    """The PTX of the one kernel of ``src`` that has mma.sync (escapes undone)."""
    ptx = [p for p in _cuda_ptx(src, f"cuda{{schedule-config={config}}}").values() if "mma.sync" in p]
    assert len(ptx) == 1
    return ptx[0].replace("\\0A", "\n").replace("\\09", "\t")


def _counts(ptx: str) -> dict:
    out: dict = {}
    for m in re.findall(INSTR, ptx):
        out[m] = out.get(m, 0) + 1
    return out


def _expected(t: str, mma_per_block: int, a_ld: int, b_ld: int, ldm_a: int, ldm_b: int) -> dict:
    """Instruction counts of one kernel body: the staging of the first block before the loop
    and of the next one in it (per chunk a 128-bit global load on the fast path and one
    128-bit shared store), a barrier after each, the K block's ldmatrix and mma.sync
    (unrolled over its 16-deep steps)."""
    return {f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32": mma_per_block,
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16": ldm_a,
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16": ldm_b,
            "ld.global.v4.b32": 2 * (a_ld + b_ld), "st.shared.v4.b32": 2 * (a_ld + b_ld), "bar.sync": 2}


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_ptx_2d_with_epilogue(t):
    """Default tiles (2 x 2 warps of 32 x 32, K blocks of 32), matmul + bias + relu in one
    kernel: 2 x 4 mma per warp and 16-deep step (16 per K block), A's 64 x 32 and B's
    32 x 64 blocks in 2 + 2 chunks of 8 per thread, double-buffered shared memory 16-byte
    aligned, 128 threads, no spills."""
    ptx = _tc_kernel(LINEAR.format(t=t))
    assert _counts(ptx) == _expected(t, 16, 2, 2, 4, 4)
    assert ".maxntid 128, 1, 1" in ptx
    # two halves of A: 64 rows x (32 + 8) f16, of B: 32 rows x (64 + 8)
    assert re.findall(r"\.shared \.align (\d+) \.b8 \w+\[(\d+)\]", ptx) == [("16", "10240"), ("16", "9216")]


def test_ptx_f32_keeps_the_simt_tiles():
    """f32 matmuls never take tensor cores (TF32 would change their numerics)."""
    ptx = _cuda_ptx(LINEAR.format(t="f32"), "cuda{schedule-config=f16_gemm=2}")
    assert len(ptx) == 3 and not [p for p in ptx.values() if "mma.sync" in p or "ldmatrix" in p]


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_ptx_batched(t):
    ptx = _tc_kernel(BATCHED.format(t=t))
    assert _counts(ptx) == _expected(t, 16, 2, 2, 4, 4)
    assert "%ctaid.z" in ptx


def test_ptx_other_tiles():
    """4 x 2 warps of 64 x 32 (a 256 x 64 block), K blocks of 16: 4 x 4 mma per warp and
    step; A 256 x 16 in 2 chunks per thread of 256, B 16 x 64 in 128 chunks (half the threads)."""
    cfg = "f16_gemm=2:tc_warps_m=4:tc_warps_n=2:tc_warp_m=64:tc_warp_n=32:tc_tile_k=16"
    ptx = _tc_kernel(LINEAR.format(t="f16"), cfg)
    assert _counts(ptx) == _expected("f16", 16, 2, 1, 4, 2)
    assert ".maxntid 256, 1, 1" in ptx


def test_tiles_are_validated():
    """The rule refuses tensor-core tiles the device cannot hold (when the route is on)."""
    space = rules.Matmul().space(CUDA)
    base = rules.Matmul().default(CUDA, "f16")
    space.check(dict(base, f16_gemm=2))
    big = dict(base, f16_gemm=2, tc_warps_m=4, tc_warps_n=4, tc_warp_m=64, tc_warp_n=64, tc_tile_k=64)
    with pytest.raises(ValueError, match=r"tensor-core blocks of A and B \(141312 bytes\) exceed 49152 bytes of "
                                         "workgroup memory"):
        space.check(big)
    space.check(dict(big, f16_gemm=1))      # the tiles only matter on the route
    assert mma.MmaTiles(warps_m=4, warps_n=4).problem(max_threads=256) == (
        "512 threads per tensor-core workgroup exceed the target's 256")
    with pytest.raises(relax_mlir.CompileError, match="exceed 49152 bytes of workgroup memory"):
        relax_mlir.compile(LINEAR.format(t="f16"), target="cuda", options={
            "schedule_config": "f16_gemm=2:tc_warps_m=4:tc_warps_n=4:tc_warp_m=64:tc_warp_n=64:tc_tile_k=64"})


FAKE_MMA = r'''
import ml_dtypes
calls = []
for t, dt in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
    exe = relax_mlir.compile(sys.argv[2].format(t=t), target="cuda", options={"schedule_config": "f16_gemm=2"})
    for m, n, k in ((40, 72, 33), (32, 32, 16), (1, 64, 64), (300, 200, 1), (97, 129, 200)):
        before = launches()
        y = exe(np.ones((m, k), dt), np.ones((k, n), dt), np.ones(n, dt))
        calls.append([t, m, n, list(y.shape), [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
exe = relax_mlir.compile(sys.argv[3].format(t="f16"), target="cuda", options={"schedule_config": "f16_gemm=2"})
for b, m, n, k in ((3, 64, 65, 17), (1, 128, 256, 32)):
    before = launches()
    exe(np.ones((b, m, k), np.float16), np.ones((b, k, n), np.float16))
    calls.append(["batched", b, m, n, [list(grids[3 * i:3 * i + 3]) for i in range(before, launches())]])
print("FAKE-RUN " + json.dumps(calls))
'''


def test_fake_run_host_path(tmp_path):
    """The PTX loads through the (fake) driver and ONE executable launches a grid of
    ``ceil(N / 64) x ceil(M / 64) x batch`` for every M, N >= 32; the GEMV below (M = 1)."""
    import test_cuda
    got = test_cuda.run_fake(tmp_path, test_cuda.FAKE_PRELUDE + FAKE_MMA, LINEAR, BATCHED)
    grids = [[40, 72, [[2, 1, 1]]], [32, 32, [[1, 1, 1]]], [1, 64, [[1, 1, 1]]], [300, 200, [[4, 5, 1]]],
             [97, 129, [[3, 2, 1]]]]
    assert got == [[t, m, n, [m, n], g] for t in ("f16", "bf16") for m, n, g in grids] + [
                   ["batched", 3, 64, 65, [[2, 1, 3]]], ["batched", 1, 128, 256, [[4, 2, 1]]]]


needs_tensor_cores = pytest.mark.skipif(
    os.environ.get("RELAX_MLIR_TEST_TENSOR_CORES") != "1",
    reason="the tensor-core GEMM's numerics need a CUDA device (bench/gpu_session.sh sets "
           "RELAX_MLIR_TEST_TENSOR_CORES=1)")

#: (M, N, K): 32, odd, one full block, K % 16 != 0, K below one mma step, large
SIZES = ((32, 32, 16), (33, 33, 33), (64, 64, 64), (97, 97, 97), (40, 72, 1), (128, 128, 128),
         (256, 320, 200), (1000, 96, 17))


def _device():
    from relax_mlir.runtime import cuda
    ok, why = cuda.available()
    if not ok:
        pytest.skip(f"no CUDA device: {why}")


def _round(x: np.ndarray, t: str) -> np.ndarray:
    """``x`` rounded to ``t``, as f32."""
    return x.astype(np.float16 if t == "f16" else ml_dtypes.bfloat16).astype(np.float32)


@needs_tensor_cores
@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_device_numerics_linear(t):
    """On a device: matmul + bias + relu through the tensor-core route, every size through
    ONE executable, against numpy's f32 product of the same rounded inputs."""
    _device()
    exe = relax_mlir.compile(LINEAR.format(t=t), target="cuda", options={"schedule_config": "f16_gemm=2"})
    rng = np.random.default_rng(11)
    for m, n, k in SIZES:
        a = _round(rng.standard_normal((m, k)), t)
        b = _round(rng.standard_normal((k, n)) / np.sqrt(k), t)
        bias = _round(rng.standard_normal(n), t)
        ref = np.maximum(a @ b + bias, 0)
        dt = np.float16 if t == "f16" else ml_dtypes.bfloat16
        y = exe(a.astype(dt), b.astype(dt), bias.astype(dt)).astype(np.float32)
        np.testing.assert_allclose(y, ref, rtol=2e-2, atol=3e-2, err_msg=f"{t} {m}x{n}x{k}")


@needs_tensor_cores
def test_device_numerics_batched():
    _device()
    exe = relax_mlir.compile(BATCHED.format(t="f16"), target="cuda", options={"schedule_config": "f16_gemm=2"})
    rng = np.random.default_rng(12)
    for nb, m, n, k in ((3, 64, 65, 17), (2, 97, 33, 130), (1, 128, 256, 32)):
        a = rng.standard_normal((nb, m, k)).astype(np.float16)
        b = (rng.standard_normal((nb, k, n)) / np.sqrt(k)).astype(np.float16)
        y = exe(a, b).astype(np.float32)
        np.testing.assert_allclose(y, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2,
                                   err_msg=f"{nb}x{m}x{n}x{k}")


# -- numerics through relax-emulate-mma on lavapipe (vulkan's emulate-tensor-cores) ---------------

from test_gpu_rules import needs_vulkan, routes  # noqa: E402,F401  (the fixture)

#: (M, N, K): 32, odd, K % 16 != 0, K below one mma step, several blocks, large
EMU_SIZES = ((32, 32, 16), (33, 33, 33), (64, 64, 64), (97, 97, 97), (40, 72, 1), (128, 128, 128),
             (256, 320, 200))


@pytest.fixture
def slow_calls(monkeypatch):
    """The emulation is slow by design (every mma an exchange through workgroup memory, on a
    shared 2-core machine): a longer per-call limit than the runtime's 60 s."""
    monkeypatch.setenv("RELAX_MLIR_VULKAN_TIMEOUT_S", "600")


def _emulated(src: str, config: str):
    return relax_mlir.compile(src, target="vulkan", options={"schedule_config": f"f16_gemm=2:{config}".rstrip(":"),
                                                             "emulate_tensor_cores": True})


@needs_vulkan
@pytest.mark.parametrize("config,block", [("", (64, 64)), ("tc_warps_m=4:tc_warps_n=1", (128, 32)),
                                          ("tc_warps_n=1:tc_warp_m=16:tc_warp_n=64:tc_tile_k=16", (32, 64))],
                         ids=["2x2-warps", "4x1-warps", "16x64-warp-tiles-k16"])
def test_emulated_numerics_linear(routes, slow_calls, config, block):  # noqa: F811
    """The f16 kernel (matmul + bias + relu) with its ldmatrix / mma.sync emulated on lavapipe:
    every size through ONE executable against numpy's f32 product of the same f16 inputs;
    one launch of ``ceil(N / block_n) x ceil(M / block_m)`` workgroups (4 x 1 warps: a
    128 x 32 block, a grid the SIMT tiles' 64 x 64 would not give; 2 x 1 warps of 16 x 64 with K
    blocks of 16: one A fragment, four B pairs, one 16-deep step per block)."""
    exe = _emulated(LINEAR.format(t="f16"), config)
    rng = np.random.default_rng(21)
    for m, n, k in EMU_SIZES:
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float16)
        bias = rng.standard_normal(n).astype(np.float16)
        ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32), 0)
        y, launched = routes.call(exe, a, b, bias)
        np.testing.assert_allclose(y.astype(np.float32), ref, rtol=1e-2, atol=1e-2, err_msg=f"{m}x{n}x{k}")
        assert [g for _, g in launched] == [(-(-n // block[1]), -(-m // block[0]), 1)]


@needs_vulkan
def test_emulated_numerics_batched(routes, slow_calls):  # noqa: F811
    """batch_matmul, 1 x 2 warps (a 32 x 64 block): the batch on grid z, ONE executable."""
    exe = _emulated(BATCHED.format(t="f16"), "tc_warps_m=1:tc_warps_n=2")
    rng = np.random.default_rng(22)
    for nb, m, n, k in ((3, 64, 65, 17), (2, 97, 33, 130), (2, 64, 128, 32)):
        a = rng.standard_normal((nb, m, k)).astype(np.float16)
        b = (rng.standard_normal((nb, k, n)) / np.sqrt(k)).astype(np.float16)
        y, launched = routes.call(exe, a, b)
        np.testing.assert_allclose(y.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                                   rtol=1e-2, atol=1e-2, err_msg=f"{nb}x{m}x{n}x{k}")
        assert [g for _, g in launched] == [(-(-n // 64), -(-m // 32), nb)]
