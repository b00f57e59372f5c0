"""The pattern table of relax-dispatch-library: graph-level subgraphs -> library symbols.

A :class:`DispatchPattern` names a chain of relax ops (``("matmul", "add")``: the root,
then each op the single user of the previous one's result), a predicate over the
matched :class:`Match` (the TensorSigs of the call's inputs and of its result, the ops'
attributes), the library symbol (a ``str.format`` template over ``{ranks}`` and
``{dtype}``, or a function of the match) and the runtime library that defines it (see
:mod:`relax_mlir.runtime.libraries`). The pass tries longer chains first.

The inputs of the library call are the root's operands, then, for each later op of the
chain, its operands other than the chained value (so ``add(bias, mm)`` and
``add(mm, bias)`` both give ``(a, b, bias)``). The result is the last op's result.

Add one without touching the pass::

    from relax_mlir.transforms.dispatch_patterns import DispatchPattern, register_dispatch
    register_dispatch(DispatchPattern(
        "my_softmax", ("softmax",), symbol="my_softmax_{dtype}", library="mylib",
        predicate=lambda m: m.attrs[0]["axis"] in (-1, m.inputs[0].rank - 1)))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from mlir import ir

from ..shapes import UNKNOWN, Dim, TensorSig, Truth, prove_equal


@dataclass
class Match:
    """One matched chain: what a predicate, a symbol function and a flops function see."""
    ops: list[ir.Operation]
    values: list[ir.Value]          # the library call's inputs
    inputs: list[TensorSig]         # their TensorSigs
    out: TensorSig                  # the last op's result
    attrs: list[dict[str, Any]]     # each op's decoded attributes

    @property
    def ranks(self) -> str:
        return "".join(str(s.rank) for s in self.inputs)


@dataclass
class DispatchPattern:
    name: str
    ops: tuple[str, ...]
    symbol: Union[str, Callable[[Match], str]]
    library: str
    predicate: Callable[[Match], bool] = lambda m: True
    #: M*N*K-like work estimate (a symbolic Dim) for the pass's ``min-flops`` policy;
    #: None: always dispatch.
    flops: Optional[Callable[[Match], Dim]] = None
    benefit: int = field(default=0)
    #: The symbol taking the root's operand #1 TRANSPOSED (its last two axes swapped), when
    #: that operand is a ``permute_dims`` swapping its last two axes with no other user: the
    #: call then reads the permute's input in place and the transpose copy disappears
    #: (attention's ``q @ k^T``). None: no such variant.
    transposed_b: Optional[Callable[[Match], str]] = None
    #: The symbol taking attention HEAD VIEWS (``head_view`` in relax-dispatch-library): for
    #: (match, whether operand #1 is transposed, flags ``"h10"``/``"h01"``/``"h11"`` naming
    #: which of the two operands arrive as the unsplit (B, S, H*D) projection instead of the
    #: (B*H, S, D) copy of its heads). None (or a None result): no such variant.
    head_views: Optional[Callable[[Match, bool, str], Optional[str]]] = None

    def symbol_for(self, m: Match) -> str:
        if callable(self.symbol):
            return self.symbol(m)
        return self.symbol.format(ranks=m.ranks, dtype=m.out.dtype)


PATTERNS: list[DispatchPattern] = []


def register_dispatch(p: DispatchPattern) -> DispatchPattern:
    """Add a pattern (a later registration with the same name replaces the earlier one)."""
    PATTERNS[:] = [q for q in PATTERNS if q.name != p.name]
    PATTERNS.append(p)
    return p


def unregister_dispatch(name: str) -> None:
    PATTERNS[:] = [q for q in PATTERNS if q.name != name]


def ordered_patterns() -> list[DispatchPattern]:
    """Longest chains first, then higher benefit, then registration order."""
    return sorted(PATTERNS, key=lambda p: (-len(p.ops), -p.benefit))


# -- built in: matmul (+ bias) on relax_blas (oneMKL or scipy-openblas32) ----------------

def _known(*sigs: TensorSig) -> bool:
    return all(d is not UNKNOWN for s in sigs for d in s.shape)


def _eq(a, b) -> bool:
    return prove_equal(a, b) is Truth.TRUE


def _blas_matmul(m: Match) -> bool:
    """f32/f64, ranks 22/33/32/23, no out_dtype change, batch equal or broadcast (1)."""
    a, b = m.inputs[0], m.inputs[1]
    if m.attrs[0].get("out_dtype") not in (None, a.dtype):
        return False
    if not (a.dtype == b.dtype == m.out.dtype and a.dtype in ("f32", "f64")):
        return False
    if m.ranks[:2] not in ("22", "33", "32", "23") or not _known(a, b, m.out):
        return False
    if not _eq(a.shape[-1], b.shape[-2]):
        return False
    if a.rank == b.rank == 3:
        ba, bb = a.shape[0], b.shape[0]
        if not (_eq(ba, bb) or _eq(ba, 1) or _eq(bb, 1)):
            return False
    return True


def _blas_matmul_bias(m: Match) -> bool:
    """matmul as above, then + bias of shape [N] (either operand order), same dtype."""
    if not _blas_matmul(m):
        return False
    bias, n = m.inputs[2], m.inputs[1].shape[-1]
    return (bias.dtype == m.out.dtype and bias.rank == 1 and bias.shape[0] is not UNKNOWN
            and _eq(bias.shape[0], n) and m.out.rank == max(m.inputs[0].rank, m.inputs[1].rank))


def matmul_flops(m: Match) -> Dim:
    """batch * M * N * K of the matmul at the root of the chain."""
    a, out = m.inputs[0], m.out
    f = Dim.of(a.shape[-1])
    for d in out.shape:
        f = f * d
    return f


def _heads_symbol(m: Match, tb: bool, flags: str) -> Optional[str]:
    return f"relax_blas_matmul{'_tb' if tb else ''}_33_{flags}_{m.out.dtype}" if m.ranks == "33" else None


def _quantized_matmul(m: Match) -> bool:
    """A format the library computes on, x (M, K) f32 (relax_mlir.ops.quant; a half x is
    widened first by relax-widen-bf16-matmul, else it takes the generic kernel)."""
    from ..ops.quant import LIBRARY_FORMATS
    return m.attrs[0]["format"] in LIBRARY_FORMATS and m.inputs[0].rank == 2 and m.inputs[0].dtype == "f32" \
        and _known(*m.inputs, m.out)


def _quantized_take(m: Match) -> bool:
    from ..ops.quant import LIBRARY_FORMATS
    return m.attrs[0]["format"] in LIBRARY_FORMATS and m.inputs[1].rank == 1 and m.inputs[1].dtype == "i64"


# Block-quantized weights: the library kernels dequantize in registers (no generated code
# comes close: always dispatched, no calibration).
register_dispatch(DispatchPattern(
    "quantized_matmul", ("quantized_matmul",),
    lambda m: f"relax_qmatmul_{m.attrs[0]['format']}" + ("_q8" if m.attrs[0].get("activations") == "q8" else ""),
    "relax_blas", _quantized_matmul))
register_dispatch(DispatchPattern("quantized_take", ("quantized_take",), lambda m: f"relax_qtake_{m.attrs[0]['format']}",
                                  "relax_blas", _quantized_take))
register_dispatch(DispatchPattern("blas_matmul", ("matmul",), "relax_blas_matmul_{ranks}_{dtype}",
                                  "relax_blas", _blas_matmul, matmul_flops,
                                  transposed_b=lambda m: f"relax_blas_matmul_tb_{m.ranks}_{m.out.dtype}",
                                  head_views=_heads_symbol))
register_dispatch(DispatchPattern("blas_matmul_bias", ("matmul", "add"),
                                  lambda m: f"relax_blas_matmul_bias_{m.ranks[:2]}_{m.out.dtype}", "relax_blas",
                                  _blas_matmul_bias, matmul_flops,
                                  transposed_b=lambda m: f"relax_blas_matmul_bias_tb_{m.ranks[:2]}_{m.out.dtype}"))
