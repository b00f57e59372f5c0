"""Depthwise conv2d on the cpu target (schedule ``depthwise``, docs/conv.md): numerics against
PyTorch through ONE executable per case (symbolic batch, height and width) at several batches
and image sizes: odd ones (97x131), stride 2 with odd inputs, maps smaller than the 4-row
register block and than one 16-column vector, a 1x1 image. Strided convs read phase-split
inputs (both dims); the cases cover strides (2, 2), (2, 1), (3, 3), dilation, asymmetric and
zero padding, 5x5 windows, a fused bias + ReLU epilogue; the split of a strided conv inside its
plane task (one parallel region), at odd sizes and a static batch of 1. Relative error <= 1e-4 (f32).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest

import relax_mlir

torch = pytest.importorskip("torch")

import test_conv_codegen as conv_codegen  # noqa: E402  (its module builder and reference)

#: (batch, height, width) every case runs at through one executable
SIZES = [(1, 97, 131), (3, 14, 15), (2, 7, 7), (1, 9, 40), (8, 5, 3), (1, 1, 1), (2, 2, 33)]


def _module(c: int, k: tuple[int, int], s: tuple[int, int], p: tuple[int, ...], d: tuple[int, int],
            epilogue: bool) -> str:
    """A depthwise conv2d (groups = C = O), with a bias + ReLU epilogue when ``epilogue``."""
    return conv_codegen._module(c, c, k, s, p, d, c, epilogue, epilogue)


def _reference(x, w, b, s, p, d):
    return conv_codegen._reference(x, w, b, s, p, d, x.shape[1], b is not None)


CASES = {
    # name: (C, kernel, strides, padding, dilation, bias + relu)
    "s1": (16, (3, 3), (1, 1), (1, 1), (1, 1), True),
    "s2": (12, (3, 3), (2, 2), (1, 1), (1, 1), False),
    "s2_epilogue": (24, (3, 3), (2, 2), (1, 1), (1, 1), True),
    "s2_5x5": (8, (5, 5), (2, 2), (2, 2), (1, 1), True),
    "s2_nopad": (5, (3, 3), (2, 2), (0, 0), (1, 1), False),
    "s2x1_asym": (6, (3, 3), (2, 1), (0, 1, 2, 0), (1, 1), False),
    "s3": (4, (3, 3), (3, 3), (1, 1), (1, 1), False),
    "dilation2": (7, (3, 3), (1, 1), (2, 2), (2, 2), True),
    "s2_dilation2": (3, (3, 3), (2, 2), (2, 2), (2, 2), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_depthwise_numerics(name):
    c, k, s, p, d, epilogue = CASES[name]
    exe = relax_mlir.compile(_module(c, k, s, p, d, epilogue))
    rng = np.random.default_rng(1)
    w = rng.standard_normal((c, 1) + k).astype(np.float32)
    b = rng.standard_normal((c, 1, 1)).astype(np.float32) if epilogue else None
    ran = 0
    for n, h, wd in SIZES:
        if min(h + p[0] + (p[2] if len(p) == 4 else p[0]) - d[0] * (k[0] - 1),
               wd + p[1] + (p[3] if len(p) == 4 else p[1]) - d[1] * (k[1] - 1)) < 1:
            continue   # the padded image does not cover the window (the executable rejects it)
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        want = _reference(x, w, b, s, p, d)
        got = exe(x, w, b) if epilogue else exe(x, w)
        assert got.shape == want.shape
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert err <= 1e-4, (name, (n, h, wd), err)
        ran += 1
    assert ran >= 4


def _kernels(src: str):
    from relax_mlir.backends.cpu import schedules
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds)")
        return {str(f.attributes["sym_name"]).strip('"'): (f, schedules.select(f.operation))
                for f in m.body.operations if "relax.kernel" in f.attributes}, m


def test_depthwise_schedule_selected():
    """Depthwise convs, strided or not, take the ``depthwise`` schedule; a strided one reads
    its input split by phase (a rank-6 padded tensor: N, C, sh, sw, Hp/sh, Wp/sw)."""
    for s, rank6 in (((1, 1), False), ((2, 2), True), ((2, 1), True)):
        kernels, m = _kernels(_module(8, (3, 3), s, (1, 1), (1, 1), False))
        with m.context:
            (fn, sched), = kernels.values()
            assert sched is not None and sched.name == "depthwise"
            assert (f"tensor<?x8x{s[0]}x{s[1]}x?x?x" in str(fn)) == rank6


def test_depthwise_phase_split_layout():
    """The legalization's phase split: stride (2, 2), padding 1: ONE tensor.pad to
    (N, C, 2 * Hs, 2 * Ws), Hs = (H + 3) // 2, its expand_shape to (N, C, Hs, 2, Ws, 2) and a
    linalg.transpose to (N, C, 2, 2, Hs, Ws) (ops that tile by plane, so the schedule splits
    each plane in the conv's task); no strided slices, no copies."""
    kernels, m = _kernels(_module(8, (3, 3), (2, 2), (1, 1), (1, 1), False))
    with m.context:
        (fn, sched), = kernels.values()
        text = str(fn)
    assert text.count("tensor.pad") == 1 and "low[0, 0, 1, 1]" in text
    assert "into tensor<?x8x?x2x?x2xf32>" in text
    assert text.count("linalg.transpose") == 1 and "permutation = [0, 1, 3, 5, 2, 4]" in text
    assert "tensor<?x8x2x2x?x?xf32>" in text
    assert "linalg.copy" not in text and "[1, 1, 2, 2]" not in text
    assert sched is not None and sched.name == "depthwise"


@pytest.mark.parametrize("name", ["s2_epilogue", "s2x1_asym"])
def test_depthwise_strided_vulkan(name):
    """The phase-split legalization is target-independent: the vulkan target runs it through
    its naive route (lavapipe), same numerics."""
    from relax_mlir.runtime import vulkan
    ok, why = vulkan.available()
    if not ok:
        pytest.skip(f"no vulkan device: {why}")
    c, k, s, p, d, epilogue = CASES[name]
    exe = relax_mlir.compile(_module(c, k, s, p, d, epilogue), target="vulkan")
    rng = np.random.default_rng(2)
    w = rng.standard_normal((c, 1) + k).astype(np.float32)
    b = rng.standard_normal((c, 1, 1)).astype(np.float32) if epilogue else None
    for n, h, wd in [(1, 13, 9), (2, 6, 7)]:
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        want = _reference(x, w, b, s, p, d)
        got = np.asarray(exe(x, w, b) if epilogue else exe(x, w))
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert got.shape == want.shape and err <= 1e-4, ((n, h, wd), err)


def _static_module(c: int, hw: int, s: int) -> str:
    o = (hw + 2 - 3) // s + 1
    xt = f'tensor<?x{c}x{hw}x{hw}xf32, #relax.shape<["n", {c}, {hw}, {hw}]>>'
    yt = f'tensor<?x{c}x{o}x{o}xf32, #relax.shape<["n", {c}, {o}, {o}]>>'
    return (f"func.func @main(%x: {xt}, %w: tensor<{c}x1x3x3xf32>) -> {yt} attributes {{relax.function}} {{\n"
            f'  %0 = "relax.conv2d"(%x, %w) {{strides = array<i64: {s}, {s}>, padding = array<i64: 1, 1>, '
            f"groups = {c} : i64}} : ({xt}, tensor<{c}x1x3x3xf32>) -> {yt}\n  return %0 : {yt}\n}}")


@pytest.mark.parametrize("hw,s", [(112, 2), (56, 1), (7, 1), (14, 2), (33, 1), (3, 1), (5, 2)])
def test_depthwise_static_maps_scheduled(hw, s):
    """Static image sizes (a net exported at 224x224): the schedule APPLIES (a failed script
    leaves the kernel to plain loops silently: peeling a static loop with no remainder, or a
    one-step static loop folded away, failed every MobileNetV2 depthwise kernel once), and the
    numbers are right."""
    src = _static_module(8, hw, s)
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, "
                                   "relax-apply-schedules{target=avx512})")
    assert str(m).count('relax.schedule = "depthwise"') == 1
    exe = relax_mlir.compile(src)
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 8, hw, hw)).astype(np.float32)
    want = _reference(x, w, None, (s, s), (1, 1), (1, 1))
    got = exe(x, w)
    assert got.shape == want.shape and np.abs(got - want).max() / np.abs(want).max() <= 1e-4


