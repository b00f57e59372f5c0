"""bf16 convolutions and pools on the cpu target: relax-widen-bf16-matmul makes each bf16 conv2d
an f32 one between casts, so the f32 conv kernels (im2col + GEMM, direct, depthwise) take it,
and the pool schedule takes bf16 tensors (its arithmetic emulated in f32). ONE executable per
program, batch 1, odd and larger, against PyTorch's f64 from the same bf16 inputs, rounded to
bf16 after every op as the graph does."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function
from relax_mlir.pipelines.cpu import stages
from relax_mlir.transforms.pipeline import run_pipeline

BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(0)
SHAPES = [("w", [16, 3, 3, 3]), ("c", [16]), ("w2", [16, 1, 3, 3]), ("w3", [24, 16, 1, 1]), ("w4", [24, 24, 3, 3])]


def _module(ctx, dt: str) -> ir.Module:
    """conv 3x3 + bias + relu, max pool 3x3/2, depthwise 3x3, conv 1x1 + relu, conv 3x3 stride 2, avg pool."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["b", 3, 21, 21], dt)] + [(n, s, dt) for n, s in SHAPES]) as fn:
            x, w, c, w2, w3, w4 = fn.params
            y = relax.relu(relax.add(relax.conv2d(x, w, padding=[1, 1, 1, 1]), relax.reshape(c, shape=[1, 16, 1, 1])))
            y = relax.max_pool2d(y, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])
            y = relax.conv2d(y, w2, groups=16, padding=[1, 1, 1, 1])
            y = relax.relu(relax.conv2d(y, w3))
            y = relax.conv2d(y, w4, strides=[2, 2], padding=[1, 1, 1, 1])
            fn.ret(relax.avg_pool2d(y, pool_size=[2, 2], strides=[2, 2]))
    return m


def _ref(x, w, c, w2, w3, w4):
    """The graph's ops in f64, each result rounded to bf16."""
    t = torch.nn.functional

    def r(v):
        return v.to(torch.bfloat16).double()

    x, w, c, w2, w3, w4 = (torch.from_numpy(a.astype(np.float64)) for a in (x, w, c, w2, w3, w4))
    y = r(t.relu(r(r(t.conv2d(x, w, padding=1)) + c.reshape(1, 16, 1, 1))))
    y = r(t.max_pool2d(y, 3, 2, 1))
    y = r(t.conv2d(y, w2, groups=16, padding=1))
    y = r(t.relu(r(t.conv2d(y, w3))))
    y = r(t.conv2d(y, w4, stride=2, padding=1))
    return r(t.avg_pool2d(y, 2, 2)).numpy()


@pytest.mark.parametrize("fusion", [True, False])
def test_bf16_conv_kernels_are_scheduled(fusion):
    """Every conv and pool kernel of the bf16 program gets the schedule of its f32 form."""
    ctx = relax_mlir.make_context()
    src = str(_module(ctx, "bf16"))
    with relax_mlir.make_context() as c2, ir.Location.unknown(c2):
        m = ir.Module.parse(src)
        st = dict(stages(fusion=fusion))
        run_pipeline(m, "builtin.module(" + ", ".join(st["graph"] + st["host"]) + ", relax-apply-schedules)")
        got: dict[str, set] = {}
        for f in (o.operation for o in m.body.operations):
            if "relax.kernel" in f.attributes:
                op = ir.StringAttr(f.attributes["relax.kernel_op"]).value
                for key in ("im2col", "conv_gemm", "conv_direct", "conv2d", "max_pool2d", "avg_pool2d"):
                    if key in op:
                        got.setdefault(key, set()).add(ir.StringAttr(f.attributes["relax.schedule"]).value
                                                       if "relax.schedule" in f.attributes else "")
    want = {"im2col": {"im2col"}, "conv_gemm": {"matmul"}, "conv_direct": {"conv_direct"},
            "conv2d": {"depthwise"}, "max_pool2d": {"pool"}, "avg_pool2d": {"pool"}}
    assert got == want, got


@pytest.mark.parametrize("fusion", [True, False])
def test_bf16_conv_numerics(fusion):
    ctx = relax_mlir.make_context()
    exe = relax_mlir.compile(_module(ctx, "bf16"), options={"fusion": fusion})
    ps = [(rng.standard_normal(s) * (1.0 if len(s) == 1 else 0.5)).astype(BF16) for _, s in SHAPES]
    for b in (1, 3, 8):
        x = rng.standard_normal((b, 3, 21, 21)).astype(BF16)
        got, want = exe(x, *ps), _ref(x, *ps)
        assert got.dtype == BF16 and got.shape == want.shape == (b, 24, 3, 3)
        # a few bf16 ulps of the largest value: the sums' order differs, and a value within f32
        # noise of a bf16 midpoint rounds either way in each of the six rounded ops
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 ** -6, atol=2 ** -5 * np.abs(want).max(),
                                   err_msg=f"batch {b}")


