"""Symbolic shapes: the one home of dimension expressions, their encoding and proofs."""

from .expr import (Dim, DimLike, ShapeSyntaxError, Truth, dim_max, dim_min, parse_dim,
                   prove_equal, prove_le, solve_for, symbol)
from .shape import (ATTR_PREFIX, UNKNOWN, Shape, ShapeDim, TensorSig, dim_of, is_tensor,
                    read_tensor_type, tensor_type)

__all__ = [
    "Dim", "DimLike", "ShapeSyntaxError", "Truth", "dim_max", "dim_min", "parse_dim",
    "prove_equal", "prove_le", "solve_for", "symbol", "ATTR_PREFIX", "UNKNOWN", "Shape",
    "ShapeDim", "TensorSig", "dim_of", "is_tensor", "read_tensor_type", "tensor_type",
]
