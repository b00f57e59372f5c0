"""Building graph functions from Python.

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with graph_function(module, "mlp", [("x", ["n", 512], "f32"), ("w", [512, 64], "f32")],
                            upper_bounds={"n": 2048}) as fn:
            x, w = fn.params
            fn.ret(relax.relu(relax.matmul(x, w)))

Op results get their types from the ops' shape rules; the function's result
types are set from what :meth:`FunctionBuilder.ret` returns.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Sequence

from mlir import ir
from mlir.dialects import func

from ..dialects.relax import FUNCTION_ATTR, UPPER_BOUNDS_ATTR
from ..shapes import tensor_type

ParamSpec = tuple  # (name, shape, dtype)


class FunctionBuilder:
    def __init__(self, op: func.FuncOp, names: Sequence[str]):
        self.op = op
        self.names = list(names)
        self.block = op.regions[0].blocks[0]
        self.params = list(self.block.arguments)
        self._returned = False

    def ret(self, *values: ir.Value) -> None:
        """Return ``values`` and fix the function's result types."""
        func.ReturnOp(list(values))
        ftype = ir.FunctionType(ir.TypeAttr(self.op.attributes["function_type"]).value)
        self.op.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ftype.inputs), [v.type for v in values]))
        self._returned = True


@contextlib.contextmanager
def graph_function(module: ir.Module, name: str, params: Sequence[ParamSpec],
                   upper_bounds: Optional[dict[str, int]] = None) -> Iterator[FunctionBuilder]:
    """Append a graph function ``name`` to ``module``; build its body inside the ``with``."""
    types = [tensor_type(shape, dtype) for (_, shape, dtype) in params]
    with ir.InsertionPoint(module.body):
        f = func.FuncOp(name, ir.FunctionType.get(types, []))
    f.attributes[FUNCTION_ATTR] = ir.UnitAttr.get()
    if upper_bounds:
        i64 = ir.IntegerType.get_signless(64)
        f.attributes[UPPER_BOUNDS_ATTR] = ir.DictAttr.get(
            {k: ir.IntegerAttr.get(i64, v) for k, v in upper_bounds.items()})
    block = f.add_entry_block()
    fb = FunctionBuilder(f, [p[0] for p in params])
    with ir.InsertionPoint(block):
        yield fb
    if not fb._returned:
        raise ValueError(f"graph function @{name} was built without a return (call fn.ret(...))")
