"""GPU kernels on lavapipe: the scheduled kernels (relax-gpu-tile-matmul,
relax-gpu-row-reductions, relax-gpu-vector-elementwise) against the naive parallel-loop
route, side by side with the cpu target, in one process.

    .venv/bin/python bench/bench_gpu.py            # all cases
    .venv/bin/python bench/bench_gpu.py --quick    # fewer repetitions
    python bench/bench_gpu.py --targets cuda,vulkan  # a machine with an NVIDIA GPU (+ PyTorch on CUDA)
    .venv/bin/python bench/bench_gpu.py --without-vector --no-naive   # with / without vector kernels

``--decode`` runs decode-sized GEMVs instead (one row of activations times a weight
matrix, f32 and f16, with a bias where a linear layer has one): the GPU rules' GEMV
(subgroup shuffles, 128-bit loads) against the same target without subgroup operations
(``relax_mlir.pipelines.gpu.SUBGROUP_OPS_DEFAULT = False``: a thread per output column,
the route before the GEMV) and PyTorch on CUDA; ``--gemv-configs 8x4,4x8`` adds variants with
other GEMV knobs (``schedule_config``: lanes along N x subgroups per workgroup). ``--quant``:
the same decode GEMVs on Q8_0 / Q4_0 / Q4_1 / f16 / bf16 weights (relax.quantized_matmul: the
quantized-GEMV rule against the generic kernel; PyTorch on the dequantized f32 weights; an f16 or
bf16 case also times the f32 GEMV of its shape, relax.matmul through the GEMV rule, in the same
rounds: the half-format GEMV reads half its bytes).
``--kquant``: one Q4_K / Q6_K (``--quant-formats``: also Q5_0, Q5_1, Q5_K) matmul at M = 1 and
128, K = N = 2048, through one executable: the run GEMV / GEMM tiles against the generic kernel.
``--cublas``: prefill-sized matmuls of the same config (M = 8 to 512 rows, f32, f16 and bf16,
each shape one executable for every M) on the cuda target without cuBLAS (``cublas=off``: the
generated kernels), with it for every matmul (``cublas=on``) and with the provisional rule
(``cublas=auto``: split per call by M, the GEMV up to 4 rows), then long prompts with quantized
weights (relax.quantized_matmul, M = 32 to 512 around the variant's 64 rows: the generated
quantized GEMM, or the weight decoded into a scratch buffer and cuBLAS) and f32 matmuls with a
fused bias + relu or residual add (cuBLASLt's epilogues), against PyTorch: the
measurement relax-cuda-dispatch-library's rules wait for.
``--prefill``: prefill-sized quantized matmuls (M = 32 and 128 rows of x, K = 768, N = 2048, each
format one executable for every M) on the quantized GEMM route (the default: the weight decoded
into workgroup memory once per 64 x 64 tile of C) against the GEMV for every row
(``schedule_config=qgemm=1``: M in its grid, the weight re-decoded per row), PyTorch on the
dequantized weights; then the prefill of 32 and 128 tokens of a random model with f16
projections (``small``; ``--prefill-model``) both ways.
``--host-path-only`` skips the numerics
and times one short round: a rehearsal of the device script against the fake CUDA driver
(bench/gpu_session.sh --fake), where kernels do not run.

Each program is compiled three times: ``vulkan`` with the schedules (the default),
``vulkan`` with ``relax_mlir.pipelines.gpu.SCHEDULES_DEFAULT = False`` (every kernel one
thread per output element, reductions serial in their thread: the route before issue
11), and ``cpu`` (transform-dialect schedules, library dispatch off: generated code only).
Every size runs through the same executable. Lavapipe runs the SPIR-V on the CPU
(llvmpipe: SIMD lanes as invocations, workgroups on its own threads), so these numbers
say how much the schedules cut the work, not what a real GPU would do. The machine is
shared: the load average is printed with each row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402
from relax_mlir.pipelines import gpu  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from bench_kernels import add_relu, np_softmax, single_op  # noqa: E402


def timeit(fns: dict, reps: int, min_time: float = 0.2) -> dict:
    """{label: median milliseconds per call} over ``reps`` rounds of at least ``min_time`` s
    each; the rounds of the variants alternate, so a change of the machine's load reaches
    all of them alike."""
    times: dict = {label: [] for label in fns}
    for fn in fns.values():
        fn()
    for _ in range(reps):
        for label, fn in fns.items():
            n, t0 = 0, time.perf_counter()
            while True:
                fn()
                n += 1
                dt = time.perf_counter() - t0
                if dt >= min_time:
                    break
            times[label].append(dt / n * 1e3)
    return {label: statistics.median(v) for label, v in times.items()}


def compile_variants(src, targets, naive: bool, without_vector: bool = False, gemv: bool = False, cpu: bool = True,
                     gemv_configs: tuple = (), attention: bool = False, attention_splits: tuple = (),
                     attention_chunks: tuple = (), without_fold: bool = False, cublas: bool = False,
                     configs: tuple = (), without_contract: bool = False):
    """{label: executable}: each GPU target with its schedules (with ``gemv`` also without
    subgroup operations: no GEMV route; with ``without_vector`` also without
    relax-gpu-vector-elementwise; with ``naive`` without any schedule: every kernel one
    thread per output element; with ``attention`` also without relax-gpu-decode-attention),
    then ``cpu`` (library dispatch off) unless ``cpu`` is False. With ``cublas`` the cuda target
    is compiled without cuBLAS (``cuda``), with it for every matmul (``cuda cublas``) and with
    the provisional rule (``cuda auto``: a symbolic M split per call, the GEMV up to 4 rows,
    cuBLAS above; f32 only)."""
    ctx = relax_mlir.make_context()
    mod = src(ctx) if callable(src) else src

    def without(flag: str, target: str):
        """``target`` compiled with the module flag ``gpu.<flag>`` off."""
        setattr(gpu, flag, False)
        try:
            return relax_mlir.compile(mod, target=target)
        finally:
            setattr(gpu, flag, True)

    out = {}
    for target in targets:
        if cublas and target == "cuda":
            for label, policy in (("cuda", "off"), ("cuda cublas", "on"), ("cuda auto", "auto")):
                out[label] = relax_mlir.compile(mod, target=target, options={"cublas": policy})
            for c in configs:   # the generated kernels with other knobs (f16_gemm=2: tensor cores)
                out[f"{target} {c}"] = relax_mlir.compile(mod, target=target,
                                                          options={"cublas": "off", "schedule_config": c})
            continue
        out[f"{target}"] = relax_mlir.compile(mod, target=target)
        for c in gemv_configs:   # "LxK": gemv_lanes=L, gemv_k_subgroups=K (the rule's knobs)
            lanes, ksub = c.split("x")
            out[f"{target} gemv {c}"] = relax_mlir.compile(mod, target=target, options={
                "schedule_config": f"gemv_lanes={lanes}:gemv_k_subgroups={ksub}"})
        if gemv:
            out[f"{target} no-gemv"] = without("SUBGROUP_OPS_DEFAULT", target)
        for c in attention_splits:   # subgroups per workgroup splitting the KV length (the rule's knob)
            out[f"{target} splits {c}"] = relax_mlir.compile(mod, target=target, options={
                "schedule_config": f"attention_splits={c}"})
        for c in attention_chunks:   # keys per workgroup before the KV length is split across workgroups
            out[f"{target} chunk {c}"] = relax_mlir.compile(mod, target=target, options={
                "schedule_config": f"attention_chunk={c}"})
        for c in configs:   # whole schedule_config strings (knob=value:knob=value)
            out[f"{target} {c}"] = relax_mlir.compile(mod, target=target, options={"schedule_config": c})
        if attention:
            out[f"{target} 3 kernels"] = without("DECODE_ATTENTION_DEFAULT", target)
        if without_vector:
            out[f"{target} no-vec"] = without("VECTOR_ELEMENTWISE_DEFAULT", target)
        if without_fold:
            out[f"{target} no-fold"] = without("FOLD_TENSOR_COPIES_DEFAULT", target)
        if without_contract:
            out[f"{target} no-contract"] = without("KERNEL_CONTRACT_DEFAULT", target)
        if naive:
            out[f"{target} naive"] = without("SCHEDULES_DEFAULT", target)
    if cpu:
        out["cpu"] = relax_mlir.compile(mod, target="cpu", options={"dispatch": False})
    return out


def torch_cuda_fn(ref_name: str, inputs, n_weights: int):
    """PyTorch on the CUDA device with the weights resident, the activations copied in and
    the result copied out as ours are (None without torch or a CUDA device)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    acts = inputs[:len(inputs) - n_weights]
    weights = inputs[len(inputs) - n_weights:]
    weights = TORCH_WEIGHTS.get(id(weights[0]), weights) if weights else weights
    def tensor(a):       # numpy (ml_dtypes) bfloat16 through its bits: torch.from_numpy has no bfloat16
        if a.dtype.name == "bfloat16":
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)

    ws = [tensor(w).cuda() for w in weights]
    f = TORCH_REFS[ref_name]

    def run():
        xs = [tensor(a).cuda() for a in acts]
        y = f(*xs, *ws)
        if y.dtype == torch.bfloat16:
            return y.view(torch.int16).cpu().numpy().view(acts[0].dtype)
        return y.cpu().numpy()
    return run


