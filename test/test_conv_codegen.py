"""conv2d code generation on the cpu target: numerics against PyTorch.

Each case is ONE executable (symbolic batch, height and width) run at several batches and
image sizes, odd ones included (97x131), through each route: ``default`` (the cpu
pipeline's: the direct kernel where the output channels fill whole vectors, else generated),
``conv_direct`` (relax-conv-gemm's direct kernel on a packed weight wherever O is a multiple
of 8, ``direct=all``), ``auto`` (BLAS for 1x1 expansions, else generated), ``generated`` (groups 1 by relax-conv-gemm's im2col +
scheduled matmul + permute to NCHW; depthwise and other groups by the direct kernel), ``blas`` (im2col + one BLAS GEMM per image, a following
(O, 1, 1) bias add folded into the call) and ``direct`` (schedules off, no dispatch: the
legalization's generic, plain loops). Relative error <= 1e-4 (f32).
"""

from __future__ import annotations

import numpy as np
import pytest

import relax_mlir

torch = pytest.importorskip("torch")

#: (batch, height, width) every case runs at through one executable
SIZES = [(1, 97, 131), (3, 16, 16), (2, 33, 20), (1, 9, 7)]


def _module(c: int, o: int, k: tuple[int, int], s: tuple[int, int], p: tuple[int, ...], d: tuple[int, int],
            g: int, bias: bool, relu: bool) -> str:
    xt = f'tensor<?x{c}x?x?xf32, #relax.shape<["n", {c}, "h", "w"]>>'
    wt = f"tensor<{o}x{c // g}x{k[0]}x{k[1]}xf32>"
    yt = f"tensor<?x{o}x?x?xf32>"
    args = [f"%x: {xt}", f"%w: {wt}"] + ([f"%b: tensor<{o}x1x1xf32>"] if bias else [])
    lines = [f'%0 = "relax.conv2d"(%x, %w) {{strides = array<i64: {s[0]}, {s[1]}>, '
             f'padding = array<i64: {", ".join(map(str, p))}>, dilation = array<i64: {d[0]}, {d[1]}>, '
             f'groups = {g} : i64}} : ({xt}, {wt}) -> {yt}']
    last = "%0"
    if bias:
        lines.append(f'%1 = "relax.add"(%0, %b) : ({yt}, tensor<{o}x1x1xf32>) -> {yt}')
        last = "%1"
    if relu:
        lines.append(f'%2 = "relax.relu"({last}) : ({yt}) -> {yt}')
        last = "%2"
    body = "\n  ".join(lines)
    return (f"func.func @main({', '.join(args)}) -> {yt} attributes {{relax.function}} {{\n  {body}\n"
            f"  return {last} : {yt}\n}}")


def _reference(x, w, b, s, p, d, g, relu):
    pt, pl = p[0], p[1]
    pb, pr = (p[2], p[3]) if len(p) == 4 else (p[0], p[1])
    xt = torch.nn.functional.pad(torch.from_numpy(x), (pl, pr, pt, pb))
    y = torch.nn.functional.conv2d(xt, torch.from_numpy(w), None if b is None else torch.from_numpy(b).reshape(-1),
                                   stride=s, dilation=d, groups=g)
    return (torch.relu(y) if relu else y).numpy()


