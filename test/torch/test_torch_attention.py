"""scaled_dot_product_attention in the importer: the masks of every shape torch allows, and
the graph it builds for a BERT-style model (the scores stay (batch*heads, L, S) from the
matmul through the softmax, one f32 mask bias computed once and shared by the layers, a
softmax kernel the rows schedule takes), compiled once and compared with eager torch."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
F = torch.nn.functional

from mlir import ir  # noqa: E402

import relax_mlir  # noqa: E402
from relax_mlir.frontend.torch import compile as torch_compile  # noqa: E402
from relax_mlir.runtime.executable import LiftedPreparedCall, PreparedCall  # noqa: E402
from relax_mlir.backends.cpu.schedules import select  # noqa: E402

from torch_check import check  # noqa: E402

G = torch.Generator().manual_seed(0)
B = torch.export.Dim("b", max=8)
S = torch.export.Dim("s", max=96)


def randn(*shape):
    return torch.randn(*shape, generator=G)


class Masks(torch.nn.Module):
    """q, k, v against a mask of each broadcast form (q scaled differently per form, so that
    the six attentions stay six after CSE)."""

    def forward(self, q, k, v, pad, full, square, bias):
        qs = [q * (1.0 + i / 8) for i in range(6)]
        return (F.scaled_dot_product_attention(qs[0], k, v, attn_mask=pad),      # (b, 1, 1, s): key padding
                F.scaled_dot_product_attention(qs[1], k, v, attn_mask=full),     # (b, h, s, s): every dim
                F.scaled_dot_product_attention(qs[2], k, v, attn_mask=square),   # (s, s): batch dims broadcast
                F.scaled_dot_product_attention(qs[3], k, v, attn_mask=bias),     # float (1, 1, s, s)
                F.scaled_dot_product_attention(qs[4], k, v, is_causal=True),
                F.scaled_dot_product_attention(qs[5][0], k[0], v[0], attn_mask=square))  # (h, s, e): one batch dim


@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
def test_attention_mask_forms(dt, tmp_path):
    def make(b, s):
        pad = torch.ones(b, 1, 1, s, dtype=torch.bool)
        pad[0, ..., (s + 1) // 2:] = False
        pad[-1, ...] = False                  # every key masked: torch's safe softmax gives 0 rows
        full = torch.rand(b, 3, s, s, generator=G) > 0.4
        full[..., 0] = True
        full[-1, 1, s // 2] = False           # one fully masked query row
        square = torch.rand(s, s, generator=G) > 0.5
        square[:, -1] = True
        bias = randn(1, 1, s, s)
        bias[..., 0, 1:] = -torch.inf
        if s > 1:
            bias[..., 1, :] = -torch.inf      # a query row with every key at -inf: 0 (safe softmax)
        q, k, v = randn(b, 3, s, 8), randn(b, 3, s, 8), randn(b, 3, s, 4)
        return q.to(dt), k.to(dt), v.to(dt), pad, full, square, bias.to(dt)

    d = {0: B, 2: S}
    tol = dict(atol=1e-5, rtol=1e-4) if dt == torch.float32 else dict(atol=1e-12, rtol=1e-10)
    fn = check(Masks(), make, [(2, 5), (1, 1), (3, 37), (8, 96)],
               {"q": d, "k": d, "v": d, "pad": {0: B, 3: S}, "full": {0: B, 2: S, 3: S}, "square": {0: S, 1: S},
                "bias": {2: S, 3: S}}, options={"dump_ir": str(tmp_path)}, **tol)
    ref = Masks()(*make(2, 5))
    assert float(ref[0][-1].abs().max()) == 0.0   # the fully masked batch row really is 0 in torch
    out = fn(*make(2, 5))
    np.testing.assert_array_equal(out[0][-1].numpy(), np.zeros((3, 5, 4), np.float32 if dt == torch.float32
                                                                else np.float64))
    assert float(ref[3][:, :, 1].abs().max()) == 0.0   # the -inf row of the float mask: 0 in torch too
    np.testing.assert_array_equal(out[3][:, :, 1].numpy(), 0)
    # every form runs as one fused attention call (relax_blas_attention); the float mask's
    # safe softmax (0 for a row of -inf) through a `_safe` entry
    _, _, library, _ = _graph_calls(tmp_path)
    suffix = "f32" if dt == torch.float32 else "f64"
    fused = [c for c in library if c.startswith("relax_blas_attention_") and c.endswith(suffix)]
    assert len(fused) == 6 and sum("_safe_" in c for c in fused) == 1, library


def _tiny_bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64, attn_implementation="sdpa")
    bert = transformers.BertModel(cfg).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Encoder().eval()


def _inputs(b, s):
    ids = torch.randint(0, 100, (b, s), generator=torch.Generator().manual_seed(b * 131 + s))
    mask = torch.ones(b, s, dtype=torch.int64)
    for i in range(b):
        mask[i, max(1, s - 3 * i):] = 0
    return ids, mask


def _producer(v: ir.Value) -> ir.Operation:
    return v.owner.operation if isinstance(v.owner, ir.OpView) else v.owner


def _graph_calls(directory):
    """From the dumped graph stage: {softmax kernel: its schedule}, the softmax call_tir's,
    the library callees and every call_tir callee of @main."""
    graph = glob.glob(os.path.join(str(directory), "*-graph.mlir"))
    assert len(graph) == 1
    with relax_mlir.make_context(), ir.Location.unknown():
        mod = ir.Module.parse(open(graph[0]).read())
        found = {}
        for op in mod.body.operations:
            if op.operation.name == "func.func" and "relax.kernel_op" in op.attributes:
                kop = ir.StringAttr(op.attributes["relax.kernel_op"]).value
                if "softmax" in kop:
                    sched = select(op.operation)
                    found[kop] = sched.name if sched is not None else None
        main = [o for o in mod.body.operations if ir.StringAttr(o.attributes["sym_name"]).value == "main"][0]
        body = main.regions[0].blocks[0].operations
        calls = [ir.FlatSymbolRefAttr(o.attributes["callee"]).value for o in body
                 if o.operation.name == "relax.call_tir" and "softmax" in str(o.attributes["callee"])]
        library = [ir.StringAttr(o.attributes["callee"]).value for o in body
                   if o.operation.name == "relax.call_dps_library"]
        kernels = [ir.FlatSymbolRefAttr(o.attributes["callee"]).value for o in body
                   if o.operation.name == "relax.call_tir"]
    return found, calls, library, kernels


def test_bert_attention_graph_and_kernels(tmp_path, monkeypatch):
    model = _tiny_bert()
    bd, sd = torch.export.Dim("batch", max=8), torch.export.Dim("seq", max=64)
    dyn = {"input_ids": {0: bd, 1: sd}, "attention_mask": {0: bd, 1: sd}}
    fn = torch_compile(model, _inputs(2, 8), dynamic_shapes=dyn, options={"dump_ir": str(tmp_path / "fused")})

    # graph: softmax(maximum(add(scores, bias), min)) on rank-3 scores, the scores straight from
    # a matmul, and ONE bias value shared by both layers
    softmaxes, biases = [], set()
    for op in fn.program.module.body.operations[0].regions[0].blocks[0].operations:
        if op.operation.name != "relax.softmax":
            continue
        softmaxes.append(op)
        assert ir.RankedTensorType(op.operands[0].type).rank == 3
        mx = _producer(op.operands[0])
        assert mx.name == "relax.maximum"
        add = _producer(mx.operands[0])
        assert add.name == "relax.add"
        scaled = _producer(add.operands[0])      # the scale multiplies the scores, not q
        assert scaled.name == "relax.multiply"
        assert _producer(scaled.operands[0]).name == "relax.matmul"
        biases.add(add.operands[1])
    assert len(softmaxes) == 2
    assert len(biases) == 1

    # By default each layer's attention is ONE fused library call on the unsplit projections,
    # writing the merged heads: no softmax kernel, no head split or merge copy.
    found, calls, library, kernels = _graph_calls(tmp_path / "fused")
    assert library.count("relax_blas_attention_h1111_f32") == 2, library
    assert not found and not calls
    assert not any("permute_dims" in k for k in kernels), kernels

    # Without it (RELAX_MLIR_DISPATCH_ATTENTION=0): each layer's add + maximum + softmax is one
    # kernel that gets the rows schedule (the scalar constants join each layer's kernel: the
    # first layer's takes the shared clamp constant, the second its own copy, so the two
    # kernels differ by name only), and q, k and v reach the attention products as head views
    # of their projections: no copy kernel splits the heads (the merge of the output heads
    # remains one).
    monkeypatch.setenv("RELAX_MLIR_DISPATCH_ATTENTION", "0")
    unfused = torch_compile(model, _inputs(2, 8), dynamic_shapes=dyn, options={"dump_ir": str(tmp_path / "off")})
    monkeypatch.delenv("RELAX_MLIR_DISPATCH_ATTENTION")
    found, calls, library, kernels = _graph_calls(tmp_path / "off")
    assert set(found.values()) == {"rows"} and all("add" in k and "softmax" in k for k in found), found
    assert len(calls) == 2
    assert library.count("relax_blas_matmul_tb_33_h11_f32") == 2
    assert library.count("relax_blas_matmul_33_h01_f32") == 2
    assert sum("permute_dims" in k for k in kernels) == 2, kernels

    # numerics at several sizes through the one executable; run() binds the weights once
    for b, s in [(2, 8), (1, 1), (3, 17), (8, 64)]:
        ids, mask = _inputs(b, s)
        with torch.no_grad():
            ref = model(ids, mask).numpy()
        got = fn.run(ids.numpy(), mask.numpy())
        np.testing.assert_allclose(got, ref, atol=1e-4, rtol=1e-4, err_msg=f"({b}, {s})")
        np.testing.assert_array_equal(got, fn.exe(ids.numpy(), mask.numpy(), *fn.params))
        np.testing.assert_allclose(unfused.run(ids.numpy(), mask.numpy()), ref, atol=1e-4, rtol=1e-4)
    assert isinstance(fn._bound, (PreparedCall, LiftedPreparedCall))   # (lifted: weight-only work bound once)


class GroupedQuery(torch.nn.Module):
    """Grouped-query attention both ways it is exported: sdpa's enable_gqa, and transformers'
    repeat_kv (expand + reshape) before a plain sdpa; 6 query heads over 2 k / v heads."""

    def forward(self, q, k, v, k2, v2, pad):
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=pad, enable_gqa=True)
        b, hk, s, d = k2.shape
        kr = k2[:, :, None, :, :].expand(b, hk, 3, s, d).reshape(b, hk * 3, s, d)
        vr = v2[:, :, None, :, :].expand(b, hk, 3, s, d).reshape(b, hk * 3, s, d)
        return a, F.scaled_dot_product_attention(q * 1.5, kr, vr, is_causal=True)


def test_grouped_query_attention_reads_kv_heads_in_place(tmp_path):
    def make(b, s):
        pad = torch.ones(b, 1, 1, s, dtype=torch.bool)
        pad[0, ..., (s + 1) // 2:] = False
        return (randn(b, 6, s, 8), randn(b, 2, s, 8), randn(b, 2, s, 8), randn(b, 2, s, 8), randn(b, 2, s, 8), pad)

    d = {0: B, 2: S}
    check(GroupedQuery(), make, [(2, 5), (1, 1), (3, 37), (8, 96)],
          {"q": d, "k": d, "v": d, "k2": d, "v2": d, "pad": {0: B, 3: S}}, options={"dump_ir": str(tmp_path)},
          atol=1e-5, rtol=1e-4)
    # both fused, k and v passed as their 2 heads per batch row (no repeat kernel, no broadcast)
    graph = open(glob.glob(os.path.join(str(tmp_path), "*-graph.mlir"))[0]).read()
    _, _, library, kernels = _graph_calls(tmp_path)
    assert library.count("relax_blas_attention_h0000_f32") == 2, library
    assert '"relax.broadcast_to"' not in graph and not any("broadcast_to" in k for k in kernels), kernels
    assert graph.count('#relax.shape<["2*b", "s", 8]>>, tensor<?x?x8xf32, #relax.shape<["2*b", "s", 8]>>, '
                       'tensor<6xf32>') == 2
