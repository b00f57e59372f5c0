"""Shapes (tuples of symbolic dims) and their MLIR encoding.

The encoding is the dialect attribute ``#relax.shape<[d0, d1, ...]>`` on a
ranked tensor type; each element is an integer, a quoted expression string, or
``"?"`` for a dimension nothing can know (match_cast names it)::

    tensor<?x4xf32, #relax.shape<["n", 4]>>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Optional, Sequence, Union

from mlir import ir

from .expr import Dim, DimLike, ShapeSyntaxError, parse_dim

ATTR_PREFIX = "#relax.shape<"


class _Unknown:
    """The ``"?"`` dimension: no rule can know it; only match_cast names it."""

    _inst: Optional["_Unknown"] = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __str__(self) -> str:
        return "?"

    __repr__ = __str__

    def to_attr_text(self) -> str:
        return '"?"'

    is_static = False
    symbols: frozenset = frozenset()

    def subs(self, mapping) -> "_Unknown":
        return self


UNKNOWN = _Unknown()
ShapeDim = Union[Dim, _Unknown]


def dim_of(value) -> ShapeDim:
    if value is UNKNOWN or value == "?" or value is None:
        return UNKNOWN
    return Dim.of(value)


@dataclass(frozen=True)
class Shape:
    """A tuple of dims; hashable, canonical, printable as the attribute."""

    dims: tuple

    def __init__(self, dims: Iterable = ()):
        object.__setattr__(self, "dims", tuple(dim_of(d) for d in dims))

    def __iter__(self) -> Iterator[ShapeDim]:
        return iter(self.dims)

    def __len__(self) -> int:
        return len(self.dims)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Shape(self.dims[i])
        return self.dims[i]

    def __add__(self, other: "Shape") -> "Shape":
        return Shape(self.dims + tuple(Shape.of(other).dims))

    def __eq__(self, other) -> bool:
        try:
            other = Shape.of(other)
        except (TypeError, ShapeSyntaxError):
            return False
        return [str(d) for d in self.dims] == [str(d) for d in other.dims]

    def __hash__(self) -> int:
        return hash(tuple(str(d) for d in self.dims))

    @staticmethod
    def of(value) -> "Shape":
        return value if isinstance(value, Shape) else Shape(value)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def symbols(self) -> frozenset[str]:
        out: set[str] = set()
        for d in self.dims:
            out |= d.symbols
        return frozenset(out)

    @property
    def has_unknown(self) -> bool:
        return any(d is UNKNOWN for d in self.dims)

    def subs(self, mapping: Mapping[str, DimLike]) -> "Shape":
        return Shape(d.subs(mapping) for d in self.dims)

    def evaluate(self, values: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(d.evaluate(values) for d in self.dims)

    def numel(self) -> Optional[Dim]:
        if self.has_unknown:
            return None
        n = Dim.of(1)
        for d in self.dims:
            n = n * d
        return n

    def static_dims(self) -> list[Optional[int]]:
        """Per dim: the integer when static, None when dynamic (``?`` in the type)."""
        return [d.value if isinstance(d, Dim) and d.is_static else None for d in self.dims]

    def __str__(self) -> str:
        return "(" + ", ".join(str(d) for d in self.dims) + ("," if len(self.dims) == 1 else "") + ")"

    def __repr__(self) -> str:
        return f"Shape{self}"

    # -- attribute text ----------------------------------------------------
    def to_attr_text(self) -> str:
        return ATTR_PREFIX + "[" + ", ".join(d.to_attr_text() for d in self.dims) + "]>"

    def to_attr(self, context: Optional[ir.Context] = None) -> ir.Attribute:
        return ir.Attribute.parse(self.to_attr_text(), context)

    @staticmethod
    def from_attr_text(text: str) -> "Shape":
        """Parse ``#relax.shape<[...]>`` text (or its bracketed list alone)."""
        s = text.strip()
        if s.startswith(ATTR_PREFIX):
            if not s.endswith(">"):
                raise ShapeSyntaxError(f"malformed shape attribute {text}")
            s = s[len(ATTR_PREFIX):-1].strip()
        if not (s.startswith("[") and s.endswith("]")):
            raise ShapeSyntaxError(f"shape attribute must hold a list: {text}")
        return Shape(_parse_elements(s[1:-1]))

    @staticmethod
    def from_attr(attr: ir.Attribute) -> "Shape":
        text = str(attr)
        if not text.startswith(ATTR_PREFIX):
            raise ShapeSyntaxError(f"expected #relax.shape<...>, got {text}")
        return Shape.from_attr_text(text)


