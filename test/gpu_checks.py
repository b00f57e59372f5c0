"""Checks every GPU target passes (test_vulkan.py runs them on lavapipe, test_cuda.py on an
NVIDIA GPU when one is present): each executable compiled ONCE and run at several sizes,
results equal to numpy's and to the cpu target's, the same run-time errors as the cpu."""

from __future__ import annotations

import re
import subprocess
import threading

import numpy as np
import pytest

import relax_mlir
from relax_mlir import ShapeError
from relax_mlir.frontend import models

MATCH_CAST = """
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["2*k", 4]>>
    attributes {relax.function} {
  %y = "relax.match_cast"(%x) {shape = #relax.shape<["2*k", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["2*k", 4]>>
  %z = "relax.add"(%y, %y) : (tensor<?x4xf32, #relax.shape<["2*k", 4]>>, tensor<?x4xf32, #relax.shape<["2*k", 4]>>) -> tensor<?x4xf32, #relax.shape<["2*k", 4]>>
  return %z : tensor<?x4xf32, #relax.shape<["2*k", 4]>>
}
"""

CUBE = """
func.func @main(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?x?xf32, #relax.shape<["n", "n", "n"]>>
    attributes {relax.function} {
  %y = "relax.broadcast_to"(%x) {shape = #relax.shape<["n", "n", "n"]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?x?xf32, #relax.shape<["n", "n", "n"]>>
  return %y : tensor<?x?x?xf32, #relax.shape<["n", "n", "n"]>>
}
"""

CALLS = """
func.func @twice(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
    attributes {relax.function} {
  %y = "relax.add"(%x, %x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %y : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>)
    attributes {relax.function} {
  %y = "relax.call"(%x) {callee = @twice} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %z = "relax.relu"(%y) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %y, %x : tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>
}
"""


def _t(dims, dtype="f32"):
    return f"tensor<{'x'.join('?' if isinstance(d, str) else str(d) for d in dims)}x{dtype}, #relax.shape<{dims!r}>>" \
        .replace("'", '"')


_X, _ROW, _COL = _t(["n", "m"]), _t(["m"]), _t(["n", 1])
_XI, _ROWI = _t(["n", "m"], "i32"), _t(["m"], "i32")
_S1, _S4 = _t(["n", "m - 1"]), _t(["n", "m - 4"])

#: elementwise chains for relax-gpu-vector-elementwise (4 elements per thread behind a
#: run-time guard): @main a fused chain with a row broadcast (a vector along the row) and
#: a column broadcast (one scalar per 4 lanes); @ints the same on i32; @slices elementwise
#: ops fed by views at element offsets 1 and 4 (row stride m)
VECTOR_ELEMENTWISE = f"""
func.func @main(%x: {_X}, %b: {_ROW}, %c: {_COL}) -> {_X} attributes {{relax.function}} {{
  %s = "relax.add"(%x, %b) : ({_X}, {_ROW}) -> {_X}
  %t = "relax.multiply"(%s, %c) : ({_X}, {_COL}) -> {_X}
  %u = "relax.sigmoid"(%t) : ({_X}) -> {_X}
  %r = "relax.relu"(%t) : ({_X}) -> {_X}
  %y = "relax.add"(%u, %r) : ({_X}, {_X}) -> {_X}
  return %y : {_X}
}}
func.func @ints(%x: {_XI}, %b: {_ROWI}) -> {_XI} attributes {{relax.function}} {{
  %s = "relax.add"(%x, %b) : ({_XI}, {_ROWI}) -> {_XI}
  %y = "relax.multiply"(%s, %s) : ({_XI}, {_XI}) -> {_XI}
  return %y : {_XI}
}}
func.func @slices(%x: {_X}, %y1: {_S1}, %y4: {_S4}) -> ({_S1}, {_S4}) attributes {{relax.function}} {{
  %a = "relax.strided_slice"(%x) {{axes = array<i64: 1>, begin = #relax.shape<[1]>, end = #relax.shape<["m"]>}} : ({_X}) -> {_S1}
  %b = "relax.strided_slice"(%x) {{axes = array<i64: 1>, begin = #relax.shape<[4]>, end = #relax.shape<["m"]>}} : ({_X}) -> {_S4}
  %z1 = "relax.add"(%a, %y1) : ({_S1}, {_S1}) -> {_S1}
  %z4 = "relax.multiply"(%b, %y4) : ({_S4}, {_S4}) -> {_S4}
  return %z1, %z4 : {_S1}, {_S4}
}}
"""