def test_torch_bf16_weight_casts_run_once_at_bind():
    """A torch-imported bf16 conv net declares its weights (``relax.num_input``): the conv
    weights' casts to f32 (and their packing) move into ``main_transform_params``
    (relax-lift-params), which ``bind_params`` runs once, keeping the f32 copies; ``main`` takes
    them as f32. The bound call gives PyTorch's bf16 answer."""
    import re
    import warnings

    from relax_mlir.frontend.torch import compile as torch_compile, import_program
    from relax_mlir.pipelines import cpu

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Conv2d(16, 8, 3, padding=1, groups=8)).to(torch.bfloat16).eval()
    example = (torch.randn(2, 3, 16, 16, dtype=torch.bfloat16),)
    dyn = ({0: torch.export.Dim("b", max=8)},)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = import_program(torch.export.export(model, example, dynamic_shapes=dyn), dynamic_shapes=dyn)
    with prog.module.context:
        run_pipeline(prog.module, "builtin.module(" + ", ".join(dict(cpu.stages())["graph"]) + ")")
    sigs = {m.group(1): m.group(2) for m in re.finditer(r"func.func @(main\w*)\((.*?)\) ->", str(prog.module))}
    weights = re.findall(r"%arg\d+: tensor<([0-9x]+)x(\w+)>", sigs["main"])   # (the input's type has ? dims)
    # the conv weights reach main as f32 (cast, and packed, once per bind); the biases stay bf16
    assert sorted(dt for dims, dt in weights if dims.count("x") >= 3) == ["f32", "f32"], sigs
    assert sorted(dt for dims, dt in weights if dims.count("x") < 3) == ["bf16", "bf16"], sigs
    assert all("bf16" in t for t in re.findall(r"tensor<[^>]*>", sigs["main_transform_params"])), sigs
    fn = torch_compile(model, example, dynamic_shapes=dyn)
    bound = fn.exe["main"].bind_params(*fn.params)
    for n in (1, 5):
        x = torch.randn(n, 3, 16, 16, dtype=torch.bfloat16)
        with torch.no_grad():
            want = model(x).float().numpy()
        got = bound(x.view(torch.int16).numpy().view(BF16)).astype(np.float32)
        np.testing.assert_allclose(got, want, rtol=2 ** -6, atol=2 ** -5 * np.abs(want).max())


def _gemm_pool_module(ctx, dt: str) -> ir.Module:
    """A conv on relax-conv-gemm's im2col + GEMM route (3 -> 8 channels) + bias + relu, then a max
    pool: relax-fuse-ops puts the GEMM's NCHW epilogue (the bias's reshape in it) before the pool."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["b", 3, 17, 17], dt), ("w", [8, 3, 3, 3], dt), ("c", [8], dt)]) as fn:
            x, w, c = fn.params
            y = relax.relu(relax.add(relax.conv2d(x, w, padding=[1, 1, 1, 1]), relax.reshape(c, shape=[1, 8, 1, 1])))
            fn.ret(relax.max_pool2d(y, pool_size=[3, 3], strides=[2, 2], padding=[1, 1]))
    return m


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_conv_epilogue_then_pool(dt):
    """The pool kernel with the conv GEMM's epilogue (transpose, bias reshape + copy, add, relu)
    in front takes the pool schedule; one executable, batch 1, 3, 8, against PyTorch."""
    ctx = relax_mlir.make_context()
    src = str(_gemm_pool_module(ctx, dt))
    with relax_mlir.make_context() as c2, ir.Location.unknown(c2):
        m = ir.Module.parse(src)
        st = dict(stages())
        run_pipeline(m, "builtin.module(" + ", ".join(st["graph"] + st["host"]) + ", relax-apply-schedules)")
        got = {ir.StringAttr(f.attributes["relax.kernel_op"]).value:
               ir.StringAttr(f.attributes["relax.schedule"]).value if "relax.schedule" in f.attributes else ""
               for f in (o.operation for o in m.body.operations) if "relax.kernel_op" in f.attributes}
    pools = {k: v for k, v in got.items() if "pool" in k}
    assert len(pools) == 1 and "permute_dims" in next(iter(pools)) and set(pools.values()) == {"pool"}, got
    exe = relax_mlir.compile(_gemm_pool_module(relax_mlir.make_context(), dt))
    np_dt = BF16 if dt == "bf16" else np.float32
    w, c = (rng.standard_normal(s).astype(np_dt) for s in ((8, 3, 3, 3), (8,)))
    t = torch.nn.functional
    for b in (1, 3, 8):
        x = rng.standard_normal((b, 3, 17, 17)).astype(np_dt)
        tx, tw, tc = (torch.from_numpy(a.astype(np.float64)) for a in (x, w, c))
        y = t.conv2d(tx, tw, padding=1)
        if dt == "bf16":   # the graph rounds the conv and the add
            y = (y.to(torch.bfloat16).double() + tc.reshape(1, 8, 1, 1)).to(torch.bfloat16).double()
        else:
            y = y + tc.reshape(1, 8, 1, 1)
        want = t.max_pool2d(t.relu(y), 3, 2, 1).numpy()
        got_ = exe(x, w, c).astype(np.float64)
        assert got_.shape == want.shape == (b, 8, 9, 9)
        tol = 2 ** -6 if dt == "bf16" else 1e-5
        np.testing.assert_allclose(got_, want, rtol=tol, atol=tol * np.abs(want).max(), err_msg=f"{dt} batch {b}")
