"""Building graph functions from Python.

    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with graph_function(module, "mlp", [("x", ["n", 512], "float32"), ("w", [512, 64], np.float32)],
                            upper_bounds={"n": 2048}) as fn:
            x, w = fn.params
            b = relax.const(np.zeros(64, np.float32))
            fn.ret(relax.relu(x @ w + b) * 2.0)

Op results get their types from the ops' shape rules; the function's result types are
set from what :meth:`FunctionBuilder.ret` returns. Parameters are :class:`Var` values
(``x + y``, ``x @ w``, ``-x``, ``x * 2.0``) named by their location (``loc("x")``), so
the names show in printed locations and builder errors. When the body raises, the
half-built function is removed from the module.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Sequence

from mlir import ir
from mlir.dialects import func

from ..dialects._core import Var, const, value_name  # noqa: F401  (re-exported)
from ..dialects.relax import FUNCTION_ATTR, UPPER_BOUNDS_ATTR
from ..ops.common import dtype_name
from ..shapes import tensor_type

ParamSpec = tuple  # (name, shape, dtype)

__all__ = ["graph_function", "FunctionBuilder", "Var", "const", "dtype_name", "value_name"]


class FunctionBuilder:
    def __init__(self, op: func.FuncOp, names: Sequence[str]):
        self.op = op
        self.names = list(names)
        self.block = op.regions[0].blocks[0]
        self.params = [Var(a) for a in self.block.arguments]
        self._returned = False

    def param(self, name: str) -> Var:
        """The parameter called ``name``."""
        return self.params[self.names.index(name)]

    def ret(self, *values) -> None:
        """Return ``values`` and fix the function's result types."""
        values = [v if isinstance(v, ir.Value) else v.result for v in values]
        func.ReturnOp(list(values))
        ftype = ir.FunctionType(ir.TypeAttr(self.op.attributes["function_type"]).value)
        self.op.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(ftype.inputs), [v.type for v in values]))
        self._returned = True


@contextlib.contextmanager
def graph_function(module: ir.Module, name: str, params: Sequence[ParamSpec],
                   upper_bounds: Optional[dict[str, int]] = None) -> Iterator[FunctionBuilder]:
    """Append a graph function ``name`` to ``module``; build its body inside the ``with``.

    ``params``: ``(name, shape, dtype)`` each; dtype as ``"f32"``, ``"float32"`` or ``np.float32``."""
    names = [p[0] for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"graph function @{name}: parameter names repeat: {names}")
    types = [tensor_type(shape, dtype_name(dtype)) for (_, shape, dtype) in params]
    loc = ir.Location.current if _has_location() else ir.Location.unknown()
    with ir.InsertionPoint(module.body):
        f = func.FuncOp(name, ir.FunctionType.get(types, []))
    try:
        f.attributes[FUNCTION_ATTR] = ir.UnitAttr.get()
        if upper_bounds:
            i64 = ir.IntegerType.get_signless(64)
            f.attributes[UPPER_BOUNDS_ATTR] = ir.DictAttr.get(
                {k: ir.IntegerAttr.get(i64, v) for k, v in upper_bounds.items()})
        block = f.add_entry_block(arg_locs=[ir.Location.name(n, childLoc=loc) for n in names])
        fb = FunctionBuilder(f, names)
        with ir.InsertionPoint(block):
            yield fb
        if not fb._returned:
            raise ValueError(f"graph function @{name} was built without a return (call fn.ret(...))")
    except BaseException:
        f.operation.erase()  # nothing half-built stays in the module
        raise


def _has_location() -> bool:
    try:
        return ir.Location.current is not None
    except ValueError:
        return False
