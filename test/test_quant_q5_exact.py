"""The exact q5_0 / q5_1 / q5_k decode GEMVs on integer digits of x (quant_kernels.c: exd_*,
q5ke; docs/quantization.md, "Numerics"): every 32-chunk of x is scaled by a power of two
2^(16 - e) (e the least with max|x| <= 127 2^e), rounded to an integer and split into three
signed base-256 digits, so the integer dot products are exact and the only new error is x's
rounding, |x - X 2^(e - 16)| <= 2^(e - 17) per element. Checked against gguf's dequantize and a
float64 product with that bound (plus an f32 accumulation term), at M = 1 and odd M, odd N,
K odd multiples of the block, on 1 and 2 threads, several sizes through one library and one
compiled executable; non-finite x falls back to the f32 kernels (NaN / Inf propagate)."""

from __future__ import annotations

import ctypes
import zlib

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as Q  # noqa: E402

import relax_mlir  # noqa: E402
from relax_mlir.ops.quant import row_bytes  # noqa: E402
from relax_mlir.runtime import libraries  # noqa: E402
from test_quant_kernels import call, dequant, random_weights, threaded  # noqa: E402

FORMATS = ("q5_0", "q5_1", "q5_k")
BLOCK = {"q5_0": 32, "q5_1": 32, "q5_k": 256}


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(libraries.build_blas_shim()[0])
    lib.provider = libraries.blas_provider()
    lib.relax_quant_set_exact_int.argtypes = [ctypes.c_int]
    lib.relax_quant_set_fork_work.argtypes = [ctypes.c_double]
    lib.relax_blas_set_num_threads.argtypes = [ctypes.c_int]
    if lib.relax_quant_isa() < 2:
        pytest.skip("the integer-digit GEMVs are AVX-512 VNNI kernels; this CPU takes the f32 ones")
    yield lib
    lib.relax_quant_set_exact_int(1)
    lib.relax_quant_set_fork_work(262144.0)
    lib.relax_blas_set_num_threads(2)


