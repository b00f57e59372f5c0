"""The cuda target.

Three layers, so that a machine without an NVIDIA GPU still tests all it can:

* compile only (everywhere): the cuda pipeline turns every numerics case of the cpu
  suite (symbolic shapes) and the demo models into PTX, one ``gpu.binary`` per launched
  kernel; the target is registered; ``compile(..., target="cuda")`` without a driver
  raises :class:`CudaUnavailable`;
* a fake driver (everywhere with a C compiler): ``test/Inputs/fake_libcuda.c`` stands in
  for ``libcuda.so.1``. In this process (under another name) it drives the ctypes layer's
  error mapping; in a subprocess (as ``libcuda.so.1``, which MLIR's
  ``libmlir_cuda_runtime.so`` then links against) it runs the whole host path: the JIT,
  the module loads, the launches from the compiled code, their grids, the CUDA graph of
  each call (captured, instantiated or updated, replayed by the fake), device memory that the
  host cannot dereference (a host access crashes: every numerics case's host path runs
  there) and every failure path. Kernels do not execute there, so no numerics;
* a real GPU (skipped without one): numerics against numpy at sizes 1, odd and large
  through one compiled executable, the demo MLP and transformer block, errors.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir import ShapeError  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402
from relax_mlir.runtime import cuda as curt  # noqa: E402

import gpu_checks  # noqa: E402
import test_ops_numerics as numerics  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_SRC = os.path.join(HERE, "Inputs", "fake_libcuda.c")


def cuda_device() -> tuple[bool, str]:
    """(True, name) when libcuda.so.1 loads and has a usable device, else (False, why)."""
    return curt.available()


HAVE_GPU, GPU_WHY = cuda_device()
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no CUDA device: {GPU_WHY}")


# -- compile only ---------------------------------------------------------------------------

_ptx_of = gpu_checks.ptx_of


def _lower(m: ir.Module, pipeline: str = "builtin.module(cuda)") -> tuple[dict[str, str], set[str], str]:
    with m.context:
        relax_mlir.run_pipeline(m, pipeline)
        ptx = _ptx_of(m)
    text = str(m)
    return ptx, set(re.findall(r"gpu.launch_func  @(\w+)::", text)), text


def test_cuda_pipeline_gives_ptx_for_every_kernel():
    ctx = relax_mlir.make_context()
    m = models.mlp_module(ctx, models.MLPConfig(d_in=8, d_hidden=16, d_out=4))
    ptx, launched, text = _lower(m)
    # two fused matmul kernels (zero fill, matmul, bias (+ relu)), the fill and the epilogue
    # folded into each route's launch: N = 16 and 4 are below the tiles' 32, so that route
    # folds away; the GEMV (M <= 4, subgroup shuffles) and the small route remain
    assert len(ptx) == 4 and launched == set(ptx)
    assert sorted("shfl.sync.bfly" in c for c in ptx.values()) == [False, False, True, True]
    for name, code in ptx.items():
        assert ".target sm_80" in code
        assert f".visible .entry {name.rsplit('_kernel', 1)[0]}_kernel(" in code
        assert ".extern" not in code       # nothing left for the driver to link (no libdevice)
    assert all("fma.rn.f32" in c or "mul.rn.f32" in c for c in ptx.values())   # the two matmuls multiply
    # allocations go through the runtime (device memory), never malloc
    assert "llvm.call @_mlir_memref_to_llvm_alloc(" in text and "@malloc(" not in text


def test_cuda_pipeline_block_model():
    ctx = relax_mlir.make_context()
    m = models.block_module(ctx, models.BlockConfig(d_model=64, heads=2, d_ffn=128))
    ptx, launched, _ = _lower(m)
    assert launched == set(ptx)
    for code in ptx.values():
        assert ".target sm_80" in code and ".extern" not in code
    kinds = {k for k in ("rms_norm", "softmax", "silu", "triu", "permute_dims") if any(k in n for n in ptx)}
    assert kinds == {"rms_norm", "softmax", "silu", "triu", "permute_dims"}
    # rms_norm's 1/sqrt and softmax's division are device instructions (no libdevice call)
    assert any("rsqrt.approx.f32" in c for n, c in ptx.items() if "rms_norm" in n)
    assert any("div.rn.f32" in c for n, c in ptx.items() if "softmax" in n)


def _unfused(code: str) -> int:
    """Multiply-adds NVPTX left unfused: operands of an add.rn.f32 / sub.rn.f32 that a
    mul.rn.f32 computed (``.rn``: ptxas does not fuse them either; a ``fastmath<contract>``
    pair becomes fma.rn.f32, or add.f32 / mul.f32 that ptxas may still fuse)."""
    prods = set(re.findall(r"\bmul\.rn\.f32\s+(%[rf]\d+),", code))
    return sum(a in prods for args in re.findall(r"\b(?:add|sub)\.rn\.f32\s+%[rf]\d+, ([^;]*);", code)
               for a in args.split(", "))


def test_unfused_counts_a_multiply_feeding_an_add():
    code = ("mul.rn.f32 \t%r3, %r1, %r2;\n\tadd.rn.f32 \t%r4, %r0, %r3;\n\tsub.rn.f32 \t%r6, %r3, %r5;\n"
            "\tmul.rn.f32 \t%r7, %r1, %r1;\n\tadd.rn.f32 \t%r8, %r0, %r9;\n\tfma.rn.f32 \t%r10, %r7, %r1, %r0;")
    assert _unfused(code) == 2


_LLAMA_TINY = None


def _llama_tiny_ptx() -> dict[str, str]:
    """PTX of the tiny Llama (relax_mlir.llm.cli.SIZES["tiny"]), lowered once per process."""
    global _LLAMA_TINY
    if _LLAMA_TINY is None:
        from relax_mlir.llm.cli import SIZES
        from relax_mlir.llm.model import LlamaModel
        with relax_mlir.make_context(), ir.Location.unknown():
            m = ir.Module.create()
            LlamaModel(SIZES["tiny"]).build(m)
            _LLAMA_TINY = _lower(m)[0]
    return _LLAMA_TINY


def test_cuda_kernels_multiply_add_with_fma_block():
    """relax-kernel-fastmath{reassoc=false} in the cuda pipeline: every kernel of the transformer
    block (linalg-body kernels: the row kernels, elementwise and fallback ones; the GEMM / GEMV
    launches) multiply-adds with fma.rn.f32: no mul.rn.f32 is left at all (without the pass:
    1031, 736 of them feeding an add.rn.f32)."""
    ctx = relax_mlir.make_context()
    ptx, _, _ = _lower(models.block_module(ctx, models.BlockConfig(d_model=64, heads=2, d_ffn=128)))
    assert {n: _unfused(c) for n, c in ptx.items() if _unfused(c)} == {}
    assert sum(c.count("mul.rn.f32") for c in ptx.values()) == 0
    assert [n for n, c in ptx.items() if "softmax" in n and "fma.rn.f32" not in c] == []
    assert [n for n, c in ptx.items() if "rms_norm" in n and "fma.rn.f32" not in c] == []


def test_cuda_kernels_multiply_add_with_fma_llama():
    """The tiny Llama's kernels (matmuls, row kernels, rope, the fused epilogues) leave no
    multiply-add unfused, and its matmul and row kernels have no mul.rn.f32; the fused decode
    attention's online softmax is in the next test."""
    ptx = _llama_tiny_ptx()
    assert {n: _unfused(c) for n, c in ptx.items() if _unfused(c) and "decode_attention" not in n} == {}
    rows = [n for n in ptx if any(k in n for k in ("matmul", "rms_norm", "softmax"))]
    assert len(rows) == 17 and [n for n in rows if "mul.rn.f32" in ptx[n]] == []   # (prefill attention fused)


