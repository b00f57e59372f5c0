"""Importer breadth: T5's encoder, a ViT, Swin-like and ConvNeXt-like blocks (written here,
random init, no downloads) against PyTorch through one executable at several sizes; import
errors name the op, its overload and the user's line; `relax-mlir compile` of a saved
transformers program."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.export import Dim  # noqa: E402

from relax_mlir.errors import CompileError  # noqa: E402
from relax_mlir.frontend.torch import (TorchImportError, compile as torch_compile,  # noqa: E402
                                       from_exported_program, full_stack_traces)

from torch_check import check  # noqa: E402


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + 13 * sum(shape) + len(shape)))


# -- T5 encoder ------------------------------------------------------------------------------

def _t5(ff="relu"):
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                relative_attention_num_buckets=8, relative_attention_max_distance=16,
                                feed_forward_proj=ff)
    model = transformers.T5EncoderModel(cfg).eval()

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.t5 = model

        def forward(self, input_ids, attention_mask):
            return self.t5(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Encoder().eval()


def _ids_mask(b, s):
    g = torch.Generator().manual_seed(31 * b + s)
    mask = torch.ones(b, s, dtype=torch.long)
    mask[0, s - s // 3:] = 0     # padding in the first row
    return torch.randint(0, 100, (b, s), generator=g), mask


@pytest.mark.parametrize("ff", ["relu", "gated-gelu"])
def test_t5_encoder(ff):
    """Relative position buckets (torch.min / aten.min.other of a log-scaled distance, a
    symbolic sequence length) and the padding mask; lengths beyond max_distance."""
    B, S = Dim("batch", max=8), Dim("seq", min=2, max=64)
    check(_t5(ff), _ids_mask, [(2, 12), (1, 40), (3, 5)],
          {"input_ids": {0: B, 1: S}, "attention_mask": {0: B, 1: S}}, atol=1e-4, rtol=1e-4)


# -- ViT -------------------------------------------------------------------------------------

def test_vit_dynamic_batch():
    torch.manual_seed(1)
    cfg = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=64)
    vit = transformers.ViTModel(cfg).eval()

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.vit = vit

        def forward(self, pixel_values):
            out = self.vit(pixel_values=pixel_values)
            return out.last_hidden_state, out.pooler_output

    check(ViT().eval(), lambda b: (_randn(b, 3, 32, 32),), [(2,), (1,), (5,)],
          {"pixel_values": {0: Dim("batch", max=16)}}, atol=1e-4, rtol=1e-4)


# -- Swin-like -------------------------------------------------------------------------------

class SwinBlock(nn.Module):
    """Window attention over a channels-last map: shift by torch.roll, window partition by
    view/permute, relative position bias gathered from a table by an index buffer, the
    shifted-window mask built in forward for the symbolic size, then the reverse partition
    and roll back; an MLP with GELU."""

    def __init__(self, dim=16, heads=2, ws=4, shift=2):
        super().__init__()
        self.ws, self.shift, self.heads = ws, shift, heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.1)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("index", rel[..., 0] * (2 * ws - 1) + rel[..., 1])

    def shift_mask(self, h, w, device):
        """Swin's mask of the shifted windows: regions labelled by slice assignment (in-place
        writes, functionalized to slice_scatter), pairs of different regions masked."""
        ws, s = self.ws, self.shift
        img = torch.zeros((1, h, w, 1), device=device)
        cnt = 0
        for hs in (slice(0, -ws), slice(-ws, -s), slice(-s, None)):
            for wsl in (slice(0, -ws), slice(-ws, -s), slice(-s, None)):
                img[:, hs, wsl, :] = cnt
                cnt += 1
        win = img.view(1, h // ws, ws, w // ws, ws, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws)
        diff = win.unsqueeze(1) - win.unsqueeze(2)
        return diff.masked_fill(diff != 0, -100.0).masked_fill(diff == 0, 0.0)

    def forward(self, x):                      # x: (B, H, W, C), H and W multiples of ws
        b, h, w, c = x.shape
        ws, n = self.ws, self.ws * self.ws
        y = torch.roll(self.norm1(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = y.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, n, c)
        qkv = self.qkv(win).reshape(-1, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        bias = self.table[self.index.view(-1)].view(n, n, self.heads).permute(2, 0, 1)
        logits = q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5 + bias.unsqueeze(0)
        nw = (h // ws) * (w // ws)
        logits = logits.view(b, nw, self.heads, n, n) + self.shift_mask(h, w, x.device).unsqueeze(1).unsqueeze(0)
        att = torch.softmax(logits.view(-1, self.heads, n, n), dim=-1)
        out = self.proj((att @ v).transpose(1, 2).reshape(-1, n, c))
        out = out.view(b, h // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        x = x + torch.roll(out, shifts=(self.shift, self.shift), dims=(1, 2))
        return x + self.mlp(self.norm2(x))


class SwinLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.block = SwinBlock()
        self.head = nn.Linear(16, 5)

    def forward(self, img):
        x = self.block(self.patch(img).permute(0, 2, 3, 1))
        return self.head(x.mean(dim=(1, 2))), x


def test_swin_like_derived_image_sizes():
    """Image sizes 16*h x 16*w (patch 4, window 4; torch narrows h, w to >= 2): one
    executable for every such size."""
    torch.manual_seed(2)
    h, w = Dim("h", min=1, max=8), Dim("w", min=1, max=8)
    check(SwinLike().eval(), lambda b, hh, ww: (_randn(b, 3, hh, ww),), [(2, 32, 48), (1, 32, 32), (3, 80, 32)],
          {"img": {0: Dim("batch", max=8), 2: 16 * h, 3: 16 * w}}, atol=1e-4, rtol=1e-4)


# -- ConvNeXt-like ---------------------------------------------------------------------------

class ChannelsFirstLayerNorm(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.LayerNorm(c, eps=1e-6)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, LayerNorm over channels-last (permute), pointwise MLP with GELU,
    layer scale, residual."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c) + 0.5)

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.gamma * self.pw2(F.gelu(self.pw1(y)))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), ChannelsFirstLayerNorm(8))
        self.stage1 = ConvNeXtBlock(8)
        self.down = nn.Sequential(ChannelsFirstLayerNorm(8), nn.Conv2d(8, 16, 2, stride=2))
        self.stage2 = ConvNeXtBlock(16)
        self.norm, self.head = nn.LayerNorm(16), nn.Linear(16, 10)

    def forward(self, x):
        y = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(y.mean(dim=(-2, -1))))


def test_convnext_like_dynamic_sizes():
    torch.manual_seed(3)
    dyn = {"x": {0: Dim("batch", max=8), 2: Dim("h", min=16, max=256), 3: Dim("w", min=16, max=256)}}
    check(ConvNeXtLike().eval(), lambda b, h, w: (_randn(b, 3, h, w),), [(2, 32, 32), (1, 97, 131), (3, 16, 40)],
          dyn, atol=1e-4, rtol=1e-4)


# -- errors ----------------------------------------------------------------------------------

class _Flips(nn.Module):
    def helper(self, x):
        return torch.flip(x, [-1])           # line of the op: the error names it

    def forward(self, x):
        return self.helper(x * 2)


def _line_of(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_unsupported_op_names_overload_and_innermost_user_line():
    """Exported under full_stack_traces(), the line of torch.flip inside the helper, not
    the helper's call in forward; no core decomposition of aten.flip: no hint."""
    with full_stack_traces():
        ep = torch.export.export(_Flips(), (torch.randn(3, 4),))
    with pytest.raises(TorchImportError) as e:
        from_exported_program(ep)
    msg = str(e.value)
    line = _line_of(_Flips.helper, "torch.flip")
    assert msg == (f"aten.flip.default: unsupported ATen op (no relax conversion) at {__file__}:{line} "
                   "(return torch.flip(x, [-1])           # line of the op: the error names it)")
    assert isinstance(e.value, CompileError)