def digit_bound(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """sum over 32-chunks of 2^(e_c - 17) sum_c |w|: the digits' rounding, bounded."""
    m, k = x.shape
    amax = np.abs(x.astype(np.float64)).reshape(m, k // 32, 32).max(axis=2)
    e = np.ceil(np.log2(np.maximum(amax, 1e-300) / 127.0))
    e = np.where(amax <= 127.0 * np.exp2(e - 1), e - 1, e)   # the least e with amax <= 127 2^e
    step = np.where(amax > 0, np.exp2(np.maximum(e, -100) - 17), 0.0)
    return step @ np.abs(w).reshape(w.shape[0], k // 32, 32).sum(axis=2).T


def check(lib, fmt, x, raw, threads=1):
    lib.relax_blas_set_num_threads(threads)
    lib.relax_quant_set_fork_work(262144.0 if threads == 1 else 0.0)
    out = np.full((x.shape[0], raw.shape[0]), np.nan, np.float32)
    call(lib, f"relax_qmatmul_{fmt}", x, raw, out)
    w = dequant(fmt, raw)
    ref = x.astype(np.float64) @ w.T
    scale = np.abs(x).astype(np.float64) @ np.abs(w).T
    tol = digit_bound(x, w) * 1.0001 + 4e-6 * scale   # + the f32 conversion and accumulation
    err = np.abs(out - ref)
    assert np.all(err <= tol), (fmt, x.shape, raw.shape, float((err / tol).max()))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_digits_gemv_matches_dequantized_reference(lib, fmt):
    rng = np.random.default_rng(zlib.crc32(f"q5d-{fmt}".encode()))
    bs = BLOCK[fmt]
    for k in (bs, 3 * bs, 5 * bs) + ((19 * bs, 37 * bs) if bs == 32 else ()):
        for n in (1, 7, 193):
            raw = random_weights(fmt, n, k, rng)
            for m in (1, 3):
                x = rng.standard_normal((m, k)).astype(np.float32)
                outs = []
                for threads in (1, 2):
                    outs.append(check(lib, fmt, x, raw, threads))
                    if threads == 2 and n >= 8 and threaded(lib.provider):
                        assert lib.relax_quant_last_threads() == 2
                np.testing.assert_array_equal(outs[0], outs[1])   # rows split, each row as on one thread


@pytest.mark.parametrize("fmt", FORMATS)
def test_digits_gemv_per_chunk_magnitudes(lib, fmt):
    """Chunks of very different size (1e-30 .. 1e30, zeros, subnormals, one element far above
    the rest) are each scaled on their own: the bound holds chunk by chunk."""
    rng = np.random.default_rng(zlib.crc32(f"q5m-{fmt}".encode()))
    k = 2 * BLOCK[fmt] if fmt == "q5_k" else 8 * 32
    raw = random_weights(fmt, 65, k, rng)
    x = rng.standard_normal((1, k)).astype(np.float32)
    scales = np.array([1e-30, 1.0, 0.0, 1e30, 1e-42, 3e-3, 1e12, 1.0][: k // 32], np.float64)
    x = (x.reshape(1, -1, 32) * np.resize(scales, k // 32)[None, :, None]).reshape(1, k).astype(np.float32)
    x[0, 40] = 1e4 * max(1.0, abs(float(x[0, 41])))   # one large element in a unit chunk
    with np.errstate(over="ignore", invalid="ignore"):
        check(lib, fmt, x, raw)


@pytest.mark.parametrize("fmt", FORMATS)
def test_digits_and_f32_kernels_agree(lib, fmt):
    """The integer route and the f32 kernels it replaced (relax_quant_set_exact_int(0)) are both
    within the bound of each other: the same products, different roundings."""
    rng = np.random.default_rng(zlib.crc32(f"q5ab-{fmt}".encode()))
    k = 3 * BLOCK[fmt] if fmt == "q5_k" else 608
    raw = random_weights(fmt, 97, k, rng)
    x = rng.standard_normal((1, k)).astype(np.float32)
    outs = []
    for on in (1, 0):
        lib.relax_quant_set_exact_int(on)
        outs.append(check(lib, fmt, x, raw))
    lib.relax_quant_set_exact_int(1)
    w = dequant(fmt, raw)
    bound = 2 * digit_bound(x, w) + 8e-6 * (np.abs(x).astype(np.float64) @ np.abs(w).T)
    assert np.all(np.abs(outs[0] - outs[1]) <= bound)
    assert not np.array_equal(outs[0], outs[1])   # two different kernels ran


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_x_propagates(lib, fmt, bad):
    rng = np.random.default_rng(5)
    k = BLOCK[fmt] * (1 if fmt == "q5_k" else 4)
    raw = random_weights(fmt, 9, k, rng)
    x = rng.standard_normal((1, k)).astype(np.float32)
    x[0, k // 2 + 1] = bad
    out = np.zeros((1, 9), np.float32)
    call(lib, f"relax_qmatmul_{fmt}", x, raw, out)
    # every output is NaN or infinite, as the reference's (the f32 kernels split w into a v + b,
    # so an infinity may come out as NaN where the reference has inf: not the digits' garbage)
    assert not np.any(np.isfinite(out)), out


def test_one_executable_several_sizes_and_threads():
    """relax.quantized_matmul in q5_0 and q5_k (odd N, K an odd multiple of the block) through ONE
    compiled executable: M = 1, 3, 1 on 1 and 2 threads (M N K above the fork threshold)."""
    specs = {"q5_0": (2049, 5 * 32), "q5_k": (385, 3 * 256)}
    args, decls, body, rets = [], [], [], []
    for i, (fmt, (n, k)) in enumerate(specs.items()):
        X, W = f'tensor<?x{k}xf32, #relax.shape<["m", {k}]>>', f"tensor<{n}x{row_bytes(fmt, k)}xi8>"
        Y = f'tensor<?x{n}xf32, #relax.shape<["m", {n}]>>'
        decls += [f"%x{i}: {X}", f"%w{i}: {W}"]
        body.append(f'  %y{i} = "relax.quantized_matmul"(%x{i}, %w{i}) {{format = "{fmt}", activations = "f32"}}'
                    f" : ({X}, {W}) -> {Y}")
        rets.append((f"%y{i}", Y))
    src = (f"func.func @main({', '.join(decls)}) -> ({', '.join(t for _, t in rets)}) attributes {{relax.function}} {{\n"
           + "\n".join(body) + f"\n  return {', '.join(v for v, _ in rets)} : {', '.join(t for _, t in rets)}\n}}")
    exe = relax_mlir.compile(src)
    rng = np.random.default_rng(11)
    raws = {fmt: random_weights(fmt, n, k, rng) for fmt, (n, k) in specs.items()}
    try:
        for threads in (1, 2):
            exe.num_threads = threads
            for m in (1, 3, 1):
                xs = {fmt: rng.standard_normal((m, k)).astype(np.float32) for fmt, (_, k) in specs.items()}
                call_args = []
                for fmt in specs:
                    call_args += [xs[fmt], raws[fmt].view(np.int8)]
                outs = exe(*call_args)
                for fmt, y in zip(specs, outs):
                    w = dequant(fmt, raws[fmt])
                    ref = xs[fmt].astype(np.float64) @ w.T
                    tol = digit_bound(xs[fmt], w) * 1.0001 + 4e-6 * (np.abs(xs[fmt]).astype(np.float64) @ np.abs(w).T)
                    assert np.all(np.abs(y - ref) <= tol), (fmt, m, threads)
    finally:
        exe.num_threads = None