def test_cuda_decode_attention_multiply_adds_with_fma():
    """The decode attention's own rescaling (l * alpha + p, acc * alpha + p * v, the chunk
    combine) multiply-adds with FMAs too: relax-kernel-fastmath runs again after the schedules."""
    ptx = _llama_tiny_ptx()
    assert {n: _unfused(c) for n, c in ptx.items() if "decode_attention" in n and _unfused(c)} == {}


def test_cuda_pipeline_vector_elementwise_ptx():
    """relax-gpu-vector-elementwise: each elementwise op a kernel with 16-byte vector loads and
    stores (ld.global.v4 / st.global.v4; LLVM 22's NVPTX prints them untyped, .b32) beside
    its scalar kernel; a column-broadcast operand is one scalar load per 4 elements."""
    from relax_mlir.dialects.source import parse_module
    m = parse_module(gpu_checks.VECTOR_ELEMENTWISE, relax_mlir.make_context())
    ptx, launched, _ = _lower(m)
    assert launched == set(ptx)
    vec = sorted(n for n, c in ptx.items() if "ld.global.v4.b32" in c)
    assert [n for n in vec if "st.global.v4.b32" not in ptx[n] or ".extern" in ptx[n]] == []
    # @main: one fused kernel; @ints: one; @slices: one per op (it reads its view in place:
    # relax-gpu-forward-copies); each with its scalar twin
    assert len(vec) == 4 and len(ptx) == 8
    main = [n for n in vec if n.startswith("fused_add_multiply_sigmoid")]
    assert len(main) == 1 and ptx[main[0]].count("ld.global.v4.b32") == 2   # x and the row b
    assert ptx[main[0]].count("ld.global.b32") == 1                         # the column c


def test_cuda_pipeline_options():
    ctx = relax_mlir.make_context()
    m = numerics.graph_module("exp", [["n", 5]], ["f32"], "", name="main")
    ptx, _, _ = _lower(m, "builtin.module(cuda{chip=sm_90 workgroup-size=128})")
    # the vector kernel (relax-gpu-vector-elementwise, 4 elements per thread: rows of 5 collapse
    # to one dimension) and the parallel-loop route (one thread per element), 128 per block
    assert len(ptx) == 2
    for code in ptx.values():
        assert ".target sm_90" in code and ".maxntid 128, 1, 1" in code


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in numerics.CASES])
def test_cuda_pipeline_numerics_cases_to_ptx(case):
    """Every op of the cpu numerics suite, symbolic shapes included, compiles to PTX with
    one entry per launched kernel."""
    m = numerics.graph_module(case.op, case.shapes, case.dtypes, case.attrs, name="main")
    ptx, launched, _ = _lower(m)
    assert launched == set(ptx)
    for name, code in ptx.items():
        assert ".target sm_80" in code and ".extern" not in code
        assert re.search(rf"\.visible \.entry {re.escape(name.rsplit('_kernel', 1)[0])}_kernel\(", code)