def _parse_elements(body: str) -> list[ShapeDim]:
    """Split ``"n", 4 : i64, "2*n"`` into dims (strings quoted, ints optionally typed)."""
    out: list[ShapeDim] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c in " \t\n,":
            i += 1
            continue
        if c == '"':
            j = body.index('"', i + 1) if '"' in body[i + 1:] else -1
            if j < 0:
                raise ShapeSyntaxError(f"unterminated string in shape [{body}]")
            txt = body[i + 1:j]
            out.append(UNKNOWN if txt.strip() == "?" else parse_dim(txt))
            i = j + 1
        else:
            j = i
            while j < n and body[j] != ",":
                j += 1
            tok = body[i:j].split(":")[0].strip()
            try:
                out.append(Dim.of(int(tok)))
            except ValueError:
                raise ShapeSyntaxError(f"shape element must be an integer or a string, got '{tok}'") from None
            i = j
    return out


# -- tensor types ------------------------------------------------------------

@dataclass(frozen=True)
class TensorSig:
    """What shape inference knows of a tensor value: its shape and element type (as text)."""

    shape: Shape
    dtype: str

    @property
    def rank(self) -> int:
        return self.shape.rank


def element_type(dtype: str, context: Optional[ir.Context] = None) -> ir.Type:
    return ir.Type.parse(dtype, context)


def tensor_type(shape: Shape | Sequence, dtype: Union[str, ir.Type], context: Optional[ir.Context] = None) -> ir.RankedTensorType:
    """``tensor<?x4xf32, #relax.shape<["n", 4]>>`` for a symbolic shape, plain when fully static."""
    shape = Shape.of(shape)
    et = element_type(dtype, context) if isinstance(dtype, str) else dtype
    static = [d if d is not None else ir.ShapedType.get_dynamic_size() for d in shape.static_dims()]
    if all(d is not None for d in shape.static_dims()):
        return ir.RankedTensorType.get(static, et)
    return ir.RankedTensorType.get(static, et, shape.to_attr(context))


def read_tensor_type(t: ir.Type) -> TensorSig:
    """The symbolic shape a tensor type carries (static dims from the type, others from the encoding).

    Raises ShapeSyntaxError when the encoding is malformed or disagrees with the type.
    """
    rt = ir.RankedTensorType(t)
    dtype = str(rt.element_type)
    dims = [None if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank)]
    enc = rt.encoding
    if enc is None:
        return TensorSig(Shape(UNKNOWN if d is None else d for d in dims), dtype)
    text = str(enc)
    if not text.startswith(ATTR_PREFIX):
        return TensorSig(Shape(UNKNOWN if d is None else d for d in dims), dtype)
    shape = Shape.from_attr_text(text)
    if shape.rank != rt.rank:
        raise ShapeSyntaxError(f"shape attribute has rank {shape.rank} but the tensor type has rank {rt.rank}")
    for i, (td, sd) in enumerate(zip(dims, shape.dims)):
        if td is not None and not (isinstance(sd, Dim) and sd.is_static and sd.value == td):
            raise ShapeSyntaxError(f"dim {i}: the type says {td} but the shape attribute says {sd}")
        if td is None and isinstance(sd, Dim) and sd.is_static:
            raise ShapeSyntaxError(f"dim {i}: the type says ? but the shape attribute says the static size {sd}")
    return TensorSig(shape, dtype)


def is_tensor(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)
