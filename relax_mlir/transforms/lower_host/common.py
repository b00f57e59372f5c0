"""What the jobs of relax-lower-host share: attribute names, types, locations, errors."""

from __future__ import annotations

from typing import Optional

from mlir import ir

LOWERED_ATTR = "relax.lowered"
GRAPH_TYPE_ATTR = "relax.graph_type"
CHECKS_ATTR = "relax.checks"
DETAIL_SYMBOLS_ATTR = "relax.detail_symbols"
DETAIL_SLOTS_ATTR = "relax.detail_slots"
#: bytes of session workspace a lowered function needs (its static arenas and its callees')
WORKSPACE_ATTR = "relax.workspace_bytes"
#: on every function relax-lower-host makes (entries and ``__relax_body_*``): host code,
#: which relax-host-optnone compiles without LLVM's optimizer
HOST_ATTR = "relax.host_code"


class LowerError(Exception):
    """Reported at an op's location."""

    def __init__(self, op, message: str):
        super().__init__(message)
        self.op = op


class UnboundSymbol(Exception):
    """A dimension expression names a symbol not bound at this point of the function."""


class UnsupportedType(ValueError):
    """An element type the host lowering cannot size."""


def i(n: int) -> ir.Type:
    return ir.IntegerType.get_signless(n)


def strip(t: ir.Type) -> ir.Type:
    """The tensor type without its ``#relax.shape`` encoding."""
    if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
        return ir.RankedTensorType.get(list(t.shape), t.element_type)
    return t


def element_bytes(t: ir.Type) -> int:
    """Bytes per element in memory (``i1`` is stored as a byte)."""
    if isinstance(t, ir.IntegerType):
        return max(1, (t.width + 7) // 8)
    if isinstance(t, ir.FloatType):
        return (t.width + 7) // 8
    if isinstance(t, ir.IndexType):
        return 8
    raise UnsupportedType(f"no byte size for element type {t}")


def file_location(loc: ir.Location) -> Optional[str]:
    """``file:line:col`` of the first file location inside ``loc`` (names, call sites and
    fused locations unwrapped), else None."""
    from ...dialects.diagnostics import file_line_col

    name, line, col = file_line_col(loc)
    return f"{name}:{line}:{col}" if line is not None else None


def at(op: ir.Operation) -> str:
    """`` at file:line:col`` for an op with a file location, else empty."""
    where = file_location(op.location)
    return f" at {where}" if where else ""


def value_name(v: ir.Value) -> str:
    """A readable name for a value: ``argument #i`` or ``the result of relax.x at file:line:col``."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return f"argument #{ir.BlockArgument(v).arg_number}"
    op = owner.operation if hasattr(owner, "operation") else owner
    return f"the result of {op.name}{at(op)}"