def test_cuda_pipeline_edge_semantics_module_to_ptx():
    """The module the GPU edge-semantics tests run (76 launched kernels, every dtype: a row
    reduction is one launch since relax-gpu-row-reductions; 8 elementwise ops on 32-bit data
    have a vector kernel beside their scalar one, relax-gpu-vector-elementwise) compiles."""
    from relax_mlir.dialects.source import parse_module
    m = parse_module(numerics.EDGE_SRC, relax_mlir.make_context())
    ptx, launched, _ = _lower(m)
    assert launched == set(ptx) and len(ptx) == 76
    assert sum("ld.global.v4.b32" in c for c in ptx.values()) == 8
    assert not any(".extern" in c for c in ptx.values())


def test_cuda_target_registered():
    t = relax_mlir.TARGETS["cuda"]
    assert (t.name, t.pipeline_name, t.legalize_target, t.host_target) == ("cuda", "cuda", "cpu", "cpu")
    from relax_mlir.transforms.registry import PIPELINES
    assert [o.name for o in PIPELINES["cuda"].options] == ["fusion", "workgroup-size", "chip", "format", "schedule-config",
                                                          "cublas"]


ADD = """
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
    attributes {relax.function} {
  %z = "relax.add"(%x, %y) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %z : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
"""


@pytest.mark.skipif(HAVE_GPU, reason="a CUDA device is present")
def test_cuda_compile_without_a_driver_is_cuda_unavailable():
    with pytest.raises(curt.CudaUnavailable) as info:
        relax_mlir.compile(ADD, target="cuda")
    assert str(info.value) == GPU_WHY
    assert isinstance(info.value, curt.CudaError) and isinstance(info.value, RuntimeError)


def test_cuda_bad_options_are_compile_errors():
    """Found before anything is lowered (and before a device is looked for)."""
    with pytest.raises(relax_mlir.CompileError, match=re.escape(
            "option 'chip' of pass 'cuda': expected an NVIDIA architecture like sm_80 or sm_90a, got 'sm_bogus'")):
        relax_mlir.compile(ADD, target="cuda", options={"chip": "sm_bogus"})
    with pytest.raises(relax_mlir.CompileError, match=re.escape(
            "option 'workgroup-size' of pass 'cuda': 1 to 1024 threads per block, got 0")):
        relax_mlir.compile(ADD, target="cuda", options={"workgroup_size": 0})


def test_cuda_absent_driver_library():
    with pytest.raises(curt.CudaUnavailable, match=r"^cannot load the CUDA driver library /nonexistent/libcuda.so.1: "
                                                   r".*\(no NVIDIA driver on this machine\)$"):
        curt.Driver("/nonexistent/libcuda.so.1")


def test_cuda_not_a_driver_library():
    with pytest.raises(curt.CudaUnavailable,
                       match=r"^libm.so.6 has no cuGetErrorName: not a CUDA driver library \(or one older than CUDA 11\)$"):
        curt.Driver("libm.so.6")


# -- the fake driver ----------------------------------------------------------------------------