def _torch_rms(x, g, eps):
    import torch
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def _torch_block(x, norm1, wq, wk, wv, wo, norm2, w_gate, w_up, w_down, cfg=models.BlockConfig()):
    import torch
    s, d = x.shape
    H, Dh = cfg.heads, cfg.head_dim
    h = _torch_rms(x, norm1, cfg.eps)
    q, k, v = ((h @ w).reshape(s, H, Dh).permute(1, 0, 2) for w in (wq, wk, wv))
    attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    x1 = x + attn.permute(1, 0, 2).reshape(s, d) @ wo
    h2 = _torch_rms(x1, norm2, cfg.eps)
    return x1 + (torch.nn.functional.silu(h2 @ w_gate) * (h2 @ w_up)) @ w_down


TORCH_REFS = {
    "matmul": lambda a, b: a @ b,
    "softmax": lambda a: a.softmax(-1),
    "mlp": lambda x, w1, b1, w2, b2: ((x @ w1 + b1).relu() @ w2) + b2,
    "add_relu": lambda a, b: (a + b).relu(),
    "add": lambda a, b: a + b,
    "block": _torch_block,
}


def cases(rng):
    """(name, program, inputs, numpy reference, torch reference, number of trailing weights)."""
    mcfg, bcfg = models.MLPConfig(), models.BlockConfig()
    mlp_params = models.mlp_params(mcfg, rng)
    blk_params = models.block_params(bcfg, rng)
    mm = single_op("matmul", [["m", "k"], ["k", "n"]], ["m", "n"])
    sm = single_op("softmax", [["m", "n"]], ["m", "n"])
    bias = single_op("add", [["m", "n"], ["n"]], ["m", "n"])

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)
    return [
        ("matmul 256x512x512", mm, [r(256, 512), r(512, 512)], lambda a, b: a @ b, "matmul", 1),
        ("matmul 64x512x2048", mm, [r(64, 512), r(512, 2048)], lambda a, b: a @ b, "matmul", 1),
        ("matmul 2048x2048x2048", mm, [r(2048, 2048), r(2048, 2048)], lambda a, b: a @ b, "matmul", 1),
        # elementwise kernels (relax-gpu-vector-elementwise: 4 elements per thread, vec4 loads);
        # the inputs uploaded once (counted as weights), so a call is the kernel + the result
        ("add+relu 4096x1024 (4M f32)", add_relu(), [r(4096, 1024), r(4096, 1024)],
         lambda a, b: np.maximum(a + b, 0), "add_relu", 2),
        ("bias add 4096x1024 + 1024", bias, [r(4096, 1024), r(1024)], lambda a, b: a + b, "add", 2),
        ("bias add 4096x1023 + 1023 (scalar route)", bias, [r(4096, 1023), r(1023)], lambda a, b: a + b, "add", 2),
        ("softmax 1024x1024", sm, [r(1024, 1024)], np_softmax, "softmax", 0),
        ("softmax 8x32768", sm, [r(8, 32768)], np_softmax, "softmax", 0),
        ("MLP 512-2048-512, n=16", lambda ctx: models.mlp_module(ctx, mcfg), [r(16, 512)] + mlp_params,
         models.mlp_reference, "mlp", 4),
        ("MLP 512-2048-512, n=128", lambda ctx: models.mlp_module(ctx, mcfg), [r(128, 512)] + mlp_params,
         models.mlp_reference, "mlp", 4),
        ("block d=256, s=128", lambda ctx: models.block_module(ctx, bcfg), [r(128, 256)] + blk_params,
         models.block_reference, "block", 9),
    ]