CASES = {
    # name: (C, O, kernel, strides, padding, dilation, groups, bias, relu)
    "3x3": (8, 16, (3, 3), (1, 1), (1, 1), (1, 1), 1, True, True),
    "3x3_s2": (5, 12, (3, 3), (2, 2), (1, 1), (1, 1), 1, True, False),
    "7x7_s2_stem": (3, 16, (7, 7), (2, 2), (3, 3), (1, 1), 1, True, True),
    "1x1": (16, 24, (1, 1), (1, 1), (0, 0), (1, 1), 1, True, True),
    "1x1_s2": (16, 8, (1, 1), (2, 2), (0, 0), (1, 1), 1, False, False),
    "dilation2": (6, 10, (3, 3), (1, 1), (2, 2), (2, 2), 1, False, True),
    "asym_pad_rect": (4, 7, (2, 3), (1, 2), (0, 1, 2, 1), (1, 1), 1, True, False),
    "groups2": (8, 12, (3, 3), (1, 1), (1, 1), (1, 1), 2, True, True),
    "3x3_o32": (8, 32, (3, 3), (1, 1), (1, 1), (1, 1), 1, True, True),
    "3x3_s2_o48": (5, 48, (3, 3), (2, 2), (1, 1), (1, 1), 1, False, True),
    "1x1_s2_o64": (12, 64, (1, 1), (2, 2), (0, 0), (1, 1), 1, True, False),
    "dilation2_o16": (6, 16, (3, 3), (1, 1), (2, 2), (2, 2), 1, False, True),
    "5x5_asym_o24": (4, 24, (5, 3), (2, 1), (2, 1, 1, 0), (1, 1), 1, True, False),
    # more taps than DIRECT_MAX_TAPS: the direct kernel loops over the kernel rows
    "5x5_d2x1_s2_o32": (4, 32, (5, 5), (2, 2), (3, 2, 4, 1), (2, 1), 1, True, True),
    "depthwise": (16, 16, (3, 3), (1, 1), (1, 1), (1, 1), 16, True, True),
    "depthwise_s2": (12, 12, (3, 3), (2, 2), (1, 1), (1, 1), 12, False, False),
    "depthwise_x2": (6, 12, (5, 5), (1, 1), (2, 2), (1, 1), 6, False, False),
}


@pytest.mark.parametrize("route", ["default", "conv_direct", "auto", "generated", "blas", "direct"])
@pytest.mark.parametrize("name", list(CASES))
def test_conv_numerics(name, route, monkeypatch):
    c, o, k, s, p, d, g, bias, relu = CASES[name]
    from relax_mlir.pipelines import cpu
    if route in ("auto", "generated", "blas"):
        monkeypatch.setattr(cpu, "CONV_GEMM_DEFAULT", route)
        monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", "off")
    if route == "conv_direct":
        if g != 1 or o % 8:
            pytest.skip("the direct kernel takes groups-1 convs with O a multiple of 8")
        monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", "all")
    options = {"dispatch": False, "schedules": False} if route == "direct" else None
    exe = relax_mlir.compile(_module(c, o, k, s, p, d, g, bias, relu), options=options)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((o, c // g) + k).astype(np.float32)
    b = rng.standard_normal((o, 1, 1)).astype(np.float32) if bias else None
    for n, h, wd in SIZES:
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        want = _reference(x, w, b, s, p, d, g, relu)
        got = exe(x, w, b) if bias else exe(x, w)
        assert got.shape == want.shape
        err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
        assert err <= 1e-4, (name, (n, h, wd), err)


def run_pipeline(src: str, pipeline: str) -> str:
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, pipeline)
    return str(m)


def test_conv_gemm_blas_rewrite_folds_bias():
    """relax-conv-gemm{gemm=blas}: a groups-1 conv + (O, 1, 1) bias add is one library call; a
    1x1 stride-1 conv reads its input in place (no im2col kernel); depthwise stays."""
    src = _module(8, 16, (3, 3), (1, 1), (1, 1), (1, 1), 1, True, True)
    pipe = "builtin.module(relax-infer-shapes, relax-conv-gemm{gemm=blas})"
    text = run_pipeline(src, pipe)
    assert text.count('callee = "relax_blas_conv_gemm_bias_f32"') == 1
    assert text.count("relax_im2col_k3_3_s1_1_p1_1_1_1_d1_1_f32_Dx8xDxD") == 2   # the call and the kernel
    assert '"relax.add"' not in text and text.count('"relax.relu"') == 1
    one = run_pipeline(_module(16, 24, (1, 1), (1, 1), (0, 0), (1, 1), 1, False, False), pipe)
    assert 'callee = "relax_blas_conv_gemm_f32"' in one and "im2col" not in one
    dw = run_pipeline(_module(16, 16, (3, 3), (1, 1), (1, 1), (1, 1), 16, False, False), pipe)
    assert "call_dps_library" not in dw and '"relax.conv2d"' in dw


def test_conv_gemm_generated_kernels(monkeypatch):
    """The generated route (the default's for all but 1x1 expansions): im2col (K, N, OH, OW),
    the GEMM kernel (scheduled as a matmul), permute_dims back to NCHW; no library. ``auto``
    sends a 1x1 stride-1 conv with O > C to the library, with O < C to the generated GEMM."""
    src = _module(8, 16, (3, 3), (2, 2), (1, 1), (1, 1), 1, True, True)
    text = run_pipeline(src, "builtin.module(relax-infer-shapes, relax-conv-gemm)")
    assert "call_dps_library" not in text and '"relax.conv2d"' not in text
    assert text.count("@relax_im2col_t_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx8xDxD") == 2
    assert text.count("@relax_conv_gemm_f32_16x8x3x3_72xDxDxD") == 2
    assert 'tensor<72x?x?x?xf32, #relax.shape<[72, "n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>' in text
    assert '"relax.permute_dims"' in text and "axes = array<i64: 1, 0, 2, 3>" in text
    from relax_mlir.backends.cpu import schedules
    m = relax_mlir.parse(src)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-conv-gemm, relax-legalize, "
                                   "relax-annotate-kernel-kinds)")
        kernels = {str(f.attributes["sym_name"]).strip('"'): f for f in m.body.operations
                   if "relax.kernel" in f.attributes}
        picked = {k: schedules.select(f.operation) for k, f in kernels.items()}
    assert picked["relax_conv_gemm_f32_16x8x3x3_72xDxDxD"].name == "matmul"
    assert picked["relax_im2col_t_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx8xDxD"].name == "im2col"
    expand = run_pipeline(_module(16, 24, (1, 1), (1, 1), (0, 0), (1, 1), 1, False, False),
                          "builtin.module(relax-infer-shapes, relax-conv-gemm{gemm=auto})")
    assert 'callee = "relax_blas_conv_gemm_f32"' in expand and "relax_conv_gemm_f32" not in expand
    project = run_pipeline(_module(24, 16, (1, 1), (1, 1), (0, 0), (1, 1), 1, False, False),
                           "builtin.module(relax-infer-shapes, relax-conv-gemm{gemm=auto})")
    assert "call_dps_library" not in project and "@relax_conv_gemm_f32_16x24x1x1_24xDxDxD" in project


