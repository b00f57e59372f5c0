"""A small nn-module API over the relax builders (in the spirit of TVM's ``relax.frontend.nn``).

A :class:`Module` declares :class:`Parameter`\\ s (name, symbolic-free shape, dtype) as
attributes and sub-modules; :func:`export` appends a graph function whose parameters are
the function's inputs followed by every model parameter (in :meth:`Module.named_parameters`
order), binds each :class:`Parameter` to its block argument and calls ``forward`` to build
the body. Weights never enter the IR: the caller passes them as arrays, in the order
:func:`export` returns::

    class MLP(nn.Module):
        def __init__(self):
            self.up = nn.Linear(512, 2048)
            self.down = nn.Linear(2048, 512)

        def __call__(self, x):
            return self.down(relax.relu(self.up(x)))

    mlp = MLP()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        names = nn.export(m, "main", mlp, [("x", ["n", 512], "f32")],
                          lambda x: mlp(x), upper_bounds={"n": 4096})
    exe = relax_mlir.compile(m)
    y = exe(x, *[weights[n] for n in names])

Layouts are the compiler's: :class:`Linear` keeps its weight as (in, out) so ``x @ W``
is a plain row-major matmul (transposing a torch (out, in) weight is the loader's job).
"""

from __future__ import annotations

from typing import Callable, Iterator, Optional, Sequence

from mlir import ir

from ..dialects import relax
from .builder import graph_function


class Parameter:
    """A weight of static shape; bound to a graph-function argument while one is built."""

    def __init__(self, shape: Sequence[int], dtype: str = "f32"):
        self.shape = [int(d) for d in shape]
        self.dtype = dtype
        self._value: Optional[ir.Value] = None

    @property
    def value(self) -> ir.Value:
        if self._value is None:
            raise RuntimeError("Parameter used outside nn.export (it is not bound to a function argument)")
        return self._value


class Module:
    """Base class: parameters and sub-modules are found through the instance's attributes
    (in assignment order; lists of modules are walked too)."""

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        for name, v in vars(self).items():
            if isinstance(v, Parameter):
                yield prefix + name, v
            elif isinstance(v, Module):
                yield from v.named_parameters(prefix + name + ".")
            elif isinstance(v, (list, tuple)):
                for i, m in enumerate(v):
                    if isinstance(m, Module):
                        yield from m.named_parameters(f"{prefix}{name}.{i}.")


class Linear(Module):
    """``x @ weight (+ bias)`` with weight laid out (in_features, out_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = False, dtype: str = "f32"):
        self.weight = Parameter([in_features, out_features], dtype)
        self.bias = Parameter([out_features], dtype) if bias else None

    def __call__(self, x: ir.Value) -> ir.Value:
        y = relax.matmul(x, self.weight.value)
        return relax.add(y, self.bias.value) if self.bias is not None else y


class Embedding(Module):
    """Rows of a (num, dim) table gathered at integer ids."""

    def __init__(self, num: int, dim: int, dtype: str = "f32"):
        self.weight = Parameter([num, dim], dtype)

    def __call__(self, ids: ir.Value) -> ir.Value:
        return relax.take(self.weight.value, ids, axis=0)


class QuantLinear(Module):
    """``x @ dequantize(weight)^T (+ bias)``: weight the raw rows of a block-quantized
    (out_features, in_features) matrix, an i8 ``(out_features, row bytes)`` parameter
    (relax.quantized_matmul; formats in :mod:`relax_mlir.ops.quant`)."""

    def __init__(self, in_features: int, out_features: int, fmt: str, bias: bool = False,
                 activations: str = "f32"):
        from ..ops.quant import row_bytes

        self.weight = Parameter([out_features, row_bytes(fmt, in_features)], "i8")
        self.bias = Parameter([out_features], "f32") if bias else None
        self.format, self.activations = fmt, activations

    def __call__(self, x: ir.Value) -> ir.Value:
        y = relax.quantized_matmul(x, self.weight.value, format=self.format, activations=self.activations)
        return relax.add(y, self.bias.value) if self.bias is not None else y


class QuantEmbedding(Module):
    """Dequantized rows of a block-quantized (num, dim) table (relax.quantized_take)."""

    def __init__(self, num: int, dim: int, fmt: str):
        from ..ops.quant import row_bytes

        self.weight = Parameter([num, row_bytes(fmt, dim)], "i8")
        self.format = fmt

    def __call__(self, ids: ir.Value) -> ir.Value:
        return relax.quantized_take(self.weight.value, ids, format=self.format)


class RMSNorm(Module):
    def __init__(self, dim: int, eps: float = 1e-6, dtype: str = "f32"):
        self.weight = Parameter([dim], dtype)
        self.eps = float(eps)

    def __call__(self, x: ir.Value) -> ir.Value:
        return relax.rms_norm(x, self.weight.value, axes=[-1], epsilon=self.eps)


class LayerNorm(Module):
    def __init__(self, dim: int, eps: float = 1e-5, dtype: str = "f32"):
        self.weight = Parameter([dim], dtype)
        self.bias = Parameter([dim], dtype)
        self.eps = float(eps)

    def __call__(self, x: ir.Value) -> ir.Value:
        return relax.layer_norm(x, self.weight.value, self.bias.value, axes=[-1], epsilon=self.eps)


def export(module: ir.Module, name: str, model: Module, inputs: Sequence[tuple],
           forward: Callable[..., object], upper_bounds: Optional[dict[str, int]] = None) -> list[str]:
    """Append graph function ``name(*inputs, *parameters)`` built by ``forward(*input values)``.

    ``inputs``: ``(name, shape, dtype)`` like :func:`graph_function`. ``forward`` returns
    one value or a sequence of values (the function's results, in order). Returns the
    parameter names in argument order (after the inputs)."""
    params = list(model.named_parameters())
    specs = list(inputs) + [(n.replace(".", "_"), p.shape, p.dtype) for n, p in params]
    with graph_function(module, name, specs, upper_bounds=upper_bounds) as fn:
        args = fn.params[:len(inputs)]
        for (_, p), v in zip(params, fn.params[len(inputs):]):
            p._value = v
        try:
            out = forward(*args)
        finally:
            for _, p in params:
                p._value = None
        fn.ret(*(out if isinstance(out, (list, tuple)) else [out]))
    return [n for n, _ in params]
