"""Pointwise (1x1, stride 1) convolutions on the cpu target: relax-conv-gemm's batch matmul
route (``pointwise=on``, docs/conv.md), numerics against PyTorch through ONE executable per
case (symbolic batch, height and width) at several batches and odd sizes (97x131, 1x1,
widths below one 16-column tile), with and without a fused bias + ReLU epilogue; O and C
below, at and above the register tile (6 rows, 64 columns) and the packing threshold
(M >= 40); static maps (a net exported at one image size) check that the kernels are
scheduled (a failed script falls back to plain loops silently). Relative error <= 1e-4.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import relax_mlir

torch = pytest.importorskip("torch")

import test_conv_codegen as conv_codegen  # noqa: E402  (its module builder and reference)

SIZES = [(1, 97, 131), (3, 16, 16), (8, 7, 7), (2, 1, 1), (1, 9, 40), (5, 28, 28)]

CASES = {
    # name: (C, O, bias + relu)
    "16_24": (16, 24, True),
    "24_144": (24, 144, True),
    "32_16": (32, 16, False),
    "5_7_odd": (5, 7, True),
    "160_96": (160, 96, False),
    "3_1": (3, 1, True),
}


def _compile(src: str):
    from relax_mlir.pipelines import cpu
    assert cpu.CONV_POINTWISE_DEFAULT == "on"
    return relax_mlir.compile(src)


@pytest.mark.parametrize("name", list(CASES))
def test_pointwise_numerics(name):
    c, o, epilogue = CASES[name]
    exe = _compile(conv_codegen._module(c, o, (1, 1), (1, 1), (0, 0), (1, 1), 1, epilogue, epilogue))
    rng = np.random.default_rng(4)
    w = rng.standard_normal((o, c, 1, 1)).astype(np.float32)
    b = rng.standard_normal((o, 1, 1)).astype(np.float32) if epilogue else None
    for n, h, wd in SIZES:
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        want = conv_codegen._reference(x, w, b, (1, 1), (0, 0), (1, 1), 1, epilogue)
        got = exe(x, w, b) if epilogue else exe(x, w)
        assert got.shape == want.shape
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert err <= 1e-4, (name, (n, h, wd), err)


def _scheduled(src: str) -> dict[str, str]:
    """Kernel symbol -> the schedule relax-apply-schedules applied (the graph stage first)."""
    from relax_mlir.pipelines.cpu import graph_stage
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ", relax-apply-schedules)")
        out = {}
        for f in m.body.operations:
            if "relax.kernel" in f.attributes:
                s = f.attributes["relax.schedule"] if "relax.schedule" in f.attributes else None
                out[str(f.attributes["sym_name"]).strip('"')] = None if s is None else str(s).strip('"')
        return out


class _Clamp6(torch.nn.Module):
    """ReLU6 as ``clamp`` (imported as full + maximum + full + minimum, like ``nn.ReLU6``)."""

    def forward(self, x):
        return torch.clamp(x, 0.0, 6.0)


class _Inverted(torch.nn.Module):
    """MobileNetV2's inverted residual: 1x1 expansion + BatchNorm + ReLU6, depthwise 3x3 +
    BatchNorm + ReLU6, 1x1 projection + BatchNorm, residual add. The two clamps share their
    ``full`` bounds after CSE; relax-fuse-ops gives each epilogue its own copy (before, the
    bounds were extra outputs of the expansion's fused kernel, which no schedule took)."""

    def __init__(self, c: int, e: int):
        super().__init__()
        bn = torch.nn.BatchNorm2d
        self.expand = torch.nn.Sequential(torch.nn.Conv2d(c, e, 1, bias=False), bn(e), _Clamp6())
        self.dw = torch.nn.Sequential(torch.nn.Conv2d(e, e, 3, 1, 1, groups=e, bias=False), bn(e), _Clamp6())
        self.project = torch.nn.Sequential(torch.nn.Conv2d(e, c, 1, bias=False), bn(c))

    def forward(self, x):
        return x + self.project(self.dw(self.expand(x)))


@pytest.mark.parametrize("hw", [14, 28, 56])
def test_inverted_residual_static_maps(hw):
    """An inverted residual exported at a static image size (dynamic batch), as the
    MobileNetV2 bench exports it: both 1x1 convs take the pointwise route with their
    epilogues (BatchNorm, ReLU6, the residual add) fused and SCHEDULED, and the numbers are
    right at batches 1 and 5 through one executable."""
    from relax_mlir.frontend.torch import from_exported_program

    torch.manual_seed(0)
    model = _Inverted(24, 144).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    n = torch.export.Dim("n", max=8)
    dyn = {"x": {0: n}}
    ep = torch.export.export(model, (torch.randn(2, 24, hw, hw),), dynamic_shapes=dyn)
    module, params = from_exported_program(ep, dynamic_shapes=dyn)
    text = str(module)
    names = _scheduled(text)
    pointwise = {k: v for k, v in names.items() if "conv1x1" in k}
    assert len(pointwise) == 2 and all(v == "conv1x1+fused" for v in pointwise.values()), names
    convs = {k: v for k, v in names.items() if "conv" in k and "pack" not in k}
    assert len(convs) == 3 and all(convs.values()), names   # the depthwise conv scheduled too
    exe = relax_mlir.compile(text)
    for b in (1, 5):
        x = np.random.default_rng(b).standard_normal((b, 24, hw, hw)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        got = exe(x, *params)
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


@pytest.mark.parametrize("c,o,hw", [(20, 16, (14, 14)), (24, 40, (9, 17)), (16, 24, (5, 6)), (8, 40, (3, 3)), (96, 144, (28, 28))])
def test_pointwise_fully_static(c, o, hw):
    """Every size static (batch 2 too; O not a multiple of 16 below 196 pixels, where the direct
    kernel would take it): the reshapes' shapes fold to constants; the kernel
    keeps its schedule and matches PyTorch."""
    from mlir import ir

    from relax_mlir.backends.cpu.apply_schedules import schedule_kernel
    from relax_mlir.pipelines.cpu import graph_stage

    h, w = hw
    xt, wt, yt = f"tensor<2x{c}x{h}x{w}xf32>", f"tensor<{o}x{c}x1x1xf32>", f"tensor<2x{o}x{h}x{w}xf32>"
    src = (f"func.func @main(%x: {xt}, %w: {wt}) -> {yt} attributes {{relax.function}} {{\n"
           f'  %0 = "relax.conv2d"(%x, %w) : ({xt}, {wt}) -> {yt}\n'
           f'  %1 = "relax.relu"(%0) : ({yt}) -> {yt}\n  return %1 : {yt}\n}}')
    m = relax_mlir.parse(src)
    with m.context, ir.Location.unknown():
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ")")
        kernels = [f.operation for f in m.body.operations if "relax.kernel" in f.attributes]
        assert [str(f.attributes["sym_name"]) for f in kernels] == ['"fused_conv1x1_relu"']
        assert schedule_kernel(kernels[0]) == "conv1x1+fused"
    exe = _compile(src)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, c, h, w)).astype(np.float32)
    wv = rng.standard_normal((o, c, 1, 1)).astype(np.float32)
    want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wv))).numpy()
    got = exe(x, wv)
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


