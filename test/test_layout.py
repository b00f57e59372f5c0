"""Channels-last convolutions and pooling (``data_layout = "NHWC"``, HWIO weights) against
PyTorch: groups 1, depthwise and grouped, strides / padding / dilation, half types; every
case compiles ONE executable with symbolic batch, height and width and runs it at several
sizes (1, odd, larger)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import relax_mlir  # noqa: E402
from mlir import ir  # noqa: E402
from relax_mlir.dialects import relax  # noqa: E402
from relax_mlir.frontend.builder import graph_function  # noqa: E402

SIZES = [(1, 1, 1), (1, 7, 9), (2, 13, 11), (3, 32, 29)]


def _nchw(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a.transpose(0, 3, 1, 2)))


def _conv_module(cin: int, cout: int, k: tuple, s, p, d, g: int, dtype: str = "f32"):
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", "h", "w", cin], dtype),
                                        ("w", [k[0], k[1], cin // g, cout], dtype)]) as fn:
            x, w = fn.params
            fn.ret(relax.conv2d(x, w, strides=s, padding=p, dilation=d, groups=g, data_layout="NHWC"))
    return m


CONVS = [  # (cin, cout, kernel, strides, padding, dilation, groups)
    (3, 8, (3, 3), [1, 1], [1, 1], [1, 1], 1),
    (4, 16, (3, 2), [2, 1], [1, 0, 2, 1], [1, 2], 1),
    (5, 7, (1, 1), [1, 1], [0, 0], [1, 1], 1),
    (6, 4, (1, 1), [2, 2], [0, 0], [1, 1], 1),
    (16, 16, (3, 3), [1, 1], [1, 1], [1, 1], 16),
    (8, 8, (3, 3), [2, 2], [1, 1], [1, 1], 8),
    (8, 8, (5, 5), [1, 1], [2, 2], [2, 2], 8),
    (6, 9, (3, 3), [1, 2], [1, 1], [1, 1], 3),
    # channels that fill whole vectors: the conv_nhwc schedule (symbolic width: 8-column
    # tiles, the rest scalar)
    (32, 32, (3, 3), [1, 1], [1, 1], [1, 1], 32),
    (32, 32, (3, 3), [2, 2], [1, 1], [1, 1], 32),
    (24, 32, (3, 3), [1, 1], [1, 1], [1, 1], 1),
    (3, 32, (3, 3), [2, 2], [1, 1], [1, 1], 1),
]


@pytest.mark.parametrize("cin,cout,k,s,p,d,g", CONVS,
                         ids=["3x3", "3x2s2x1d1x2asym", "1x1", "1x1s2", "dw3x3", "dw3x3s2", "dw5x5d2",
                              "grouped3", "dw32", "dw32s2", "3x3_24to32", "stem3to32s2"])
def test_conv_nhwc(cin, cout, k, s, p, d, g):
    exe = relax_mlir.compile(_conv_module(cin, cout, k, s, p, d, g))
    rng = np.random.default_rng(0)
    wt = rng.standard_normal((k[0], k[1], cin // g, cout), dtype=np.float32)
    pad4 = p + p if len(p) == 2 else p
    ran = 0
    for n, h, w in SIZES:
        if h + pad4[0] + pad4[2] < d[0] * (k[0] - 1) + 1 or w + pad4[1] + pad4[3] < d[1] * (k[1] - 1) + 1:
            continue
        x = rng.standard_normal((n, h, w, cin), dtype=np.float32)
        xt = F.pad(_nchw(x), (pad4[1], pad4[3], pad4[0], pad4[2]))
        ref = F.conv2d(xt, torch.from_numpy(wt).permute(3, 2, 0, 1), stride=s, dilation=d, groups=g)
        got = exe(x, wt)
        np.testing.assert_allclose(got, ref.permute(0, 2, 3, 1).numpy(), rtol=1e-4, atol=1e-4)
        ran += 1
    assert ran >= 3


def test_conv_nhwc_f16_accumulates_in_f32():
    exe = relax_mlir.compile(_conv_module(8, 8, (3, 3), [1, 1], [1, 1], [1, 1], 8, "f16"))
    rng = np.random.default_rng(1)
    wt = rng.standard_normal((3, 3, 1, 8)).astype(np.float16)
    for n, h, w in SIZES[1:]:
        x = rng.standard_normal((n, h, w, 8)).astype(np.float16)
        ref = F.conv2d(_nchw(x.astype(np.float32)), torch.from_numpy(wt.astype(np.float32)).permute(3, 2, 0, 1),
                       padding=1, groups=8).permute(0, 2, 3, 1).numpy()
        np.testing.assert_allclose(exe(x, wt).astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def _pool_module(op: str, k, s, p, dtype="f32", **kw):
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", "h", "w", 5], dtype)]) as fn:
            fn.ret(getattr(relax, op)(fn.params[0], pool_size=k, strides=s, padding=p, data_layout="NHWC", **kw))
    return m


@pytest.mark.parametrize("k,s,p,d", [([3, 3], [2, 2], [1, 1], [1, 1]), ([2, 3], [1, 2], [1, 0], [2, 1])],
                         ids=["3x3s2p1", "2x3s1x2p1x0d2x1"])
def test_max_pool_nhwc(k, s, p, d):
    exe = relax_mlir.compile(_pool_module("max_pool2d", k, s, p, dilation=d))
    rng = np.random.default_rng(2)
    for n, h, w in SIZES[1:]:
        x = rng.standard_normal((n, h, w, 5), dtype=np.float32)
        ref = F.max_pool2d(_nchw(x), k, s, p, d).permute(0, 2, 3, 1).numpy()
        np.testing.assert_array_equal(exe(x), ref)


def test_max_pool_nhwc_int():
    exe = relax_mlir.compile(_pool_module("max_pool2d", [3, 3], [2, 2], [1, 1], dtype="i32"))
    rng = np.random.default_rng(3)
    for n, h, w in SIZES[1:]:
        x = rng.integers(-1000, 1000, (n, h, w, 5), dtype=np.int32)
        ref = F.max_pool2d(_nchw(x.astype(np.float32)), 3, 2, 1).permute(0, 2, 3, 1).numpy().astype(np.int32)
        np.testing.assert_array_equal(exe(x), ref)


@pytest.mark.parametrize("cip", [True, False], ids=["count_pad", "exclude_pad"])
def test_avg_pool_nhwc(cip):
    exe = relax_mlir.compile(_pool_module("avg_pool2d", [3, 3], [2, 2], [1, 1], count_include_pad=cip))
    rng = np.random.default_rng(4)
    for n, h, w in SIZES[1:]:
        x = rng.standard_normal((n, h, w, 5), dtype=np.float32)
        ref = F.avg_pool2d(_nchw(x), 3, 2, 1, count_include_pad=cip).permute(0, 2, 3, 1).numpy()
        np.testing.assert_allclose(exe(x), ref, rtol=1e-5, atol=1e-6)


def _epilogue_module(cin: int, cout: int, s: int, g: int, hw=None, k: int = 3):
    """conv kxk (padding k // 2) NHWC + bias + ReLU6, symbolic batch; ``hw`` a static map size
    (None: symbolic height and width)."""
    ctx = relax_mlir.make_context()
    sz = ["h", "w"] if hw is None else [hw, hw]
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "main", [("x", ["n", *sz, cin], "f32"), ("w", [k, k, cin // g, cout], "f32"),
                                        ("b", [cout], "f32")]) as fn:
            x, w, b = fn.params
            y = relax.conv2d(x, w, strides=[s, s], padding=[k // 2, k // 2], groups=g, data_layout="NHWC") + b
            fn.ret(relax.minimum(relax.maximum(y, 0.0), 6.0))
    return m


SCHEDULED = [(32, 32, 1, 32, None, 3, "conv_nhwc"), (32, 32, 2, 32, 14, 3, "conv_nhwc"),
             (16, 16, 1, 16, 112, 3, "conv_nhwc"), (24, 32, 1, 1, 56, 3, "conv_nhwc"),
             (3, 32, 2, 1, 224, 3, "conv_nhwc"), (48, 64, 2, 1, None, 3, "conv_nhwc"),
             (24, 144, 1, 1, 56, 1, "conv1x1+elementwise"), (40, 24, 1, 1, None, 1, "conv1x1+elementwise")]


@pytest.mark.parametrize("cin,cout,s,g,hw,k,schedule", SCHEDULED,
                         ids=["dw32", "dw32s2_14", "dw16_112", "24to32_56", "stem224", "48to64s2",
                              "1x1_56", "1x1"])
def test_conv_nhwc_schedule_applies(cin, cout, s, g, hw, k, schedule):
    """Channels that fill vectors (AVX-512: 16 lanes): the conv_nhwc schedule (a 1x1 stride-1
    conv: the matmul's, on the (N*H*W, C) view, its epilogue by output rows) APPLIES to the
    conv + epilogue kernel (a failed script would leave plain loops silently) and the numbers
    are right at several batches (and sizes, when symbolic)."""
    import re
    m = _epilogue_module(cin, cout, s, g, hw, k)
    text = str(m)
    p = relax_mlir.parse(text)
    with p.context:
        relax_mlir.run_pipeline(p, "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, "
                                   "relax-fuse-ops, relax-fuse-kernels, relax-apply-schedules{target=avx512})")
    assert re.findall(r'relax\.schedule = "([^"]+)"', str(p)) == [schedule]
    exe = relax_mlir.compile(m)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((k, k, cin // g, cout), dtype=np.float32)
    b = rng.standard_normal(cout, dtype=np.float32)
    for n, h in ([(1, hw), (3, hw)] if hw else [(1, 1), (2, 9), (1, 30)]):
        x = rng.standard_normal((n, h, h, cin), dtype=np.float32)
        ref = F.conv2d(_nchw(x), torch.from_numpy(w).permute(3, 2, 0, 1), stride=s, padding=k // 2, groups=g)
        ref = (ref.permute(0, 2, 3, 1) + torch.from_numpy(b)).clamp(0, 6).numpy()
        np.testing.assert_allclose(exe(x, w, b), ref, rtol=1e-4, atol=1e-4)


def _small_net():
    """A stem (3x3/2 + BatchNorm + ReLU6), a 3x3/2 max pool, an inverted-residual block
    (1x1 expand, depthwise 3x3, 1x1 project, residual add), a strided basic block with a 1x1
    shortcut, a global average pool and a linear head: every op relax-convert-layout moves."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
            self.pool = nn.MaxPool2d(3, 2, 1)
            self.expand = nn.Sequential(nn.Conv2d(16, 32, 1), nn.ReLU6())
            self.dw = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1, groups=32), nn.ReLU6())
            self.project = nn.Conv2d(32, 16, 1)
            self.body = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 32, 3, 1, 1))
            self.short = nn.Conv2d(16, 32, 1, 2)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            y = self.pool(self.stem(x))
            y = y + self.project(self.dw(self.expand(y)))
            y = torch.relu(self.body(y) + self.short(y))
            return self.head(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))

    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        bn = net.stem[1]
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
    return net.eval()


