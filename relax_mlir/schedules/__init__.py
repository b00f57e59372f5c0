"""Transform-dialect schedules per kernel kind, applied by ``relax-apply-schedules``.

:func:`select` reads a kernel (a ``func.func`` marked ``relax.kernel``, on tensors) and
its recorded kind (``relax.kernel_kind``, from relax-annotate-kernel-kinds) and returns
the schedule that fits it, or None (the kernel then goes through plain loops):

* ``matmul``: fill + ``linalg.matmul`` (f32), any of M, N, K symbolic (:mod:`.matmul`);
* ``elementwise``: all-parallel ``linalg.generic`` chains (elementwise, broadcast),
  vectorized along the innermost dim with a peeled remainder (:mod:`.elementwise`);
* ``rows``: row reductions and normalizations (softmax, RMSNorm, LayerNorm): one
  fused, vectorized pass per row (:mod:`.rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from mlir import ir

from .common import apply
from .matmul import MatmulConfig, matmul_schedule

KIND_ATTR = "relax.kernel_kind"  # set by relax-annotate-kernel-kinds

#: Ops that only compute sizes or constants: they do not decide a schedule.
_NEUTRAL = {"arith.constant", "tensor.dim", "tensor.empty", "func.return"}


@dataclass
class Schedule:
    name: str
    body: Callable[[ir.Value], None]


def payload_ops(fn: ir.Operation) -> list[ir.Operation]:
    """The kernel's ops that do work (size bookkeeping left out)."""
    block = fn.regions[0].blocks[0]
    return [o.operation for o in block.operations if o.operation.name not in _NEUTRAL]


def _static(d: int) -> Optional[int]:
    return None if ir.ShapedType.is_dynamic_size(d) else d


def _select_matmul(fn: ir.Operation, ops: list[ir.Operation]) -> Optional[Schedule]:
    if [o.name for o in ops] != ["linalg.fill", "linalg.matmul"]:
        return None
    mm = ops[1]
    a, b = (ir.RankedTensorType(v.type) for v in list(mm.operands)[:2])
    if not all(isinstance(t.element_type, ir.F32Type) for t in (a, b)):
        return None
    m, k = (_static(d) for d in a.shape)
    n = _static(b.shape[1])
    return Schedule("matmul", matmul_schedule(m, n, k, MatmulConfig()))


def select(fn: ir.Operation) -> Optional[Schedule]:
    """The schedule for kernel ``fn``, or None when no schedule fits it."""
    ops = payload_ops(fn)
    kind = ir.StringAttr(fn.attributes[KIND_ATTR]).value if KIND_ATTR in fn.attributes else None
    if kind == "output-fusable":
        return _select_matmul(fn, ops)
    return None


__all__ = ["Schedule", "select", "apply", "payload_ops"]