def _build_fake(out_dir, soname: str = "") -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the fake CUDA driver")
    path = os.path.join(str(out_dir), soname or "libfakecuda.so")
    cmd = [cc, "-shared", "-fPIC", "-O1", "-o", path, FAKE_SRC] + ([f"-Wl,-soname,{soname}"] if soname else [])
    subprocess.run(cmd, check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def fake_path(tmp_path_factory):
    return _build_fake(tmp_path_factory.mktemp("fakecuda"))


@pytest.fixture
def fake(fake_path, monkeypatch):
    for k in [k for k in os.environ if k.startswith("FAKE_CUDA_")]:
        monkeypatch.delenv(k)
    return curt.Driver(fake_path)


def test_fake_error_names(fake):
    assert fake.describe(100) == "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
    assert fake.describe(999) == "CUDA error 999 (unknown to the driver)"
    with pytest.raises(curt.CudaError) as info:
        fake.check(701, "cuLaunchKernel")
    assert str(info.value) == "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources " \
                              "requested for launch)"
    assert info.value.code == 701


def test_fake_no_device(fake, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_INIT", "100")
    with pytest.raises(curt.CudaUnavailable, match=re.escape(
            "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)")):
        curt.CudaDevice(None, fake)
    monkeypatch.setenv("FAKE_CUDA_INIT", "0")
    monkeypatch.setenv("FAKE_CUDA_DEVICES", "0")
    with pytest.raises(curt.CudaUnavailable, match=r"^the CUDA driver found no device$"):
        curt.CudaDevice(None, fake)


def test_fake_device_selection(fake, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_DEVICES", "2")
    assert (curt.CudaDevice(None, fake).ordinal, curt.CudaDevice("gpu 1", fake).name) == (0, "Fake GPU 1")
    assert curt.CudaDevice("1", fake).ordinal == 1
    with pytest.raises(curt.CudaUnavailable, match=re.escape(
            "RELAX_MLIR_CUDA_DEVICE='tesla' names no device (devices: Fake GPU 0, Fake GPU 1)")):
        curt.CudaDevice("tesla", fake)
    with pytest.raises(curt.CudaUnavailable, match=re.escape(
            "RELAX_MLIR_CUDA_DEVICE=5: only 2 device(s): Fake GPU 0, Fake GPU 1")):
        curt.CudaDevice("5", fake)


def test_fake_device_memory_is_not_host_memory(fake, monkeypatch):
    """Buffers are plain device memory (cuMemAlloc, no managed memory needed): the fake hands
    out addresses the host cannot dereference; data moves only through the driver's copies."""
    monkeypatch.setenv("FAKE_CUDA_MANAGED", "0")
    dev = curt.CudaDevice(None, fake)
    buf = dev.alloc(1000)
    fake.lib.fake_is_device.restype = ctypes.c_int
    assert fake.lib.fake_is_device(ctypes.c_uint64(buf.address)) == 1
    a = np.arange(250, dtype=np.float32)
    dev.upload(buf, a.ctypes.data, a.nbytes)
    back = np.empty_like(a)
    dev.download(back.ctypes.data, buf, a.nbytes)
    np.testing.assert_array_equal(back, a)
    with pytest.raises(curt.CudaError, match=r"cuMemcpyHtoD\(4 bytes\) failed: CUDA error 1"):
        dev.to_device(a.ctypes.data, a.ctypes.data, 4)      # a host address is no device buffer
    dev.release(buf)


def test_fake_device_limits_and_memory(fake, monkeypatch):
    dev = curt.CudaDevice(None, fake)
    assert (dev.compute_capability, dev.max_grid, dev.max_block, dev.max_threads, dev.max_alloc) == \
        ((9, 0), (2147483647, 65535, 65535), (1024, 1024, 64), 1024, 80 << 30)
    buf = dev.alloc(1000)
    assert buf.size == 1024 and dev.find(buf.address + 1000) == (buf, 1000)
    dev.release(buf)
    assert dev.alloc(600) is buf                      # the pool reuses the size class
    assert dev.lookup(buf.address + 1024) is None
    spare = dev.alloc(600)                            # buf is taken: a new buffer
    dev.release(spare)
    gone = []
    assert dev.trim(gone.append) == 1 and gone == [spare]    # cached buffers given back, held ones kept
    assert dev.lookup(spare.address) is None and dev.lookup(buf.address) == (buf, 0)
    monkeypatch.setenv("FAKE_CUDA_ALLOC_LIMIT", str(1 << 20))
    with pytest.raises(MemoryError, match=re.escape(
            "the CUDA device cannot allocate 2097152 bytes (Fake GPU 0): CUDA_ERROR_OUT_OF_MEMORY (out of memory)")):
        dev.alloc(2_000_000)
    with pytest.raises(MemoryError, match=re.escape(
            f"{(80 << 30) + 1} bytes exceed the CUDA device's buffer limit of {80 << 30} bytes (Fake GPU 0)")):
        dev.alloc((80 << 30) + 1)


def test_fake_rejected_ptx_is_a_ptx_error(fake, monkeypatch):
    dev = curt.CudaDevice(None, fake)
    assert dev.load_image(b".version 7.0\n.target sm_80\n", "@k") != 0
    monkeypatch.setenv("FAKE_CUDA_LOAD_ERROR", "218")
    with pytest.raises(curt.PtxError) as info:
        dev.load_image(b".version 7.0\n.target sm_80\n", "@k")
    assert str(info.value) == ("kernel @k: the CUDA driver rejected the PTX: CUDA_ERROR_INVALID_PTX (a PTX JIT "
                               "compilation failed): ptxas fatal   : fake rejection")
    with pytest.raises(curt.PtxError, match=re.escape(
            "; the PTX targets sm_100, the device is sm_90: compile with pipeline_options={'chip': 'sm_90'}")):
        dev.load_image(b".version 8.6\n.target sm_100\n", "@k")


#: the start of a script run against the fake driver in a fresh process (the fake must be
#: THE libcuda.so.1 of that process, argv[1]): ``launches()``, ``err(fn)``
FAKE_PRELUDE = r'''
import ctypes, json, os, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
import numpy as np
import relax_mlir
from relax_mlir.frontend import models
from relax_mlir.runtime import cuda

fake = ctypes.CDLL("libcuda.so.1")
grids = (ctypes.c_long * 192).in_dll(fake, "fake_grids")


def launches():
    return ctypes.c_long.in_dll(fake, "fake_launches").value


def err(fn):
    try:
        fn()
        return None
    except BaseException as e:
        return [type(e).__name__, str(e)]
'''

#: the whole host path against the fake driver; prints one JSON object of observations
FAKE_RUN = FAKE_PRELUDE + r'''
out = {"available": list(cuda.available())}
cfg = models.MLPConfig(d_in=8, d_hidden=16, d_out=4, max_batch=70000)
exe = relax_mlir.compile(models.mlp_module(relax_mlir.make_context(), cfg), target="cuda")
params = models.mlp_params(cfg, np.random.default_rng(0))
out["repr"] = repr(exe)
out["calls"] = {}
out["call_stats"] = []
for n in (1, 7, 130, 7):
    before = launches()
    y = exe(np.ones((n, 8), np.float32), *params)
    out["calls"][n] = [list(y.shape), str(y.dtype), [list(grids[3 * k:3 * k + 3]) for k in range(before, launches())]]
    out["call_stats"].append(exe.cuda_call_stats)
captured = ctypes.c_long.in_dll(fake, "fake_captured").value
before = launches()
exe(np.ones((7, 8), np.float32), *params)     # as the last call: replayed, no capture
out["replay"] = [exe.cuda_call_stats, launches() - before, ctypes.c_long.in_dll(fake, "fake_captured").value - captured]
out["stats"] = exe.cuda_stats
out["fake_counts"] = {k: ctypes.c_long.in_dll(fake, "fake_" + k).value
                      for k in ("direct_launches", "graph_launches", "instantiations", "updates")}
out["shape_error"] = err(lambda: exe(np.ones((3, 9), np.float32), *params))
dev_params = [exe.upload(p) for p in params]
out["upload_roundtrip"] = bool(np.array_equal(dev_params[1].numpy(), params[1]))
os.environ["RELAX_MLIR_CUDA_CHECK"] = "1"     # every launch's pointers checked in Python
out["checked"] = err(lambda: exe(np.ones((3, 8), np.float32), *dev_params))
del os.environ["RELAX_MLIR_CUDA_CHECK"]
before = launches()
exe(np.ones((2, 8), np.float32), *dev_params)
out["upload_launches"] = launches() - before
out["bind_params"] = err(lambda: exe["main"].bind_params(*params)(np.ones((2, 8), np.float32)))
out["grid_limit"] = err(lambda: exe(np.ones((65536, 8), np.float32), *params))
out["after_grid_limit"] = list(exe(np.ones((2, 8), np.float32), *params).shape)

os.environ["FAKE_CUDA_LAUNCH_ERROR"] = "701"     # 5 rows: a call not seen before (no replay)
out["launch_error"] = err(lambda: exe(np.ones((5, 8), np.float32), *params))
del os.environ["FAKE_CUDA_LAUNCH_ERROR"]
out["after_launch_error"] = list(exe(np.ones((2, 8), np.float32), *params).shape)

x_dev = exe.upload(np.ones((1024, 8), np.float32))
os.environ["FAKE_CUDA_ALLOC_LIMIT"] = str(1 << 16)
out["oom_staging"] = err(lambda: exe(np.ones((4096, 8), np.float32), *params))
os.environ["FAKE_CUDA_ALLOC_LIMIT"] = str(1 << 13)    # the hidden layer is in the workspace: the result
out["oom_compiled"] = err(lambda: exe(x_dev, *dev_params))
del os.environ["FAKE_CUDA_ALLOC_LIMIT"]

CONST = """
func.func @main(%x: tensor<?x2xf32, #relax.shape<["n", 2]>>) -> tensor<?x2xf32, #relax.shape<["n", 2]>>
    attributes {relax.function} {
  %c = arith.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %y = "relax.add"(%x, %c) : (tensor<?x2xf32, #relax.shape<["n", 2]>>, tensor<2xf32>) -> tensor<?x2xf32, #relax.shape<["n", 2]>>
  return %y : tensor<?x2xf32, #relax.shape<["n", 2]>>
}
"""
const = relax_mlir.compile(CONST, target="cuda")
out["host_constant"] = err(lambda: const(np.ones((3, 2), np.float32)))

try:    # cubins need a CUDA toolkit's ptxas on PATH at compile time
    relax_mlir.compile(CONST, target="cuda", options={"format": "bin"})
except relax_mlir.CompileError as e:
    out["cubin"] = ["no ptxas", str(e)[:200]]
else:
    before = launches()
    cubin_x = np.zeros((3, 2), np.float32)
    twice = relax_mlir.compile(CONST.replace("(%x, %c) : (tensor<?x2xf32, #relax.shape<[\"n\", 2]>>, tensor<2xf32>)",
                                             "(%x, %x) : (tensor<?x2xf32, #relax.shape<[\"n\", 2]>>, "
                                             "tensor<?x2xf32, #relax.shape<[\"n\", 2]>>)"),
                               target="cuda", options={"format": "bin"})
    out["cubin"] = [list(twice(cubin_x).shape), launches() - before]

os.environ["FAKE_CUDA_LOAD_ERROR"] = "218"
out["ptx_rejected"] = err(lambda: relax_mlir.compile(CONST, target="cuda"))
del os.environ["FAKE_CUDA_LOAD_ERROR"]

os.environ["RELAX_MLIR_CUDA_DEVICE"] = "1"
os.environ["FAKE_CUDA_DEVICES"] = "2"
out["second_device"] = err(lambda: relax_mlir.compile(CONST, target="cuda"))
del os.environ["RELAX_MLIR_CUDA_DEVICE"]

os.environ["FAKE_CUDA_QUERY"] = "700"
out["fault"] = err(lambda: exe(np.ones((2, 8), np.float32), *params))
del os.environ["FAKE_CUDA_QUERY"]
out["after_fault"] = err(lambda: exe(np.ones((2, 8), np.float32), *params))
cuda.device().broken = None        # a fresh context, as in a new process

os.environ["FAKE_CUDA_QUERY"] = "600"
os.environ["RELAX_MLIR_CUDA_TIMEOUT_S"] = "0.2"
out["timeout"] = err(lambda: exe(np.ones((2, 8), np.float32), *params))
del os.environ["FAKE_CUDA_QUERY"]
out["after_timeout"] = err(lambda: exe(np.ones((2, 8), np.float32), *params))
# dropping an executable unloads its kernel modules with the device's context current, as
# cuModuleUnload requires, and keeps its engine (CudaExecutable.__del__: destroying one
# crashed later compiles now and then on an H100)
import gc
unloads = ctypes.c_long.in_dll(fake, "fake_unloads")
without = ctypes.c_long.in_dll(fake, "fake_unloads_without_context")
cuda.device().broken = None        # after the timeout above: a fresh context, as in a new process
exe2 = relax_mlir.compile(models.mlp_module(relax_mlir.make_context(), cfg), target="cuda")
exe2(np.ones((2, 8), np.float32), *params)
before, kept = unloads.value, cuda._KEPT_ENGINES[0]
del exe2
gc.collect()
out["unloads"] = [unloads.value - before, without.value]
out["kept_engines"] = cuda._KEPT_ENGINES[0] - kept
exe3 = relax_mlir.compile(models.mlp_module(relax_mlir.make_context(), cfg), target="cuda")
out["after_drop"] = exe3(np.ones((2, 8), np.float32), *params).shape
print("FAKE-RUN " + json.dumps(out))
'''


def run_fake(out_dir, script: str, *args: str, **env_vars: str) -> dict:
    """Run ``script`` (:data:`FAKE_PRELUDE` + ...) with the fake driver built in ``out_dir`` as
    THE libcuda.so.1 (argv[1]; then ``args``) in a fresh process; the JSON object it prints
    after ``FAKE-RUN ``."""
    lib = _build_fake(out_dir, soname="libcuda.so.1")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_CUDA_", "RELAX_MLIR_CUDA_"))}
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(HERE)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(env_vars)
    r = subprocess.run([sys.executable, "-c", script, lib, *args], capture_output=True, text=True, env=env,
                       timeout=600)
    lines = [x for x in r.stdout.splitlines() if x.startswith("FAKE-RUN ")]
    assert r.returncode == 0 and lines, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads(lines[0][len("FAKE-RUN "):])


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    # FAKE_CUDA_GRID_X: so that 65536 rows on grid x exceed it
    return run_fake(tmp_path_factory.mktemp("fakelibcuda"), FAKE_RUN, FAKE_CUDA_GRID_X="65535")


def test_fake_run_mlp_host_path(fake_run):
    assert fake_run["available"] == [True, "Fake GPU 0"]
    assert fake_run["repr"] == "<relax_mlir Executable (cuda: Fake GPU 0): @main>"
    # two launches per call (two fused matmuls, fill and epilogue folded in); n = 1 the GEMV
    # (blocks of 32 columns on grid x, rows on y: (1, 1, 1)); n = 7 the small route: rows on
    # grid x, blocks of 64 columns on y; n = 130 (>= 32) but 16 or 4 columns: still the small
    # route
    assert fake_run["calls"] == {str(n): [[n, 4], "float32", [[n, 1, 1]] * 2] for n in (1, 7, 130)}
    # per call: x and the 4 parameters copied in (848 bytes: not uploaded ones), the result
    # copied out, one synchronization, the two kernels as one CUDA graph: instantiated by the
    # first call (the GEMV's kernels) and by the second (n = 7: the small route's, another
    # topology), updated in place by the others (the same kernels, other sizes)
    first = {"launches": 2, "copies_in": 5, "copies_out": 1, "device_copies": 0, "syncs": 1,
             "graph_launches": 1, "graph_builds": 1, "graph_updates": 0, "replays": 0}
    later = dict(first, graph_builds=0, graph_updates=1)
    keys = list(first)
    assert [{k: c[k] for k in keys} for c in fake_run["call_stats"]] == [first, first, later, later]
    # call buffers (the 5 staged, the result; the hidden layer is in the session's workspace,
    # relax-plan-memory) come from the session's arena, sized by the previous calls: the
    # first call takes 6 pool buffers (allocated) and then makes the arena (1792 bytes -> 2048);
    # 7 rows fit it; 130 rows do not (x and the result from the pool, the arena regrown)
    assert [(c["buffers"], c["allocations"]) for c in fake_run["call_stats"]] == [(6, 7), (0, 0), (2, 3), (0, 0)]
    # a call exactly like the last one: its graph replayed as it is, the host code not run
    # (nothing captured), its 2 kernels launched, x and the parameters copied in, the result out
    st, kernels, captured = fake_run["replay"]
    assert (kernels, captured) == (2, 0)
    assert st == dict(later, graph_updates=0, replays=1, buffers=0, allocations=0, library_calls=0)
    assert fake_run["stats"]["calls"] == 5 and fake_run["stats"]["uploads"] == 25
    assert fake_run["stats"]["upload_bytes"] == (1 + 7 + 130 + 7 + 7) * 32 + 5 * 848
    # the fake driver saw no direct launch: each call launched its graph
    assert fake_run["fake_counts"] == {"direct_launches": 0, "graph_launches": 5, "instantiations": 2, "updates": 2}


def test_fake_run_errors_of_the_cpu_target(fake_run):
    assert fake_run["shape_error"] == ["ShapeError", "@main: argument #0: expected shape (n, 8), got (3, 9)"]
    assert fake_run["bind_params"] is None      # test_gpu_state.py: the weights uploaded once


def test_fake_run_uploaded_weights(fake_run):
    assert fake_run["upload_roundtrip"] is True and fake_run["upload_launches"] == 2
    assert fake_run["checked"] is None      # RELAX_MLIR_CUDA_CHECK=1: every pointer in device memory


def test_fake_run_launch_checks(fake_run):
    # the MLP's N (16, then 4) is below the GEMM tiles' 32: each matmul kernel has the GEMV
    # (M <= 4: @..._kernel) and the small route (@..._kernel_0)
    assert fake_run["grid_limit"] == ["CudaError", "kernel @fused_matmul_add_relu_kernel_0::@fused_matmul_add_relu_kernel: "
                                      "a grid of (65536, 1, 1) exceeds the device's limit (65535, 65535, 65535) "
                                      "(Fake GPU 0)"]
    assert fake_run["after_grid_limit"] == [2, 4]
    assert fake_run["launch_error"] == [
        "CudaError", "kernel @fused_matmul_add_relu_kernel_0::@fused_matmul_add_relu_kernel: cuLaunchKernel (grid "
                     "(5, 1, 1), block (64, 1, 1)): CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested "
                     "for launch)"]     # n = 5 (> 4 rows, not the GEMV): the small route, a row per grid x
    assert fake_run["after_launch_error"] == [2, 4]      # not sticky: the next call runs
    # a constant tensor of the program reaches the kernel in CUDA memory (relax-gpu-device-
    # constants copies the host global into an allocation): the launch check that refused the
    # global's host address (a kernel reading it would fault the device) now passes
    assert fake_run["host_constant"] is None


def test_fake_run_out_of_memory(fake_run):
    assert fake_run["oom_staging"] == ["MemoryError", "the CUDA device cannot allocate 131072 bytes (Fake GPU 0): "
                                                      "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"]
    assert fake_run["oom_compiled"][0] == "MemoryError"
    assert fake_run["oom_compiled"][1].startswith("@main: ") and \
        "cannot allocate 16384 bytes for shape (n, 4)" in fake_run["oom_compiled"][1]


def test_fake_run_rejected_ptx_at_compile_time(fake_run):
    assert fake_run["ptx_rejected"] == [
        "PtxError", "kernel @relax_add_f32_Dx2_2_kernel: the CUDA driver rejected the PTX: CUDA_ERROR_INVALID_PTX "
                    "(a PTX JIT compilation failed): ptxas fatal   : fake rejection"]


def test_fake_run_cubins(fake_run):
    if fake_run["cubin"][0] == "no ptxas":
        pytest.skip(f"format=bin needs ptxas on PATH: {fake_run['cubin'][1]}")
    assert fake_run["cubin"] == [[3, 2], 1]     # loaded through mgpuModuleLoad, launched


def test_fake_run_unloads_modules_with_the_context_current(fake_run):
    # the MLP's two matmul kernels, each two launch sites (GEMV, small route), each its own
    # gpu.binary: four cuModuleUnload calls, none without a current context (a real driver
    # refuses those: the modules would leak)
    assert fake_run["unloads"] == [4, 0]
    assert fake_run["kept_engines"] == 1        # never destroyed: see CudaExecutable.__del__
    assert fake_run["after_drop"] == [2, 4]     # a later executable compiles and runs


def test_fake_run_one_device_per_process(fake_run):
    assert fake_run["second_device"] == ["CudaUnavailable", "this process already runs CUDA code on device 0 "
                                         "('Fake GPU 0'): one CUDA device per process (RELAX_MLIR_CUDA_DEVICE)"]


def test_fake_run_fault_and_timeout(fake_run):
    assert fake_run["fault"] == ["CudaError", "a kernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access "
                                              "was encountered)"]
    assert fake_run["after_fault"] == [
        "CudaError", "the CUDA context of 'Fake GPU 0' is unusable after an earlier error (a kernel failed: "
                     "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)); restart the process"]
    assert fake_run["timeout"] == ["TimeoutError", "the CUDA device did not finish a kernel within 0.2 s "
                                                   "(RELAX_MLIR_CUDA_TIMEOUT_S)"]
    assert fake_run["after_timeout"] == [
        "CudaError", "a kernel on 'Fake GPU 0' did not finish within 0.2 s and may still be running; restart the "
                     "process"]


#: every numerics case's host path at its largest size against the fake driver: the fake's device
#: memory is not host-addressable, so host code that touched a buffer would crash the process
FAKE_NUMERICS = FAKE_PRELUDE + r'''
sys.path.insert(0, sys.argv[2])
from relax_mlir.shapes import Shape
import test_ops_numerics as numerics

wrong = []
for case in numerics.CASES:
    exe = relax_mlir.compile(numerics.graph_module(case.op, case.shapes, case.dtypes, case.attrs, name="main"),
                             target="cuda")
    syms = sorted(set().union(*(Shape.of(s).symbols for s in case.shapes)))
    env = {**{s: case.sizes[-1] for s in syms}, **case.extra}
    rng = np.random.default_rng(0)
    ins = [(case.gen or numerics._gen)(rng, numerics._dims(s, env), d, i)
           for i, (s, d) in enumerate(zip(case.shapes, case.dtypes))]
    ref = case.ref(*[x.astype(np.float64) if x.dtype.kind == "f" else x for x in ins])
    got = exe(*ins)
    shapes = [g.shape for g in (got if isinstance(got, (tuple, list)) else [got])]
    if shapes != [np.asarray(r).shape for r in (ref if isinstance(ref, tuple) else [ref])]:
        wrong.append(case.id)
print("FAKE-RUN " + json.dumps({"cases": len(numerics.CASES), "wrong_shapes": wrong}))
'''


def test_fake_run_numerics_host_paths_never_touch_device_memory(tmp_path):
    r = run_fake(tmp_path, FAKE_NUMERICS, HERE)
    assert r == {"cases": len(numerics.CASES), "wrong_shapes": []}


# -- a real GPU -------------------------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in numerics.CASES])
def test_cuda_numerics(case):
    numerics.check_case(case, target="cuda")


@pytest.fixture(scope="module")
def mlp():
    return gpu_checks.mlp("cuda", max_batch=8192)


@pytest.fixture(scope="module")
def vector_elementwise():
    return relax_mlir.compile(gpu_checks.VECTOR_ELEMENTWISE, target="cuda")


@needs_gpu
@pytest.mark.parametrize("nm", gpu_checks.VECTOR_SIZES, ids=[f"{n}x{m}" for n, m in gpu_checks.VECTOR_SIZES])
def test_cuda_vector_elementwise_any_shape(vector_elementwise, nm):
    gpu_checks.check_vector_elementwise(vector_elementwise, *nm)


@needs_gpu
@pytest.mark.parametrize("n", [1, 7, 67, 130, 4099])
def test_cuda_mlp(mlp, n):
    gpu_checks.check_mlp(*mlp, n)


@needs_gpu
def test_cuda_launches_per_call(mlp):
    exe, _, params = mlp
    before = exe.cuda_stats
    x = np.ones((3, 512), np.float32)
    exe(x, *params)
    after = exe.cuda_stats
    # each fused matmul kernel one launch (n = 3: the GEMV), fill and epilogue folded in,
    # both in the call's CUDA graph; the five arguments staged (copied to the device) once each,
    # the result copied back, one synchronization
    d = {k: after[k] - before[k] for k in after}
    assert {k: d[k] for k in ("calls", "launches", "uploads", "upload_bytes", "copies_in", "copies_out", "syncs",
                              "graph_launches")} == {
        "calls": 1, "launches": 2, "uploads": 5, "upload_bytes": x.nbytes + sum(p.nbytes for p in params),
        "copies_in": 5, "copies_out": 1, "syncs": 1, "graph_launches": 1}


@needs_gpu
def test_cuda_weights_stay_on_the_device(mlp):
    exe, _, params = mlp
    gpu_checks.check_weights_stay_on_the_device(exe, params)


@needs_gpu
def test_cuda_shape_errors_are_the_cpus(mlp):
    gpu_checks.check_shape_errors_are_the_cpus(*mlp)


@needs_gpu
def test_cuda_block():
    gpu_checks.check_block("cuda")


@needs_gpu
def test_cuda_match_cast_failure_is_the_cpus():
    gpu_checks.check_match_cast_failure_is_the_cpus("cuda")


@needs_gpu
def test_cuda_buffer_beyond_the_device_memory_is_a_memory_error():
    # 16 TiB of f32: beyond any device's memory
    gpu_checks.check_buffer_beyond_the_device_is_a_memory_error("cuda", 16384)


@needs_gpu
def test_cuda_graph_calls_and_returned_parameters():
    gpu_checks.check_graph_calls_and_returned_parameters("cuda")


@needs_gpu
def test_cuda_constant_arrays_reach_the_kernels():
    gpu_checks.check_constant_arrays("cuda")


@needs_gpu
def test_cuda_threads_call_one_executable(mlp):
    gpu_checks.check_threads_call_one_executable(*mlp)


@needs_gpu
def test_cuda_unknown_device_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RELAX_MLIR_CUDA_DEVICE", "no-such-gpu")
    with pytest.raises(curt.CudaUnavailable, match="RELAX_MLIR_CUDA_DEVICE='no-such-gpu' names no device"):
        relax_mlir.compile(gpu_checks.MATCH_CAST, target="cuda")


@pytest.fixture(scope="module")
def edge_cuda():
    return relax_mlir.compile(numerics.EDGE_SRC, target="cuda")


@needs_gpu
@pytest.mark.parametrize("fn,args", gpu_checks.edge_params(numerics, gpu_checks.CUDA_EDGE_KNOWN))
def test_cuda_edge_semantics(edge_cuda, fn, args):
    fn(edge_cuda, *args)



FAKE_TAKE = r'''
src = """func.func @take_f32(%a0: tensor<?xf32, #relax.shape<["k"]>>, %a1: tensor<?xi64, #relax.shape<["j"]>>) -> tensor<?xf32, #relax.shape<["j"]>> attributes {relax.function} {
  %0 = "relax.take"(%a0, %a1) {axis = 0 : i64} : (tensor<?xf32, #relax.shape<["k"]>>, tensor<?xi64, #relax.shape<["j"]>>) -> tensor<?xf32, #relax.shape<["j"]>>
  return %0 : tensor<?xf32, #relax.shape<["j"]>>
}"""
full = relax_mlir.compile(src, target="cuda")
exe = full["take_f32"]
x = np.array([10, 20, 30], np.float32)
out = {}
for name, ids in (("ok", [2, -3]), ("high", [0, 5]), ("after", [1]), ("low", [-4]), ("again", [0, 1]), ("replay", [1, 2]),
                  ("replay_bad", [1, 9]), ("replay_ok", [2, 0])):
    captured = ctypes.c_long.in_dll(fake, "fake_captured").value
    out[name] = [err(lambda: exe(x, np.array(ids, np.int64))), ctypes.c_long.in_dll(fake, "fake_captured").value - captured]
print("FAKE-RUN " + json.dumps(out))
'''


def test_fake_cuda_take_checks_its_indices(tmp_path):
    """relax.take's index check on cuda (docs/semantics.md mode "check"): the host code snapshots
    the indices with a device copy on the call's stream (a node of its CUDA graph), the runtime
    reads it after the synchronization and raises the cpu target's IndexError; the next call
    works; a call replayed without its host code checks its snapshot again. The fake driver
    runs copies (not kernels), so the check itself runs here."""
    assert issubclass(relax_mlir.IndexOutOfRangeError, IndexError)
    out = run_fake(tmp_path, FAKE_PRELUDE + FAKE_TAKE)
    msg = "index {} is out of range for a dim of size 3"
    assert out["ok"][0] is None and out["after"][0] is None and out["again"][0] is None
    assert out["high"][0][0] == "IndexOutOfRangeError" and msg.format(5) in out["high"][0][1], out["high"]
    assert out["low"][0][0] == "IndexOutOfRangeError" and msg.format(-4) in out["low"][0][1], out["low"]
    assert out["replay_bad"][0][0] == "IndexOutOfRangeError" and msg.format(9) in out["replay_bad"][0][1], out["replay_bad"]
    assert out["replay_ok"][0] is None
    # captures (host code runs): the replays capture nothing
    assert [out[k][1] > 0 for k in ("again", "replay", "replay_bad", "replay_ok")] == [True, False, False, False], out
