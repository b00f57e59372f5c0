"""Typed op matching: which op is this, asked with the op's class, not its name as a string.

Upstream ops are matched by their OpView class (``func.FuncOp``, ``arith.ConstantOp``);
relax ops, which the IRDL dialect declares without Python classes, by their declaration in
the op table (``OPS["call_tir"]``)::

    isa(op, func.FuncOp)
    isa(v.owner, arith.ConstantOp, tensor.EmptyOp)
    isa(op, OPS["reshape"])

A misspelt class is an AttributeError at import, where a misspelt string silently never
matches. The test compares names (``OPERATION_NAME``, ``OpDef.full_name``) and builds no
OpView, so it costs what ``op.name == "..."`` costs.
"""

from __future__ import annotations

from typing import Optional, Union

from mlir import ir

from .registry import OpDef

#: What an op can be matched against: an OpView class or a relax op's declaration.
OpKind = Union[type, OpDef]


def kind_name(kind: OpKind) -> str:
    """The MLIR op name of ``kind`` (``func.func``, ``relax.call_tir``)."""
    if isinstance(kind, OpDef):
        return kind.full_name
    if isinstance(kind, type) and issubclass(kind, ir.OpView):
        return kind.OPERATION_NAME
    raise TypeError(f"not an op kind (an OpView class or an OpDef): {kind!r}")


def isa(op: Optional[Union[ir.Operation, ir.OpView]], *kinds: OpKind) -> bool:
    """Whether ``op`` is one of ``kinds``; False for None (``value.owner`` of a block
    argument is a Block, also False)."""
    if not isinstance(op, (ir.Operation, ir.OpView)):
        return False
    name = op.operation.name
    return any(name == kind_name(k) for k in kinds)
