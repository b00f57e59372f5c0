"""Vision models through the torch.export importer with symbolic image sizes: ONE compiled
executable for every (batch, height, width) within the bounds, sizes checked at run time.

The conv/pool output sizes are symbolic expressions of the input's
(``(h + 2p - d*(k - 1) - 1) // s + 1``); chained strided windows fold to torch's own form
(``(h - 1) // 8 + 1``), so no run-time cast is needed between layers."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.export import Dim  # noqa: E402

import relax_mlir  # noqa: E402
from relax_mlir.frontend.torch import CompiledModule, from_exported_program, import_program  # noqa: E402

from torch_check import check  # noqa: E402
from bn_helpers import randomize_batch_norm  # noqa: E402


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + sum(shape) * 7 + len(shape)))


class Block(nn.Module):
    """A residual block; a strided 1x1 conv (+ batch norm) shortcut when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNetish(nn.Module):
    """Stem conv 7x7 s2 p3, max pool 3x3 s2 p1, two residual blocks (the second strided),
    adaptive average pool, linear."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.l1, self.l2 = Block(8, 8, 1), Block(8, 16, 2)
        self.head, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(16, 10)

    def forward(self, x):
        y = self.pool(F.relu(self.bn(self.stem(x))))
        return self.fc(torch.flatten(self.head(self.l2(self.l1(y))), 1))


def _image(b, h, w):
    return (_randn(b, 3, h, w),)


def test_resnetish_dynamic_batch_height_width_one_executable():
    """Compiled once; odd sizes (97x131), stride 2 of odd inputs, the smallest size torch
    allows (its guards keep every strided output >= 2: h, w >= 9); sizes outside the
    bounds fail at run time naming the bound."""
    torch.manual_seed(0)
    model = randomize_batch_norm(ResNetish(), seed=11)
    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=9, max=256), 3: Dim("w", min=9, max=256)}}
    fn = check(model, _image, [(2, 64, 64), (1, 97, 131), (3, 33, 17), (1, 9, 9), (2, 10, 256)], dyn,
               atol=1e-4, rtol=1e-4)
    assert fn.exe.functions == ["main", "main_transform_params"]   # relax-lift-params: the weights' work
    text = str(fn.program.module)
    assert text.count('"relax.conv2d"') == 6
    assert 'relax.upper_bounds = {batch = 8 : i64, h = 256 : i64, w = 256 : i64}' in text
    # the last stage: (h - 1) // 8 + 1 through stem, pool and the strided block, no cast
    assert '#relax.shape<["batch", 16, "(h - 1) // 8 + 1", "(w - 1) // 8 + 1"]>' in text
    assert '"relax.match_cast"' not in text
    msg = r"size h <= 256 \(torch.s range\) does not hold with batch = 1, h = 257, w = 20"
    with pytest.raises(relax_mlir.ShapeError, match=msg):
        fn(np.zeros((1, 3, 257, 20), np.float32))
    with pytest.raises(relax_mlir.ShapeError, match=r"size w >= 9 does not hold"):
        fn(np.zeros((1, 3, 20, 8), np.float32))


def test_resnetish_derived_dims():
    """torch's derived dims (``{2: 32*h, 3: 32*w}``): the input is ``32*h`` with h bound from
    it (torch narrows h and w to >= 2); a size that is no multiple of 32 fails at run time."""
    torch.manual_seed(1)
    model = randomize_batch_norm(ResNetish(), seed=11)
    h, w = Dim("h", min=1, max=8), Dim("w", min=1, max=8)
    dyn = {"x": {0: Dim("batch", max=4), 2: 32 * h, 3: 32 * w}}
    fn = check(model, _image, [(2, 64, 96), (1, 64, 256), (3, 160, 64)], dyn, atol=1e-4, rtol=1e-4)
    text = str(fn.program.module)
    assert 'func.func @main(%arg0: tensor<?x3x?x?xf32, #relax.shape<["batch", 3, "32*h", "32*w"]>>' in text
    assert "relax.upper_bounds = {batch = 4 : i64, h = 8 : i64, w = 8 : i64}" in text
    assert '#relax.shape<["batch", 16, "4*h", "4*w"]>' in text
    with pytest.raises(relax_mlir.ShapeError, match=r"32\*h"):
        fn(np.zeros((1, 3, 100, 64), np.float32))


def test_derived_dims_without_names():
    """Without ``dynamic_shapes`` the root symbol of a derived dim gets the input's name."""
    h = Dim("h", min=1, max=8)
    ep = torch.export.export(ResNetish().eval(), _image(1, 64, 32), dynamic_shapes={"x": {2: 32 * h}})
    module, _ = from_exported_program(ep)
    assert '%arg0: tensor<1x3x?x32xf32, #relax.shape<[1, 3, "32*x_2", 32]>>' in str(module)