def _static_batch_module(n: int, c: int, s: int, epilogue: bool, hw: Optional[int] = None) -> str:
    """A depthwise 3x3 conv (padding 1, stride ``s``) at a STATIC batch ``n``, symbolic height
    and width (``hw``: a static square map instead), a bias + ReLU epilogue when ``epilogue``."""
    sz = ["h", "w"] if hw is None else [hw, hw]
    dims = "x".join("?" if isinstance(d, str) else str(d) for d in sz)
    o = "?x?" if hw is None else "x".join([str((hw - 1) // s + 1)] * 2)
    shape = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in sz)
    xt = f'tensor<{n}x{c}x{dims}xf32, #relax.shape<[{n}, {c}, {shape}]>>'
    return conv_codegen._module(c, c, (3, 3), (s, s), (1, 1), (1, 1), c, epilogue, epilogue).replace(
        f'tensor<?x{c}x?x?xf32, #relax.shape<["n", {c}, "h", "w"]>>', xt).replace(
        f"tensor<?x{c}x?x?xf32>", f"tensor<{n}x{c}x{o}xf32>")


def _applied(src: str) -> list[str]:
    """The schedules relax-apply-schedules APPLIED to the module's kernels (a failed script
    leaves a kernel to plain loops silently, without the attribute)."""
    import re
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, "
                                   "relax-apply-schedules{target=avx512})")
    return re.findall(r'relax\.schedule = "([^"]+)"', str(m))


@pytest.mark.parametrize("n,c,s,epilogue", [(1, 32, 2, True), (1, 8, 1, False), (1, 12, 2, False),
                                            (3, 8, 2, True), (2, 6, 1, False)])
def test_depthwise_static_batch_scheduled(n, c, s, epilogue):
    """A static batch with symbolic H/W (one image, any size: a common export): the schedule
    APPLIES (at N = 1 the (image, channel) forall's one-step batch dim was folded away with the
    conv's handle: issue 28), and the numbers are right at several sizes through one executable."""
    src = _static_batch_module(n, c, s, epilogue)
    assert _applied(src).count("depthwise") == 1
    exe = relax_mlir.compile(src)
    rng = np.random.default_rng(4)
    w = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal((c, 1, 1)).astype(np.float32) if epilogue else None
    for h, wd in [(20, 31), (37, 45), (7, 7), (1, 1), (9, 40), (64, 17)]:
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        want = _reference(x, w, b, (s, s), (1, 1), (1, 1))
        got = exe(x, w, b) if epilogue else exe(x, w)
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert got.shape == want.shape and err <= 1e-4, ((h, wd), err)


@pytest.mark.parametrize("hw,s", [(112, 2), (14, 1), (7, 1)])
def test_depthwise_static_batch1_static_maps_scheduled(hw, s):
    """Every size static, batch 1 (a net exported at 1x3x224x224): the schedule applies."""
    src = _static_batch_module(1, 8, s, True, hw)
    assert _applied(src).count("depthwise") == 1
    exe = relax_mlir.compile(src)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal((8, 1, 1)).astype(np.float32)
    x = rng.standard_normal((1, 8, hw, hw)).astype(np.float32)
    want = _reference(x, w, b, (s, s), (1, 1), (1, 1))
    got = exe(x, w, b)
    assert got.shape == want.shape and np.abs(got - want).max() / np.abs(want).max() <= 1e-4


def _scheduled_kernel_text(src: str) -> str:
    """The module after relax-apply-schedules (tensor level), as text."""
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, "
                                   "relax-fuse-ops, relax-fuse-kernels, relax-apply-schedules{target=avx512})")
    return str(m)


