"""relax-lower-host: graph functions become ordinary host functions with run-time shape checks.

Split by job: :mod:`.function` lowers one graph function, :mod:`.target` holds the
target hooks (kernel calls, allocations, library calls, the workspace), :mod:`.metadata`
reads the lowered module back as the typed runtime contract (:mod:`relax_mlir.runtime.abi`),
this module drives the pass over the module (check ids, detail slots, workspaces).

Every graph function ``@f`` (``func.func`` with ``relax.function``) is rewritten into a
plain ``func.func @f`` on tensors WITHOUT ``#relax.shape`` encodings:

* every symbol is materialized once as an ``index`` value: parameter symbols from
  ``tensor.dim`` of the parameters (``2*k`` binds ``k = d // 2``), ``relax.match_cast``
  symbols from ``tensor.dim`` of its operand; every symbolic expression is computed
  once with ``arith`` ops (:class:`relax_mlir.shapes.emit.ArithEmitter`, checked: a
  ``//`` or ``%`` by zero and an int64 overflow are run-time ShapeErrors, never a trap);
* ``relax.call_tir`` -> an allocation of each output (its size checked: never negative,
  never overflowing; the allocation checked: a failure is a MemoryError), then the
  kernel call (``func.call`` on the cpu target), ``tensor.cast`` where the kernel's types
  are more (or less) static than the values;
* ``relax.call`` -> ``func.call`` of the lowered callee, whose status is propagated;
* ``relax.shape_of`` -> ``tensor.from_elements`` of the dims as ``i64``;
* ``relax.call_dps_library`` -> ``func.call`` of a private declaration with memref
  arguments and ``llvm.emit_c_interface``; the library provides
  ``void _mlir_ciface_<callee>(memref descriptor *...)`` (inputs, then outputs);
* ``relax.alloc_storage`` of a static size (relax-plan-memory's arena) -> a view of the
  **session workspace**, the function's first argument; of a symbolic size -> an allocation;
* ``relax.state_read`` -> a ``memref.view`` of the state buffer's rows (no copy),
  ``relax.state_write`` -> a ``memref.copy`` of the value into a view of its rows; both
  check the rows against the buffer's capacity at run time (a ``state`` check);
* parameter patterns (two params ``(n, 4)`` must agree, ``2*k`` needs an even size),
  ``relax.match_cast`` and ``relax.assert`` become run-time checks;
* ``relax.check_indices`` (relax.take's indices) -> a loop over the indices for their
  min and max and an ``index`` check (an IndexError) on the cpu target; dropped on GPU
  targets, whose buffers the host cannot read (their take kernels clamp).

The function stays one block (the size of the host code is linear in checks + results):
the checks of one point make a flag, and every op that touches memory (a kernel, a
library call, a graph-function call, a state write) runs under ``scf.if`` "every check so
far held". After a failed check the rest still computes its (checked, trap-free) index
arithmetic and allocations, but runs nothing on them; the first failing point writes its
status and details into a ``memref.alloca`` that the return reads.

Calling convention of a lowered function (the contract with the runtime)::

    func.func @f(%workspace: memref<?xi8>, %state: memref<?xi8>..., %params: tensor<...>...)
        -> (i32, i64 x D, results...)
        attributes {llvm.emit_c_interface, relax.lowered, relax.graph_type = <original type>,
                    relax.detail_symbols = [...], relax.checks = [{...}, ...],
                    relax.workspace_bytes = W}

One ``memref<?xi8>`` per state buffer of the module (``relax.state``, sorted by name)
follows the workspace in EVERY lowered function, whether it uses it or not, so calls
pass them along; the session owns them (their byte size is the capacity in rows times
the row's bytes). The workspace holds the function's static arenas at fixed offsets, then (after its own
``W0`` bytes) the workspaces of the functions it calls: ``W = W0 + max(W of callees)``.
The runtime passes each call a 64-byte aligned workspace of at least ``W`` bytes that no
other running call uses (one per session), so calls in different sessions run at the
same time. The first result is the status: ``0`` when every check passed, else the
module-wide id of the failed check (ids are unique in the module, so a failure inside a
callee propagates unchanged). The ``D`` ``i64`` results (``D`` is the same for every
function of the module, recorded as ``relax.detail_slots`` on the module) report the
failure: slot ``i < len(detail_symbols)`` is the value of that symbol (``0`` when not
yet bound), the next ``rank`` slots are the actual dims of the checked value. Each entry
of ``relax.checks`` is a :class:`relax_mlir.runtime.abi.Check` in its JSON form.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...ops.registry import RelaxError
from ...ops.state import module_states
from ...target import Target
from ..graph import CALL_OPS, body_ops, func_name, function_type, functions_by_name, graph_functions, top_ops
from ..registry import Option, emit_error, register_pass
from .common import (CHECKS_ATTR, DETAIL_SLOTS_ATTR, DETAIL_SYMBOLS_ATTR, GRAPH_TYPE_ATTR, LOWERED_ATTR,
                     WORKSPACE_ATTR, LowerError, i, strip)
from .function import FunctionLowering, function_symbols
from .metadata import host_metadata, signature_plan
from .target import HOST_HOOKS, HOST_TARGETS, HostHooks, HostTarget, register_host_hooks, register_host_target

ALIGN = 64
#: Prefix of the function holding a graph function's body when it takes a subset of the states.
BODY_PREFIX = "__relax_body_"


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class ModuleState:
    """Module-wide facts the per-function lowering shares: check ids, detail slots,
    lowered types, library declarations, workspace layout."""

    def __init__(self, module: ir.Operation, target: HostHooks):
        self.module = module
        self.target = target
        self.funcs = functions_by_name(module)
        self.graph = {func_name(f): f for f in graph_functions(module)}
        #: the module's state buffers (relax.state), in argument order (raises RelaxError)
        self.states = module_states(module)
        #: host code can read a tensor's elements (relax.check_indices): the cpu target's
        #: buffers are host memory; a GPU target's are the device's (checks dropped there)
        self.host_reads_tensors = Target.for_module(module).kind == "cpu"
        #: relax.check_indices deferred to the runtime (vulkan, cuda): the indices copied in
        #: stream order and checked after the call's synchronization
        #: (FunctionLowering.defer_check_indices)
        self.deferred_index_checks = Target.for_module(module).kind in ("vulkan", "cuda")
        slots = [len(s) + r for s, r in (function_symbols(f) for f in self.graph.values())]
        self.detail_slots = max(slots, default=0)
        self._types: dict[str, ir.FunctionType] = {}
        self._id = 0
        self.declared: dict[str, ir.Operation] = {}
        self._offsets: dict[str, dict] = {}
        self._own: dict[str, int] = {}
        for name, f in self.graph.items():
            offs, cur = {}, 0
            for op in body_ops(f):
                if op.name == "relax.alloc_storage":
                    t = ir.RankedTensorType(op.results[0].type)
                    if t.has_static_shape:
                        offs[op] = cur
                        cur += _align(t.shape[0])
            self._offsets[name], self._own[name] = offs, cur
        self._workspace: dict[str, int] = {}
        self._used: dict[str, tuple[str, ...]] = {}

    def next_id(self) -> int:
        self._id += 1
        return self._id

    def lowered_type(self, f: ir.Operation) -> ir.FunctionType:
        n = func_name(f)
        if n not in self._types:
            ft = function_type(f)
            res = [i(32)] + [i(64)] * self.detail_slots + [strip(t) for t in ft.results]
            buffers = [self.target.workspace_type()] + [self.target.state_type()] * len(self.states)
            self._types[n] = ir.FunctionType.get(buffers + [strip(t) for t in ft.inputs], res)
        return self._types[n]

    def used_states(self, fname: str) -> tuple[str, ...]:
        """The states ``fname`` reads or writes, itself or through its callees (module order)."""
        if fname not in self._used:
            self._used[fname] = ()   # a recursive call is refused elsewhere
            used = set()
            for op in body_ops(self.graph[fname]):
                if op.name in ("relax.state_read", "relax.state_write"):
                    used.add(ir.StringAttr(op.attributes["state"]).value)
                elif op.name in CALL_OPS:
                    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                    if callee in self.graph:
                        used.update(self.used_states(callee))
            self._used[fname] = tuple(s for s in self.states if s in used)
        return self._used[fname]

    def body_name(self, fname: str) -> str:
        """The function holding ``fname``'s lowered body: itself when it takes every state,
        else ``__relax_body_<fname>``, which takes only the states it uses (see
        :meth:`body_type`)."""
        return fname if len(self.used_states(fname)) == len(self.states) else BODY_PREFIX + fname

    def body_type(self, f: ir.Operation) -> ir.FunctionType:
        """:meth:`lowered_type` with only the used states: a layer function called N times
        by a model with 2N cache buffers would otherwise take all of them at every call
        (O(N**2) host code)."""
        lt = self.lowered_type(f)
        n = len(self.used_states(func_name(f)))
        inputs = list(lt.inputs)
        return ir.FunctionType.get(inputs[:1 + n] + inputs[1 + len(self.states):], list(lt.results))

    def own_bytes(self, fname: str) -> int:
        return self._own[fname]

    def storage_offset(self, fname: str, op: ir.Operation) -> int:
        return self._offsets[fname][op]

    def workspace_bytes(self, fname: str, visiting: Optional[set] = None) -> int:
        """Own arenas plus the largest callee workspace (calls run one at a time)."""
        if fname in self._workspace:
            return self._workspace[fname]
        visiting = visiting or set()
        if fname in visiting:
            raise LowerError(self.graph[fname], f"@{fname} calls itself through relax.call: a recursive "
                                                "graph function has no static workspace")
        visiting.add(fname)
        callees = 0
        for op in body_ops(self.graph[fname]):
            if op.name in CALL_OPS:
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee in self.graph:
                    callees = max(callees, self.workspace_bytes(callee, visiting))
        visiting.discard(fname)
        self._workspace[fname] = self._own[fname] + callees
        return self._workspace[fname]

    def declare_library(self, callee: str, types: list, loc: ir.Location) -> None:
        from mlir.dialects import func

        ft = ir.FunctionType.get(types, [])
        if callee in self.declared or callee in self.funcs:
            old = self.declared.get(callee) or self.funcs[callee]
            if function_type(old) != ft:
                raise LowerError(loc, f"library function '{callee}' is called with types {ft} "
                                      f"but was declared as {function_type(old)}")
            return
        d = func.FuncOp(callee, ft, visibility="private", ip=ir.InsertionPoint(top_ops(self.module)[0]))
        d.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        self.declared[callee] = d.operation


@register_pass("relax-lower-host",
               "Lower graph functions to host functions: shapes as index arithmetic, call_tir as "
               "kernel calls, run-time shape checks reported through a status result.",
               options=[Option("target", str, "cpu", "host target hooks (kernel calls, allocations): "
                                                     "relax_mlir.transforms.lower_host.HOST_HOOKS")])
def relax_lower_host(module: ir.Operation, opts) -> None:
    target = HOST_HOOKS.get(opts.target)
    if target is None:
        emit_error(module, f"relax-lower-host: unknown target '{opts.target}' "
                           f"(targets: {', '.join(sorted(HOST_HOOKS))})")
        return
    try:
        state = ModuleState(module, target)
    except RelaxError as e:
        emit_error(module, f"relax-lower-host: {e}")
        return
    lowered = []
    for f in list(state.graph.values()):
        fl = FunctionLowering(f, state)
        try:
            new = fl.run()
        except LowerError as e:
            emit_error(e.op, f"@{func_name(f)}: {e}")
            return
        finally:
            fl.release()
        lowered.append((f, new))
    for f, _ in lowered:
        f.erase()
    module.attributes[DETAIL_SLOTS_ATTR] = ir.IntegerAttr.get(i(64), state.detail_slots)


__all__ = ["HOST_HOOKS", "HostHooks", "register_host_hooks", "HOST_TARGETS", "HostTarget", "register_host_target", "host_metadata", "signature_plan",
           "LOWERED_ATTR", "GRAPH_TYPE_ATTR", "CHECKS_ATTR", "DETAIL_SYMBOLS_ATTR", "DETAIL_SLOTS_ATTR",
           "WORKSPACE_ATTR", "strip"]
