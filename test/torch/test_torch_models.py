"""Whole models through the torch.export importer (random init, fixed seed, no downloads),
the symbols and guards it emits, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import relax_mlir  # noqa: E402
from relax_mlir.errors import CompileError  # noqa: E402
from relax_mlir.frontend.torch import (TorchImportError, compile as torch_compile,  # noqa: E402
                                       from_exported_program)

from torch_check import check  # noqa: E402

B = torch.export.Dim("batch", max=16)
S = torch.export.Dim("seq", max=64)


def _ids(b, s, vocab=100, seed=0):
    return torch.randint(0, vocab, (b, s), generator=torch.Generator().manual_seed(seed + 31 * b + s))


def test_tiny_bert_with_padding_mask():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64)
    model = transformers.BertModel(cfg).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    def make(b, s):
        mask = torch.ones(b, s, dtype=torch.int64)
        mask[0, (s + 1) // 2:] = 0   # a padded sequence: the mask path (index, and, where) matters
        return _ids(b, s), mask

    dyn = {"input_ids": {0: B, 1: S}, "attention_mask": {0: B, 1: S}}
    check(Wrapped(), make, [(2, 8), (1, 5), (3, 17), (4, 64)], dyn, atol=1e-4, rtol=1e-4)


def test_tiny_llama_logits():
    """Grouped-query attention (4 query heads, 2 kv heads) and tied embeddings (the embedding
    table is also the lm_head weight: used by embedding and linear, so passed untransposed)."""
    torch.manual_seed(1)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
                                   tie_word_embeddings=True, use_cache=False)
    model = transformers.LlamaForCausalLM(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = model

        def forward(self, input_ids, attention_mask):
            return self.lm(input_ids=input_ids, attention_mask=attention_mask).logits

    def make(b, s):
        mask = torch.ones(b, s, dtype=torch.int64)
        mask[-1, : s // 3] = 0    # left padding: those query rows see no key (torch gives 0 attention)
        return _ids(b, s), mask

    fn = check(Logits(), make, [(2, 8), (1, 1), (3, 13), (2, 64)],
               {"input_ids": {0: B, 1: S}, "attention_mask": {0: B, 1: S}}, atol=1e-4, rtol=1e-4)
    tied = [p for p in fn.program.param_info if p.target == "lm.model.embed_tokens.weight"]
    assert len(tied) == 1 and not tied[0].transposed


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Dropout(0.1),
                                       torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))

    def forward(self, x):
        return torch.log_softmax(self.net(x), dim=-1)


def test_mlp_through_core_aten_decompositions():
    """The core ATen table turns linear into addmm/mm/view/permute and log_softmax into
    _log_softmax: the same numbers."""
    torch.manual_seed(2)
    N = torch.export.Dim("n", max=512)
    fn = check(MLP(), lambda n: (torch.randn(n, 12, generator=torch.Generator().manual_seed(n)),),
               [(4,), (1,), (300,)], {"x": {0: N}}, atol=1e-5, decompositions="core")
    # the weights' transposes (permute [1, 0] before addmm/mm) are done once, at import
    assert [p.transposed for p in fn.program.param_info] == [True, False] * 3
    text = str(fn.program.module)
    assert "relax.permute_dims" not in text and text.count('"relax.matmul"') == 3


def test_cnn_head_global_pool():
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 5)

        def forward(self, feats):
            pooled = torch.nn.functional.adaptive_avg_pool2d(torch.relu(feats), 1).flatten(1)
            return self.fc(pooled)

    torch.manual_seed(3)
    N = torch.export.Dim("n", max=64)
    H = torch.export.Dim("h", max=32)
    check(Head(), lambda n, h: (torch.randn(n, 8, h, 7, generator=torch.Generator().manual_seed(h)),),
          [(2, 4), (5, 9)], {"feats": {0: N, 2: H}}, atol=1e-5)


class SmallCNN(torch.nn.Module):
    """conv -> batch norm -> relu -> max pool -> conv -> global average pool -> linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 10)
        with torch.no_grad():   # eval-mode statistics that are not the identity
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
        y = torch.relu(self.conv2(y))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


@pytest.mark.parametrize("decompositions", ["default", "core", None])
def test_small_cnn_dynamic_batch_height_width(decompositions):
    """One compile serves every batch, height and width (the spatial sizes are symbolic
    expressions through both pools and the strided conv). Each decomposition level brings
    other ATen forms of the same layers (see ``want``)."""
    torch.manual_seed(6)
    model = SmallCNN().eval()
    N = torch.export.Dim("n", max=64)
    H, W = torch.export.Dim("h", min=8, max=128), torch.export.Dim("w", min=8, max=128)
    fn = check(model, lambda n, h, w: (torch.randn(n, 3, h, w, generator=torch.Generator().manual_seed(n * h + w)),),
               [(2, 16, 16), (1, 9, 13), (5, 32, 20)], {"x": {0: N, 2: H, 3: W}}, atol=1e-4, rtol=1e-4,
               decompositions=decompositions)
    assert fn.exe.functions == ["main", "main_transform_params"]   # the BatchNorm folds: relax-lift-params
    targets = {str(n.target) for n in fn.program.ep.graph.nodes if n.op == "call_function"}
    want = {None: {"aten.conv2d.default", "aten.batch_norm.default", "aten.max_pool2d.default"},
            "default": {"aten.conv2d.default", "aten._native_batch_norm_legit_no_training.default"},
            "core": {"aten.convolution.default", "aten._native_batch_norm_legit_no_training.default",
                     "aten.max_pool2d_with_indices.default"}}[decompositions]
    assert want <= targets
    text = str(fn.program.module)
    assert text.count('"relax.conv2d"') == 2 and text.count('"relax.max_pool2d"') == 1
    assert '#relax.shape<["n", 16, "(h - 2) // 4 + 1", "(w - 2) // 4 + 1"]>' in text


