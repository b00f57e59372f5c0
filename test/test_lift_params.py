"""relax-lift-params end to end: weight-only work (BatchNorm folded into conv weights, the
direct conv route's weight packing, folded biases) runs in ``main_transform_params``, once at
``bind_params``; plain calls keep ``main(*inputs, *weights)``. Numerics of ResNet- and
MobileNet-style nets against PyTorch at several batches and odd image sizes through ONE
executable, bound and plain."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.export import Dim  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import relax_mlir  # noqa: E402
from relax_mlir.frontend.torch import compile as torch_compile, import_program  # noqa: E402
from relax_mlir.runtime.executable import LiftedFunction, LiftedPreparedCall  # noqa: E402
from relax_mlir.transforms.pipeline import run_pipeline  # noqa: E402
from bn_helpers import randomize_batch_norm  # noqa: E402


class ResNetish(nn.Module):
    """7x7/2 stem + BN + max pool, a residual block of 3x3 convs with 16 channels (the direct
    route: O a multiple of the SIMD lanes), a strided block with a 1x1 shortcut, head."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.c1, self.b1 = nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32)
        self.sc, self.bs = nn.Conv2d(16, 32, 1, 2, bias=False), nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y = self.pool(F.relu(self.bn(self.stem(x))))
        y = F.relu(y + self.b1(self.c1(y)))
        y = F.relu(self.b2(self.c2(y)) + self.bs(self.sc(y)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class MobileNetish(nn.Module):
    """3x3/2 stem, an inverted residual block (1x1 expand with bias, depthwise 3x3, 1x1
    project, ReLU6, residual add), head."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16)
        self.ex, self.be = nn.Conv2d(16, 32, 1, bias=True), nn.BatchNorm2d(32)
        self.dw, self.bd = nn.Conv2d(32, 32, 3, 1, 1, groups=32, bias=False), nn.BatchNorm2d(32)
        self.pr, self.bp = nn.Conv2d(32, 16, 1, bias=False), nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 7)

    def forward(self, x):
        y = F.hardtanh(self.bn(self.stem(x)), 0.0, 6.0)
        z = F.hardtanh(self.be(self.ex(y)), 0.0, 6.0)
        z = F.hardtanh(self.bd(self.dw(z)), 0.0, 6.0)
        y = y + self.bp(self.pr(z))
        return self.fc(y.mean((2, 3)))


SIZES = [(1, 64, 64), (3, 97, 131), (2, 33, 17), (1, 224, 224)]


def _compiled(cls):
    torch.manual_seed(0)
    model = randomize_batch_norm(cls(), seed=3)
    dyn = ({0: Dim("batch", max=4), 2: Dim("h", min=16, max=256), 3: Dim("w", min=16, max=256)},)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = torch_compile(model, (torch.randn(2, 3, 64, 64),), dynamic_shapes=dyn)
    return model, fn


@pytest.fixture(scope="module", params=[ResNetish, MobileNetish], ids=["resnet", "mobilenet"])
def net(request):
    return _compiled(request.param)


def test_numerics_bound_and_plain_one_executable(net):
    """Every (batch, h, w) through one executable: bound (the transform ran once, at
    bind_params), plain (the transform runs per call) and a session's bound call agree with
    PyTorch (rel err <= 1e-4)."""
    model, fn = net
    exe = fn.exe
    main = exe["main"]
    assert isinstance(main, LiftedFunction)
    assert exe.functions == ["main", "main_transform_params"]
    assert main.num_input == 1 and main.num_weights == len(fn.params)
    bound = main.bind_params(*fn.params)
    assert isinstance(bound, LiftedPreparedCall)
    sess_bound = exe.session()["main"].bind_params(*fn.params)
    for b, h, w in SIZES:
        x = torch.randn(b, 3, h, w, generator=torch.Generator().manual_seed(b * h + w))
        with torch.no_grad():
            ref = model(x).numpy()
        tol = dict(rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
        np.testing.assert_allclose(bound(x.numpy()), ref, **tol)
        np.testing.assert_allclose(exe["main"](x.numpy(), *fn.params), ref, **tol)
        np.testing.assert_allclose(sess_bound(x.numpy()), ref, **tol)
        np.testing.assert_allclose(fn(x).numpy(), ref, **tol)   # CompiledModule: bind_params on first use


def test_transform_runs_once_when_bound(net):
    """bind_params runs @main_transform_params once; bound calls never again; a plain call
    runs it every time; a partial binding (fewer arguments than the weights) per call."""
    model, fn = net
    main = fn.exe["main"]
    calls = []
    entry = main.transform._entry
    main.transform._entry = lambda session, args: (calls.append(len(args)), entry(session, args))[1]
    try:
        x = np.random.default_rng(0).standard_normal((2, 3, 40, 56)).astype(np.float32)
        bound = main.bind_params(*fn.params)
        assert calls == [len(fn.params)]
        y = [bound(x) for _ in range(3)]
        assert len(calls) == 1
        main(x, *fn.params)
        main(x, *fn.params)
        assert len(calls) == 3
        partial = main.bind_params(*fn.params[1:])
        assert len(calls) == 3 and partial.nlead == 2
        y2 = partial(x, fn.params[0])
        assert len(calls) == 4
    finally:
        main.transform._entry = entry
    np.testing.assert_array_equal(y[0], y[2])
    np.testing.assert_allclose(y2, y[0], rtol=1e-6, atol=1e-6)


def test_weights_changed_reruns_the_transform():
    """Writing a bound weight in place then weights_changed(): the transform runs again."""
    model, fn = _compiled(MobileNetish)
    params = [p.copy() for p in fn.params]
    bound = fn.exe["main"].bind_params(*params)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 48)).astype(np.float32)
    before = bound(x)
    names = [p.target for p in fn.program.param_info]
    k = names.index("stem.weight")
    params[k] *= 2.0
    bound.weights_changed()
    with torch.no_grad():
        model.stem.weight.mul_(2.0)
        ref = model(torch.from_numpy(x)).numpy()
    after = bound(x)
    assert not np.allclose(after, before)
    np.testing.assert_allclose(after, ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


def test_lifted_graph():
    """After the cpu graph stage: the conv weights' BatchNorm scaling and channel-block
    packing (the direct route) live in @main_transform_params; @main has none of them, and
    keeps only the weights it reads itself (the head's linear)."""
    from relax_mlir.pipelines import cpu

    torch.manual_seed(0)
    model = randomize_batch_norm(ResNetish(), seed=3)
    dyn = ({0: Dim("batch", max=4), 2: Dim("h", min=16, max=256), 3: Dim("w", min=16, max=256)},)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (torch.randn(2, 3, 64, 64),), dynamic_shapes=dyn)
    prog = import_program(ep, dynamic_shapes=dyn)
    assert "relax.num_input = 1 : i64" in str(prog.module)
    with prog.module.context:
        stage = cpu.graph_stage(plan_memory=False, fusion=False)
        stage = stage[:stage.index("relax-lower-host")]
        run_pipeline(prog.module, "builtin.module(" + ", ".join(stage) + ")")
    text = str(prog.module)
    main = text[text.index("func.func @main("):]
    main = main[:main.index("\n  }\n")]
    tp = text[text.index("func.func @main_transform_params("):]
    tp = tp[:tp.index("\n  }\n")]
    packs = re.findall(r"callee = @(relax_conv_pack\w+)", tp)
    assert len(packs) == 4   # the 16->16 3x3, the 16->32 3x3/2 and the 1x1/2 shortcut, the stem
    assert "conv_pack" not in main and "relax_multiply_f32_16x3x7x7" not in main
    assert "rsqrt" in tp and "rsqrt" not in main
    kept = re.search(r"kept = array<i64(?:: ([\d, ]+))?>", text).group(1)
    names = [p.target for p in prog.param_info]
    assert sorted(names[int(i)] for i in kept.split(", ")) == ["fc.bias", "fc.weight"]


@pytest.mark.parametrize("cls", [ResNetish, MobileNetish], ids=["resnet", "mobilenet"])
def test_transform_kernels_are_scheduled(cls):
    """The weights' transform (BatchNorm folds and packings, fused by relax-fuse-ops into
    kernels of several results) is vectorized: each such kernel gets the per-generic
    elementwise schedule, none is left to plain loops (issue 28: they were, and a plain call
    cost twice a bound one on ResNet-18)."""
    from mlir import ir
    from relax_mlir.pipelines import cpu

    torch.manual_seed(0)
    model = randomize_batch_norm(cls(), seed=3)
    dyn = ({0: Dim("batch", max=4)},)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (torch.randn(2, 3, 64, 64),), dynamic_shapes=dyn)
    prog = import_program(ep, dynamic_shapes=dyn)
    with prog.module.context:
        stage = cpu.graph_stage(dispatch=False)
        run_pipeline(prog.module, "builtin.module(" + ", ".join(stage) + ", relax-apply-schedules)")
    text = str(prog.module)
    tp = text[text.index("func.func @main_transform_params("):]
    called = set(re.findall(r"call @(\w+)\(", tp[:tp.index("\n  }\n")]))
    scheduled = {}
    for f in prog.module.body.operations:
        f = f.operation
        name = ir.StringAttr(f.attributes["sym_name"]).value if "sym_name" in f.attributes else ""
        if name in called and "relax.kernel" in f.attributes:
            scheduled[name] = (ir.StringAttr(f.attributes["relax.schedule"]).value
                               if "relax.schedule" in f.attributes else "")
    assert scheduled and set(scheduled.values()) == {"elementwise_each"}, scheduled


def test_errors_name_main_arguments(net):
    """A wrong weight in a plain call is reported as @main's argument; a wrong input of a
    bound call too; binding more than the parameters is a TypeError."""
    model, fn = net
    main = fn.exe["main"]
    bad = list(fn.params)
    k = next(i for i, p in enumerate(bad) if p.ndim == 4)
    bad[k] = np.zeros(bad[k].shape[:-1] + (bad[k].shape[-1] + 1,), np.float32)
    x = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(relax_mlir.ShapeError, match=rf"^@main \(its weights' transform @main_transform_params\): "
                                                    rf"argument #{k + 1}: expected shape"):
        main(x, *bad)
    with pytest.raises(TypeError, match=rf"@main takes {len(fn.params) + 1} argument\(s\), got 2"):
        main(x, fn.params[0])
    with pytest.raises(relax_mlir.ShapeError, match=r"argument #0"):
        main.bind_params(*fn.params)(np.zeros((1, 4, 32, 32), np.float32))
    with pytest.raises(TypeError, match=r"bound"):
        main.bind_params(x, x, *fn.params)


def test_export_and_load_keep_the_lift(tmp_path):
    """The lift is part of the executable's metadata: an exported library, loaded, binds
    and calls the same way."""
    model, fn = _compiled(MobileNetish)
    path = fn.exe.export(str(tmp_path / "m.so"))
    exe = relax_mlir.load(path)
    assert isinstance(exe["main"], LiftedFunction)
    x = np.random.default_rng(2).standard_normal((2, 3, 35, 21)).astype(np.float32)
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    tol = dict(rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
    np.testing.assert_allclose(exe["main"].bind_params(*fn.params)(x), ref, **tol)
    np.testing.assert_allclose(exe(x, *fn.params), ref, **tol)


LIFT_TEXT = """
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %w: tensor<8x4xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>> attributes {relax.function, relax.num_input = 1 : i64, relax.upper_bounds = {n = 16 : i64}} {
  %c = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 2.0 : f64} : () -> tensor<f32>
  %wt = "relax.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %t = "relax.multiply"(%s, %c) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = "relax.matmul"(%x, %wt) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4x8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %z = "relax.multiply"(%y, %t) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %u = "relax.add"(%z, %b) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  return %u : tensor<?x8xf32, #relax.shape<["n", 8]>>
}
"""


def _vulkan_ok():
    try:
        from relax_mlir.runtime import vulkan as vkrt
        return vkrt.available()[0]
    except Exception:   # noqa: BLE001
        return False


@pytest.mark.parametrize("target", ["cpu", pytest.param("vulkan", marks=pytest.mark.skipif(
    not _vulkan_ok(), reason="no Vulkan device"))])
def test_hand_written_num_input(target):
    """relax.num_input written by hand in textual IR: lifted on the cpu target and on the
    GPU targets alike (they share the graph stage and the runtime's lifted functions)."""
    exe = relax_mlir.compile(LIFT_TEXT, target=target)
    assert exe.metadata["lifted"] == {"main": {"transform": "main_transform_params", "num_input": 1,
                                               "num_weights": 3, "kept": [2]}}
    rng = np.random.default_rng(0)
    w, s, b = (rng.standard_normal(sh).astype(np.float32) for sh in [(8, 4), (8,), (8,)])
    bound = exe["main"].bind_params(w, s, b)
    for n in (1, 5, 16):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        ref = (x @ w.T) * (s * 2) + b
        np.testing.assert_allclose(bound(x), ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(exe["main"](x, w, s, b), ref, rtol=1e-5, atol=1e-5)


def test_cuda_pipeline_lifts_too():
    """Compile only (no driver needed): the cuda pipeline's graph and host stages lift
    like the cpu's, and the runtime metadata records the lift its executable then uses
    (the device executables share the lifted functions: runtime/gpu_shared.py)."""
    from relax_mlir.pipelines import cuda
    from relax_mlir.transforms.lower_host import host_metadata

    stages = dict(cuda.stages())
    assert "relax-lift-params" in stages["graph"]
    m = relax_mlir.parse(LIFT_TEXT)
    with m.context:
        run_pipeline(m, "builtin.module(" + ", ".join(stages["graph"] + stages["host"]) + ")")
        meta = host_metadata(m.operation, "cuda").to_json()
    assert meta["lifted"]["main"]["kept"] == [2]
    assert [p["shape"] for p in meta["functions"]["main"]["params"]] == [["n", "4"], ["8"], ["4", "8"], ["8"]]
