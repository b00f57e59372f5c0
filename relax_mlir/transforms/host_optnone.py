"""relax-host-optnone: host code is compiled without LLVM's optimizer.

The functions relax-lower-host makes (graph-function entries and their ``__relax_body_*``,
marked ``relax.host_code``; after relax-internalize-graph-functions the entry's body sits in
its ``_mlir_ciface_`` function) only orchestrate: shape arithmetic, run-time checks,
allocations, kernel and library calls, each once per call of the function. Their run time
is the kernels'; LLVM's -O3 buys nothing there, but its value-tracking passes
(JumpThreading, CorrelatedValuePropagation, InstCombine) are quadratic in the chain of
"every check so far held" flags a graph function carries: a 60-layer decoder's ``extend``
took 2.3 s in ``opt`` alone, 3.4x its 30-layer time. ``optimize_none`` (with the
``no_inline`` LLVM requires next to it) skips them; kernels keep -O3 and are not inlined
into host code (each is called once per call site, behind its checks). ``opt`` (the export
and compile-cache path) honours it; MLIR's ExecutionEngine optimizes every function
regardless (no OptNone instrumentation in its optimizing transformer), so the JIT path
gains little.
"""

from __future__ import annotations

from mlir import ir

from .lower_host.common import HOST_ATTR
from .registry import register_pass


@register_pass("relax-host-optnone",
               "Mark host functions (relax.host_code, from relax-lower-host) optimize_none + no_inline "
               "(run on the LLVM dialect: LLVM's optimizer skips them).")
def relax_host_optnone(module: ir.Operation, opts) -> None:
    unit = ir.UnitAttr.get()
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "llvm.func" and HOST_ATTR in op.attributes and len(op.regions[0].blocks):
            op.attributes["no_inline"] = unit
            op.attributes["optimize_none"] = unit