def test_signature_symbols_bounds_and_params():
    torch.manual_seed(4)
    model = MLP().eval()
    N = torch.export.Dim("rows", min=2, max=100)
    dyn = {"x": {0: N}}
    ep = torch.export.export(model, (torch.randn(5, 12),), dynamic_shapes=dyn)
    module, params = from_exported_program(ep, dynamic_shapes=dyn)
    text = str(module)
    assert 'func.func @main(%arg0: tensor<?x12xf32, #relax.shape<["rows", 12]>>, %arg1: tensor<12x32xf32>' in text
    assert "relax.upper_bounds = {rows = 100 : i64}" in text
    assert 'dims = #relax.shape<[2, "rows"]>, message = "size rows >= 2", predicate = "le"' in text
    # linear weights are passed transposed (no per-call transpose), biases as they are
    assert [p.shape for p in params] == [(12, 32), (32,), (32, 32), (32,), (32, 3), (3,)]
    np.testing.assert_array_equal(params[0], model.net[0].weight.detach().numpy().T)
    exe = relax_mlir.compile(module)
    x = np.random.default_rng(0).standard_normal((7, 12)).astype(np.float32)
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(exe(x, *params), ref, atol=1e-5)
    # torch's range of the symbol is checked at run time
    with pytest.raises(relax_mlir.ShapeError, match=r"rows <= 100 .* does not hold with rows = 101"):
        exe(np.zeros((101, 12), np.float32), *params)
    with pytest.raises(relax_mlir.ShapeError, match=r"size rows >= 2 does not hold"):
        exe(np.zeros((1, 12), np.float32), *params)


def test_default_symbol_names_without_dynamic_shapes():
    ep = torch.export.export(MLP().eval(), (torch.randn(5, 12),), dynamic_shapes={"x": {0: torch.export.Dim("q")}})
    module, _ = from_exported_program(ep)
    assert 'tensor<?x12xf32, #relax.shape<["x_0", 12]>>' in str(module)


def test_unsupported_op_names_op_and_source_line():
    class Flips(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            return torch.flip(y, [-1])   # no relax conversion for aten.flip

    ep = torch.export.export(Flips(), (torch.randn(3, 4),))
    with pytest.raises(TorchImportError) as e:
        from_exported_program(ep)
    msg = str(e.value)
    assert msg.startswith("aten.flip.default: unsupported ATen op (no relax conversion) at ")
    line = Flips.forward.__code__.co_firstlineno + 2
    assert msg.endswith(f"test_torch_models.py:{line} (return torch.flip(y, [-1])   "
                        "# no relax conversion for aten.flip)")
    assert isinstance(e.value, CompileError)


def test_training_mode_dropout_is_an_error():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).train()
    ep = torch.export.export(model, (torch.randn(3, 4),))
    with pytest.raises(TorchImportError, match=r"^aten.native_dropout.default: dropout in training mode .* at .*dropout.py:\d+ "):
        from_exported_program(ep)


def test_numpy_in_numpy_out_and_one_compile():
    torch.manual_seed(5)
    model = MLP().eval()
    N = torch.export.Dim("n", max=64)
    fn = torch_compile(model, (torch.randn(3, 12),), dynamic_shapes={"x": {0: N}})
    for n in (1, 6, 64):
        x = np.random.default_rng(n).standard_normal((n, 12)).astype(np.float32)
        y = fn(x)
        assert isinstance(y, np.ndarray) and y.shape == (n, 3)
        with torch.no_grad():
            np.testing.assert_allclose(y, model(torch.from_numpy(x)).numpy(), atol=1e-5)
    assert fn.exe.functions == ["main"]


def test_torch_guards_become_run_time_checks():
    class Pair(torch.nn.Module):
        def forward(self, x, y):
            torch._check(x.shape[0] + 1 <= y.shape[0])
            return x.sum() + y[: x.shape[0] + 1].sum()

    A = torch.export.Dim("a", min=2, max=63)
    Bd = torch.export.Dim("b", min=3, max=64)
    dyn = {"x": {0: A}, "y": {0: Bd}}
    ep = torch.export.export(Pair(), (torch.randn(3), torch.randn(5)), dynamic_shapes=dyn)
    module, params = from_exported_program(ep, dynamic_shapes=dyn)
    assert params == []
    assert ('dims = #relax.shape<["a + 1", "b"]>, message = "torch guard: 1 + L[\'x\'].size()[0] <= '
            'L[\'y\'].size()[0]", predicate = "le"') in str(module)
    exe = relax_mlir.compile(module)
    x, y = np.arange(4, dtype=np.float32), np.arange(6, dtype=np.float32)
    assert float(exe(x, y)) == 6.0 + 10.0
    with pytest.raises(relax_mlir.ShapeError, match=r"torch guard: .* does not hold with a = 4, b = 4"):
        exe(x, y[:4])
