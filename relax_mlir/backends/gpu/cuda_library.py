"""relax-cuda-dispatch-library: the cuda target's matmuls that go to cuBLAS.

The cuda side of the library dispatch (the cpu side is relax-dispatch-library). A
``relax.matmul`` of f32 (f32 out), f16 or bf16 (the same or f32 out, f32 accumulation) with ranks
2 x 2, 3 x 3 (the same batch) or 3 x 2 becomes ``relax.call_dps_library`` of
``relax_cublas_matmul_<ra><rb>_<in>[_<out>]`` (the runtime library ``relax_cublas``:
:mod:`relax_mlir.runtime.cuda.cublas`, a C entry point calling ``cublasGemmEx`` /
``cublasGemmStridedBatchedEx`` on the call's stream, captured into its CUDA graph), or is
marked ``relax.dispatch_split`` so that each call picks by its row count M: the generated
routes (the GEMV) for M <= ``gemv-rows``, cuBLAS above (relax-cuda-split-library splits the
bufferized kernel: :mod:`.cuda_library_split`).

Policy ``auto`` (provisional: no GPU has measured it yet; ``bench/bench_gpu.py --cublas``
measures the columns that should replace it, docs/gpu.md):

* a static M: cuBLAS when M > ``gemv-rows`` (4: the decode GEMV stays generated) and the
  work batch*M*N*K is at least ``min-flops`` (2^21: below it one kernel launch of
  ours costs what cuBLAS's would and its heuristics buy nothing);
* a symbolic M of a 2-D or batched (3-D x 3-D) matmul (f32, f16, bf16) whose range
  (``relax.upper_bounds``) goes beyond ``gemv-rows``: the per-call split (when
  batch*N*K*(gemv-rows+1) reaches ``min-flops``, or one of them is symbolic); an upper bound <=
  ``gemv-rows``: generated;
* a symbolic M of a 3-D x 2-D matmul stays generated code (its kernel is a generic, not a
  linalg matmul the split's library variant takes).

A ``relax.quantized_matmul`` (x 2-D f32 / f16 / bf16, w the (N, K) rows of a format of
:data:`QUANT_FORMATS`, activations f32) whose M can exceed ``quant-rows`` (provisional: 64; the
generated quantized GEMM of quant_gemm.py serves 16 rows and up) is marked for the split too,
with ``generated_m = [[1, quant-rows]]`` (policy ``on``: ``[[1, 0]]``, cuBLAS for every M):
above it relax-cuda-split-library's library variant decodes the weight into a scratch buffer in
x's type (or, an f16 / bf16 weight with x of that type, reads it as stored) and calls cuBLAS
with the weight transposed (``relax_cublas_matmul_22t_*`` / ``22w_*``).

Policy ``on`` sends every supported matmul to cuBLAS (no split, any M); ``off`` none. The
cuda pipeline runs this pass only when a cuBLAS library was found (``cublas`` option /
``RELAX_MLIR_CUBLAS``), so a machine without one compiles exactly as before.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dialects._core import create
from ...ops.registry import RelaxError, read_attrs
from ...runtime.cuda_launch import LIBRARY_DTYPES as DTYPES, LIBRARY_NAME as LIBRARY, library_callee as callee
from ...runtime.cuda import cublas as _cublas  # noqa: F401 (registers the relax_cublas runtime library)
from ...runtime.libraries import request
from ...shapes import Dim, Truth, prove_equal, read_tensor_type
from ...transforms.dispatch_split import SPLIT_ATTR
from ...transforms.graph import body_ops, graph_functions, relax_opdef, upper_bounds
from ...transforms.registry import Option, emit_error, register_pass
from . import quant_gemv

POLICIES = ("auto", "on", "off")
#: the provisional rule's defaults (see the module docstring)
GEMV_ROWS = 4
MIN_FLOPS = 1 << 21
QUANT_ROWS = 64
#: weight formats of relax.quantized_matmul the library variant decodes: those the generated
#: quantized kernels take below ``quant-rows`` (the split's other side)
QUANT_FORMATS = quant_gemv.FORMATS


def _supported(op: ir.Operation) -> Optional[tuple[str, str, str]]:
    """(ranks, input dtype, output dtype) of a matmul cuBLAS takes, else None."""
    try:
        a, b = (read_tensor_type(v.type) for v in op.operands)
        out = read_tensor_type(op.results[0].type)
        read_attrs(relax_opdef(op), op)
    except (RelaxError, ValueError):
        return None
    if a.dtype != b.dtype or (a.dtype, out.dtype) not in DTYPES:
        return None
    ranks = f"{a.rank}{b.rank}"
    if ranks == "33":
        if prove_equal(Dim.of(a.shape[0]), Dim.of(b.shape[0])) is not Truth.TRUE:
            return None     # a broadcast batch (1 against B): the generated kernel
    elif ranks not in ("22", "32"):
        return None
    return ranks, a.dtype, out.dtype


def decide(op: ir.Operation, ranks: str, din: str, dout: str, bounds: dict[str, int], policy: str,
           gemv_rows: int, min_flops: int):
    """True: cuBLAS; False: generated; "split": per call by M (see the module docstring)."""
    if policy == "on":
        return True
    a = read_tensor_type(op.operands[0].type)
    out = read_tensor_type(op.results[0].type)
    m, k, n = Dim.of(a.shape[-2]), Dim.of(a.shape[-1]), Dim.of(out.shape[-1])
    batch = Dim.of(out.shape[0]) if ranks != "22" else Dim.of(1)
    if ranks == "32":       # A's batch folds into M
        m, batch = m * Dim.of(a.shape[0]), Dim.of(1)
    if m.is_static:
        work = batch * m * n * k
        big = (not work.is_static) or work.value >= min_flops
        return m.value > gemv_rows and big
    upper = m.evaluate(bounds) if m.symbols <= set(bounds) else None
    if upper is not None and upper <= gemv_rows:
        return False
    if ranks == "32":
        return False
    nk = batch * n * k
    return "split" if (not nk.is_static or nk.value * (gemv_rows + 1) >= min_flops) else False


def _split_attr(name: str, gemv_rows: int) -> ir.Attribute:
    i64 = ir.IntegerType.get_signless(64)
    return ir.DictAttr.get({
        "callee": ir.StringAttr.get(name), "library": ir.StringAttr.get(LIBRARY),
        "generated_m": ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 1),
                                                           ir.IntegerAttr.get(i64, gemv_rows)])])})


def quantized_split(op: ir.Operation, bounds: dict[str, int], policy: str, quant_rows: int) -> Optional[tuple[str, int]]:
    """(callee, generated rows) of a ``relax.quantized_matmul`` the library variant takes (see
    the module docstring), else None."""
    try:
        x = read_tensor_type(op.operands[0].type)
        attrs = read_attrs(relax_opdef(op), op)
    except (RelaxError, ValueError):
        return None
    if x.rank != 2 or attrs["format"] not in QUANT_FORMATS or attrs["activations"] != "f32" \
            or x.dtype not in ("f32", "f16", "bf16"):
        return None
    form = "22w" if attrs["format"] == x.dtype else "22t"
    name = callee(form, x.dtype, x.dtype)
    if policy == "on":
        return name, 0
    m = Dim.of(x.shape[0])
    upper = m.value if m.is_static else (m.evaluate(bounds) if m.symbols <= set(bounds) else None)
    if upper is not None and upper <= quant_rows:
        return None
    return name, quant_rows


@register_pass("relax-cuda-dispatch-library",
               "cuda: matmuls to cuBLAS (relax.call_dps_library of relax_cublas_matmul_*), or marked "
               "for a per-call split with the generated GEMV by M.",
               options=[Option("policy", str, "auto", "auto (the provisional rule, a symbolic M split per "
                                                      "call), on (every supported matmul), off"),
                        Option("gemv-rows", int, GEMV_ROWS, "M up to which the generated GEMV stays"),
                        Option("min-flops", int, MIN_FLOPS, "auto: dispatch from this batch*M*N*K on"),
                        Option("quant-rows", int, QUANT_ROWS, "auto: M up to which a quantized_matmul stays "
                                                              "generated (above: weight decoded, cuBLAS)")])
def cuda_dispatch_library(module: ir.Operation, opts) -> None:
    if opts.policy not in POLICIES:
        emit_error(module, f"policy must be one of {', '.join(POLICIES)}, got '{opts.policy}'")
        return
    if opts.policy == "off":
        return
    for f in graph_functions(module):
        bounds = upper_bounds(f)
        for op in body_ops(f):
            if op.name == "relax.quantized_matmul":
                q = quantized_split(op, bounds, opts.policy, opts.quant_rows)
                if q is not None:
                    op.attributes[SPLIT_ATTR] = _split_attr(*q)
                    request(module, LIBRARY)
                continue
            if op.name != "relax.matmul":
                continue
            found = _supported(op)
            if found is None:
                continue
            ranks, din, dout = found
            choice = decide(op, ranks, din, dout, bounds, opts.policy, opts.gemv_rows, opts.min_flops)
            name = callee(ranks, din, dout)
            if choice == "split":
                op.attributes[SPLIT_ATTR] = _split_attr(name, opts.gemv_rows)
                request(module, LIBRARY)
            elif choice:
                call = create("call_dps_library", list(op.operands), [op.results[0].type],
                              {"callee": ir.StringAttr.get(name)}, loc=op.location, ip=ir.InsertionPoint(op))
                op.results[0].replace_all_uses_with(call.results[0])
                op.erase()
                request(module, LIBRARY)
