"""Library GEMMs on the cuda target: cuBLAS through relax-cuda-dispatch-library.

* compile only (everywhere): the cuda pipeline with ``cublas=on`` / ``auto`` / ``off``: which
  matmuls become calls of the cuBLAS shim in the host code, what stays a PTX kernel, the
  split kernel's two variants; the policy resolved from the options, the environment and
  whether a library is found;
* the fake driver and a fake cuBLAS (``test/Inputs/fake_libcuda.c`` as ``libcuda.so.1``,
  ``test/Inputs/fake_libcublas.c`` as ``libcublas.so.12``, in a subprocess): the fake cuBLAS
  computes its products on the fake driver's shadow of device memory, recorded into the
  call's CUDA graph and computed when the graph is launched, so the numerics of the whole
  host path (descriptors, row-major vs cuBLAS's column-major, batches, f16, the stream, the
  workspace, graph capture, update and replay) are checked here against numpy, several sizes
  through one executable; the stats; no library -> the generated kernels;
* a real GPU: the same numerics (skipped without one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from mlir import ir  # noqa: E402
from relax_mlir.dialects.source import parse_module  # noqa: E402
from relax_mlir.runtime.cuda import cublas  # noqa: E402

from test_cuda import HAVE_GPU, GPU_WHY, run_fake  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_CUBLAS = os.path.join(HERE, "Inputs", "fake_libcublas.c")

#: one executable, every kind of matmul the pass sends to cuBLAS (symbolic M)
MATMULS = """
func.func @mm(%x: tensor<?x96xf32, #relax.shape<["n", 96]>>, %w: tensor<96x40xf32>) -> tensor<?x40xf32, #relax.shape<["n", 40]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x96xf32, #relax.shape<["n", 96]>>, tensor<96x40xf32>) -> tensor<?x40xf32, #relax.shape<["n", 40]>>
  return %y : tensor<?x40xf32, #relax.shape<["n", 40]>>
}
func.func @bmm(%a: tensor<?x?x?xf32, #relax.shape<["b", "m", "k"]>>, %b: tensor<?x?x?xf32, #relax.shape<["b", "k", "n"]>>)
    -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>> attributes {relax.function} {
  %y = "relax.matmul"(%a, %b) : (tensor<?x?x?xf32, #relax.shape<["b", "m", "k"]>>, tensor<?x?x?xf32, #relax.shape<["b", "k", "n"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
  return %y : tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
}
func.func @b32(%a: tensor<?x?x24xf32, #relax.shape<["b", "m", 24]>>, %w: tensor<24x?xf32, #relax.shape<[24, "n"]>>)
    -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>> attributes {relax.function} {
  %y = "relax.matmul"(%a, %w) : (tensor<?x?x24xf32, #relax.shape<["b", "m", 24]>>, tensor<24x?xf32, #relax.shape<[24, "n"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
  return %y : tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
}
func.func @h16(%x: tensor<?x64xf16, #relax.shape<["n", 64]>>, %w: tensor<64x48xf16>) -> tensor<?x48xf16, #relax.shape<["n", 48]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x64xf16, #relax.shape<["n", 64]>>, tensor<64x48xf16>) -> tensor<?x48xf16, #relax.shape<["n", 48]>>
  return %y : tensor<?x48xf16, #relax.shape<["n", 48]>>
}
func.func @h32(%x: tensor<?x64xf16, #relax.shape<["n", 64]>>, %w: tensor<64x48xf16>) -> tensor<?x48xf32, #relax.shape<["n", 48]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) {out_dtype = f32} : (tensor<?x64xf16, #relax.shape<["n", 64]>>, tensor<64x48xf16>) -> tensor<?x48xf32, #relax.shape<["n", 48]>>
  return %y : tensor<?x48xf32, #relax.shape<["n", 48]>>
}
func.func @bf16(%x: tensor<?x64xbf16, #relax.shape<["n", 64]>>, %w: tensor<64x48xbf16>) -> tensor<?x48xbf16, #relax.shape<["n", 48]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x64xbf16, #relax.shape<["n", 64]>>, tensor<64x48xbf16>) -> tensor<?x48xbf16, #relax.shape<["n", 48]>>
  return %y : tensor<?x48xbf16, #relax.shape<["n", 48]>>
}
func.func @bf32(%x: tensor<?x64xbf16, #relax.shape<["n", 64]>>, %w: tensor<64x48xbf16>) -> tensor<?x48xf32, #relax.shape<["n", 48]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) {out_dtype = f32} : (tensor<?x64xbf16, #relax.shape<["n", 64]>>, tensor<64x48xbf16>) -> tensor<?x48xf32, #relax.shape<["n", 48]>>
  return %y : tensor<?x48xf32, #relax.shape<["n", 48]>>
}
"""

#: a symbolic M large enough for the split (768 x 768: N*K*5 >= 2^21)
SPLIT = """
func.func @main(%x: tensor<?x768xf32, #relax.shape<["s", 768]>>, %w: tensor<768x768xf32>) -> tensor<?x768xf32, #relax.shape<["s", 768]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x768xf32, #relax.shape<["s", 768]>>, tensor<768x768xf32>) -> tensor<?x768xf32, #relax.shape<["s", 768]>>
  return %y : tensor<?x768xf32, #relax.shape<["s", 768]>>
}
func.func @h(%x: tensor<?x768xf16, #relax.shape<["s", 768]>>, %w: tensor<768x768xf16>) -> tensor<?x768xf16, #relax.shape<["s", 768]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x768xf16, #relax.shape<["s", 768]>>, tensor<768x768xf16>) -> tensor<?x768xf16, #relax.shape<["s", 768]>>
  return %y : tensor<?x768xf16, #relax.shape<["s", 768]>>
}
func.func @bsplit(%a: tensor<?x?x96xf32, #relax.shape<["b", "s", 96]>>, %w: tensor<?x96x64xf32, #relax.shape<["b", 96, 64]>>)
    -> tensor<?x?x64xf32, #relax.shape<["b", "s", 64]>> attributes {relax.function} {
  %y = "relax.matmul"(%a, %w) : (tensor<?x?x96xf32, #relax.shape<["b", "s", 96]>>, tensor<?x96x64xf32, #relax.shape<["b", 96, 64]>>) -> tensor<?x?x64xf32, #relax.shape<["b", "s", 64]>>
  return %y : tensor<?x?x64xf32, #relax.shape<["b", "s", 64]>>
}
func.func @bf(%x: tensor<?x768xbf16, #relax.shape<["s", 768]>>, %w: tensor<768x768xbf16>) -> tensor<?x768xbf16, #relax.shape<["s", 768]>>
    attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x768xbf16, #relax.shape<["s", 768]>>, tensor<768x768xbf16>) -> tensor<?x768xbf16, #relax.shape<["s", 768]>>
  return %y : tensor<?x768xbf16, #relax.shape<["s", 768]>>
}
"""


def _epi(name: str, extra: str, body: str, dt: str = "f32") -> str:
    """@name(x (s, 768), w (768, 768)[, extra]) = the body over %y = x @ w (a symbolic M: split)."""
    x, w = f'tensor<?x768x{dt}, #relax.shape<["s", 768]>>', f"tensor<768x768x{dt}>"
    ex = {"b": f", %b: tensor<768x{dt}>", "r": f", %r: {x}", "": ""}[extra]
    return (f'func.func @{name}(%x: {x}, %w: {w}{ex}) -> {x} attributes {{relax.function}} {{\n'
            f'  %y = "relax.matmul"(%x, %w) : ({x}, {w}) -> {x}\n'
            + body.replace("X", x).replace("B", f"tensor<768x{dt}>") + "}\n")


#: matmuls with a fused epilogue cuBLASLt applies (a symbolic M: the split's library variant)
EPILOGUES = (_epi("bias", "b", '  %z = "relax.add"(%y, %b) : (X, B) -> X\n  return %z : X\n')
             + _epi("biasrelu", "b", '  %z = "relax.add"(%y, %b) : (X, B) -> X\n  %u = "relax.relu"(%z) : (X) -> X\n'
                    '  return %u : X\n')
             + _epi("relu", "", '  %u = "relax.relu"(%y) : (X) -> X\n  return %u : X\n')
             + _epi("res", "r", '  %z = "relax.add"(%y, %r) : (X, X) -> X\n  return %z : X\n')
             + _epi("rres", "r", '  %z = "relax.add"(%r, %y) : (X, X) -> X\n  return %z : X\n')
             + _epi("bfrelu", "", '  %u = "relax.relu"(%y) : (X) -> X\n  return %u : X\n', "bf16"))


def _qmm(name: str, dt: str, fmt: str, rb: int, k: int = 64) -> str:
    x, w, y = f'tensor<?x{k}x{dt}, #relax.shape<["s", {k}]>>', f"tensor<48x{rb}xi8>", f'tensor<?x48x{dt}, #relax.shape<["s", 48]>>'
    return f"""func.func @{name}(%x: {x}, %w: {w}) -> {y} attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : ({x}, {w}) -> {y}
  return %y : {y}
}}
"""


#: relax.quantized_matmul with a symbolic M (K = 64, N = 48): f16 / bf16 weights with x of their
#: type (cuBLAS reads the stored rows), f16 weights with f32 x and the block formats (decoded
#: into a scratch buffer first)
#: with a fused residual add (the LLM's o and down projections): the epilogue stays generated
QUANT_ADD = """func.func @qadd(%x: tensor<?x64xf32, #relax.shape<["s", 64]>>, %w: tensor<48x68xi8>,
    %r: tensor<?x48xf32, #relax.shape<["s", 48]>>) -> tensor<?x48xf32, #relax.shape<["s", 48]>> attributes {relax.function} {
  %y = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x64xf32, #relax.shape<["s", 64]>>, tensor<48x68xi8>) -> tensor<?x48xf32, #relax.shape<["s", 48]>>
  %z = "relax.add"(%y, %r) : (tensor<?x48xf32, #relax.shape<["s", 48]>>, tensor<?x48xf32, #relax.shape<["s", 48]>>) -> tensor<?x48xf32, #relax.shape<["s", 48]>>
  return %z : tensor<?x48xf32, #relax.shape<["s", 48]>>
}
"""
QUANT = QUANT_ADD + (_qmm("qf16", "f16", "f16", 128) + _qmm("qbf16", "bf16", "bf16", 128) + _qmm("qh", "f32", "f16", 128)
         + _qmm("q8", "f32", "q8_0", 68) + _qmm("q40", "f32", "q4_0", 36) + _qmm("q41", "f32", "q4_1", 40)
         + _qmm("q40h", "f16", "q4_0", 36))


def _lower(src: str, options: str) -> str:
    ctx = relax_mlir.make_context()
    m = parse_module(src, ctx)
    with ctx:
        relax_mlir.run_pipeline(m, f"builtin.module(cuda{{{options}}})")
    return str(m)


# -- compile only ------------------------------------------------------------------------------

def test_cublas_on_calls_the_shim_from_the_host_code():
    text = _lower(MATMULS, "cublas=on")
    called = sorted(set(re.findall(r"llvm.call @_mlir_ciface_(relax_cublas_matmul_\w+)\(", text)))
    assert called == ["relax_cublas_matmul_22_bf16", "relax_cublas_matmul_22_bf16_f32", "relax_cublas_matmul_22_f16",
                      "relax_cublas_matmul_22_f16_f32", "relax_cublas_matmul_22_f32", "relax_cublas_matmul_32_f32",
                      "relax_cublas_matmul_33_f32"]
    # no kernel is left for any of the seven matmuls: nothing is launched
    assert "gpu.launch_func" not in text and "gpu.binary" not in text


def test_cublas_off_keeps_the_generated_kernels():
    text = _lower(MATMULS, "cublas=off")
    assert "relax_cublas" not in text
    # each of the five matmuls a kernel with its routes (GEMM tiles, GEMV, small): 14 binaries
    binaries = re.findall(r"gpu.binary @(\w+)", text)
    assert len(binaries) == 20 and len({b.split("_kernel")[0] for b in binaries}) == 7


def test_cublas_split_keeps_the_gemv_and_calls_cublas_above_four_rows(monkeypatch, tmp_path):
    (tmp_path / "libcublas.so.12").write_bytes(b"")     # auto needs a library to be found
    monkeypatch.setenv("RELAX_MLIR_CUBLAS_LIBRARY", str(tmp_path / "libcublas.so.12"))
    text = _lower(SPLIT, "cublas=auto")
    # the dispatcher compares M with 4: the generated variant (GEMV and the other routes,
    # PTX kernels) or the library variant (the shim, no kernel of its own)
    assert re.search(r"llvm.icmp \"ule\" %\w+, %\w+ : i64", text)
    called = sorted(set(re.findall(r"llvm.call @_mlir_ciface_(relax_cublas_matmul_\w+)\(", text)))
    # f16 and bf16 write their half result from cuBLAS (the truncation folded into the call)
    assert called == ["relax_cublas_matmul_22_bf16", "relax_cublas_matmul_22_f16", "relax_cublas_matmul_22_f32",
                      "relax_cublas_matmul_33_f32"]
    binaries = re.findall(r"gpu.binary @(\w+)", text)
    gen = [b for b in binaries if "__gen_kernel" in b]
    # each generated variant's routes (GEMV, GEMM tiles, the small one), nothing for the library
    # variants (no conversion kernel) nor the dispatchers (no result copy)
    assert len(gen) == 12 and len(binaries) == 12
    ptx = text[text.index("gpu.binary @" + gen[0]):]
    assert "shfl.sync.bfly" in ptx       # the GEMV route is still there for M <= 4


def _decoder(fmt: str, dt: str, rb: int, k: int = 64) -> str:
    """The decoding kernel of the quantized library variant as a function @decode(x, w, C, out)
    of its own (text): the variant's scratch buffer made the argument ``out``, the cuBLAS call
    removed."""
    from relax_mlir.pipelines import cuda as cuda_pipeline
    from relax_mlir.pipelines.gpu import bufferize_stage
    ctx = relax_mlir.make_context()
    m = parse_module(_qmm("q", dt, fmt, rb, k), ctx)
    st = dict(cuda_pipeline.stages(cublas="on"))
    with ctx:
        relax_mlir.run_pipeline(m, "builtin.module(" + ",".join(st["graph"] + st["host"] + bufferize_stage()
                                                                + ["relax-cuda-split-library"]) + ")")
        lib = next(o.operation for o in m.body.operations if o.operation.name == "func.func"
                   and ir.StringAttr(o.operation.attributes["sym_name"]).value.endswith("__lib"))
        block = lib.regions[0].blocks[0]
        ops = [o.operation for o in block.operations]
        assert [o.name for o in ops if o.name not in ("arith.constant", "memref.cast")] == \
            ["memref.alloc", "linalg.generic", "func.call", "memref.dealloc", "func.return"]
        alloc = next(o for o in ops if o.name == "memref.alloc")
        for o in reversed(ops):
            if o.name in ("func.call", "memref.cast", "memref.dealloc"):
                o.erase()
        out = block.add_argument(alloc.results[0].type, ir.Location.unknown())
        alloc.results[0].replace_all_uses_with(out)
        alloc.erase()
        lib.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([a.type for a in block.arguments], []))
        lib.attributes["sym_name"] = ir.StringAttr.get("decode")
        return str(lib)


@pytest.mark.parametrize("fmt,dt", [("q8_0", "f32"), ("q4_0", "f32"), ("q4_1", "f32"), ("f16", "f32"),
                                    ("bf16", "f32"), ("q4_0", "f16"), ("q8_0", "f16"), ("f16", "bf16"),
                                    ("q5_0", "f32"), ("q5_1", "f32"), ("q4_k", "f32"), ("q5_k", "f32"),
                                    ("q6_k", "f32"), ("q4_k", "f16")])
def test_quantized_decoding_kernel_numerics(fmt, dt):
    """The library variant's decoding kernel (the quantized generic's decoder, cloned into a 2-D
    parallel generic) run on the cpu (upstream lowering, the ExecutionEngine) against gguf's
    numpy dequantizer: x's type f32 exactly (K-quants: to an f32 rounding, the products of the
    super-block's and the sub-block's scales taken in another order), f16 / bf16 rounded once."""
    import gguf
    import ml_dtypes
    from kernel_harness import _arg, compile_kernel
    from relax_mlir.ops.quant import row_bytes
    from test_gpu_kquant import FORMATS as RUN_FORMATS, _weights
    k = 256 if fmt in RUN_FORMATS else 64
    rb = row_bytes(fmt, k)
    rng = np.random.default_rng(3)
    if fmt in RUN_FORMATS:
        raw, want = _weights(fmt, 48, k, rng)
        want = want.astype(np.float32)
    else:
        qtype = getattr(gguf.GGMLQuantizationType, fmt.upper())
        raw = gguf.quants.quantize(rng.standard_normal((48, k)).astype(np.float32), qtype).view(np.int8).reshape(48, rb)
        want = gguf.quants.dequantize(raw.view(np.uint8), qtype).astype(np.float32).reshape(48, k)
    npdt = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dt]
    with ir.Context():
        eng, name = compile_kernel(ir.Operation.parse(_decoder(fmt, dt, rb, k)))
    x, c = np.zeros((1, k), npdt), np.zeros((1, 48), np.float32 if dt == "f32" else npdt)
    out = np.full((48, k), np.nan, npdt)
    eng.invoke(name, _arg(x), _arg(raw), _arg(c), _arg(out))
    got = out.astype(np.float32)
    if fmt in ("q4_k", "q5_k", "q6_k"):
        ulp = np.finfo(npdt).eps if dt != "bf16" else 2.0 ** -7
        np.testing.assert_allclose(got, want.astype(npdt).astype(np.float32), rtol=2 * ulp,
                                   atol=2 * ulp * np.abs(want).max())
    else:
        np.testing.assert_array_equal(got, want.astype(npdt).astype(np.float32))


def test_cublas_policy_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("RELAX_MLIR_CUBLAS", raising=False)     # test/conftest.py turns it off
    monkeypatch.setenv("RELAX_MLIR_CUBLAS_LIBRARY", str(tmp_path / "missing.so"))
    assert cublas.find() is None
    assert cublas.policy("") == "off" and cublas.policy("auto") == "off"
    assert cublas.policy("on") == "on"
    lib = tmp_path / "libcublas.so.12"
    lib.write_bytes(b"")
    monkeypatch.setenv("RELAX_MLIR_CUBLAS_LIBRARY", str(lib))
    assert cublas.find() == str(lib) and cublas.policy("") == "auto"
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))     # no compiler for the shim: auto is off
    assert cublas.policy("") == "off"
    monkeypatch.delenv("CC")
    monkeypatch.setenv("RELAX_MLIR_CUBLAS", "off")
    assert cublas.policy("") == "off" and cublas.policy("on") == "on"
    with pytest.raises(ValueError, match="cublas must be auto, on or off, got 'fast'"):
        cublas.policy("fast")
    with pytest.raises(relax_mlir.CompileError, match="option 'cublas' of pass 'cuda'"):
        relax_mlir.compile(SPLIT, target="cuda", options={"cublas": "fast"})


def test_cublas_wheel_is_found_first(monkeypatch, tmp_path):
    """Without RELAX_MLIR_CUBLAS_LIBRARY the PyPI wheel's library (nvidia/cublas/lib) wins."""
    d = tmp_path / "nvidia" / "cublas" / "lib"
    d.mkdir(parents=True)
    (d / "libcublas.so.12").write_bytes(b"")
    monkeypatch.delenv("RELAX_MLIR_CUBLAS_LIBRARY", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
    assert cublas.find() == str(d / "libcublas.so.12")


# -- the fake driver and the fake cuBLAS -------------------------------------------------------

FAKE_LIBRARY_RUN = r'''
import ctypes, json, os, sys
import ml_dtypes
import numpy as np
fake = ctypes.CDLL(sys.argv[1])
os.environ["RELAX_MLIR_CUBLAS_LIBRARY"] = sys.argv[2]
import relax_mlir
from relax_mlir.runtime import cuda

fcb = ctypes.CDLL(sys.argv[2])     # the fake cuBLAS (the same library the shim loads)

def count(name):
    return ctypes.c_long.in_dll(fcb if name.startswith(("fake_cublas_", "fake_cublaslt_")) else fake, name).value

MATMULS, SPLIT, QUANT, EPILOGUES = sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rng = np.random.default_rng(0)
out = {"errors": {}, "stats": {}}
exe = relax_mlir.compile(MATMULS, target="cuda", options={"cublas": "on"})

def check(label, got, want, tol):
    out["errors"][label] = [list(got.shape), str(got.dtype), float(np.abs(got.astype(np.float64) - want).max())
                            if got.size else 0.0, tol]

w = rng.standard_normal((96, 40), dtype=np.float32)
for n in (1, 5, 37, 300):
    x = rng.standard_normal((n, 96), dtype=np.float32)
    check(f"mm{n}", exe["mm"](x, w), x.astype(np.float64) @ w, 1e-4)
    out["stats"][f"mm{n}"] = exe.cuda_call_stats
# the same shapes again (now within the session's arena: recorded for replay), then again with
# other data: replayed without the host code, the graph's cuBLAS node computes the new product
x = rng.standard_normal((37, 96), dtype=np.float32)
check("mm37_again", exe["mm"](x, w), x.astype(np.float64) @ w, 1e-4)
x = rng.standard_normal((37, 96), dtype=np.float32)
check("mm37_replay", exe["mm"](x, w), x.astype(np.float64) @ w, 1e-4)
out["stats"]["mm37_replay"] = exe.cuda_call_stats
out["workspace"] = count("fake_cublas_workspace")
for b, m, k, n in ((1, 1, 1, 1), (3, 7, 5, 9), (2, 33, 64, 17)):
    a = rng.standard_normal((b, m, k), dtype=np.float32)
    c = rng.standard_normal((b, k, n), dtype=np.float32)
    check(f"bmm{b}x{m}x{k}x{n}", exe["bmm"](a, c), a.astype(np.float64) @ c, 1e-4)
out["dims_bmm"] = list((ctypes.c_long * 6).in_dll(fcb, "fake_cublas_dims"))
for b, m, n in ((2, 3, 5), (4, 1, 33)):
    a = rng.standard_normal((b, m, 24), dtype=np.float32)
    c = rng.standard_normal((24, n), dtype=np.float32)
    check(f"b32_{b}x{m}x{n}", exe["b32"](a, c), a.astype(np.float64) @ c, 1e-4)
out["dims_b32"] = list((ctypes.c_long * 6).in_dll(fcb, "fake_cublas_dims"))
hw = (rng.standard_normal((64, 48)) * 0.5).astype(np.float16)
for n in (1, 7, 70):
    hx = (rng.standard_normal((n, 64)) * 0.5).astype(np.float16)
    ref = hx.astype(np.float32) @ hw.astype(np.float32)
    check(f"h16_{n}", exe["h16"](hx, hw), ref.astype(np.float16).astype(np.float64), 2e-2)
    check(f"h32_{n}", exe["h32"](hx, hw), ref.astype(np.float64), 1e-4)
# bf16 (CUDA_R_16BF, f32 compute): small integers, so that the f32 sums are exact and the bf16
# result is exactly numpy's sum rounded by ml_dtypes (to nearest even: sums above 256 round)
bw = rng.integers(-8, 9, (64, 48)).astype(ml_dtypes.bfloat16)
out["bf16_exact"] = {}
for n in (1, 5, 37, 300):
    bx = rng.integers(-8, 9, (n, 64)).astype(ml_dtypes.bfloat16)
    ref = bx.astype(np.float64) @ bw.astype(np.float64)
    got = exe["bf16"](bx, bw)
    check(f"bf16_{n}", got, ref.astype(ml_dtypes.bfloat16).astype(np.float64), 0.0)
    out["bf16_exact"][n] = [int((np.abs(ref) > 256).sum()), int((got.view(np.uint16) != ref.astype(ml_dtypes.bfloat16).view(np.uint16)).sum())]
    check(f"bf32_{n}", exe["bf32"](bx, bw), ref, 0.0)
    bx = rng.standard_normal((n, 64)).astype(ml_dtypes.bfloat16)
    ref = bx.astype(np.float64) @ bw.astype(np.float64)
    check(f"bf16r_{n}", exe["bf16"](bx, bw), ref.astype(ml_dtypes.bfloat16).astype(np.float64), 0.5)
os.environ["RELAX_MLIR_CUDA_GRAPHS"] = "0"     # launched directly, not captured
direct = count("fake_direct_launches")
x = rng.standard_normal((9, 96), dtype=np.float32)
check("mm_direct", exe["mm"](x, w), x.astype(np.float64) @ w, 1e-4)
out["stats"]["mm_direct"] = exe.cuda_call_stats
out["direct"] = count("fake_direct_launches") - direct
del os.environ["RELAX_MLIR_CUDA_GRAPHS"]
out["totals"] = {k: count("fake_cublas_" + k) for k in ("handles", "calls", "runs")}

# the split: M <= 4 the generated kernels (not run by the fake: no numerics), cuBLAS above
split = relax_mlir.compile(SPLIT, target="cuda", options={"cublas": "auto"})
ws = rng.standard_normal((768, 768), dtype=np.float32)
out["split"] = {}
for s in (1, 4, 5, 64):
    x = rng.standard_normal((s, 768), dtype=np.float32)
    y = split["main"](x, ws)
    if s > 4:
        check(f"split{s}", y, x.astype(np.float64) @ ws, 1e-3)
    st = split.cuda_call_stats
    out["split"][s] = [st["launches"], st["library_calls"]]
# batched (3-D x 3-D, a symbolic batch and M): the same split by M, cublasGemmStridedBatchedEx above
out["split_batched"] = {}
for s in (3, 4, 5, 40):
    a = rng.standard_normal((3, s, 96)).astype(np.float32)
    wb = rng.standard_normal((3, 96, 64)).astype(np.float32)
    y = split["bsplit"](a, wb)
    if s > 4:
        check(f"split_b{s}", y, a.astype(np.float64) @ wb, 1e-3)
    st = split.cuda_call_stats
    out["split_batched"][s] = [st["launches"], st["library_calls"],
                               list((ctypes.c_long * 6).in_dll(fcb, "fake_cublas_dims")) if s > 4 else []]
# f16 and bf16: the same split, cuBLAS writing the half result (no conversion kernel after it)
out["split_half"] = {}
for fn, dt, tol in (("h", np.float16, 2e-2), ("bf", ml_dtypes.bfloat16, 0.26)):
    wh = (rng.standard_normal((768, 768)) * 0.05).astype(dt)
    for s in (1, 4, 5, 64):
        x = rng.standard_normal((s, 768)).astype(dt)
        y = split[fn](x, wh)
        if s > 4:
            ref = x.astype(np.float64) @ wh.astype(np.float64)
            check(f"split_{fn}{s}", y, ref.astype(dt).astype(np.float64), tol)
        st = split.cuda_call_stats
        out["split_half"][f"{fn}{s}"] = [st["launches"], st["library_calls"], str(y.dtype)]

# relax.quantized_matmul: M <= 64 the generated kernels, above: cuBLAS on the stored half rows
# (numerics: the fake computes them) or on the scratch buffer the decoding kernel fills (not run
# by the fake: the host path, the variant, the allocations)
quant = relax_mlir.compile(QUANT, target="cuda", options={"cublas": "auto"})
out["quant"] = {}
for fn, dt in (("qf16", np.float16), ("qbf16", ml_dtypes.bfloat16)):
    wq = (rng.standard_normal((48, 64)) * 0.1).astype(dt)
    raw = wq.view(np.int8).reshape(48, 128)
    for s in (1, 64, 65, 200, 65):
        x = rng.standard_normal((s, 64)).astype(dt)
        before = count("fake_allocs")
        y = quant[fn](x, raw)
        st = quant.cuda_call_stats
        if s > 64:
            ref = x.astype(np.float64) @ wq.astype(np.float64).T
            check(f"{fn}_{s}", y, ref.astype(dt).astype(np.float64), 2e-2 if dt == np.float16 else 6e-2)
        out["quant"].setdefault(fn, []).append([s, st["launches"], st["library_calls"], count("fake_allocs") - before,
                                                 list((ctypes.c_long * 6).in_dll(fcb, "fake_cublas_dims"))])
for fn, rb in (("qh", 128), ("q8", 68), ("q40", 36), ("q41", 40), ("q40h", 36)):
    raw = rng.integers(-128, 128, (48, rb)).astype(np.int8)
    for s in (1, 64, 65, 200, 65):
        x = rng.standard_normal((s, 64)).astype(np.float16 if fn == "q40h" else np.float32)
        before = count("fake_allocs")
        quant[fn](x, raw)
        st = quant.cuda_call_stats
        out["quant"].setdefault(fn, []).append([s, st["launches"], st["library_calls"], count("fake_allocs") - before,
                                                 list((ctypes.c_long * 6).in_dll(fcb, "fake_cublas_dims"))])
raw = rng.integers(-128, 128, (48, 68)).astype(np.int8)
for s in (64, 65):
    quant["qadd"](rng.standard_normal((s, 64)).astype(np.float32), raw, np.zeros((s, 48), np.float32))
    st = quant.cuda_call_stats
    out["quant"].setdefault("qadd", []).append([s, st["launches"], st["library_calls"]])

# cuBLASLt epilogues (the split's library variant): numerics above 4 rows, one library call and
# no other launch; the generated kernels at M <= 4
epi = relax_mlir.compile(EPILOGUES, target="cuda", options={"cublas": "auto"})
out["epilogues"] = {}
we = (rng.standard_normal((768, 768)) * 0.05).astype(np.float32)
be = rng.standard_normal(768).astype(np.float32)
for s in (2, 5, 64):
    x = rng.standard_normal((s, 768)).astype(np.float32)
    r = rng.standard_normal((s, 768)).astype(np.float32)
    prod = x.astype(np.float64) @ we
    for fn, args, want in (("bias", (be,), prod + be), ("biasrelu", (be,), np.maximum(prod + be, 0)),
                           ("relu", (), np.maximum(prod, 0)), ("res", (r,), prod + r), ("rres", (r,), r + prod)):
        before = count("fake_cublaslt_calls")
        y = epi[fn](x, we, *args)
        st = epi.cuda_call_stats
        if s > 4:
            check(f"epi_{fn}{s}", y, want, 1e-3)
        out["epilogues"][f"{fn}{s}"] = [st["launches"], st["library_calls"], count("fake_cublaslt_calls") - before,
                                        count("fake_cublaslt_epilogue") if s > 4 else 0,
                                        count("fake_cublaslt_beta") if s > 4 else 0]
    xb = rng.standard_normal((s, 768)).astype(ml_dtypes.bfloat16)
    wb = we.astype(ml_dtypes.bfloat16)
    y = epi["bfrelu"](xb, wb)
    if s > 4:
        ref = np.maximum(xb.astype(np.float64) @ wb.astype(np.float64), 0).astype(ml_dtypes.bfloat16)
        check(f"epi_bfrelu{s}", y, ref.astype(np.float64), 0.26)
    st = epi.cuda_call_stats
    out["epilogues"][f"bfrelu{s}"] = [st["launches"], st["library_calls"], str(y.dtype)]

# no library: auto is off, the generated kernels run
os.environ["RELAX_MLIR_CUBLAS_LIBRARY"] = "/nonexistent/libcublas.so.12"
plain = relax_mlir.compile(MATMULS, target="cuda")
before = count("fake_cublas_calls")
plain["mm"](rng.standard_normal((37, 96), dtype=np.float32), w)
out["absent"] = [plain.cuda_call_stats["launches"], plain.cuda_call_stats["library_calls"],
                 count("fake_cublas_calls") - before]
try:
    relax_mlir.compile(MATMULS, target="cuda", options={"cublas": "on"})
    out["absent_on"] = None
except Exception as e:          # the shim was loaded before: on still works in this process
    out["absent_on"] = [type(e).__name__, str(e)]
print("FAKE-RUN " + json.dumps(out))
'''


def _build_fake_cublas(out_dir: str) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for the fake cuBLAS")
    path = os.path.join(out_dir, "libcublas.so.12")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", path, FAKE_CUBLAS, "-Wl,-soname,libcublas.so.12",
                    f"-L{out_dir}", "-l:libcuda.so.1", "-Wl,-rpath," + out_dir], check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def library_run(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("fakecublas"))
    from test_cuda import _build_fake
    _build_fake(d, soname="libcuda.so.1")
    lib = _build_fake_cublas(d)
    return run_fake(d, FAKE_LIBRARY_RUN, lib, MATMULS, SPLIT, QUANT, EPILOGUES)


def test_fake_cublas_numerics_through_one_executable(library_run):
    errors = library_run["errors"]
    want = {"mm1": [1, 40], "mm5": [5, 40], "mm37": [37, 40], "mm300": [300, 40], "mm37_again": [37, 40],
            "mm37_replay": [37, 40],
            "bmm1x1x1x1": [1, 1, 1], "bmm3x7x5x9": [3, 7, 9], "bmm2x33x64x17": [2, 33, 17],
            "b32_2x3x5": [2, 3, 5], "b32_4x1x33": [4, 1, 33], "mm_direct": [9, 40],
            "split5": [5, 768], "split64": [64, 768], "split_h5": [5, 768], "split_h64": [64, 768],
            "split_bf5": [5, 768], "split_bf64": [64, 768], "split_b5": [3, 5, 64], "split_b40": [3, 40, 64]}
    want.update({f"{fn}_{s}": [s, 48] for fn in ("qf16", "qbf16") for s in (65, 200)})
    want.update({f"epi_{fn}{s}": [s, 768] for fn in ("bias", "biasrelu", "relu", "res", "rres", "bfrelu")
                 for s in (5, 64)})
    want.update({f"h{o}_{n}": [n, 48] for o in (16, 32) for n in (1, 7, 70)})
    want.update({f"{f}_{n}": [n, 48] for f in ("bf16", "bf32", "bf16r") for n in (1, 5, 37, 300)})
    assert {k: v[0] for k, v in errors.items()} == want
    halves = {f"h16_{n}": "float16" for n in (1, 7, 70)}
    halves.update({"split_h5": "float16", "split_h64": "float16", "split_bf5": "bfloat16", "split_bf64": "bfloat16"})
    halves.update({f"q{f}_{s}": t for f, t in (("f16", "float16"), ("bf16", "bfloat16")) for s in (65, 200)})
    halves.update({f"epi_bfrelu{s}": "bfloat16" for s in (5, 64)})
    halves.update({f"{f}_{n}": "bfloat16" for f in ("bf16", "bf16r") for n in (1, 5, 37, 300)})
    assert {k: v[1] for k, v in errors.items() if v[1] != "float32"} == halves
    bad = {k: v for k, v in errors.items() if not v[2] <= v[3]}
    assert bad == {}


def test_fake_cublas_row_major_as_column_major(library_run):
    # C (m x n) = A B row-major is C^T = B^T A^T column-major: cuBLAS's m is our n
    # (m, n, k, batch, transa, transb): the last batched product (2, 33, 64, 17)
    assert library_run["dims_bmm"] == [17, 33, 64, 2, 0, 0]
    # 3-D x 2-D with contiguous rows: one GEMM of batch*M rows (4 x 1 -> 4)
    assert library_run["dims_b32"] == [33, 4, 24, 1, 0, 0]


def test_fake_cublas_in_graph_capture_and_replay(library_run):
    st = library_run["stats"]
    # one library call per call, counted among the launches; captured into the call's graph
    first = {"launches": 1, "library_calls": 1, "graph_launches": 1, "syncs": 1, "copies_in": 2, "copies_out": 1}
    for n in (1, 5, 37, 300):
        assert {k: st[f"mm{n}"][k] for k in first} == first
    # the first call instantiates, later sizes update the same executable in place
    assert [st[f"mm{n}"]["graph_builds"] for n in (1, 5, 37, 300)] == [1, 0, 0, 0]
    assert [st[f"mm{n}"]["graph_updates"] for n in (1, 5, 37, 300)] == [0, 1, 1, 1]
    # the same shapes again: replayed (the host code and the shim do not run), the product
    # recomputed by the graph's node on the new data (numerics above)
    assert st["mm37_replay"]["replays"] == 1 and st["mm37_replay"]["library_calls"] == 1
    # RELAX_MLIR_CUDA_GRAPHS=0: cuBLAS issues on the stream directly
    assert st["mm_direct"]["graph_launches"] == 0 and st["mm_direct"]["library_calls"] == 1
    assert library_run["direct"] == 1
    # one handle per process; the session's workspace is set (cuBLAS's default pool would
    # allocate during the capture): 32 MiB on the fake sm_90 device
    assert library_run["workspace"] == 32 << 20
    totals = library_run["totals"]
    # the replays (mm37_replay, each bf16r call: the shapes of the bf16 call before it) run the
    # captured product without calling cuBLAS again
    assert totals["handles"] == 1 and totals["calls"] == 25 and totals["runs"] == 30


def test_fake_cublas_bf16_rounds_to_nearest_even(library_run):
    # [results above 256 (which bf16 must round), bits that differ from ml_dtypes' rounding]
    exact = library_run["bf16_exact"]
    # (seeded data: 8 of 48, 47 of 240, 351 of 1776, 2518 of 14400 results round)
    assert exact == {"1": [8, 0], "5": [47, 0], "37": [351, 0], "300": [2518, 0]}


def test_fake_cublas_split_by_rows(library_run):
    # M <= 4: the generated kernel (the GEMV route), no library call; M > 4: cuBLAS alone
    assert library_run["split"] == {"1": [1, 0], "4": [1, 0], "5": [1, 1], "64": [1, 1]}
    # f16 / bf16: the same, and above 4 rows cuBLAS alone (its half output: no conversion launch)
    half = {f"{fn}{s}": [1, int(s > 4), dt] for fn, dt in (("h", "float16"), ("bf", "bfloat16")) for s in (1, 4, 5, 64)}
    assert library_run["split_half"] == half
    # batched: M <= 4 the generated kernel; above one strided-batched GEMM (cuBLAS's m = N, n = M,
    # batch 3)
    assert library_run["split_batched"] == {"3": [1, 0, []], "4": [1, 0, []], "5": [1, 1, [64, 5, 96, 3, 0, 0]],
                                            "40": [1, 1, [64, 40, 96, 3, 0, 0]]}


def test_fake_cublas_quantized_matmul_by_rows(library_run):
    # [M, launches, library calls, driver allocations, cuBLAS's (m, n, k, batch, transa, transb)
    # when it was called]: M <= 64 the generated kernel; above, cuBLAS with the weight (N, K)
    # transposed (its first operand: transa), after the decoding kernel where the weight is not
    # stored in x's type (two launches). Allocations: the session's arena grows with the first
    # calls (M = 1, then 64 and 200 for the f16 one, the first function called); the scratch
    # buffer comes from it, so a call after warm-up allocates nothing.
    got = {fn: [r[:4] + ([r[4]] if r[2] else []) for r in rows] for fn, rows in library_run["quant"].items()
           if fn != "qadd"}
    # a fused residual add: M = 64 one launch (the generated kernel, the add at its store);
    # M = 65 the decoding kernel, then cuBLASLt adding the residual (beta = 1): two launches
    assert library_run["quant"]["qadd"] == [[64, 1, 0], [65, 2, 1]]

    def rows(launches, allocs=(0, 0, 0)):
        return [[1, 1, 0, allocs[0]], [64, 1, 0, allocs[1]], [65, launches, 1, 0, [48, 65, 64, 1, 1, 0]],
                [200, launches, 1, allocs[2], [48, 200, 64, 1, 1, 0]], [65, launches, 1, 0, [48, 65, 64, 1, 1, 0]]]

    want = {"qf16": rows(1, (1, 1, 1)), "qbf16": rows(1)}
    want.update({fn: rows(2) for fn in ("qh", "q8", "q40", "q41", "q40h")})
    assert got == want


def test_fake_cublas_lt_epilogues(library_run):
    # [launches, library calls, cuBLASLt calls, its epilogue (CUBLASLT_EPILOGUE_*), beta x 1000]:
    # M = 2 the generated kernel (epilogue at its store); above 4 rows one cuBLASLt call doing the
    # epilogue (BIAS 4, RELU_BIAS 6, RELU 2; the residual add as DEFAULT 1 with beta = 1), no
    # other launch; numerics in test_fake_cublas_numerics_through_one_executable
    want = {}
    for fn, code in (("bias", 4), ("biasrelu", 6), ("relu", 2), ("res", 1), ("rres", 1)):
        want[f"{fn}2"] = [1, 0, 0, 0, 0]
        for s in (5, 64):
            want[f"{fn}{s}"] = [1, 1, 1, code, 1000 if fn in ("res", "rres") else 0]
    want.update({"bfrelu2": [1, 0, "bfloat16"], "bfrelu5": [1, 1, "bfloat16"], "bfrelu64": [1, 1, "bfloat16"]})
    assert library_run["epilogues"] == want


def test_fake_cublas_absent_library_keeps_generated_kernels(library_run):
    # 37 x 96 x 40: the generated GEMM route, one launch; cuBLAS not called
    assert library_run["absent"] == [1, 0, 0]


# -- a real GPU ---------------------------------------------------------------------------------

@pytest.mark.skipif(not HAVE_GPU, reason=f"no CUDA device: {GPU_WHY}")
def test_cuda_cublas_numerics():
    if cublas.find() is None:
        pytest.skip("no cuBLAS library (pip install nvidia-cublas-cu12)")
    exe = relax_mlir.compile(MATMULS, target="cuda", options={"cublas": "on"})
    rng = np.random.default_rng(1)
    w = rng.standard_normal((96, 40), dtype=np.float32)
    for n in (1, 5, 37, 300):
        x = rng.standard_normal((n, 96), dtype=np.float32)
        np.testing.assert_allclose(exe["mm"](x, w), x @ w, rtol=1e-4, atol=1e-4)
        assert exe.cuda_call_stats["library_calls"] == 1
    for b, m, k, n in ((1, 1, 1, 1), (3, 7, 5, 9), (2, 33, 64, 17)):
        a = rng.standard_normal((b, m, k), dtype=np.float32)
        c = rng.standard_normal((b, k, n), dtype=np.float32)
        np.testing.assert_allclose(exe["bmm"](a, c), a @ c, rtol=1e-4, atol=1e-4)
    hw = (rng.standard_normal((64, 48)) * 0.5).astype(np.float16)
    for n in (1, 7, 70):
        hx = (rng.standard_normal((n, 64)) * 0.5).astype(np.float16)
        ref = hx.astype(np.float32) @ hw.astype(np.float32)
        np.testing.assert_allclose(exe["h32"](hx, hw), ref, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(exe["h16"](hx, hw).astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    split = relax_mlir.compile(SPLIT, target="cuda", options={"cublas": "auto"})
    ws = rng.standard_normal((768, 768), dtype=np.float32)
    for s in (1, 4, 5, 64):
        x = rng.standard_normal((s, 768), dtype=np.float32)
        np.testing.assert_allclose(split["main"](x, ws), x @ ws, rtol=1e-3, atol=1e-3)
        assert split.cuda_call_stats["library_calls"] == (1 if s > 4 else 0)
    for s in (3, 40):
        a = rng.standard_normal((3, s, 96)).astype(np.float32)
        wb = rng.standard_normal((3, 96, 64)).astype(np.float32)
        np.testing.assert_allclose(split["bsplit"](a, wb), a @ wb, rtol=1e-3, atol=1e-3)
        assert split.cuda_call_stats["library_calls"] == (1 if s > 4 else 0)
    import ml_dtypes
    for fn, dt, tol in (("h", np.float16, 2e-2), ("bf", ml_dtypes.bfloat16, 0.26)):
        wh = (rng.standard_normal((768, 768)) * 0.05).astype(dt)
        for s in (1, 4, 5, 64):
            x = rng.standard_normal((s, 768)).astype(dt)
            ref = x.astype(np.float32) @ wh.astype(np.float32)
            np.testing.assert_allclose(split[fn](x, wh).astype(np.float32), ref, rtol=tol, atol=tol)
            assert split.cuda_call_stats["library_calls"] == (1 if s > 4 else 0)
    epi = relax_mlir.compile(EPILOGUES, target="cuda", options={"cublas": "auto"})
    we = (rng.standard_normal((768, 768)) * 0.05).astype(np.float32)
    be = rng.standard_normal(768).astype(np.float32)
    for s in (2, 5, 64):
        x = rng.standard_normal((s, 768)).astype(np.float32)
        r = rng.standard_normal((s, 768)).astype(np.float32)
        prod = x @ we
        np.testing.assert_allclose(epi["biasrelu"](x, we, be), np.maximum(prod + be, 0), rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(epi["rres"](x, we, r), prod + r, rtol=1e-3, atol=1e-3)
        assert epi.cuda_call_stats["library_calls"] == (1 if s > 4 else 0)
    quant = relax_mlir.compile(QUANT, target="cuda", options={"cublas": "auto"})
    wq = (rng.standard_normal((48, 64)) * 0.1).astype(np.float16)
    for s in (1, 64, 65, 200):
        x = rng.standard_normal((s, 64)).astype(np.float16)
        ref = x.astype(np.float32) @ wq.astype(np.float32).T
        np.testing.assert_allclose(quant["qf16"](x, wq.view(np.int8).reshape(48, 128)).astype(np.float32), ref,
                                   rtol=2e-2, atol=2e-2)
        xf = x.astype(np.float32)
        np.testing.assert_allclose(quant["qh"](xf, wq.view(np.int8).reshape(48, 128)), ref, rtol=1e-3, atol=1e-3)
        assert quant.cuda_call_stats["library_calls"] == (1 if s > 64 else 0)
    gguf = pytest.importorskip("gguf")
    raw = gguf.quants.quantize(rng.standard_normal((48, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    deq = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0).reshape(48, 64)
    for s in (64, 65, 200):
        x = rng.standard_normal((s, 64)).astype(np.float32)
        r = rng.standard_normal((s, 48)).astype(np.float32)
        np.testing.assert_allclose(quant["q8"](x, raw.view(np.int8).reshape(48, 68)), x @ deq.T, rtol=1e-3, atol=1e-3)
        np.testing.assert_allclose(quant["qadd"](x, raw.view(np.int8).reshape(48, 68), r), x @ deq.T + r,
                                   rtol=1e-3, atol=1e-3)
    bw = rng.integers(-8, 9, (64, 48)).astype(ml_dtypes.bfloat16)
    for n in (1, 5, 37, 300):
        bx = rng.integers(-8, 9, (n, 64)).astype(ml_dtypes.bfloat16)
        ref = (bx.astype(np.float64) @ bw.astype(np.float64))
        np.testing.assert_array_equal(exe["bf16"](bx, bw).view(np.uint16), ref.astype(ml_dtypes.bfloat16).view(np.uint16))
        np.testing.assert_array_equal(exe["bf32"](bx, bw), ref.astype(np.float32))