@pytest.mark.parametrize("row_blocks", [1, 2])
@pytest.mark.parametrize("c,o,batch", [(576, 96, 1), (64, 384, 1), (192, 64, 1), (96, 40, 3), (20, 36, 2)])
def test_pointwise_14x14(c, o, batch, row_blocks, monkeypatch):
    """14x14 maps (196 pixels: 192 columns in ONE panel + a 4-column rest), the image size of
    MobileNetV2's middle 1x1 convs, at batch 1 (static too: a batch loop of one iteration):
    the kernel keeps its schedule and matches PyTorch, with one task per image (the default)
    and with ``ROW_BLOCKS`` = 2 (O split over two tasks per image where O is a multiple of
    12: 96 -> 48 + 48 rows; 64 and 40 are not: one task per image)."""
    from mlir import ir

    from relax_mlir.backends.cpu.apply_schedules import schedule_kernel
    from relax_mlir.backends.cpu.schedules import matmul
    from relax_mlir.pipelines.cpu import graph_stage

    monkeypatch.setattr(matmul, "ROW_BLOCKS", row_blocks)
    xt, wt, yt = f"tensor<{batch}x{c}x14x14xf32>", f"tensor<{o}x{c}x1x1xf32>", f"tensor<{batch}x{o}x14x14xf32>"
    src = (f"func.func @main(%x: {xt}, %w: {wt}) -> {yt} attributes {{relax.function}} {{\n"
           f'  %0 = "relax.conv2d"(%x, %w) : ({xt}, {wt}) -> {yt}\n  return %0 : {yt}\n}}')
    m = relax_mlir.parse(src)
    with m.context, ir.Location.unknown():
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ")")
        kernels = [f.operation for f in m.body.operations if "relax.kernel" in f.attributes]
        assert len(kernels) == 1 and "conv1x1" in str(kernels[0].attributes["sym_name"])
        assert schedule_kernel(kernels[0]) == "conv1x1"
        if row_blocks == 2 and batch == 1:   # the batch loop folded away: the row blocks' remain
            assert bool(re.search(r"scf.forall \(%\w+\) in \(2\)", str(m))) == (o % 12 == 0)
    exe = _compile(src)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((batch, c, 14, 14)).astype(np.float32)
    wv = rng.standard_normal((o, c, 1, 1)).astype(np.float32)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wv)).numpy()
    got = exe(x, wv)
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