LINEAR = """
func.func @main(%x: tensor<?x{k}x{t}, #relax.shape<["m", {k}]>>, %w: tensor<{k}x{n}x{t}>, %b: tensor<{n}x{t}>)
    -> tensor<?x{n}x{t}, #relax.shape<["m", {n}]>> attributes {{relax.function}} {{
  %y = "relax.matmul"(%x, %w) : (tensor<?x{k}x{t}, #relax.shape<["m", {k}]>>, tensor<{k}x{n}x{t}>) -> tensor<?x{n}x{t}, #relax.shape<["m", {n}]>>
  %z = "relax.add"(%y, %b) : (tensor<?x{n}x{t}, #relax.shape<["m", {n}]>>, tensor<{n}x{t}>) -> tensor<?x{n}x{t}, #relax.shape<["m", {n}]>>
  return %z : tensor<?x{n}x{t}, #relax.shape<["m", {n}]>>
}}
"""


def decode_cases(rng):
    """Decode GEMVs of the issue-27 Llama config (hidden 768, intermediate 2048, vocab 32000):
    one activation row times a (K, N) weight plus a bias (the weights counted as uploaded)."""
    out = []
    for t, dt in (("f32", np.float32), ("f16", np.float16)):
        for k, n in ((768, 768), (768, 2048), (2048, 768), (768, 32000)):
            if t == "f16" and n == 32000:
                continue
            x = rng.standard_normal((1, k)).astype(dt)
            w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(dt)
            b = rng.standard_normal(n).astype(dt)
            out.append((f"GEMV {t} 1x{k} @ {k}x{n} + bias", LINEAR.format(t=t, k=k, n=n), [x, w, b],
                        lambda x, w, b: (x.astype(np.float32) @ w.astype(np.float32) + b).astype(x.dtype),
                        "linear", 2))
    return out


TORCH_REFS["linear"] = lambda x, w, b: x @ w + b

MATMUL = """
func.func @main(%x: tensor<?x{k}x{t}, #relax.shape<["m", {k}]>>, %w: tensor<{k}x{n}x{t}>)
    -> tensor<?x{n}x{t}, #relax.shape<["m", {n}]>> attributes {{relax.function}} {{
  %y = "relax.matmul"(%x, %w) : (tensor<?x{k}x{t}, #relax.shape<["m", {k}]>>, tensor<{k}x{n}x{t}>) -> tensor<?x{n}x{t}, #relax.shape<["m", {n}]>>
  return %y : tensor<?x{n}x{t}, #relax.shape<["m", {n}]>>
}}
"""


MATMUL_BIAS_RELU = """
func.func @main(%x: tensor<?x{k}xf32, #relax.shape<["m", {k}]>>, %w: tensor<{k}x{n}xf32>, %b: tensor<{n}xf32>)
    -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>> attributes {{relax.function}} {{
  %y = "relax.matmul"(%x, %w) : (tensor<?x{k}xf32, #relax.shape<["m", {k}]>>, tensor<{k}x{n}xf32>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
  %z = "relax.add"(%y, %b) : (tensor<?x{n}xf32, #relax.shape<["m", {n}]>>, tensor<{n}xf32>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
  %u = "relax.relu"(%z) : (tensor<?x{n}xf32, #relax.shape<["m", {n}]>>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
  return %u : tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
}}
"""
MATMUL_RESIDUAL = """
func.func @main(%x: tensor<?x{k}xf32, #relax.shape<["m", {k}]>>, %r: tensor<?x{n}xf32, #relax.shape<["m", {n}]>>,
    %w: tensor<{k}x{n}xf32>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>> attributes {{relax.function}} {{
  %y = "relax.matmul"(%x, %w) : (tensor<?x{k}xf32, #relax.shape<["m", {k}]>>, tensor<{k}x{n}xf32>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
  %z = "relax.add"(%r, %y) : (tensor<?x{n}xf32, #relax.shape<["m", {n}]>>, tensor<?x{n}xf32, #relax.shape<["m", {n}]>>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
  return %z : tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
}}
"""