@pytest.mark.parametrize("static_batch", [None, 1])
def test_depthwise_strided_split_in_task(static_batch):
    """Stride 2: the phase split runs inside the conv's (image, channel) task (ONE scf.forall
    in the kernel: no parallel region of its own, no buffer of the whole split input), and
    the task's conv reads every phase of its plane (a split fused from a one-phase slice
    wrote a quarter of it). Numerics through ONE executable at odd and even sizes, from a
    1x1 image up, with a symbolic batch and with a static batch of 1 (symbolic H/W)."""
    c = 24
    src = (_module(c, (3, 3), (2, 2), (1, 1), (1, 1), True) if static_batch is None
           else _static_batch_module(static_batch, c, 2, True))
    text = _scheduled_kernel_text(src)
    assert text.count('relax.schedule = "depthwise"') == 1
    assert text.count("scf.forall (") == 1
    assert "} -> tensor<1x1x2x2x?x?xf32>" in text   # the split generic writes every phase of the plane
    exe = relax_mlir.compile(src)
    rng = np.random.default_rng(6)
    w = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal((c, 1, 1)).astype(np.float32)
    for n, h, wd in [(1, 113, 57), (3, 14, 14), (2, 15, 17), (1, 1, 1), (2, 2, 3), (1, 7, 40), (1, 34, 33)]:
        n = static_batch or n
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        want = _reference(x, w, b, (2, 2), (1, 1), (1, 1))
        got = exe(x, w, b)
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert got.shape == want.shape and err <= 1e-4, ((n, h, wd), err)


@pytest.mark.parametrize("hw", [15, 14, 9, 3])
def test_depthwise_strided_static_odd_maps(hw):
    """Static odd and even maps at stride 2 (an export at a fixed size): the schedule applies
    (the pad's interior copy peels 16-column tiles only where a remainder exists) and the
    numbers are right."""
    src = _static_module(16, hw, 2)
    assert _applied(src).count("depthwise") == 1
    exe = relax_mlir.compile(src)
    rng = np.random.default_rng(7)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    for n in (1, 3):
        x = rng.standard_normal((n, 16, hw, hw)).astype(np.float32)
        want = _reference(x, w, None, (2, 2), (1, 1), (1, 1))
        got = exe(x, w)
        assert got.shape == want.shape and np.abs(got - want).max() / np.abs(want).max() <= 1e-4