class Windows(nn.Module):
    """Every window kind at once: padding, stride 2 with dilation, depthwise and grouped
    (strided 1x1) convs, padding='same' with dilation, max and average pooling."""

    def __init__(self):
        super().__init__()
        self.plain = nn.Conv2d(4, 6, 3, padding=1)
        self.dilated = nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2)
        self.depthwise = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=4)
        self.same = nn.Conv2d(4, 4, (3, 5), padding="same", dilation=(2, 1))
        self.grouped = nn.Conv2d(4, 6, 1, stride=2, groups=2)
        self.zeros = nn.Conv2d(4, 2, (5, 4), stride=3, padding=(2, 2), padding_mode="zeros")

    def forward(self, x):
        return (self.plain(x), self.dilated(x), self.depthwise(x), self.same(x), self.grouped(x), self.zeros(x),
                F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                F.adaptive_avg_pool2d(x, 1))


def test_windows_down_to_one_pixel():
    """1x1 and 1xN images where every window is valid. torch's 0/1 specialization guards
    strided outputs against 1 unless ``backed_size_oblivious`` is on (then it emits none)."""
    import torch.fx.experimental._config as fx_config

    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=1, max=256), 3: Dim("w", min=1, max=256)}}
    with fx_config.patch(backed_size_oblivious=True):
        check(Windows().eval(), lambda b, h, w: (_randn(b, 4, h, w),),
              [(2, 20, 24), (1, 1, 1), (3, 1, 7), (1, 97, 131), (2, 2, 3), (1, 6, 1)], dyn, atol=1e-4, rtol=1e-4)


class AdaptiveHeads(nn.Module):
    """Adaptive average pooling to sizes that do not divide the symbolic input sizes:
    torch's overlapping, uneven windows."""

    def forward(self, x):
        return (F.adaptive_avg_pool2d(x, (3, 2)), F.adaptive_avg_pool2d(x, 7), F.adaptive_avg_pool1d(x[:, :, 0], 4),
                F.adaptive_avg_pool2d(x, 1))


def test_adaptive_avg_pool_symbolic_sizes():
    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=2, max=256), 3: Dim("w", min=2, max=256)}}
    check(AdaptiveHeads(), lambda b, h, w: (_randn(b, 5, h, w),), [(2, 14, 14), (1, 97, 131), (3, 3, 2), (1, 7, 50)],
          dyn, atol=1e-5, rtol=1e-4)


def test_derived_dim_across_inputs():
    """A size of one input derived from another's (``s + 1``): bound once, checked on the
    second input at run time."""

    class Pair(nn.Module):
        def forward(self, a, b):
            return F.max_pool2d(a, 2) + b[:, :, 1:, 1:].mean(dim=1, keepdim=True)[:, :, ::2, ::2]

    s = Dim("s", min=2, max=64)
    dyn = {"a": {2: 2 * s, 3: 2 * s}, "b": {2: 2 * s + 1, 3: 2 * s + 1}}
    fn = check(Pair(), lambda n: (_randn(2, 3, 2 * n, 2 * n), _randn(2, 4, 2 * n + 1, 2 * n + 1, seed=1)),
               [(4,), (2,), (9,)], dyn)
    assert '%arg1: tensor<2x4x?x?xf32, #relax.shape<[2, 4, "2*s + 1", "2*s + 1"]>>' in str(fn.program.module)
    with pytest.raises(relax_mlir.ShapeError):
        fn(np.zeros((2, 3, 8, 8), np.float32), np.zeros((2, 4, 8, 8), np.float32))