def test_default_export_names_the_innermost_forward_line():
    """A plain torch.export records only forward frames: the helper's call is the best line."""
    ep = torch.export.export(_Flips(), (torch.randn(3, 4),))
    with pytest.raises(TorchImportError, match=rf"test_torch_model_breadth.py:{_line_of(_Flips.forward, 'helper')} "
                       r"\(return self.helper\(x \* 2\)\)$"):
        from_exported_program(ep)


def test_compile_names_the_op_line_and_suggests_core_decompositions():
    """torch.compile-like one call: relax_mlir.frontend.torch.compile exports with every user
    frame. aten.logit has a core decomposition: the message says to try it, and it works."""

    class Logit(nn.Module):
        def forward(self, x):
            return torch.logit(x, eps=1e-3) + 1

    x = torch.rand(4, 5)
    with pytest.raises(TorchImportError) as e:
        torch_compile(Logit(), (x,))
    line = _line_of(Logit.forward, "torch.logit")
    assert str(e.value) == (f"aten.logit.default: unsupported ATen op (no relax conversion) at {__file__}:{line} "
                            "(return torch.logit(x, eps=1e-3) + 1); torch's core ATen table decomposes it: "
                            "try decompositions=\"core\"")
    fn = torch_compile(Logit(), (x,), decompositions="core")
    np.testing.assert_allclose(fn(x).numpy(), Logit()(x).numpy(), rtol=1e-5, atol=1e-5)


