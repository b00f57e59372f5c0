"""relax_mlir.frontend.nn: modules export graph functions whose trailing arguments are the
parameters in named_parameters order; numerics against numpy at sizes 1, odd and large
through ONE compiled executable."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend import nn


class Block(nn.Module):
    def __init__(self):
        self.norm = nn.RMSNorm(8, eps=1e-5)
        self.up = nn.Linear(8, 12, bias=True)
        self.layers = [nn.Linear(12, 12), nn.Linear(12, 12)]
        self.ln = nn.LayerNorm(12)
        self.emb = nn.Embedding(10, 8)

    def __call__(self, ids):
        h = self.up(self.norm(self.emb(ids)))
        for lin in self.layers:
            h = relax.relu(lin(h))
        return self.ln(h)


def reference(ids, w):
    x = w["emb.weight"][ids]
    x = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w["norm.weight"]
    h = x @ w["up.weight"] + w["up.bias"]
    for i in range(2):
        h = np.maximum(h @ w[f"layers.{i}.weight"], 0)
    mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    return (h - mu) / np.sqrt(var + 1e-5) * w["ln.weight"] + w["ln.bias"]


def test_export_and_run():
    block = Block()
    names = [n for n, _ in block.named_parameters()]
    assert names == ["norm.weight", "up.weight", "up.bias", "layers.0.weight", "layers.1.weight",
                     "ln.weight", "ln.bias", "emb.weight"]
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        assert nn.export(m, "main", block, [("ids", ["n"], "i64")], block, upper_bounds={"n": 64}) == names
    assert "tensor<?x12xf32, #relax.shape<[\"n\", 12]>>" in str(m)
    exe = relax_mlir.compile(m)
    rng = np.random.default_rng(0)
    shapes = dict(block.named_parameters())
    w = {n: rng.standard_normal(shapes[n].shape).astype(np.float32) for n in names}
    for n in (1, 7, 64):
        ids = rng.integers(0, 10, n)
        got = exe(ids, *[w[k] for k in names])
        assert got.shape == (n, 12)
        np.testing.assert_allclose(got, reference(ids, w), atol=1e-4, rtol=1e-4)


def test_parameter_outside_export_is_an_error():
    lin = nn.Linear(4, 4)
    with pytest.raises(RuntimeError, match="outside nn.export"):
        lin.weight.value