def test_convert_layout_end_to_end():
    """The cpu pipeline with ``layout=NHWC`` (relax-convert-layout,
    the NHWC kernels and schedules) against eager PyTorch: one executable exported with a
    symbolic batch, height and width, run at several sizes; the graph keeps one transpose at
    the input and one before the head."""
    import warnings

    from relax_mlir.frontend.torch import compile as tcompile
    net = _small_net()
    b, h, w = torch.export.Dim("b", max=4), torch.export.Dim("h", min=16, max=128), torch.export.Dim("w", min=16, max=128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = tcompile(net, (torch.randn(2, 3, 32, 40),), dynamic_shapes=({0: b, 2: h, 3: w},),
                      options=relax_mlir.CompileOptions(pipeline_options={"layout": "NHWC"}, dump_ir=None))
    rng = np.random.default_rng(6)
    for n, hh, ww in [(1, 16, 16), (2, 33, 47), (3, 64, 64)]:
        x = rng.standard_normal((n, 3, hh, ww), dtype=np.float32)
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(fn.run(x), ref, rtol=1e-4, atol=1e-4)


def test_convert_layout_transposes_at_the_ends():
    """After relax-convert-layout the small net's graph has exactly two activation transposes
    (the input to NHWC, the pooled features back) besides the weights' OIHW -> HWIO ones."""
    import re
    import warnings

    from relax_mlir.frontend.torch import import_program
    net = _small_net()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(net, (torch.randn(2, 3, 32, 32),))
    m = import_program(ep).module
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-fold-batch-norm, relax-dce, "
                                   "relax-convert-layout, relax-dce)")
    perms = re.findall(r'"relax.permute_dims"\(\S+\) \{axes = array<i64: ([0-9, ]+)>\}', str(m))
    assert sorted(p for p in perms if p != "2, 3, 1, 0") == ["0, 2, 3, 1", "0, 3, 1, 2"]
    assert perms.count("2, 3, 1, 0") == 7   # one per conv weight


def test_pipeline_layout_option():
    """relax-convert-layout runs only when asked (``layout=NHWC``), after the BatchNorm fold
    and before relax-conv-gemm; ``NCHW`` and the default leave the pipeline as it was."""
    from relax_mlir.pipelines.cpu import graph_stage
    default = graph_stage()
    assert not any(p.startswith("relax-convert-layout") for p in default)
    assert graph_stage(layout="NCHW") == default
    nhwc = graph_stage(layout="NHWC")
    at = nhwc.index("relax-convert-layout{layout=NHWC}")
    assert nhwc[:at] + nhwc[at + 1:] == default
    assert nhwc.index("relax-fold-batch-norm") < at < min(i for i, p in enumerate(nhwc) if p.startswith("relax-conv-gemm"))