def test_min_max_other_and_full_reductions():
    class M(nn.Module):
        def forward(self, a, b):
            return torch.min(a, b), torch.max(a, b * 2), torch.max(a), torch.min(b), torch.roll(a, 3)

    S = Dim("s", min=2, max=64)
    check(M(), lambda n: (_randn(3, n), _randn(3, n, seed=1)), [(5,), (2,), (17,)],
          {"a": {1: S}, "b": {1: S}})


# -- relax-mlir compile of a saved transformers program ---------------------------------------

def test_cli_compiles_saved_transformers_program(tmp_path, capsys):
    """The program's output is a transformers ModelOutput (a pytree node registered when
    transformers.modeling_outputs is imported): the CLI imports it before loading."""
    import os
    import subprocess
    import sys

    torch.manual_seed(4)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64)
    model = transformers.BertModel(cfg).eval()
    ids = torch.randint(0, 100, (2, 12))
    ep = torch.export.export(model, (ids,), dynamic_shapes={"input_ids": {1: Dim("seq", max=64)}})
    pt2, so = tmp_path / "bert.pt2", tmp_path / "bert.so"
    torch.export.save(ep, str(pt2))
    root = __file__.rsplit("/test/", 1)[0]
    # a fresh process: transformers not imported before the load
    r = subprocess.run([sys.executable, "-m", "relax_mlir.tools.relax_mlir_cli", "compile", str(pt2), "-o", str(so)],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"wrote {so}" in r.stdout
    import relax_mlir

    exe = relax_mlir.load(str(so))
    params = np.load(str(tmp_path / "bert.params.npz"))
    params = [params[k] for k in params.files]
    x = torch.randint(0, 100, (2, 7))
    with torch.no_grad():
        ref = model(x)
    got = exe(x.numpy(), *params)
    np.testing.assert_allclose(got[0], ref.last_hidden_state.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], ref.pooler_output.numpy(), rtol=1e-4, atol=1e-4)


def test_failed_decomposition_is_an_import_error():
    """A decomposition that fails inside torch is a TorchImportError, not torch's exception."""
    def broken(x):
        raise RuntimeError("no such luck")

    ep = torch.export.export(nn.ReLU(), (torch.randn(3),))
    with pytest.raises(TorchImportError, match=r"^torch's run_decompositions \(a custom table\) failed: "
                                               r".*no such luck") as e:
        from_exported_program(ep, decompositions={torch.ops.aten.relu.default: broken})
    assert isinstance(e.value, CompileError)
