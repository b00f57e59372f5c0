"""relax-fold-batch-norm: conv2d + inference BatchNorm imported from PyTorch, folded at graph
level, numerics against PyTorch eager through ONE executable at several batches (and image
sizes where the net allows symbolic ones)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import relax_mlir  # noqa: E402
from relax_mlir.frontend.torch import compile as torch_compile, import_program  # noqa: E402
from relax_mlir.transforms.pipeline import run_pipeline  # noqa: E402
from bn_helpers import randomize_batch_norm  # noqa: E402


class Net(torch.nn.Module):
    """conv(bias) -> BN -> relu; depthwise conv -> BN -> relu6; strided 1x1 conv -> BN;
    a BN after a relu (no conv before it); a residual add."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=True)
        self.b1 = torch.nn.BatchNorm2d(8)
        self.dw = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False)
        self.b2 = torch.nn.BatchNorm2d(8)
        self.pw = torch.nn.Conv2d(8, 16, 1, stride=2, bias=False)
        self.b3 = torch.nn.BatchNorm2d(16)
        self.b4 = torch.nn.BatchNorm2d(16)
        self.relu6 = torch.nn.ReLU6()

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.relu6(self.b2(self.dw(y)))
        z = self.b3(self.pw(y))
        return self.b4(torch.relu(z)) + z


def _graph_ops(module) -> str:
    with module.context:
        run_pipeline(module, "builtin.module(relax-infer-shapes, relax-fold-batch-norm, relax-dce)")
    return str(module)


def test_folded_graph():
    """Each of the three convs' BatchNorms is folded (the conv result feeds one add, not a
    multiply); the BN after the relu stays a per-channel multiply and add."""
    net = randomize_batch_norm(Net(), seed=1, var_spread=1.0)
    b = torch.export.Dim("batch", max=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(net, (torch.randn(2, 3, 16, 16),), dynamic_shapes={"x": {0: b}})
    text = _graph_ops(import_program(ep, dynamic_shapes={"x": {0: b}}).module)
    convs = re.findall(r'(%\d+) = "relax\.conv2d"', text)
    assert len(convs) == 3
    for c in convs:
        users = re.findall(rf'= "relax\.(\w+)"\([^)]*{c}[,)]', text)
        assert users == ["add"], (c, users)
    # the weights are scaled: three multiplies of a weight by a [C, 1, 1, 1] scale
    assert len(re.findall(r'"relax\.multiply"\(%arg\d+, %\d+\) : \(tensor<\d+x\d+x\d+x\d+xf32>, '
                          r'tensor<\d+x1x1x1xf32>\)', text)) == 3
    # the fourth BatchNorm (after relu) is a multiply of the activation and one add
    assert len(re.findall(r'"relax\.multiply"\(%\d+, %\d+\) : \(tensor<\?x16x4x4xf32', text)) == 1


def test_numerics_one_executable():
    """One executable (dynamic batch), batches 1, 3, 8 against eager; the inner image is odd
    (17x17: the strided convs round down)."""
    net = randomize_batch_norm(Net(), seed=1, var_spread=1.0)
    b = torch.export.Dim("batch", max=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = torch_compile(net, (torch.randn(2, 3, 17, 17),), dynamic_shapes={"x": {0: b}})
    g = torch.Generator().manual_seed(0)
    for n in (1, 3, 8):
        x = torch.randn(n, 3, 17, 17, generator=g)
        with torch.no_grad():
            ref = net(x).numpy()
        got = fn.run(x.numpy())
        assert got.shape == ref.shape == (n, 16, 5, 5)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


def test_fold_pass_in_cpu_pipeline():
    """The cpu graph stage runs the fold right after shape inference (and the cpu's bf16
    matmul widening, which rewrites matmuls only)."""
    from relax_mlir.pipelines import cpu

    stages = [s for s in cpu.graph_stage() if s != "relax-widen-bf16-matmul"]
    assert stages[:2] == ["relax-infer-shapes", "relax-fold-batch-norm"]


def test_many_folded_batch_norms_compile():
    """24 conv + BatchNorm layers: after the fold, the weight-side chains share the (CSE'd)
    epsilon constant; relax-fuse-ops must not join them into one kernel with more results
    than a call_tir holds (it raised 'at most 16 runs of differently typed values, got 45'
    on MobileNetV2). Numerics against eager at two batches through one executable."""
    layers = []
    for i in range(12):
        layers += [torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), torch.nn.BatchNorm2d(8),
                   torch.nn.ReLU6(), torch.nn.Conv2d(8, 8, 1, bias=False), torch.nn.BatchNorm2d(8)]
    net = randomize_batch_norm(torch.nn.Sequential(*layers), seed=1, var_spread=1.0)
    b = torch.export.Dim("batch", max=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = torch_compile(net, (torch.randn(2, 8, 9, 9),), dynamic_shapes=({0: b},))
    for n in (1, 4):
        x = torch.randn(n, 8, 9, 9, generator=torch.Generator().manual_seed(n))
        with torch.no_grad():
            ref = net(x).numpy()
        np.testing.assert_allclose(fn.run(x.numpy()), ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


@pytest.mark.parametrize("direct", ["off", "all"])
def test_unfolded_batch_norm_fuses_with_neighbours(direct, monkeypatch):
    """After the cpu graph stage, the BatchNorm after the relu (not folded: no conv before
    it) is a multiply and an add inside one kernel with the relu and the residual add; every
    conv's epilogue (bias, relu, relu6) is fused into one kernel: the depthwise conv's own,
    for a conv relax-conv-gemm turns into im2col + GEMM the kernel that permutes the GEMM's
    result back to NCHW, for one it turns into the direct kernel (``direct=all``) that kernel.
    The folded bias ``b * s + t`` of the first conv is no longer in its epilogue: it depends
    on weights only, so relax-lift-params moved it into ``main_transform_params``."""
    from relax_mlir.pipelines import cpu

    monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", direct)

    net = randomize_batch_norm(Net(), seed=1, var_spread=1.0)
    b = torch.export.Dim("batch", max=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(net, (torch.randn(2, 3, 16, 16),), dynamic_shapes={"x": {0: b}})
    module = import_program(ep, dynamic_shapes={"x": {0: b}}).module
    with module.context:
        stage = cpu.graph_stage(plan_memory=False)
        run_pipeline(module, "builtin.module(" + ", ".join(stage[:stage.index("relax-lower-host")]) + ")")
    text = str(module)
    main = text[text.index("func.func @main"):]
    main = main[:main.index("\n  }\n")]
    kernels = [k for k in re.findall(r"callee = @(\w+)", main) if "conv2d" in k or "permute_dims" in k
               or "conv_direct" in k]
    if direct == "all":
        assert kernels == ["fused_conv_direct_add_relu", "fused_conv2d_add_full_maximum_full_minimum",
                           "fused_conv_direct_add_relu_multiply_add_add"]
        from relax_mlir.backends.cpu import schedules
        with module.context:
            picked = {str(f.attributes["sym_name"]).strip('"'): schedules.select(f.operation)
                      for f in module.body.operations if "relax.kernel" in f.attributes}
        assert [picked[k].name for k in kernels] == ["conv_direct", "depthwise", "conv_direct"]
        return
    assert kernels == ["fused_permute_dims_add_relu", "fused_conv2d_add_full_maximum_full_minimum",
                       "fused_permute_dims_add_relu_multiply_add_add"]