class PaddingModes(nn.Module):
    """nn.Conv2d's padding modes and F.pad (constant with a value, negative = crop), all
    over symbolic H and W."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=m)
                                    for m in ("zeros", "reflect", "replicate", "circular")])

    def forward(self, x):
        return tuple(c(x) for c in self.convs) + (F.pad(x, (1, 2, -1, 3), value=0.5),
                                                    F.pad(x[:, 0], (2, 0), mode="reflect"))


@pytest.mark.parametrize("decompositions", ["default", "core"])
def test_padding_modes(decompositions):
    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=3, max=128), 3: Dim("w", min=3, max=128)}}
    fn = check(PaddingModes().eval(), lambda b, h, w: (_randn(b, 2, h, w),), [(2, 8, 9), (1, 3, 3), (3, 31, 17)], dyn,
               atol=1e-5, rtol=1e-4, decompositions=decompositions)
    # reflect needs a size above the padding (torch's rule): a run-time check, here implied
    # by torch's range (h, w >= 3), which is checked first ("core" decomposes the padding:
    # gathers and slice_scatter)
    text = str(fn.program.module)
    assert ('message = "reflect padding by 2 needs a size of at least 3"' in text) == (decompositions == "default")
    with pytest.raises(relax_mlir.ShapeError, match="size w >= 3 does not hold"):
        fn(np.zeros((1, 2, 5, 2), np.float32))


class CeilPools(nn.Module):
    """Max pooling with ceil_mode (GoogLeNet's and SqueezeNet's stems): the partial last
    window of odd sizes is kept. (With padding, torch's export guards the parity of the
    size, so no dynamic H/W: that case is left out.)"""

    def forward(self, x):
        return (F.max_pool2d(x, 3, 2, ceil_mode=True), F.max_pool2d(x, 2, 2, ceil_mode=True),
                F.max_pool2d(x, (3, 2), (1, 2), ceil_mode=True))


def test_max_pool_ceil_mode():
    """Dynamic batch over a 96x131 image, where ceil and floor mode differ for every pool.
    torch's export guards the parity of a symbolic ceil-mode size (``-2 + 2*(h // 2) < h``,
    even with ``backed_size_oblivious``), so H and W stay static here."""
    check(CeilPools(), lambda b: (_randn(b, 3, 96, 131),), [(2,), (1,), (3,)], {"x": {0: Dim("batch", max=8)}})


class DroppedCeilWindows(nn.Module):
    """ceil_mode pools whose last window may start in the bottom/right padding, which torch
    drops (padding + stride > window: the output is min(ceil((n + 2p - k) / s) + 1,
    ceil((n + p) / s))), max and average (both counts)."""

    def forward(self, x):
        return (F.max_pool2d(x, 2, 2, 1, ceil_mode=True), F.max_pool2d(x, 3, 3, 1, ceil_mode=True),
                F.max_pool2d(x, (2, 1), (2, 3), (1, 0), ceil_mode=True),
                F.avg_pool2d(x, 2, 3, 1, ceil_mode=True), F.avg_pool2d(x, 2, 3, 1, ceil_mode=True, count_include_pad=False),
                F.avg_pool2d(x, (3, 1), (2, 3), (1, 0), ceil_mode=True))


@pytest.mark.parametrize("hw", [(5, 5), (6, 7), (4, 9), (1, 2)])
def test_ceil_mode_windows_starting_in_the_padding_are_dropped(hw):
    """Vision fuzz (test/fuzz/vision_fuzz.py): these were refused ("ceil_mode=True with padding
    1 and stride 3 over a window of 3"). torch guards the drop per size, so H and W are
    static; (5, 5) drops the last window of every pool, (1, 2) is a single window."""
    check(DroppedCeilWindows(), lambda b: (_randn(b, 3, *hw),), [(2,), (1,)], {"x": {0: Dim("batch", max=4)}},
          atol=1e-5, rtol=1e-5)


class AvgCeilPools(nn.Module):
    """Average pooling in ceil mode (ResNet-D's shortcut: 2x2 stride 2, count_include_pad off;
    Inception's 3x3 stride 2 pad 1): the partial last window is divided by torch's count,
    which excludes the ceil overhang (and the padding without count_include_pad)."""

    def forward(self, x):
        return (F.avg_pool2d(x, 2, 2, ceil_mode=True, count_include_pad=False), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
                F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                F.avg_pool2d(x, (3, 2), (2, 2), (1, 0), ceil_mode=True, divisor_override=5),
                F.max_pool2d(x, 3, 2, 1, ceil_mode=True))


def test_avg_pool_ceil_mode():
    """Was refused ("ceil_mode=True is not supported"). Symbolic H and W through derived
    dims (torch proves the parity guards for multiples of 4 only), one executable; and a
    static odd image where every pool has a partial last window."""
    h, w = Dim("h", min=2, max=16), Dim("w", min=2, max=16)
    check(AvgCeilPools(), lambda b, h, w: (_randn(b, 3, h, w),), [(2, 20, 24), (1, 8, 8), (3, 12, 28), (2, 64, 64)],
          {"x": {0: Dim("batch", max=4), 2: 4 * h, 3: 4 * w}}, atol=1e-5, rtol=1e-5)
    check(AvgCeilPools(), lambda b: (_randn(b, 3, 97, 131),), [(2,), (1,)], {"x": {0: Dim("batch", max=4)}},
          atol=1e-5, rtol=1e-5)


class AdaptiveMaxHeads(nn.Module):
    """Adaptive max pooling to sizes that do not divide the symbolic input sizes."""

    def forward(self, x):
        return (F.adaptive_max_pool2d(x, (3, 2)), F.adaptive_max_pool2d(x, 4), F.adaptive_max_pool1d(x[:, :, 0], 3),
                F.adaptive_max_pool2d(x, 1))


def test_adaptive_max_pool_symbolic_sizes():
    """Vision fuzz seeds 1000000 and 1000005: adaptive max pooling of a symbolic size was
    refused ("supported: output size 1, or static input sizes divisible by the output
    size"); now a masked max per axis over torch's windows, including inputs smaller
    than the output (overlapping windows)."""
    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=2, max=256), 3: Dim("w", min=2, max=256)}}
    check(AdaptiveMaxHeads(), lambda b, h, w: (_randn(b, 5, h, w),), [(2, 14, 14), (1, 97, 131), (3, 3, 2), (1, 7, 50)],
          dyn, atol=0, rtol=0)


class HardActivations(nn.Module):
    """MobileNetV2/V3 activations: F.relu6 (aten.relu6 in newer torch), nn.ReLU6, hardswish,
    hardsigmoid (their kinks at -3, 0, 3 and 6 are in the inputs' range)."""

    def forward(self, x):
        y = x * 4.0
        return F.relu6(y), nn.ReLU6()(y), F.hardswish(y), F.hardsigmoid(y), F.hardtanh(y, -2.0, 2.0)


def test_relu6_hardswish_hardsigmoid():
    """Vision fuzz: F.relu6 was refused ("aten.relu6.default: unsupported ATen op")."""
    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=1, max=64)}}
    check(HardActivations(), lambda b, h: (_randn(b, 3, h, 5),), [(2, 9), (1, 1), (3, 64)], dyn, atol=1e-6, rtol=1e-6)


def test_example_size_one_inside_is_not_specialized_by_the_retrace():
    """Vision fuzz seed 1000057: exported under ``backed_size_oblivious`` at an example where
    a strided, dilated conv's output H is 1, the importer's ``run_decompositions`` re-trace
    (outside that mode) stated the batch norm after it as H = 1, with no guard: the
    executable refused every other size. The re-trace now runs in the mode the ranges imply."""
    import torch.fx.experimental._config as fx_config

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(2, 4, 7, stride=3, padding=1, dilation=3), nn.BatchNorm2d(4)

        def forward(self, x):
            return F.gelu(self.bn(self.conv(x)))

    model = randomize_batch_norm(Net(), seed=11)
    dyn = {"x": {0: Dim("batch", min=1, max=4), 2: Dim("h", min=17, max=97)}}
    with fx_config.patch(backed_size_oblivious=True):
        ep = torch.export.export(model, (_randn(2, 2, 19, 23),), dynamic_shapes=dyn)
    prog = import_program(ep, dynamic_shapes=dyn)
    fn = CompiledModule(prog, relax_mlir.compile(prog.module))
    for b, h in [(1, 97), (2, 19), (3, 40)]:
        x = _randn(b, 2, h, 23)
        with torch.no_grad():
            want = model(x)
        np.testing.assert_allclose(fn(x).numpy(), want.numpy(), atol=1e-4, rtol=1e-4)