#: (n, m): sizes 1, 3, 4, 5, 7, 64, 1000+; innermost extents odd, multiples of 4 and not
VECTOR_SIZES = [(1, 1), (1, 3), (1, 4), (3, 4), (1, 5), (2, 7), (7, 8), (5, 64), (3, 65), (64, 5), (1, 1000),
                (3, 1001), (2, 1028), (1000, 4), (9, 1027)]


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def check_vector_elementwise(exe, n: int, m: int) -> None:
    """One size of VECTOR_ELEMENTWISE through one executable, against numpy."""
    rng = np.random.default_rng(n * 10007 + m)
    x = rng.standard_normal((n, m)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    c = rng.standard_normal((n, 1)).astype(np.float32)
    t = (x.astype(np.float64) + b) * c
    np.testing.assert_allclose(exe(x, b, c), _sigmoid(t) + np.maximum(t, 0), rtol=1e-5, atol=1e-6,
                               err_msg=f"main n={n} m={m}")
    xi = rng.integers(-1000, 1000, (n, m)).astype(np.int32)
    bi = rng.integers(-1000, 1000, m).astype(np.int32)
    np.testing.assert_array_equal(exe["ints"](xi, bi), (xi + bi) * (xi + bi), err_msg=f"ints n={n} m={m}")
    if m >= 4:
        y1 = rng.standard_normal((n, m - 1)).astype(np.float32)
        y4 = rng.standard_normal((n, m - 4)).astype(np.float32)
        z1, z4 = exe["slices"](x, y1, y4)
        np.testing.assert_array_equal(z1, x[:, 1:] + y1, err_msg=f"slices n={n} m={m}")
        np.testing.assert_array_equal(z4, x[:, 4:] * y4, err_msg=f"slices n={n} m={m}")


def mlp(target: str, max_batch: int):
    """The demo MLP compiled for ``target`` and for the cpu, and its parameters."""
    ctx = relax_mlir.make_context()
    cfg = models.MLPConfig(max_batch=max_batch)
    m = models.mlp_module(ctx, cfg)
    return (relax_mlir.compile(m, target=target), relax_mlir.compile(m, target="cpu"),
            models.mlp_params(cfg, np.random.default_rng(0)))


def check_mlp(exe, cpu, params, n: int) -> None:
    x = np.random.default_rng(n).standard_normal((n, 512)).astype(np.float32)
    y = exe(x, *params)
    assert y.shape == (n, 512) and y.dtype == np.float32
    np.testing.assert_allclose(y, models.mlp_reference(x, *params), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, cpu(x, *params), rtol=1e-4, atol=1e-4)


def check_weights_stay_on_the_device(exe, params) -> None:
    dev = [exe.upload(p) for p in params]
    np.testing.assert_array_equal(dev[2].numpy(), params[2])
    for n in (1, 9):
        x = np.random.default_rng(n).standard_normal((n, 512)).astype(np.float32)
        np.testing.assert_array_equal(exe(x, *dev), exe(x, *params))


def check_shape_errors_are_the_cpus(exe, cpu, params) -> None:
    msg = "@main: argument #0: expected shape (n, 512), got (3, 511)"
    for e in (exe, cpu):
        with pytest.raises(ShapeError, match=re.escape(msg)):
            e(np.ones((3, 511), np.float32), *params)
    # the executable keeps working after a failed call
    x = np.ones((2, 512), np.float32)
    np.testing.assert_allclose(exe(x, *params), cpu(x, *params), rtol=1e-4, atol=1e-4)


def check_block(target: str) -> None:
    ctx = relax_mlir.make_context()
    cfg = models.BlockConfig(d_model=64, heads=2, d_ffn=128)
    m = models.block_module(ctx, cfg)
    exe, cpu = relax_mlir.compile(m, target=target), relax_mlir.compile(m, target="cpu")
    params = models.block_params(cfg, np.random.default_rng(1))
    for s in (1, 5, 70):
        x = np.random.default_rng(s).standard_normal((s, 64)).astype(np.float32)
        y = exe(x, *params)
        np.testing.assert_allclose(y, models.block_reference(x, *params, cfg=cfg), rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(y, cpu(x, *params), rtol=2e-4, atol=2e-4)


def check_match_cast_failure_is_the_cpus(target: str) -> None:
    exe, cpu = relax_mlir.compile(MATCH_CAST, target=target), relax_mlir.compile(MATCH_CAST, target="cpu")
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    np.testing.assert_array_equal(exe(x), x + x)
    msgs = []
    for e in (exe, cpu):
        with pytest.raises(ShapeError) as info:
            e(np.ones((7, 4), np.float32))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    assert "expected shape (2*k, 4)" in msgs[0] and "got (7, 4)" in msgs[0]


def check_buffer_beyond_the_device_is_a_memory_error(target: str, n: int) -> None:
    """``n``: a size whose (n, n, n) f32 result no device of ``target`` can hold."""
    exe = relax_mlir.compile(CUBE, target=target)
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(exe(x), np.broadcast_to(x, (3, 3, 3)))
    with pytest.raises(MemoryError, match=rf"cannot allocate {4 * n ** 3} bytes for shape \(n, n, n\)"):
        exe(np.ones(n, np.float32))
    np.testing.assert_array_equal(exe(x), np.broadcast_to(x, (3, 3, 3)))


def check_graph_calls_and_returned_parameters(target: str) -> None:
    exe = relax_mlir.compile(CALLS, target=target)
    assert exe.functions == ["twice", "main"]
    for n in (1, 9, 70):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4) - 7
        y, x_back = exe(x)
        np.testing.assert_array_equal(y, 2 * x)
        np.testing.assert_array_equal(x_back, x)   # a parameter returned: copied on the device
        np.testing.assert_array_equal(exe["twice"](x), 2 * x)


def _constants_module():
    """Constant arrays of the program as kernel operands: a gather at constant indices (the
    LLM's rope rotation) and a constant row added; both must reach the kernels in device
    memory (relax-gpu-device-constants)."""
    from mlir import ir

    from relax_mlir.dialects import relax
    from relax_mlir.frontend.builder import graph_function

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", 6], "f32")]) as fn:
            x, = fn.params
            rot = relax.const(np.array([3, 4, 5, 0, 1, 2], np.int64))
            row = relax.const(np.linspace(-1.0, 1.5, 6).astype(np.float32))
            fn.ret(relax.take(x, rot, axis=-1) * x + row)
    return m


def check_constant_arrays(target: str) -> None:
    exe = relax_mlir.compile(_constants_module(), target=target)
    for n in (1, 7, 130):
        x = np.arange(n * 6, dtype=np.float32).reshape(n, 6) / 7 - 3
        want = x[:, [3, 4, 5, 0, 1, 2]] * x + np.linspace(-1.0, 1.5, 6).astype(np.float32)
        np.testing.assert_allclose(exe(x), want, rtol=1e-6, atol=1e-6)


def check_threads_call_one_executable(exe, cpu, params) -> None:
    xs = {n: np.random.default_rng(100 + n).standard_normal((n, 512)).astype(np.float32) for n in (1, 5, 33)}
    got, errors = {}, []

    def work(n):
        try:
            for _ in range(2):
                got[n] = exe(xs[n], *params)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n, x in xs.items():
        np.testing.assert_allclose(got[n], cpu(x, *params), rtol=1e-4, atol=1e-4)


#: cpu edge semantics the GPU targets do not have, on every GPU target (docs/semantics.md)
GPU_EDGE_KNOWN: dict[str, str] = {}
#: ... on the cuda target only
CUDA_EDGE_KNOWN = {
    "test_take_out_of_range_raises_index_error": "the cuda target does not check take's indices yet (device "
                                                  "memory, launches run after the host code): the kernel clamps",
}


def edge_params(numerics, known: dict[str, str]) -> list:
    """The edge-semantics tests of the cpu numerics suite (test_ops_numerics: those taking an
    ``edge`` executable) as (fn, args) params; ``known``: test name -> reason of a strict xfail
    (with :data:`GPU_EDGE_KNOWN`)."""
    import inspect
    known = {**GPU_EDGE_KNOWN, **known}
    out = []
    for name, fn in inspect.getmembers(numerics, inspect.isfunction):
        if not name.startswith("test_") or "edge" not in inspect.signature(fn).parameters:
            continue
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        values = [(v,) for v in marks[0].args[1]] if marks else [()]
        for v in values:
            xfail = [pytest.mark.xfail(reason=known[name], strict=True)] if name in known else []
            out.append(pytest.param(fn, v, id=name[len("test_"):] + ("-" + v[0] if v else ""), marks=xfail))
    return out


def validated_spirv(m, tmp_path, env: str = "vulkan1.1") -> dict:
    """Kernel name -> path of each ``gpu.binary`` of the lowered module ``m``, written to
    ``tmp_path`` as ``<name>.spv`` and accepted by ``spirv-val --target-env env``."""
    from mlir import ir
    from mlir.dialects import gpu as gpu_d
    paths = {}
    for o in m.body.operations:
        o = o.operation
        if o.name != "gpu.binary":
            continue
        name = ir.StringAttr(o.attributes["sym_name"]).value
        path = tmp_path / f"{name}.spv"
        path.write_bytes(gpu_d.ObjectAttr(ir.ArrayAttr(o.attributes["objects"])[0]).object)
        r = subprocess.run(["spirv-val", "--target-env", env, str(path)], capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stdout + r.stderr)
        paths[name] = path
    return paths


def tiny_hf_llama():
    """A random 2-layer HF Llama (hidden 64, 4 heads / 2 KV heads, vocab 128) with bigger weights
    (decisive, non-trivial logits, as test/llm); skips without torch / transformers."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    hf = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.mul_(4.0) if p.dim() == 2 else p.add_(0.1 * torch.randn_like(p))
    return hf


def ptx_of(m) -> dict:
    """Each ``gpu.binary`` of a lowered cuda module: its symbol -> the PTX text."""
    from mlir import ir
    from mlir.dialects import gpu
    out = {}
    with m.context:
        for op in m.body.operations:
            op = op.operation
            if op.name == "gpu.binary":
                obj = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0])
                out[ir.StringAttr(op.attributes["sym_name"]).value] = obj.object.decode()
    return out
