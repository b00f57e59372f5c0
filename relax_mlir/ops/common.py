"""Shape-rule helpers shared by the op families (broadcasting, axes, dtypes)."""

from __future__ import annotations

from typing import Optional, Sequence

from ..shapes import UNKNOWN, Dim, Shape, TensorSig
from .registry import InferCall

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
INT_TYPES = ("i1", "i8", "i16", "i32", "i64")


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


def is_int(dtype: str) -> bool:
    return dtype in INT_TYPES or dtype == "index"


def tensor_input(call: InferCall, i: int) -> TensorSig:
    sig = call.inputs[i]
    if sig is None:
        raise call.error(f"operand #{i} must be a ranked tensor")
    return sig


def same_dtype(call: InferCall, sigs: Sequence[TensorSig]) -> str:
    dtypes = {s.dtype for s in sigs}
    if len(dtypes) != 1:
        raise call.error("operands must have the same element type, got " + ", ".join(s.dtype for s in sigs))
    return sigs[0].dtype


def norm_axis(call: InferCall, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise call.error(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def norm_axes(call: InferCall, axes: Optional[Sequence[int]], rank: int) -> list[int]:
    """Normalize reduction axes; None means all axes. Duplicates are an error."""
    if axes is None:
        return list(range(rank))
    out = [norm_axis(call, a, rank) for a in axes]
    if len(set(out)) != len(out):
        raise call.error(f"axes {list(axes)} repeat an axis")
    return sorted(out)


def broadcast_shapes(call: InferCall, shapes: Sequence[Shape]) -> Shape:
    """numpy broadcasting with symbolic dims.

    Per aligned position: static 1s drop out; the remaining dims must be equal
    (provably unequal is an error, unproven becomes a run-time check and the
    first dim is taken). A symbolic dim is never assumed to be 1.
    """
    rank = max(s.rank for s in shapes)
    padded = [[Dim.of(1)] * (rank - s.rank) + list(s.dims) for s in shapes]
    out = []
    for i in range(rank):
        col = [p[i] for p in padded]
        non1 = [d for d in col if not (d is not UNKNOWN and d.is_static and d.value == 1)]
        if not non1:
            out.append(Dim.of(1))
            continue
        first = non1[0]
        for d in non1[1:]:
            if first is UNKNOWN or d is UNKNOWN:
                if first is UNKNOWN and d is UNKNOWN:
                    continue
                raise call.error(f"cannot broadcast dim {i - rank} of an unknown size '?' with {d if first is UNKNOWN else first}; "
                                 "name it with relax.match_cast")
            call.require_equal(first, d, f"broadcast dim {i - rank}")
        out.append(first)
    return Shape(out)


def elementwise_unary(call: InferCall, float_only: bool = True) -> TensorSig:
    x = tensor_input(call, 0)
    if float_only and not is_float(x.dtype):
        raise call.error(f"expects a floating-point tensor, got {x.dtype}")
    return x


def binary(call: InferCall, result_dtype: Optional[str] = None) -> TensorSig:
    a, b = tensor_input(call, 0), tensor_input(call, 1)
    dtype = same_dtype(call, [a, b])
    return TensorSig(broadcast_shapes(call, [a.shape, b.shape]), result_dtype or dtype)


def all_equal(call: InferCall, dims: Sequence[Dim], what: str) -> Dim:
    """Require every dim in ``dims`` to equal the first; return it."""
    for d in dims[1:]:
        call.require_equal(dims[0], d, what)
    return dims[0]



#: Spellings accepted for an element type (numpy / PyTorch names) and the MLIR name they mean.
DTYPE_ALIASES = {
    "float16": "f16", "half": "f16", "float32": "f32", "float": "f32", "float64": "f64", "double": "f64",
    "bfloat16": "bf16", "bool": "i1", "bool_": "i1", "int8": "i8", "int16": "i16", "int32": "i32",
    "int64": "i64", "int": "i64", "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
}


def dtype_name(dtype) -> str:
    """The MLIR element type name for ``"f32"``, ``"float32"``, ``np.float32``, ``np.dtype("f4")``,
    ``torch.float32`` or an ``ir.Type``; ValueError naming the accepted forms otherwise."""
    if dtype is None:
        raise ValueError("a dtype is required (e.g. 'f32', 'float32' or np.float32)")
    text = None
    if any(dtype is t for t in (bool, int, float)):
        return {bool: "i1", int: "i64", float: "f32"}[dtype]
    if isinstance(dtype, str):
        text = dtype
    else:
        try:
            import numpy as np
            if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
                text = np.dtype(dtype).name
        except TypeError:
            text = None
        if text is None:
            text = str(dtype)
            if text.startswith("torch."):
                text = text[len("torch."):]
    text = DTYPE_ALIASES.get(text, text)
    if text in FLOAT_TYPES or text in INT_TYPES or text in ("ui8", "ui16", "ui32", "ui64", "index"):
        return text
    raise ValueError(f"unknown dtype {dtype!r}: use an MLIR name (f32, i64, ...), a numpy name "
                     "('float32') or a numpy type (np.float32)")
