"""The cpu pipeline with fusion off (``options={"fusion": False}``, ``cpu{fusion=false}``): every
kernel still gets the schedule its op gets alone (relax-annotate-kernel-kinds runs whether or
not relax-fuse-ops does; the schedules select by the recorded kind, and without it every
unfused kernel went through plain loops: a (16, 512) x (512, 512) matmul 8.5 ms instead of
0.11), and ONE executable per program gives numpy's / PyTorch's answer at sizes 1, odd and
large, with library dispatch on and off."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend import models
from relax_mlir.frontend.builder import graph_function
from relax_mlir.pipelines.cpu import stages
from relax_mlir.transforms.pipeline import run_pipeline

MLP = models.MLPConfig(d_in=64, d_hidden=96, d_out=40)
BLOCK = models.BlockConfig(d_model=64, heads=2, d_ffn=96)
SIZES = [1, 7, 64, 300]
rng = np.random.default_rng(0)


def _ln_block(ctx) -> ir.Module:
    """A pre-norm attention block with LayerNorm (the models' block has RMSNorm) and a gelu MLP."""
    D, H = 64, 96
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        names = [("x", ["n", D]), ("g1", [D]), ("c1", [D]), ("wq", [D, D]), ("wk", [D, D]), ("wv", [D, D]),
                 ("wo", [D, D]), ("g2", [D]), ("c2", [D]), ("w1", [D, H]), ("b1", [H]), ("w2", [H, D]), ("b2", [D])]
        with graph_function(m, "main", [(n, s, "f32") for n, s in names]) as fn:
            x, g1, c1, wq, wk, wv, wo, g2, c2, w1, b1, w2, b2 = fn.params
            h = relax.layer_norm(x, g1, c1, axes=[-1], epsilon=1e-5)
            q, k, v = relax.matmul(h, wq), relax.matmul(h, wk), relax.matmul(h, wv)
            p = relax.softmax(relax.matmul(q, relax.permute_dims(k, axes=[1, 0])))
            x2 = x + relax.matmul(relax.matmul(p, v), wo)
            h2 = relax.layer_norm(x2, g2, c2, axes=[-1], epsilon=1e-5)
            fn.ret(x2 + relax.matmul(relax.gelu(relax.matmul(h2, w1) + b1), w2) + b2)
    return m


def _ln_block_params() -> list[np.ndarray]:
    D, H = 64, 96
    shapes = [(D,), (D,), (D, D), (D, D), (D, D), (D, D), (D,), (D,), (D, H), (H,), (H, D), (D,)]
    return [(rng.standard_normal(s) * (0.15 if len(s) == 2 else 1.0)).astype(np.float32) for s in shapes]


def _ln_block_ref(x, g1, c1, wq, wk, wv, wo, g2, c2, w1, b1, w2, b2):
    t = torch.nn.functional
    x, g1, c1, wq, wk, wv, wo, g2, c2, w1, b1, w2, b2 = (torch.from_numpy(a).double() for a in
                                                         (x, g1, c1, wq, wk, wv, wo, g2, c2, w1, b1, w2, b2))
    h = t.layer_norm(x, (x.shape[-1],), g1, c1, 1e-5)
    p = torch.softmax((h @ wq) @ (h @ wk).T, -1)
    x2 = x + (p @ (h @ wv)) @ wo
    h2 = t.layer_norm(x2, (x2.shape[-1],), g2, c2, 1e-5)
    return (x2 + t.gelu(h2 @ w1 + b1) @ w2 + b2).numpy()


def _cnn(ctx) -> ir.Module:
    """conv2d + bias + relu, a depthwise conv2d, a max pool (NCHW, batch symbolic)."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["b", 3, 17, 17], "f32"), ("w", [8, 3, 3, 3], "f32"),
                                        ("c", [8], "f32"), ("w2", [8, 1, 3, 3], "f32")]) as fn:
            x, w, c, w2 = fn.params
            y = relax.relu(relax.add(relax.conv2d(x, w, padding=[1, 1, 1, 1]), relax.reshape(c, shape=[1, 8, 1, 1])))
            y = relax.conv2d(y, w2, groups=8, padding=[1, 1, 1, 1])
            fn.ret(relax.max_pool2d(y, pool_size=[2, 2], strides=[2, 2]))
    return m


def _cnn_ref(x, w, c, w2):
    t = torch.nn.functional
    x, w, c, w2 = (torch.from_numpy(a).double() for a in (x, w, c, w2))
    y = t.conv2d(t.relu(t.conv2d(x, w, c, padding=1)), w2, groups=8, padding=1)
    return t.max_pool2d(y, 2, 2).numpy()


#: program -> (module builder, params, the input at size n, reference)
PROGRAMS = {
    "mlp": (lambda ctx: models.mlp_module(ctx, MLP), lambda: models.mlp_params(MLP, rng),
            lambda n: rng.standard_normal((n, MLP.d_in)).astype(np.float32), models.mlp_reference),
    "block": (lambda ctx: models.block_module(ctx, BLOCK), lambda: models.block_params(BLOCK, rng),
              lambda n: rng.standard_normal((n, BLOCK.d_model)).astype(np.float32),
              lambda *a: models.block_reference(*a, cfg=BLOCK)),
    "ln_block": (_ln_block, _ln_block_params, lambda n: rng.standard_normal((n, 64)).astype(np.float32),
                 _ln_block_ref),
    "cnn": (_cnn, lambda: [rng.standard_normal(s).astype(np.float32) for s in ((8, 3, 3, 3), (8,), (8, 1, 3, 3))],
            lambda n: rng.standard_normal((n, 3, 17, 17)).astype(np.float32), _cnn_ref),
}

#: relax.kernel_op -> the schedules its kernels get alone ("": plain loops; a matmul's range
#: variants take the GEMV or the register-tiled schedule)
ALONE = {
    "matmul": {"gemv", "matmul"}, "matmul/batch": {"batch_gemv", "batch_matmul"},
    "rms_norm": {"rows"}, "layer_norm": {"rows"}, "softmax": {"rows"},
    "add": {"elementwise"}, "multiply": {"elementwise"}, "relu": {"elementwise"}, "gelu": {"elementwise"},
    "silu": {"elementwise"}, "triu": {"elementwise"},
    "conv_gemm": {"matmul"}, "im2col": {"im2col"}, "conv2d": {"depthwise"}, "max_pool2d": {"pool"},
    "permute_dims": {"permute_rows", ""},   # (1, 0, 2) row copies; other permutations plain loops
    "reshape": {""}, "full": {""},          # copies and fills: no schedule alone either
}


def schedules_by_op(module_text: str, fusion: bool) -> dict[str, set[str]]:
    """relax.kernel_op -> the schedules relax-apply-schedules gave its kernels, the cpu
    pipeline's graph and host stages run first (library dispatch off: every matmul is ours);
    relax-specialize-ranges' dispatchers (which only pick a variant) left out."""
    with relax_mlir.make_context() as ctx, ir.Location.unknown(ctx):
        m = ir.Module.parse(module_text)
        st = dict(stages(fusion=fusion, dispatch=False))
        run_pipeline(m, "builtin.module(" + ", ".join(st["graph"] + st["host"])
                     + ", relax-specialize-ranges, relax-apply-schedules)")
        out: dict[str, set[str]] = {}
        for f in (o.operation for o in m.body.operations):
            if "relax.kernel" not in f.attributes or "relax.range_dispatch" in f.attributes:
                continue
            op = ir.StringAttr(f.attributes["relax.kernel_op"]).value
            name = ir.StringAttr(f.attributes["relax.schedule"]).value if "relax.schedule" in f.attributes else ""
            if op == "matmul" and name.startswith("batch_"):
                op = "matmul/batch"
            out.setdefault(op, set()).add(name)
        return out


@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_unfused_kernels_get_their_schedules(prog):
    ctx = relax_mlir.make_context()
    got = schedules_by_op(str(PROGRAMS[prog][0](ctx)), fusion=False)
    for op, names in got.items():
        assert op in ALONE and names <= ALONE[op], (prog, op, names)
    if prog != "cnn":   # every matmul's variants: the GEMV ones and the register-tiled ones
        assert got["matmul"] == {"gemv", "matmul"}, got
    expected = {"mlp": {"matmul", "add", "relu"},
                "block": {"matmul", "matmul/batch", "rms_norm", "softmax", "add", "multiply", "silu", "triu",
                          "permute_dims", "reshape", "full"},
                "ln_block": {"matmul", "layer_norm", "softmax", "add", "gelu", "permute_dims"},
                "cnn": {"conv_gemm", "im2col", "conv2d", "max_pool2d", "permute_dims", "add", "relu", "reshape"}}
    assert set(got) == expected[prog], got


def test_fusion_off_matmul_is_scheduled():
    """The reported case: one matmul, fusion off, gets the GEMV / register-tiled variants."""
    src = ('func.func @main(%x: tensor<?x512xf32, #relax.shape<["m", 512]>>, %w: tensor<512x512xf32>) '
           '-> tensor<?x512xf32, #relax.shape<["m", 512]>> attributes {relax.function} {\n'
           '  %0 = "relax.matmul"(%x, %w) : (tensor<?x512xf32, #relax.shape<["m", 512]>>, tensor<512x512xf32>) '
           '-> tensor<?x512xf32, #relax.shape<["m", 512]>>\n'
           '  return %0 : tensor<?x512xf32, #relax.shape<["m", 512]>>\n}\n')
    assert schedules_by_op(src, fusion=False) == schedules_by_op(src, fusion=True) == {"matmul": {"gemv", "matmul"}}


@pytest.mark.parametrize("dispatch", [True, False])
@pytest.mark.parametrize("prog", list(PROGRAMS))
def test_unfused_numerics(prog, dispatch):
    build, params, make_x, ref = PROGRAMS[prog]
    ctx = relax_mlir.make_context()
    exe = relax_mlir.compile(build(ctx), options={"fusion": False, "dispatch": dispatch})
    ps = params()
    for n in SIZES if prog != "cnn" else [1, 3, 8]:
        args = [make_x(n)] + ps
        got, want = exe(*args), ref(*args)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.abs(want).max(), err_msg=f"{prog} n={n}")