class _Block(torch.nn.Module):
    """conv + bias + relu, conv + bias + residual add + relu, depthwise conv + bias + clamp."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y) + x)
        return torch.clamp(self.dw(y), 0, 6)


@pytest.mark.parametrize("direct", ["off", "auto"])
def test_imported_block_fuses_epilogues(direct, monkeypatch):
    """Through the torch importer (symbolic batch and size): the groups-1 convs' epilogues
    (bias, residual add, relu) are one scheduled kernel per conv -- with ``direct=off`` the
    GEMM's permute to NCHW and the next conv's im2col join them (``permute_rows``), with the
    direct kernel (``auto``: O = 16 fills whole vectors on AVX-512 and AVX2) they are fused
    into the conv itself (``conv_direct``), the weight packed by a ``conv_pack`` kernel; the
    depthwise conv and its bias and clamp one depthwise-scheduled kernel; numerics at two sizes
    through one executable."""
    from relax_mlir.backends.cpu import schedules
    from relax_mlir.frontend.torch import from_exported_program
    from relax_mlir.pipelines import cpu
    from relax_mlir.pipelines.cpu import graph_stage
    from relax_mlir.target import host_simd

    if direct == "auto" and 16 % host_simd().lanes:
        pytest.skip("the host's vectors are wider than 16 f32")
    monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", direct)

    torch.manual_seed(0)
    model = _Block().eval()
    n, h = torch.export.Dim("n", max=8), torch.export.Dim("h", min=4, max=64)
    dyn = {"x": {0: n, 2: h, 3: h}}
    ep = torch.export.export(model, (torch.randn(2, 16, 20, 20),), dynamic_shapes=dyn)
    module, params = from_exported_program(ep, dynamic_shapes=dyn)
    text = str(module)
    exe = relax_mlir.compile(text)
    for shape in [(1, 16, 9, 9), (3, 16, 33, 33)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        got = exe(x, *params)
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4
    m = relax_mlir.parse(text)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ")")
        picked = {str(f.attributes["sym_name"]).strip('"'): schedules.select(f.operation)
                  for f in m.body.operations if "relax.kernel" in f.attributes}
    # (kernel names without the bias reshapes: relax-lift-params moves those weight-only
    # reshapes into main_transform_params, so whether a name has them depends on the lift)
    names = {k.replace("_reshape", ""): (v.name if v is not None else None) for k, v in picked.items()}
    if direct == "auto":
        assert names["fused_conv_direct_add_relu"] == "conv_direct"
        assert names["fused_conv_direct_add_add_relu"] == "conv_direct"
        assert [v for k, v in names.items() if "conv_pack" in k] == ["conv_pack"]   # (one kernel, both weights)
        assert not any("im2col" in k or "conv_gemm" in k for k in names)
        assert names["fused_conv2d_add_full_maximum_full_minimum"] == "depthwise"
        return
    assert names["fused_permute_dims_add_add_relu"] == "permute_rows"
    assert names["fused_permute_dims_add_relu_im2col"] == "permute_rows+im2col"
    assert names["fused_conv2d_add_full_maximum_full_minimum"] == "depthwise"
    assert [v for k, v in names.items() if k.startswith("relax_conv_gemm")] == ["matmul"]


DOWNSAMPLE = """
func.func @main(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, %w1: tensor<16x8x3x3xf32>,
                %w2: tensor<16x8x1x1xf32>, %var: tensor<16xf32>) -> tensor<?x16x?x?xf32> attributes {relax.function} {
  %c1 = "relax.conv2d"(%x, %w1) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<16x8x3x3xf32>) -> tensor<?x16x?x?xf32>
  %c2 = "relax.conv2d"(%x, %w2) {strides = array<i64: 2, 2>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<16x8x1x1xf32>) -> tensor<?x16x?x?xf32>
  %s = "relax.rsqrt"(%var) : (tensor<16xf32>) -> tensor<16xf32>
  %sr = "relax.reshape"(%s) {shape = #relax.shape<[16, 1, 1]>} : (tensor<16xf32>) -> tensor<16x1x1xf32>
  %m = "relax.multiply"(%c2, %sr) : (tensor<?x16x?x?xf32>, tensor<16x1x1xf32>) -> tensor<?x16x?x?xf32>
  %a = "relax.add"(%c1, %m) : (tensor<?x16x?x?xf32>, tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32>
  %r = "relax.relu"(%a) : (tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32>
  return %r : tensor<?x16x?x?xf32>
}
"""


@pytest.mark.parametrize("direct", ["off", "all"])
def test_downsample_block_end_numerics(direct, monkeypatch):
    """A downsampling block's end (two strided convs, an unfolded per-channel scale, add,
    relu; ``off``: two GEMM outputs permuted to NCHW by the ``permute_rows`` kernel with two
    transposes and a parameter generic; ``all``: two direct kernels, the second one's
    epilogue reading the first's output) through ONE executable at odd, stride-2 and 1x1
    image sizes."""
    from relax_mlir.pipelines import cpu
    monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", direct)
    exe = relax_mlir.compile(DOWNSAMPLE)
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((16, 8, 1, 1)).astype(np.float32)
    var = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    for n, h, w in [(1, 9, 13), (3, 16, 16), (2, 97, 131), (1, 1, 1)]:
        x = rng.standard_normal((n, 8, h, w)).astype(np.float32)
        tx = torch.from_numpy(x)
        main = torch.nn.functional.conv2d(tx, torch.from_numpy(w1), stride=2, padding=1)
        short = torch.nn.functional.conv2d(tx, torch.from_numpy(w2), stride=2) * torch.rsqrt(torch.from_numpy(var)).reshape(16, 1, 1)
        want = torch.relu(main + short).numpy()
        got = exe(x, w1, w2, var)
        assert got.shape == want.shape
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4, (n, h, w)


@pytest.mark.parametrize("hw", [(14, 14), (9, 17), (7, 7), (5, 6)])
def test_conv_direct_static_sizes(hw, monkeypatch):
    """Static image sizes (torch.export with only the batch dynamic): widths a multiple of the
    column tile (no remainder loop), with a static remainder (peeled: a one-iteration loop
    that canonicalization folds away) and narrower than one tile; a 1x1 conv whose packing has
    a static k remainder (C*KH*KW = 20). Both kernels keep their schedules (no fallback to
    plain loops) and match PyTorch."""
    from mlir import ir

    from relax_mlir.backends.cpu.apply_schedules import schedule_kernel
    from relax_mlir.pipelines import cpu
    from relax_mlir.pipelines.cpu import graph_stage

    monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", "all")
    monkeypatch.setattr(cpu, "CONV_POINTWISE_DEFAULT", "off")   # (the 1x1 case: test_pointwise.py)
    h, w = hw
    for c, o, k, s, p in [(16, 32, 3, 1, 1), (20, 16, 1, 1, 0), (3, 16, 7, 2, 3)]:
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        xt, wt, yt = f"tensor<2x{c}x{h}x{w}xf32>", f"tensor<{o}x{c}x{k}x{k}xf32>", f"tensor<2x{o}x{oh}x{ow}xf32>"
        src = (f"func.func @main(%x: {xt}, %w: {wt}) -> {yt} attributes {{relax.function}} {{\n"
               f'  %0 = "relax.conv2d"(%x, %w) {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}>}}'
               f" : ({xt}, {wt}) -> {yt}\n  %1 = \"relax.relu\"(%0) : ({yt}) -> {yt}\n  return %1 : {yt}\n}}")
        m = relax_mlir.parse(src)
        with m.context, ir.Location.unknown():
            relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ")")
            def convs():
                return [f.operation for f in m.body.operations
                        if "relax.kernel" in f.attributes and "conv" in str(f.attributes["sym_name"])]
            names = sorted(schedule_kernel(f) or "-" for f in convs())
            vectorized = [f.name for f in convs() if "vector.transfer_read" in str(f)]
        assert names == ["conv_direct", "conv_pack"], (c, o, k, hw)
        assert len(vectorized) == 2, (c, o, k, hw)   # (register tiles, not loops)
        exe = relax_mlir.compile(src)
        rng = np.random.default_rng(2)
        x = rng.standard_normal((2, c, h, w)).astype(np.float32)
        wv = rng.standard_normal((o, c, k, k)).astype(np.float32)
        want = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wv), stride=s,
                                                     padding=p)).numpy()
        got = exe(x, wv)
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4, (c, o, k, hw)


@pytest.mark.parametrize("simd", ["avx512", "avx2"])
@pytest.mark.parametrize("case", ["stem7x7s2", "3x3_residual", "3x3_static56", "3x3_static7", "3x3_square"])
def test_conv_direct_epilogue_vectorized(case, simd, monkeypatch):
    """The direct kernel's copy to NCHW and its fused epilogue (bias, residual add, relu) are
    one op over (n, ob, oi, oh, ow), vectorized: lanes x lanes tiles of the accumulator
    transposed in registers (AVX-512 16x16, AVX2 8x8), the epilogue on the vectors, no gather
    and no generic left as loops; the schedule applies (no silent fallback) with symbolic
    sizes (two 32-channel blocks, odd sizes, several batches through ONE executable) and
    static ones (a width with a static remainder, one narrower than a tile); ``square``
    (y * y, no broadcast operand: upstream fusion already put the epilogue on the blocked
    view, as a second generic after the copy); PyTorch numerics."""
    from mlir import ir

    from relax_mlir.backends.cpu.apply_schedules import schedule_kernel
    from relax_mlir.compiler import CompileOptions
    from relax_mlir.pipelines import cpu
    from relax_mlir.pipelines.cpu import graph_stage
    from relax_mlir.target import Target, simd_named

    monkeypatch.setattr(cpu, "CONV_DIRECT_DEFAULT", "all")
    c, o, k, s, p, static, residual = {"stem7x7s2": (3, 64, 7, 2, 3, None, False),
                                       "3x3_residual": (8, 32, 3, 1, 1, None, True),
                                       "3x3_static56": (8, 32, 3, 1, 1, (56, 56), True),
                                       "3x3_static7": (16, 64, 3, 1, 1, (7, 7), False),
                                       "3x3_square": (8, 64, 3, 1, 1, None, False)}[case]
    square = case == "3x3_square"
    if static:
        xt, yt = f"tensor<2x{c}x{static[0]}x{static[1]}xf32>", f"tensor<2x{o}x{static[0]}x{static[1]}xf32>"
    else:
        xt = f'tensor<?x{c}x?x?xf32, #relax.shape<["n", {c}, "h", "w"]>>'
        yt = f'tensor<?x{o}x?x?xf32, #relax.shape<["n", {o}, "h", "w"]>>' if s == 1 else f"tensor<?x{o}x?x?xf32>"
    wt, bt = f"tensor<{o}x{c}x{k}x{k}xf32>", f"tensor<{o}x1x1xf32>"
    lines = [f'%0 = "relax.conv2d"(%x, %w) {{strides = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}>}}'
             f" : ({xt}, {wt}) -> {yt}", f'%1 = "relax.multiply"(%0, %0) : ({yt}, {yt}) -> {yt}' if square
             else f'%1 = "relax.add"(%0, %b) : ({yt}, {bt}) -> {yt}']
    if residual:
        lines.append(f'%2 = "relax.add"(%1, %r) : ({yt}, {yt}) -> {yt}')
    lines.append(f'%3 = "relax.relu"(%{2 if residual else 1}) : ({yt}) -> {yt}')
    args = [f"%x: {xt}", f"%w: {wt}"] + ([] if square else [f"%b: {bt}"]) + ([f"%r: {yt}"] if residual else [])
    body = "\n  ".join(lines)
    src = (f"func.func @main({', '.join(args)}) -> {yt} attributes {{relax.function}} {{\n  {body}\n"
           f"  return %3 : {yt}\n}}")
    lanes = 16 if simd == "avx512" else 8
    m = relax_mlir.parse(f'module attributes {{relax.target = {{kind = "cpu", isa = "{simd}"}}}} {{\n{src}\n}}')
    with m.context, ir.Location.unknown():
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ")")
        def kernel():
            return next(f.operation for f in m.body.operations
                        if "relax.kernel" in f.attributes and "conv_direct" in str(f.attributes["sym_name"]))
        assert schedule_kernel(kernel(), target=simd_named(simd)) == "conv_direct"
        text = str(kernel())
    assert "linalg.generic" not in text and "vector.gather" not in text
    cols = min(lanes, static[1]) if static else lanes   # (a static width below the lanes: one tile)
    assert f"vector<{lanes}x{cols}xf32>, tensor<{lanes}x{cols}xf32>" in text   # the merged tile's store
    exe = relax_mlir.compile(src, options=CompileOptions(target=Target.from_options(None, simd=simd_named(simd))))
    rng = np.random.default_rng(3)
    sizes = [(2,) + static] if static else [(1, 97, 131), (3, 16, 16), (2, 9, 7)]
    for n, h, w in sizes:
        x = rng.standard_normal((n, c, h, w)).astype(np.float32)
        wv = rng.standard_normal((o, c, k, k)).astype(np.float32)
        b = rng.standard_normal((o, 1, 1)).astype(np.float32)
        y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wv),
                                       None if square else torch.from_numpy(b).reshape(-1), stride=s, padding=p)
        y = y * y if square else y
        r = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        want = torch.relu(y + torch.from_numpy(r) if residual else y).numpy()
        got = exe(x, wv, *([] if square else [b]), *([r] if residual else []))
        assert got.shape == want.shape
        assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4, (case, n, h, w)