def cublas_cases(rng, quick: bool):
    """Prefill matmuls of the issue-27 config: M rows of activations times a (K, N) weight,
    f32, f16 and bf16 (f32 accumulation); one program per shape, so every M of a shape runs
    through one executable (main() compiles each program once). Then long prompts with
    quantized weights: relax.quantized_matmul (Q8_0, Q4_0, f16 rows; f32 x) at M around the
    cuBLAS variant's quant-rows (64), where ``cuda auto`` switches from the generated quantized
    GEMM to the decoded weight + cuBLAS (``cuda cublas``: that variant for every M)."""
    import ml_dtypes
    out = []
    shapes = ((768, 2048),) if quick else ((768, 768), (768, 2048), (2048, 768))
    for t, dt in (("f32", np.float32), ("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        for k, n in shapes:
            src = MATMUL.format(t=t, k=k, n=n)
            w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(dt)
            for m in ((8, 128, 512) if quick else (5, 8, 32, 128, 512)):
                x = rng.standard_normal((m, k)).astype(dt)
                out.append((f"matmul {t} {m}x{k} @ {k}x{n}", src, [x, w],
                            lambda x, w: (x.astype(np.float32) @ w.astype(np.float32)).astype(x.dtype), "matmul", 1))
    # fused epilogues cuBLASLt applies (bias + relu, a residual add): one library call above 4 rows
    k, n = 768, 2048
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    for m in ((128, 512) if quick else (8, 32, 128, 512)):
        x = rng.standard_normal((m, k)).astype(np.float32)
        r = rng.standard_normal((m, n)).astype(np.float32)
        out.append((f"matmul+bias+relu f32 {m}x{k} @ {k}x{n}", MATMUL_BIAS_RELU.format(k=k, n=n), [x, w, b],
                    lambda x, w, b: np.maximum(x @ w + b, 0), "mm_bias_relu", 2))
        out.append((f"matmul+residual f32 {m}x{k} @ {k}x{n}", MATMUL_RESIDUAL.format(k=k, n=n), [x, r, w],
                    lambda x, r, w: r + x @ w, "mm_residual", 1))
    for fmt in (("q8_0", "f16") if quick else ("q8_0", "q4_0", "q4_1", "f16", "bf16")):
        raw, deq = half_rows(fmt, n, k, rng) if fmt in ("f16", "bf16") else quant_blocks(fmt, n, k, rng)
        src = QPREFILL.format(k=k, n=n, rb=raw.shape[1], fmt=fmt)
        for m in ((32, 128, 512) if quick else (32, 64, 65, 128, 512)):
            x = rng.standard_normal((m, k)).astype(np.float32)
            w = raw.view()
            TORCH_WEIGHTS[id(w)] = [deq.T.copy()]
            out.append((f"qmatmul {fmt} {m}x{k} @ {n}x{k}", src, [x, w], lambda x, w, deq=deq: x @ deq.T, "qlinear", 1))
    return out

QLINEAR = """
func.func @main(%x: tensor<1x{k}xf32>, %w: tensor<{n}x{rb}xi8>) -> tensor<1x{n}xf32> attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : (tensor<1x{k}xf32>, tensor<{n}x{rb}xi8>) -> tensor<1x{n}xf32>
  return %y : tensor<1x{n}xf32>
}}
"""
QPREFILL = """
func.func @main(%x: tensor<?x{k}xf32, #relax.shape<["m", {k}]>>, %w: tensor<{n}x{rb}xi8>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>> attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "{fmt}"}} : (tensor<?x{k}xf32, #relax.shape<["m", {k}]>>, tensor<{n}x{rb}xi8>) -> tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
  return %y : tensor<?x{n}xf32, #relax.shape<["m", {n}]>>
}}
"""
#: format -> (bytes per 32-element block, header bytes)
QBLOCKS = {"q8_0": (34, 2), "q4_0": (18, 2), "q4_1": (20, 4)}


def quant_blocks(fmt: str, n: int, k: int, rng):
    """(raw GGUF rows (n, k / 32 * bytes) as int8, their f32 dequantization): random quants,
    f16 scales of 1 / sqrt(k) (and Q4_1 minimums of -8 / sqrt(k)), dequantized here in numpy
    as ggml does (no gguf package needed on the device)."""
    nb, head = QBLOCKS[fmt]
    raw = rng.integers(0, 256, (n, k // 32, nb), dtype=np.uint8)
    d = np.float16(1.0 / np.sqrt(k))
    raw[..., 0:2] = np.array([d], np.float16).view(np.uint8)
    if fmt == "q4_1":
        raw[..., 2:4] = np.array([-8 * d], np.float16).view(np.uint8)
    qs = raw[..., head:]
    if fmt == "q8_0":
        q = qs.view(np.int8).astype(np.float32)
    else:
        q = np.concatenate([qs & 15, qs >> 4], axis=-1).astype(np.float32)
        q = q - 8 if fmt == "q4_0" else q
    deq = q * np.float32(d)
    if fmt == "q4_1":
        deq = deq + np.float32(np.float16(-8 * d))
    return raw.reshape(n, -1).view(np.int8), deq.reshape(n, k).astype(np.float32)


#: formats whose random blocks the gguf package dequantizes: format -> (elements, bytes per
#: block, (offset of an f16 field, its value times sqrt(k)) ...): d (and Q5_1's m, the
#: K-quants' dmin) sized so that a row's dot product stays about 1
GGUF_BLOCKS = {"q5_0": (32, 22, ((0, 1 / 16),)), "q5_1": (32, 24, ((0, 1 / 16), (2, -1.0))),
               "q4_k": (256, 144, ((0, 1 / 256), (2, 1 / 64))), "q5_k": (256, 176, ((0, 1 / 512), (2, 1 / 64))),
               "q6_k": (256, 210, ((208, 1 / 1024),))}


def gguf_blocks(fmt: str, n: int, k: int, rng):
    """(raw rows (n, k / block * bytes) as int8, their f32 dequantization by gguf): random
    bytes (every scale / minimum / quant bit pattern) with the f16 fields of
    :data:`GGUF_BLOCKS` (gguf cannot quantize the K-quants; it dequantizes them all)."""
    import gguf
    block, nb, fields = GGUF_BLOCKS[fmt]
    raw = rng.integers(0, 256, (n, k // block, nb), dtype=np.uint8)
    for off, v in fields:
        raw[..., off:off + 2] = np.array([v / np.sqrt(k)], np.float16).view(np.uint8)
    raw = raw.reshape(n, -1)
    deq = gguf.quants.dequantize(raw, getattr(gguf.GGMLQuantizationType, fmt.upper()))
    return raw.view(np.int8), deq.reshape(n, k).astype(np.float32)


def kquant_cases(rng, formats, rows=(1, 128), k: int = 2048, n: int = 2048):
    """One quantized matmul per format (Q5_0, Q5_1, K-quants; :func:`gguf_blocks`) at M = 1 and
    128 through one executable (a symbolic M): the GPU rules (the run GEMV, the GEMM tiles from
    qgemm_min_rows) against the same target without subgroup operations (the generic
    dequantize-per-element kernel), PyTorch on the dequantized weights."""
    out = []
    for fmt in formats:
        raw, deq = gguf_blocks(fmt, n, k, rng)
        src = QPREFILL.format(k=k, n=n, rb=raw.shape[1], fmt=fmt)
        for m in rows:
            x = rng.standard_normal((m, k)).astype(np.float32)
            w = raw.view()
            TORCH_WEIGHTS[id(w)] = [deq.T.copy()]
            out.append((f"q {fmt} {m}x{k} @ {n}x{k}", src, [x, w], lambda x, w, deq=deq: x @ deq.T, "qlinear", 1))
    return out


def half_rows(fmt: str, n: int, k: int, rng):
    """(f16 / bf16 rows (n, 2k) as int8, their f32 values): random weights of scale 1 / sqrt(k);
    bf16 = the high 16 bits of the f32 (truncated)."""
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
    if fmt == "f16":
        h = w.astype(np.float16)
        return h.view(np.int8).reshape(n, 2 * k), h.astype(np.float32)
    bits = (w.view(np.uint32) >> 16).astype(np.uint16)
    return bits.view(np.int8).reshape(n, 2 * k), (bits.astype(np.uint32) << 16).view(np.float32)


QUANT_SHAPES = ((768, 768), (768, 2048), (2048, 768), (768, 32000))


def quant_cases(rng, formats=tuple(QBLOCKS) + ("f16", "bf16")):
    """Decode GEMVs of the issue-27 Llama config on GGUF block weights (Q8_0, Q4_0, Q4_1) and
    f16 / bf16 weights: relax.quantized_matmul through the quantized-GEMV rule, against the
    same target without subgroup operations (the generic dequantize-per-element kernel as a
    row reduction) and PyTorch's f32 GEMV on the dequantized weights; a half format's case
    also times the f32 GEMV of its shape (relax.matmul, x @ W with W (K, N): the GEMV rule) in
    the same rounds (:data:`F32_PEERS`)."""
    out = []
    for fmt in formats:
        for k, n in QUANT_SHAPES:
            half = fmt in ("f16", "bf16")
            raw, deq = half_rows(fmt, n, k, rng) if half else quant_blocks(fmt, n, k, rng)
            x = rng.standard_normal((1, k)).astype(np.float32)
            TORCH_WEIGHTS[id(raw)] = [deq.T.copy()]
            if half:
                F32_PEERS[id(raw)] = (MATMUL.format(t="f32", k=k, n=n), [x, deq.T.copy()])
            out.append((f"qGEMV {fmt} 1x{k} @ {n}x{k}", QLINEAR.format(k=k, n=n, rb=raw.shape[1], fmt=fmt), [x, raw],
                        lambda x, w, deq=deq: x @ deq.T, "qlinear", 1))
    return out


def prefill_cases(rng, formats, rows=(32, 128), k: int = 768, n: int = 2048):
    """Prefill quantized matmuls (M rows of x times an (N, K) quantized / half weight): one
    program per format with a symbolic M, so every M runs through one executable; compared
    with the GEMV for every row by ``--configs qgemm=1`` (main's default with --prefill) and
    with the f32 GEMM of the shape (relax.matmul on the dequantized weight, :data:`F32_PEERS`)."""
    out = []
    for fmt in formats:
        half = fmt in ("f16", "bf16")
        raw, deq = half_rows(fmt, n, k, rng) if half else quant_blocks(fmt, n, k, rng)
        src = QPREFILL.format(k=k, n=n, rb=raw.shape[1], fmt=fmt)
        wt = deq.T.copy()
        for m in rows:
            x = rng.standard_normal((m, k)).astype(np.float32)
            w = raw.view()   # one weight object per case (the peer's key), the same bytes
            TORCH_WEIGHTS[id(w)] = [wt]
            F32_PEERS[id(w)] = (MATMUL.format(t="f32", k=k, n=n), [x, wt], "f32 GEMM")
            out.append((f"qGEMM {fmt} {m}x{k} @ {n}x{k}", src, [x, w], lambda x, w, deq=deq: x @ deq.T, "qlinear", 1))
    return out


def prefill_model_rows(targets, size: str, fmt: str, lengths, config: str, reps: int, min_time: float,
                       prefill_attention: bool = False, check: bool = True) -> list:
    """(name, {label: ms}, load) rows: the prefill of ``lengths`` tokens of a random model of
    ``size`` with ``fmt`` projections on each target, compiled with the default schedules and
    with ``config`` (e.g. qgemm=1) -- or, with ``prefill_attention``, without the fused prefill
    attention (``PREFILL_ATTENTION_DEFAULT`` off) -- the first tokens compared; timed in
    alternating rounds (``check`` False: not compared, the fake driver's host path)."""
    from dataclasses import replace as _replace

    from mlir import ir

    from relax_mlir.llm import CausalLM, causal_lm
    from relax_mlir.llm.cli import SIZES
    from relax_mlir.llm.model import LlamaModel
    from relax_mlir.pipelines import gpu as gpu_pipeline
    c = SIZES[size] if fmt == "f32" else \
        _replace(SIZES[size], formats=tuple((r, fmt) for r in ("qkv", "o", "gate", "up", "down", "lm_head")))
    models = {}
    for target in targets:
        variants = [(target, "", True), (f"{target} unfused attention", "", False)] if prefill_attention else \
            [(target, "", True), (f"{target} {config}", config, True)]
        for label, cfg, fused in variants:
            ctx = relax_mlir.make_context()
            with ctx, ir.Location.unknown():
                module = ir.Module.create()
                names = LlamaModel(c).build(module)
            gpu_pipeline.PREFILL_ATTENTION_DEFAULT = fused
            try:
                exe = relax_mlir.compile(module, target=target, options={"schedule_config": cfg} if cfg else {})
            finally:
                gpu_pipeline.PREFILL_ATTENTION_DEFAULT = True
            causal_lm._EXECUTABLES[c, target] = (exe, names)   # CausalLM binds this variant's executable
            try:
                models[label] = CausalLM.random(c, max_seq_len=max(lengths), target=target)
            finally:
                del causal_lm._EXECUTABLES[c, target]
    rows = []
    rng = np.random.default_rng(1)
    for t in lengths:
        ids = rng.integers(0, c.vocab_size, t)
        ref = None
        for label, lm in models.items():
            logits = lm.prefill(ids)
            ref = logits if ref is None else ref
            if check:
                np.testing.assert_allclose(logits, ref, atol=1e-3 * np.abs(ref).max(), rtol=0, err_msg=label)
        l0 = os.getloadavg()[0]
        times = timeit({label: (lambda lm=lm: lm.prefill(ids)) for label, lm in models.items()}, reps, min_time)
        rows.append((f"prefill {t} tokens, {size} model, {fmt} weights", times, max(l0, os.getloadavg()[0])))
        print(f"{rows[-1][0]}: " + " / ".join(f"{k} {v:.3f}" for k, v in times.items()) + " ms", file=sys.stderr)
    return rows


def prefill_attention_module(c):
    """One graph function: relax_mlir/llm's own prefill attention (``LlamaModel._attend_blas``
    of config ``c``) on q (s, H, D), k, v (s, KV, D) and the additive causal mask (s, s);
    returns (s, H*D)."""
    from mlir import ir

    from relax_mlir.frontend.builder import graph_function
    from relax_mlir.llm.model import LlamaModel, _Step
    H, KV, D = c.num_heads, c.num_kv_heads, c.head_dim
    with relax_mlir.make_context(), ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("q", ["s", H, D], "f32"), ("k", ["s", KV, D], "f32"),
                                        ("v", ["s", KV, D], "f32"), ("mask", ["s", "s"], "f32")]) as fn:
            q, k, v, mask = fn.params
            fn.ret(LlamaModel(c)._attend_blas(_Step(None, mask=mask), q, k, v))
    return m


def prefill_attention_rows(targets, size: str, lengths, reps: int, min_time: float, check: bool = True) -> list:
    """(name, {label: ms}, load) rows: relax_mlir/llm's prefill attention alone
    (``LlamaModel._attend_blas`` of ``size``'s heads on q, k, v and the causal mask) on each
    target: fused with masked keys skipped, fused visiting every key (``SKIP_MASKED_KEYS``
    off), unfused (``PREFILL_ATTENTION_DEFAULT`` off); results compared first (unless ``check``
    is False)."""
    from relax_mlir.backends.gpu import decode_attention
    from relax_mlir.llm.cli import SIZES
    from relax_mlir.pipelines import gpu as gpu_pipeline
    c = SIZES[size]
    H, KV, D = c.num_heads, c.num_kv_heads, c.head_dim

    def module():
        return prefill_attention_module(c)
    exes = {}
    for target in targets:
        for label, skip, fused in ((f"{target} attention", True, True), (f"{target} every key", False, True),
                                   (f"{target} unfused", True, False)):
            decode_attention.SKIP_MASKED_KEYS, gpu_pipeline.PREFILL_ATTENTION_DEFAULT = skip, fused
            try:
                exes[label] = relax_mlir.compile(module(), target=target)
            finally:
                decode_attention.SKIP_MASKED_KEYS, gpu_pipeline.PREFILL_ATTENTION_DEFAULT = True, True
    rows = []
    for s in lengths:
        rng = np.random.default_rng(s)
        q = rng.standard_normal((s, H, D)).astype(np.float32)
        k, v = (rng.standard_normal((s, KV, D)).astype(np.float32) for _ in range(2))
        mask = np.where(np.tril(np.ones((s, s), bool)), 0.0, float(np.finfo(np.float32).min)).astype(np.float32)
        ref = None
        for label, exe in exes.items():
            got = exe(q, k, v, mask)
            ref = got if ref is None else ref
            if check:
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5, err_msg=label)
        l0 = os.getloadavg()[0]
        times = timeit({label: (lambda e=exe: e(q, k, v, mask)) for label, exe in exes.items()}, reps, min_time)
        rows.append((f"prefill attention s={s}, {size} heads", times, max(l0, os.getloadavg()[0])))
        print(f"{rows[-1][0]}: " + " / ".join(f"{k} {v:.3f}" for k, v in times.items()) + " ms", file=sys.stderr)
    return rows


#: id(half-format weight) -> (the f32 GEMV program of its shape, its inputs[, label]): timed as
#: the variant "<target> f32 GEMV" (or "<target> <label>") of the case, in the same rounds
F32_PEERS: dict = {}
#: id(weight) -> the weights PyTorch runs on instead (dequantized quantized weights)
TORCH_WEIGHTS: dict = {}
TORCH_REFS["qlinear"] = lambda x, w: x @ w
TORCH_REFS["mm_bias_relu"] = lambda x, w, b: (x @ w + b).relu()
TORCH_REFS["mm_residual"] = lambda x, r, w: r + x @ w


ATTENTION = """
func.func @main(%q: tensor<1x{h}x{d}xf32>, %mask: tensor<1x1x{t}x1xf32>, %k0: tensor<{t}x{kv}x{d}x{kvt}>,
                %v0: tensor<{t}x{kv}x{d}x{kvt}>) -> tensor<1x{hd}xf32> attributes {{relax.function}} {{
{cast}  %q5 = "relax.reshape"(%q) {{shape = #relax.shape<[1, {g}, 1, {kv}, {d}]>}} : (tensor<1x{h}x{d}xf32>) -> tensor<1x{g}x1x{kv}x{d}xf32>
  %p = "relax.multiply"(%q5, %k) : (tensor<1x{g}x1x{kv}x{d}xf32>, tensor<{t}x{kv}x{d}xf32>) -> tensor<1x{g}x{t}x{kv}x{d}xf32>
  %sc = "relax.sum"(%p) {{axes = array<i64: -1>}} : (tensor<1x{g}x{t}x{kv}x{d}xf32>) -> tensor<1x{g}x{t}x{kv}xf32>
  %a = "relax.add"(%sc, %mask) : (tensor<1x{g}x{t}x{kv}xf32>, tensor<1x1x{t}x1xf32>) -> tensor<1x{g}x{t}x{kv}xf32>
  %pr = "relax.softmax"(%a) {{axis = 2 : i64}} : (tensor<1x{g}x{t}x{kv}xf32>) -> tensor<1x{g}x{t}x{kv}xf32>
  %e = "relax.expand_dims"(%pr) {{axis = array<i64: 4>}} : (tensor<1x{g}x{t}x{kv}xf32>) -> tensor<1x{g}x{t}x{kv}x1xf32>
  %pv = "relax.multiply"(%e, %v) : (tensor<1x{g}x{t}x{kv}x1xf32>, tensor<{t}x{kv}x{d}xf32>) -> tensor<1x{g}x{t}x{kv}x{d}xf32>
  %o = "relax.sum"(%pv) {{axes = array<i64: 2>}} : (tensor<1x{g}x{t}x{kv}x{d}xf32>) -> tensor<1x{g}x{kv}x{d}xf32>
  %r = "relax.reshape"(%o) {{shape = #relax.shape<[1, {hd}]>}} : (tensor<1x{g}x{kv}x{d}xf32>) -> tensor<1x{hd}xf32>
  return %r : tensor<1x{hd}xf32>
}}
"""


#: the K / V parameters as the chain's f32 operands: as they are, or converted from an f16 cache
_KV_F32 = "  %k = \"relax.astype\"(%k0) {{dtype = f32}} : (tensor<{t}x{kv}x{d}xf16>) -> tensor<{t}x{kv}x{d}xf32>\n" \
          "  %v = \"relax.astype\"(%v0) {{dtype = f32}} : (tensor<{t}x{kv}x{d}xf16>) -> tensor<{t}x{kv}x{d}xf32>\n"


def _attention_ref(q, mask, k, v, g: int = 3):
    """numpy: relax_mlir/llm's cached attention (query heads group-major: head g*KV + kv)."""
    kv, d = k.shape[1], k.shape[2]
    sc = (q.reshape(1, g, 1, kv, d).astype(np.float64) * k).sum(-1) + mask
    e = np.exp(sc - sc.max(2, keepdims=True))
    return ((e / e.sum(2, keepdims=True))[..., None] * v).sum(2).reshape(1, -1).astype(np.float32)


def _torch_attention(q, mask, k, v, g: int = 3):
    import torch
    kv, d = k.shape[1], k.shape[2]
    k, v = k.float(), v.float()
    sc = (q.reshape(1, g, 1, kv, d) * k).sum(-1) + mask
    return (torch.softmax(sc, dim=2)[..., None] * v).sum(2).reshape(1, -1)


TORCH_REFS["attention"] = _torch_attention


def attention_cases(rng, quick: bool, kv_dtypes=("f32",)):
    """Decode attention of the issue-27 Llama config (12 query heads, 4 KV heads, head dim 64)
    at KV lengths 128, 512, 2048: one query row against the cache (k, v resident: uploaded);
    per K/V element type of ``kv_dtypes`` (f16: an f16 cache, converted to f32 in the graph,
    which the fused kernel absorbs)."""
    out = []
    g, kv, d = 3, 4, 64
    for t in ((128, 2048) if quick else (128, 512, 2048)):
        for kvt in kv_dtypes:
            q = rng.standard_normal((1, g * kv, d)).astype(np.float32)
            mask = np.zeros((1, 1, t, 1), np.float32)
            k, v = (rng.standard_normal((t, kv, d)).astype(np.float32 if kvt == "f32" else np.float16)
                    for _ in range(2))
            cast = _KV_F32.format(t=t, kv=kv, d=d) if kvt == "f16" else ""
            src = ATTENTION.format(h=g * kv, d=d, t=t, g=g, kv=kv, hd=g * kv * d, kvt=kvt, cast=cast)
            if kvt == "f32":   # the chain reads the f32 parameters themselves
                src = src.replace("%k0", "%k").replace("%v0", "%v")
            out.append((f"decode attention t={t}" + (f" {kvt} K/V" if kvt != "f32" else ""), src,
                        [q, mask, k, v], _attention_ref, "attention", 2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--targets", default="vulkan",
                    help="comma-separated GPU targets (vulkan, cuda); each also runs without its schedules")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive (unscheduled) compiles")
    ap.add_argument("--without-vector", action="store_true",
                    help="also compile each GPU target without relax-gpu-vector-elementwise")
    ap.add_argument("--without-fold", action="store_true",
                    help="also compile each GPU target without relax-gpu-fold-tensor-copies")
    ap.add_argument("--without-contract", action="store_true",
                    help="also compile each GPU target without fastmath<contract> on its kernels (no FMAs from "
                         "linalg bodies; relax-kernel-fastmath)")
    ap.add_argument("--skip", default="", help="comma-separated substrings of case names to skip")
    ap.add_argument("--decode", action="store_true",
                    help="decode GEMVs: the GEMV rule against the same target without subgroup operations")
    ap.add_argument("--quant", action="store_true",
                    help="decode GEMVs on Q8_0 / Q4_0 / Q4_1 weights: the quantized-GEMV rule against the same "
                         "target without subgroup operations (the generic kernel)")
    ap.add_argument("--quant-formats", default=",".join(tuple(QBLOCKS) + ("f16", "bf16")),
                    help="with --quant or --prefill: weight formats, comma-separated (f16 / bf16: also the f32 "
                         "GEMV of the shape)")
    ap.add_argument("--kquant", action="store_true",
                    help="one Q5_0 / Q5_1 / K-quant matmul per --quant-formats (default q4_k,q6_k) at M = 1 and "
                         "128, K = N = 2048: the GPU rules against the same target without subgroup operations "
                         "(the generic kernel)")
    ap.add_argument("--prefill", action="store_true",
                    help="prefill quantized matmuls (M = 32, 128) and a random f16 model's prefill: the quantized "
                         "GEMM route against the GEMV for every row (--configs, default qgemm=1)")
    ap.add_argument("--prefill-model", default="small",
                    help="with --prefill: the random model's size (llm CLI sizes; '' skips the model)")
    ap.add_argument("--prefill-attention", action="store_true",
                    help="the prefill of 32 and 128 tokens of a random f32 model (--prefill-model): the fused "
                         "prefill attention against the same target without it (PREFILL_ATTENTION_DEFAULT); "
                         "then its attention alone at 32, 128, 512 tokens (also with SKIP_MASKED_KEYS off)")
    ap.add_argument("--attention", action="store_true",
                    help="decode attention: the fused decode_attention kernel (one launch) against the same "
                         "target without relax-gpu-decode-attention (q.k, softmax, p.v kernels)")
    ap.add_argument("--attention-splits", default="",
                    help="with --attention: variants of the rule's attention_splits knob, comma-separated")
    ap.add_argument("--attention-chunks", default="",
                    help="with --attention: variants of the rule's attention_chunk knob (keys per workgroup; "
                         "4096: no split at these lengths), comma-separated")
    ap.add_argument("--cublas", action="store_true",
                    help="prefill matmuls: the cuda target without cuBLAS, with it for every matmul and with "
                         "the provisional rule (relax-cuda-dispatch-library), against PyTorch")
    ap.add_argument("--attention-kv", default="f32",
                    help="with --attention: K/V element types, comma-separated (f16: an f16 KV cache)")
    ap.add_argument("--configs", default="",
                    help="variants with these schedule_config strings (knob=value:knob=value), comma-separated")
    ap.add_argument("--gemv-configs", default="",
                    help="with --decode: GEMV knob variants LxK (gemv_lanes x gemv_k_subgroups), comma-separated")
    ap.add_argument("--host-path-only", action="store_true",
                    help="no numerics, one short round (a fake CUDA driver runs no kernels)")
    ap.add_argument("--stats", action="store_true",
                    help="after each case, print each cuda executable's last call: launches, host<->device "
                         "copies, synchronizations, allocations, graphs (exe.cuda_call_stats)")
    args = ap.parse_args()
    reps = 1 if args.host_path_only else 3 if args.quick else 7
    min_time = 0.01 if args.host_path_only else 0.2
    targets = [t for t in args.targets.split(",") if t]
    skip = [k for k in args.skip.split(",") if k]
    rng = np.random.default_rng(0)
    rows, labels = [], None
    if args.kquant and args.quant_formats == ap.get_default("quant_formats"):
        args.quant_formats = "q4_k,q6_k"
    args.decode = args.decode or args.quant or args.kquant
    if args.prefill and not args.configs:
        args.configs = "qgemm=1"
    compiled: dict = {}     # program text -> its executables (cases of one shape share them)
    kv_dtypes = tuple(c for c in args.attention_kv.split(",") if c)
    if args.prefill_attention:
        check = not args.host_path_only
        rows = prefill_model_rows(targets, args.prefill_model, "f32", (32, 128), "", reps, min_time, True, check)
        rows += prefill_attention_rows(targets, args.prefill_model, (32, 128, 512), reps, min_time, check)
        labels = [k for _, t, _ in rows for k in t]
        labels = list(dict.fromkeys(labels))
    for name, src, inputs, ref, tref, n_w in () if args.prefill_attention else (prefill_cases(rng, tuple(f for f in args.quant_formats.split(",") if f))
                                              if args.prefill else
                                              kquant_cases(rng, tuple(f for f in args.quant_formats.split(",") if f))
                                              if args.kquant else cublas_cases(rng, args.quick) if args.cublas else
                                              attention_cases(rng, args.quick, kv_dtypes) if args.attention else
                                              quant_cases(rng, tuple(f for f in args.quant_formats.split(",") if f))
                                              if args.quant else decode_cases(rng) if args.decode
                                              else cases(rng)):
        if any(k in name for k in skip):
            continue
        if isinstance(src, str) and src in compiled:
            exes = compiled[src]
        else:
            exes = compile_variants(
                src, targets, naive=not args.no_naive and not args.decode and not args.attention and not args.cublas
                and not args.prefill,
                without_vector=args.without_vector, gemv=args.decode,
                cpu=not args.decode and not args.cublas and not args.prefill,
                without_fold=args.without_fold, without_contract=args.without_contract,
                configs=tuple(c for c in args.configs.split(",") if c),
                attention=args.attention,
                attention_splits=tuple(c for c in args.attention_splits.split(",") if c)
                if args.attention else (),
                attention_chunks=tuple(c for c in args.attention_chunks.split(",") if c)
                if args.attention else (),
                gemv_configs=tuple(c for c in args.gemv_configs.split(",") if c) if args.decode else (),
                cublas=args.cublas)
            if isinstance(src, str):
                compiled[src] = exes
        want = ref(*inputs)
        acts = inputs[:len(inputs) - n_w]
        tol = 2e-2 if want.dtype == np.float16 else 6e-2 if want.dtype.name == "bfloat16" else 2e-3
        fns = {}
        for label, exe in exes.items():
            got = exe(*inputs)
            if not args.host_path_only:
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{name} on {label}")
            # GPU targets: the weights uploaded once (exe.upload), the activations copied per call
            ws = [exe.upload(w) for w in inputs[len(inputs) - n_w:]] if label != "cpu" else inputs[len(acts):]
            fns[label] = lambda e=exe, ws=ws: e(*acts, *ws)
        peer = F32_PEERS.get(id(inputs[-1]))
        for target in (targets if peer is not None else ()):
            pexe = relax_mlir.compile(peer[0], target=target)
            if not args.host_path_only:
                np.testing.assert_allclose(pexe(*peer[1]), want, rtol=tol, atol=tol, err_msg=f"{name}: f32 GEMV")
            pw = pexe.upload(peer[1][1])
            fns[f"{target} {peer[2] if len(peer) > 2 else 'f32 GEMV'}"] = lambda e=pexe, x=peer[1][0], w=pw: e(x, w)
        t_fn = None if args.host_path_only else torch_cuda_fn(tref, inputs, n_w)
        if t_fn is not None:
            np.testing.assert_allclose(t_fn(), want, rtol=tol, atol=tol, err_msg=f"{name} on torch")
            fns["torch cuda"] = t_fn
        l0 = os.getloadavg()[0]
        t = timeit(fns, reps, min_time)
        labels = (labels or []) + [k for k in t if k not in (labels or [])]
        rows.append((name, t, max(l0, os.getloadavg()[0])))
        print(f"{name}: " + " / ".join(f"{k} {v:.3f}" for k, v in t.items()) + " ms", file=sys.stderr)
        if args.stats:
            for label, exe in exes.items():
                if hasattr(exe, "cuda_call_stats"):
                    print(f"  {name} on {label}: {exe.cuda_call_stats}", file=sys.stderr)
    if args.prefill and args.prefill_model:
        rows += prefill_model_rows(targets, args.prefill_model, "f16", (32, 128), args.configs.split(",")[0],
                                   reps, min_time, check=not args.host_path_only)
        labels = (labels or []) + [k for k in rows[-1][1] if k not in (labels or [])]
    print(f"{os.cpu_count()} cores; load average (1 min) per row; milliseconds per call, inputs from and "
          "outputs to numpy (GPU targets: weights uploaded once); lavapipe = Mesa's software Vulkan")
    print()
    print("| case | " + " | ".join(f"{k} ms" for k in labels) + " | load |")
    print("|---|" + "---:|" * (len(labels) + 1))
    for name, t, load in rows:
        print(f"| {name} | " + " | ".join(f"{t[k]:.3f}" if k in t else "-" for k in labels) + f" | {load:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