class _PointwiseResidual(torch.nn.Module):
    """A 1x1 conv with its bias, ReLU6 (``clamp``: full + maximum + full + minimum once
    imported) and a residual input added: the epilogue of MobileNetV2's expansions plus an add."""

    def __init__(self, c: int, o: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, o, 1)

    def forward(self, x, r):
        return torch.clamp(self.conv(x), 0.0, 6.0) + r


def _export_residual(c: int, o: int, hw: tuple[int, int]):
    from relax_mlir.frontend.torch import from_exported_program

    torch.manual_seed(c * 1000 + o)
    model = _PointwiseResidual(c, o).eval()
    n = torch.export.Dim("n", max=8)
    dyn = {"x": {0: n}, "r": {0: n}}
    ep = torch.export.export(model, (torch.randn(2, c, *hw), torch.randn(2, o, *hw)), dynamic_shapes=dyn)
    module, params = from_exported_program(ep, dynamic_shapes=dyn)
    return model, str(module), params


def _fused_kernel_ir(text: str) -> str:
    """The pointwise kernel after scheduling, bufferization and relax-omp-threads (the cpu
    pipeline's codegen stage up to it)."""
    from mlir import ir

    from relax_mlir.pipelines.cpu import graph_stage, llvm_stage
    st = llvm_stage()
    m = relax_mlir.parse(text)
    with m.context, ir.Location.unknown():
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage() + st[:st.index("relax-omp-threads") + 1])
                                + ")")
        fns = [f for f in m.body.operations if "relax.schedule" in f.attributes
               and "conv1x1" in str(f.attributes["relax.schedule"])]
        assert len(fns) == 1, [str(f.attributes["sym_name"]) for f in m.body.operations]
        assert str(fns[0].attributes["relax.schedule"]) == '"conv1x1+fused"'
        return str(fns[0])


@pytest.mark.parametrize("c,o,hw", [(24, 36, (14, 14)), (48, 90, (13, 17)), (16, 90, (28, 28)), (40, 36, (9, 9)),
                                    (24, 90, (8, 8)), (32, 36, (16, 16))])
def test_pointwise_fused_epilogue(c, o, hw):
    """bias + ReLU6 + a residual add fused into the pointwise conv at a static image size (as
    the nets are exported; 14x14, 13x17, 28x28, 9x9: a column remainder, two panels per image;
    8x8, 16x16: one task per image): relax-epilogue-in-place runs the epilogue in place on the
    product and the schedule puts it in the batch matmul's tasks: ONE parallel region, no
    output-sized buffer (no dynamic alloc, no copy, the kernel returns nothing: its result is
    its output argument), its FLOPs given to relax-omp-threads (2*C per output element); the
    numbers match PyTorch at batches 1, 3 and 8 through one executable."""
    model, text, params = _export_residual(c, o, hw)
    ir_text = _fused_kernel_ir(text)
    assert ir_text.count("omp.parallel") == 1, ir_text
    assert not re.search(r"memref\.alloc\(%", ir_text) and "memref.copy" not in ir_text, ir_text
    assert re.search(r"relax\.flops_per_output = %d : i64" % (2 * c), ir_text)
    header = ir_text.splitlines()[0]
    assert ") attributes" in header and "->" not in header, header   # no result: the output argument
    exe = relax_mlir.compile(text)
    rng = np.random.default_rng(7)
    for n in (1, 3, 8):
        x = rng.standard_normal((n, c, *hw)).astype(np.float32)
        r = rng.standard_normal((n, o, *hw)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x), torch.from_numpy(r)).numpy()
        got = exe(x, r, *params)
        assert got.shape == want.shape
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err <= 1e-5, (n, err)


def test_pointwise_symbolic_size_keeps_two_passes():
    """With a symbolic image size (two dynamic dims besides the batch) the in-place form is not
    made (its returned expand_shape would not fold back to the output argument: a copy per
    call): the epilogue stays a second pass by output rows (``conv1x1+elementwise``), and the
    numbers are right at odd sizes through one executable."""
    names = _scheduled(conv_codegen._module(24, 36, (1, 1), (1, 1), (0, 0), (1, 1), 1, True, True))
    assert [v for k, v in names.items() if "conv1x1" in k] == ["conv1x1+elementwise"], names
