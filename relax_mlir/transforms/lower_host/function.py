"""The per-function job of relax-lower-host: one graph function -> one host function.

Symbols become ``index`` values, dimension expressions ``arith`` (through the one
interpreter, :class:`relax_mlir.shapes.emit.ArithEmitter`, in checked mode), ops their
host form through the target hooks (:mod:`.target`), and every condition the input must
meet a run-time check. The checks of one point are combined into one flag; the
function stays ONE block in which every op that touches memory (a kernel, library or
graph-function call, a state write) runs under ``scf.if %ok``, ``%ok`` being "every check
so far passed". The first failing point writes its status and details into a small
``memref.alloca`` (the failure report); the return reads them, and yields placeholder
results for the outputs that are not fresh buffers (see the package docstring). So
each check costs a fixed number of ops: a nest of ``scf.if``s, one per check point, each
yielding every result, made the host code (and one-shot bufferization's time) grow with
checks x results.
"""

from __future__ import annotations


from typing import TYPE_CHECKING, Callable, Optional

import numpy as np
from mlir import ir
from mlir.dialects import arith, bufferization, builtin, func, memref, scf, tensor

from ...dialects.relax import FUNCTION_ATTR
from ...ops.registry import read_attrs
from ...ops.state import row_shape
from ...runtime.abi import Check
from ...shapes import UNKNOWN, Dim, Shape, Truth, prove_le, read_tensor_type, symbol
from ...shapes.emit import ArithEmitter, UnsupportedExpression
from ...shapes.match import match_shapes
from ..graph import body_ops, func_name, function_type, param_sigs, relax_opdef
from .common import (CHECKS_ATTR, DETAIL_SYMBOLS_ATTR, GRAPH_TYPE_ATTR, HOST_ATTR, LOWERED_ATTR, WORKSPACE_ATTR,
                     LowerError, UnboundSymbol, UnsupportedType, at, element_bytes, i, strip, value_name)

if TYPE_CHECKING:
    from . import ModuleState

STATE_OPS = ("relax.state_read", "relax.state_write")
#: the GPU runtimes' callback of a deferred relax.check_indices (see defer_check_indices)
CHECK_INDICES_FN = "relax_gpu_check_indices"


def declare_callback(state: "ModuleState", name: str, types: list) -> None:
    """A private declaration of runtime callback ``name`` (plain C ABI: scalars only)."""
    if name in state.declared:
        return
    ft = ir.FunctionType.get(types, [])
    from ..graph import top_ops
    d = func.FuncOp(name, ft, visibility="private", ip=ir.InsertionPoint(top_ops(state.module)[0]))
    state.declared[name] = d.operation


def function_symbols(f: ir.Operation) -> tuple[list[str], int]:
    """(symbols in binding order, max rank of a checked value) of a graph function."""
    syms: list[str] = []
    rank = 0
    for s in param_sigs(f):
        if s is None:
            continue
        rank = max(rank, s.rank)
        for d in s.shape:
            for x in sorted(d.symbols):
                if x not in syms:
                    syms.append(x)
    for op in body_ops(f):
        if op.name in STATE_OPS:
            rank = max(rank, 3)       # a failed state check reports [begin, end, capacity]
        if op.name == "relax.check_indices":
            rank = max(rank, 2)       # a failed index check reports [index, size]
        if op.name == "relax.match_cast":
            rank = max(rank, ir.RankedTensorType(op.operands[0].type).rank)
            pat = Shape.from_attr(op.attributes["shape"])
            for x in sorted(pat.symbols):
                if x not in syms:
                    syms.append(x)
    return syms, rank


class FunctionLowering:
    def __init__(self, f: ir.Operation, state: "ModuleState"):
        self.f = f
        self.name = func_name(f)
        self.state = state
        self.target = state.target
        self.symbols, _ = function_symbols(f)
        self.env: dict[str, ir.Value] = {}
        self.cache: dict[str, ir.Value] = {}
        self.vmap: dict = {}
        self.planned_buffers: dict = {}   # planned destination tensor -> its memref.view
        self.pending: list[tuple] = []
        #: i1: every check flushed so far passed (None: no check yet, statically true)
        self.ok: Optional[ir.Value] = None
        #: memref<(1 + D) x i64>: status and details of the first failed check point
        self.report: Optional[ir.Value] = None
        #: fresh buffers (tensors) allocated by this function or returned by a callee,
        #: which a failed call may return unread (see _return)
        self.fresh: set = set()
        self.checks: list[Check] = []
        self.readable: dict[str, str] = {}  # placeholder symbol -> "dim i of <value>"
        self.result_types = state.lowered_type(f).results
        self.loc = f.location
        self.uid = 0
        self.where = f"@{self.name}"        # what a check reported by the emitter is about
        self.emitter = ArithEmitter(lambda: self.ip, self._lookup, lambda: self.cache, self._expr_check)

    def release(self) -> None:
        """Drop the IR handles now: the emitter's callbacks make a reference cycle, which
        would keep this context's values (and so the whole context) alive until a gc run."""
        self.emitter = None
        for d in (self.env, self.cache, self.vmap, self.planned_buffers):
            d.clear()
        self.pending, self.ok, self.report = [], None, None
        self.fresh.clear()

    # -- small builders ------------------------------------------------------
    def const(self, value: int, t: Optional[ir.Type] = None) -> ir.Value:
        return self.emitter.constant(value, t)

    def cmp(self, pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), a, b, ip=self.ip).result

    def to_i64(self, v: ir.Value) -> ir.Value:
        return arith.IndexCastOp(i(64), v, ip=self.ip).result

    def cast(self, v: ir.Value, t: ir.Type) -> ir.Value:
        if v.type == t:
            return v
        return tensor.CastOp(t, v, ip=self.ip).result

    def dim(self, v: ir.Value, k: int) -> ir.Value:
        rt = ir.RankedTensorType(v.type)
        if not rt.is_dynamic_dim(k):
            return self.const(rt.get_dim_size(k))
        return tensor.DimOp(v, self.const(k), ip=self.ip).result

    # -- symbolic expressions -> index arithmetic (checked) ------------------
    def index(self, d) -> ir.Value:
        return self.emitter.emit(d)

    def _lookup(self, name: str) -> ir.Value:
        if name not in self.env:
            raise UnboundSymbol(name)
        return self.env[name]

    def _readable(self, text: str) -> str:
        for ph, name in self.readable.items():
            text = text.replace(ph, name)
        return text

    def _expr_check(self, ok: ir.Value, kind: str, expr: Dim) -> None:
        self.add_check(ok, {"kind": kind, "where": self.where, "expr": self._readable(str(expr))}, None)

    # -- checks -----------------------------------------------------------------
    def _detail(self, value, bound: list[str]) -> list:
        """Detail slots: the bound symbols, then the dims of ``value`` (a tensor) or the
        ``index`` values of a list."""
        out: list = []
        for s in self.symbols:
            out.append(self.to_i64(self.env[s]) if s in bound else 0)
        if isinstance(value, list):
            out.extend(self.to_i64(v) for v in value)
        elif value is not None:
            rt = ir.RankedTensorType(value.type)
            out.extend(self.to_i64(self.dim(value, k)) for k in range(rt.rank))
        return out

    def bound_now(self) -> list[str]:
        return [s for s in self.symbols if s in self.env]

    def add_check(self, cond: ir.Value, entry: dict, value,
                  bound: Optional[list[str]] = None) -> None:
        """A pending check; on failure the details report ``value``'s dims (a tensor) or the
        ``index`` values of a list."""
        bound = self.bound_now() if bound is None else list(bound)
        cid = self.state.next_id()
        if isinstance(value, list):
            rank = len(value)
        else:
            rank = ir.RankedTensorType(value.type).rank if value is not None else 0
        self.checks.append(Check(id=cid, bound=tuple(bound), rank=rank, **entry))
        self.pending.append((cond, cid, (value, bound)))

    def add_propagate(self, status: ir.Value, details: list[ir.Value]) -> None:
        ok = self.cmp("eq", status, self.const(0, i(32)))
        self.pending.append((ok, status, details))

    def flush(self) -> None:
        """Combine the pending checks into ``self.ok``; the first point where one fails
        (its flag false while every earlier one held) writes the first failing check's
        status and details into the failure report, in an ``scf.if`` off the hot path."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        ok = pending[0][0]
        for c in pending[1:]:
            ok = arith.AndIOp(ok, c[0], ip=self.ip).result
        D = self.state.detail_slots
        if self.report is None:
            t = ir.MemRefType.get([1 + D], i(64))
            self.report = memref.AllocaOp(t, [], [], ip=self.ip, loc=self.loc).result
        failed = arith.XOrIOp(ok, self.const(1, i(1)), ip=self.ip).result
        if self.ok is not None:
            failed = arith.AndIOp(self.ok, failed, ip=self.ip).result
        ifop = scf.IfOp(failed, [], has_else=False, ip=self.ip, loc=self.loc)
        outer_ip, outer_cache = self.ip, self.cache
        self.ip, self.cache = ir.InsertionPoint(ifop.then_block), dict(outer_cache)
        # the first failing check: the last one when all the others passed
        status, details = self._failure(pending[-1])
        for cond, st, det in reversed(pending[:-1]):
            st, det = self._failure((cond, st, det))
            status = arith.SelectOp(cond, status, st, ip=self.ip).result
            details = [arith.SelectOp(cond, a, b, ip=self.ip).result for a, b in zip(details, det)]
        status = arith.ExtUIOp(i(64), status, ip=self.ip).result
        for k, v in enumerate([status] + details):
            memref.StoreOp(v, self.report, [self.const(k)], ip=self.ip)
        scf.YieldOp([], ip=self.ip)
        self.ip, self.cache = outer_ip, outer_cache
        self.ok = ok if self.ok is None else arith.AndIOp(self.ok, ok, ip=self.ip).result

    def _failure(self, check: tuple) -> tuple[ir.Value, list[ir.Value]]:
        """The status (``i32``) and the detail slots (``i64``) a pending check reports."""
        _, st, det = check
        if isinstance(st, int):
            value, bound = det
            det = self._detail(value, bound)
            st = self.const(st, i(32))
        det = [self.const(x, i(64)) if isinstance(x, int) else x for x in det]
        return st, det + [self.const(0, i(64))] * (self.state.detail_slots - len(det))

    def guarded(self, build: Callable[[], list], types: list, fallback: Callable[[], list],
                loc: Optional[ir.Location] = None) -> list[ir.Value]:
        """``build()`` (ops at ``self.ip``, returning values of ``types``) under
        ``scf.if %ok``; when a check failed, ``fallback()``'s values instead."""
        if self.ok is None:
            return list(build())
        ifop = scf.IfOp(self.ok, list(types), has_else=bool(types), ip=self.ip, loc=loc or self.loc)
        outer_ip, outer_cache = self.ip, self.cache
        branches = [(ifop.then_block, build)] + ([(ifop.else_block, fallback)] if types else [])
        for block, make in branches:
            self.ip, self.cache = ir.InsertionPoint(block), dict(outer_cache)
            scf.YieldOp(list(make()), ip=self.ip)
        self.ip, self.cache = outer_ip, outer_cache
        return list(ifop.results)

    def placeholder(self, t: ir.Type) -> ir.Value:
        """A value of type ``t`` that nobody reads (a result when a check failed)."""
        rt = ir.RankedTensorType(t)
        sizes = [self.const(0) if rt.is_dynamic_dim(k) else rt.get_dim_size(k) for k in range(rt.rank)]
        return tensor.EmptyOp(sizes, rt.element_type, ip=self.ip).result

    # -- matching (params, match_cast) -------------------------------------------
    def bind(self, patterns: list[Shape], values: list[ir.Value], names: list[str], unknowns,
             kind: str, op=None) -> list[tuple]:
        """Bind ``unknowns`` from the run-time dims of ``values``; returns the checks to add."""
        self.uid += 1
        shapes = []
        for j, v in enumerate(values):
            rt = ir.RankedTensorType(v.type)
            dims = []
            for k in range(rt.rank):
                if not rt.is_dynamic_dim(k):
                    dims.append(rt.get_dim_size(k))
                else:
                    ph = f"?{self.uid}_{j}_{k}"
                    self.env[ph] = self.dim(v, k)
                    self.readable[ph] = f"(actual dim {k})"
                    dims.append(Dim(symbol(ph)))
            shapes.append(Shape(dims))
        m = match_shapes(patterns, shapes, set(unknowns), names=names)
        if m.error:
            raise LowerError(op or self.f, f"{kind} can never match: {m.error}")
        if m.unresolved:
            raise LowerError(op or self.f, f"{kind}: cannot bind symbol(s) {', '.join(sorted(m.unresolved))}")
        checks = []
        for s, d in m.bindings.items():
            self.env[s] = self.index(d)
            if prove_le(0, d) is not Truth.TRUE:
                checks.append((self.cmp("sle", self.const(0), self.env[s]), f"{s} >= 0"))
        for lhs, rhs, where in m.checks:
            checks.append((self.cmp("eq", self.index(lhs), self.index(rhs)), where))
        for s, (a, where) in m.free_when_zero.items():
            if self._determines(s, a):   # k of a*k with a = 0 is any value: where it matters, a >= 1
                checks.append((self.cmp("sle", self.const(1), self.index(a)),
                               f"{where}: {s} is undetermined when {a} = 0, and a value of the function "
                               f"has a size in {s}"))
        return checks

    def _determines(self, s: str, a: Dim) -> bool:
        """Whether symbol ``s`` sizes a value of the graph function (an op's or the function's
        result, an asserted dimension) when ``a`` is 0: then the value of ``s`` matters."""
        zero = {symbol(z): 0 for z in sorted(a.symbols)}
        dims = []
        for op in body_ops(self.f):
            for r in op.results:
                sig = read_tensor_type(r.type) if isinstance(r.type, ir.RankedTensorType) else None
                if sig is not None:
                    dims += [d for d in sig.shape if d is not UNKNOWN]
            if op.name == "relax.assert":
                dims += [d for d in Shape.from_attr(op.attributes["dims"]) if d is not UNKNOWN]
        for d in dims:
            if s in d.symbols and any(s in Dim(d.expr.subs(z, 0)).symbols for z in zero):
                return True
        return False

    # -- driver ---------------------------------------------------------------------
    def _entry(self, body) -> func.FuncOp:
        """``@f`` with every state (the runtime's calling convention), forwarding the states
        it uses to its private ``body``."""
        lt = self.state.lowered_type(self.f)
        entry = func.FuncOp(self.name, lt, ip=ir.InsertionPoint(self.f), loc=self.f.location)
        body.attributes["sym_visibility"] = ir.StringAttr.get("private")
        block = entry.add_entry_block()
        args = list(block.arguments)
        states = dict(zip(self.state.states, args[1:1 + len(self.state.states)]))
        fwd = [args[0]] + [states[s] for s in self.state.used_states(self.name)] + args[1 + len(states):]
        with ir.InsertionPoint(block), self.f.location:
            call = func.CallOp(list(lt.results), ir.FlatSymbolRefAttr.get(body.name.value), fwd)
            func.ReturnOp(list(call.results))
        return entry

    def run(self) -> ir.Operation:
        f = self.f
        used = self.state.used_states(self.name)
        body = func.FuncOp(self.state.body_name(self.name), self.state.body_type(f), ip=ir.InsertionPoint(f),
                           loc=f.location)
        new = body if body.name.value == self.name else self._entry(body)
        block = body.add_entry_block()
        self.ip = ir.InsertionPoint(block)
        self.workspace = block.arguments[0]
        n_states = len(used)
        self.state_buffers = dict(zip(used, list(block.arguments)[1:1 + n_states]))
        old_block = f.regions[0].blocks[0]
        for a, b in zip(old_block.arguments, list(block.arguments)[1 + n_states:]):
            self.vmap[a] = b
        # parameter patterns
        sigs = param_sigs(f)
        idx = [k for k, s in enumerate(sigs) if s is not None]
        pats = [sigs[k].shape for k in idx]
        vals = [self.vmap[old_block.arguments[k]] for k in idx]
        if pats:
            syms = set().union(*(p.symbols for p in pats))
            names = [f"argument #{k}" for k in idx]
            self.where = f"@{self.name} parameters"
            checks = self.bind(pats, vals, names, syms, "parameters")
            bound = self.bound_now()
            for cond, where in checks:
                j = next((k for k in idx if where.startswith(f"argument #{k} dim ")), idx[0])
                plain = where in {f"argument #{j} dim {k}" for k in range(sigs[j].rank)}
                self.add_check(cond, {"kind": "param", "where": f"argument #{j}", "index": j,
                                      "expected": str(sigs[j].shape),
                                      "detail": "" if plain else self._readable(where)},
                               self.vmap[old_block.arguments[j]], bound)
        for op in body_ops(f):
            self.where = f"{op.name}{at(op)}"
            try:
                self.lower_op(op)
            except UnboundSymbol as e:
                raise LowerError(op, f"symbol '{e}' is not bound at this point") from None
            except (UnsupportedExpression, UnsupportedType) as e:
                raise LowerError(op, str(e)) from None
        # metadata
        attrs = new.attributes
        for key in list(f.attributes):
            if key not in ("sym_name", "function_type", FUNCTION_ATTR, "arg_attrs", "res_attrs"):
                attrs[key] = f.attributes[key]
        attrs["llvm.emit_c_interface"] = ir.UnitAttr.get()
        attrs[LOWERED_ATTR] = ir.UnitAttr.get()
        attrs[HOST_ATTR] = ir.UnitAttr.get()
        body.attributes[HOST_ATTR] = ir.UnitAttr.get()
        attrs[GRAPH_TYPE_ATTR] = ir.TypeAttr.get(function_type(f))
        attrs[DETAIL_SYMBOLS_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in self.symbols])
        attrs[CHECKS_ATTR] = ir.ArrayAttr.get([_json_attr(c.to_json()) for c in self.checks])
        attrs[WORKSPACE_ATTR] = ir.IntegerAttr.get(i(64), self.state.workspace_bytes(self.name))
        return new.operation

    def lower_op(self, op: ir.Operation) -> None:
        name = op.name
        if name != "relax.assert":
            self.flush()
        operands = [self.vmap[v] for v in op.operands]
        if name == "func.return":
            D = self.state.detail_slots
            outs = [self.cast(v, t) for v, t in zip(operands, self.result_types[1 + D:])]
            func.ReturnOp(self._return(outs), ip=self.ip, loc=op.location)
        elif name == "relax.call_tir":
            self.lower_call_tir(op, operands)
        elif name == "relax.call":
            self.lower_call(op, operands)
        elif name == "relax.repeat":
            self.lower_repeat(op, operands)
        elif name == "relax.view":
            self.lower_view(op, operands[0])
        elif name == "relax.match_cast":
            self.lower_match_cast(op, operands[0])
        elif name == "relax.assert":
            self.lower_assert(op)
        elif name == "relax.check_indices":
            self.lower_check_indices(op, operands[0])
        elif name == "relax.shape_of":
            x = operands[0]
            rank = ir.RankedTensorType(x.type).rank
            dims = [self.to_i64(self.dim(x, k)) for k in range(rank)]
            self.vmap[op.results[0]] = tensor.FromElementsOp(strip(op.results[0].type), dims, ip=self.ip).result
        elif name == "relax.call_dps_library":
            self.lower_library(op, operands)
        elif name in ("relax.alloc_storage", "relax.alloc_tensor"):
            self.lower_planned(op, operands)
        elif name in STATE_OPS:
            self.lower_state(op, operands)
        elif name.startswith("relax."):
            raise LowerError(op, f"'{name}' has no host lowering: run relax-legalize first "
                                 "(it turns every other relax op into relax.call_tir)")
        else:
            new = op.clone(ip=self.ip)
            for k, v in enumerate(op.operands):
                new.operands[k] = self.vmap[v]
            for r_old, r_new in zip(op.results, new.results):
                r_new.set_type(strip(r_old.type))
                self.vmap[r_old] = r_new

    # -- allocation sizes ---------------------------------------------------------------
    def _out_sizes(self, t: ir.Type, op, what: str, check_bytes: bool = True) -> tuple[list, Dim]:
        """The dynamic sizes of a value to allocate (checked: no negative size) and its
        byte size as a dimension expression (with ``check_bytes``, computed here: its
        overflow checks are pending)."""
        sig = read_tensor_type(t)
        rt = ir.RankedTensorType(t)
        sizes = []
        nbytes = Dim.of(element_bytes(rt.element_type))
        for k, d in enumerate(sig.shape):
            if d is UNKNOWN:
                raise LowerError(op, f"{what}: dim {k} is unknown ('?'): outputs need a symbolic size")
            nbytes = nbytes * d
            if not rt.is_dynamic_dim(k):
                continue
            v = self.index(d)
            if prove_le(0, d) is not Truth.TRUE:
                self.add_check(self.cmp("sle", self.const(0), v),
                               {"kind": "size", "where": f"{what}{at(op)}", "expr": str(d),
                                "expected": str(sig.shape)}, None)
            sizes.append(v)
        if not nbytes.is_static:
            if check_bytes:
                self.index(nbytes)  # overflow checks of the byte size
        elif nbytes.value >= 2 ** 63:
            raise LowerError(op, f"{what}: {nbytes.value} bytes do not fit in int64")
        return sizes, nbytes

    def _alloc_output(self, r: ir.Value, op, what: str) -> ir.Value:
        sizes, nbytes = self._out_sizes(r.type, op, what)
        return self.target.alloc_tensor(self, strip(r.type), sizes, nbytes, f"{what}{at(op)}",
                                        str(read_tensor_type(r.type).shape), op.location)

    def _is_fresh(self, v: ir.Value) -> bool:
        """Whether ``v`` is a fresh buffer (see ``self.fresh``), through tensor.cast ops."""
        while v not in self.fresh:
            owner = v.owner
            if isinstance(owner, ir.Block) or owner.operation.name != "tensor.cast":
                return False
            v = owner.operands[0]
        return True

    def _return(self, outs: list[ir.Value]) -> list[ir.Value]:
        """Status, details and results. When a check failed: the report, and the results
        as they are where they are buffers allocated here (fresh outputs, maybe never
        written, that the caller frees unread), a placeholder each for the others (a
        view or an argument cast to a static shape that a failed check may disprove:
        never cloned then), under one ``scf.if``. A fresh output stays outside it:
        yielding a result that both branches share would make deallocation clone it on
        every call (a 16 MB softmax output was copied per call)."""
        D = self.state.detail_slots
        if self.ok is None:
            return [self.const(0, i(32))] + [self.const(0, i(64))] * D + outs
        report = [memref.LoadOp(self.report, [self.const(k)], ip=self.ip).result for k in range(1 + D)]
        report[0] = arith.TruncIOp(i(32), report[0], ip=self.ip).result
        zeros = [self.const(0, i(32))] + [self.const(0, i(64))] * D
        head = [arith.SelectOp(self.ok, z, r, ip=self.ip).result for z, r in zip(zeros, report)]
        other = [k for k, v in enumerate(outs) if not self._is_fresh(v)]
        if other:
            picked = self.guarded(lambda: [outs[k] for k in other], [outs[k].type for k in other],
                                  lambda: [self.placeholder(outs[k].type) for k in other])
            outs = list(outs)
            for k, v in zip(other, picked):
                outs[k] = v
        return head + outs

    def lower_call_tir(self, op, operands) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        kernel = self.state.funcs.get(callee)
        if kernel is None:
            raise LowerError(op, f"call_tir callee @{callee} is not a func.func in this module")
        kt = function_type(kernel)
        tir = Shape.from_attr(op.attributes["tir_vars"]) if "tir_vars" in op.attributes else Shape([])
        # relax-plan-memory: destinations of the results listed in `dests` are the last operands
        dests = list(ir.DenseI64ArrayAttr(op.attributes["dests"])) if "dests" in op.attributes else []
        planned = {}
        if dests:
            planned = dict(zip(dests, operands[len(operands) - len(dests):]))
            operands = operands[:len(operands) - len(dests)]
        n_in, n_out = len(operands), len(op.results)
        if len(kt.inputs) != n_in + n_out + tir.rank or len(kt.results) != n_out:
            raise LowerError(op, f"kernel @{callee} has type {kt} but call_tir passes {n_in} input(s), "
                                 f"{n_out} output(s) and {tir.rank} tir_var(s)")
        # kernels are module-internal: private lets bufferization drop results equal to outputs
        kernel.attributes["sym_visibility"] = ir.StringAttr.get("private")
        args = [self.cast(v, t) for v, t in zip(operands, kt.inputs)]
        for k, (r, t) in enumerate(zip(op.results, kt.inputs[n_in:])):
            out = planned[k] if k in planned else self._alloc_output(r, op, f"result #{k} of {op.name}")
            args.append(self.cast(out, t))
        for d, t in zip(tir, kt.inputs[n_in + n_out:]):
            v = self.index(d)
            if t != v.type:
                v = arith.IndexCastOp(t, v, ip=self.ip).result
            args.append(v)
        self.flush()  # sizes, overflows and allocations are checked before the kernel runs
        results = self.guarded(lambda: self.target.call_kernel(self, callee, args, list(kt.results), op.location),
                               list(kt.results), lambda: [self.cast(a, t) for a, t in zip(args[n_in:], kt.results)],
                               op.location)
        for k, (r, v) in enumerate(zip(op.results, results)):
            if k not in planned:  # a fresh buffer (never a workspace view) may be returned
                self.fresh.add(v)
            self.vmap[r] = self.cast(v, strip(r.type))

    def lower_call(self, op, operands) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        g = self.state.graph.get(callee)
        if g is None:
            raise LowerError(op, f"relax.call callee @{callee} is not a graph function")
        lt = self.state.body_type(g)
        ws = self.target.callee_workspace(self, self.state.own_bytes(self.name), op.location)
        buffers = [ws] + [self.state_buffers[s] for s in self.state.used_states(callee)]
        args = buffers + [self.cast(v, t) for v, t in zip(operands, list(lt.inputs)[len(buffers):])]
        D = self.state.detail_slots
        body = ir.FlatSymbolRefAttr.get(self.state.body_name(callee))
        res = self.guarded(
            lambda: func.CallOp(list(lt.results), body, args, ip=self.ip, loc=op.location).results,
            list(lt.results),
            lambda: [self.const(0, i(32))] + [self.const(0, i(64))] * D
            + [self.placeholder(t) for t in list(lt.results)[1 + D:]], op.location)
        self.fresh.update(res[1 + D:])   # a graph function returns buffers its caller owns
        self.add_propagate(res[0], res[1:1 + D])
        self.flush()
        for r, v in zip(op.results, res[1 + D:]):
            self.vmap[r] = self.cast(v, strip(r.type))

    def lower_repeat(self, op, operands) -> None:
        """``relax.repeat`` -> ONE ``scf.for`` over the iterations calling the lowered callee
        (the host code of a layer stack does not grow with its depth). The loop carries the
        status, the details and the carried values; after a failed call the remaining
        iterations skip theirs, and the status is propagated as a relax.call's. The
        iteration reaches the callee as a zero-byte ``(i, 0) i8`` tensor (its dim binds the
        callee's iteration symbol)."""
        attrs = read_attrs(relax_opdef(op), op)
        callee, count, carried = ir.FlatSymbolRefAttr(op.attributes["callee"]).value, attrs["count"], attrs["carried"]
        g = self.state.graph.get(callee)
        if g is None:
            raise LowerError(op, f"relax.repeat callee @{callee} is not a graph function")
        lt = self.state.body_type(g)
        ws = self.target.callee_workspace(self, self.state.own_bytes(self.name), op.location)
        buffers = [ws] + [self.state_buffers[s] for s in self.state.used_states(callee)]
        ptypes = list(lt.inputs)[len(buffers):]          # iteration, carried, invariants
        it_type = ptypes[0]
        init = [self.cast(v, t) for v, t in zip(operands[:carried], ptypes[1:1 + carried])]
        inv = [self.cast(v, t) for v, t in zip(operands[carried:], ptypes[1 + carried:])]
        D = self.state.detail_slots
        rtypes = list(lt.results)
        head = [self.const(0, i(32))] + [self.const(0, i(64))] * D
        body = ir.FlatSymbolRefAttr.get(self.state.body_name(callee))

        def build() -> list:
            zero, one, n = self.const(0), self.const(1), self.const(count)
            loop = scf.ForOp(zero, n, one, head + init, ip=self.ip, loc=op.location)
            outer_ip, outer_cache = self.ip, self.cache
            self.ip, self.cache = ir.InsertionPoint(loop.body), dict(outer_cache)
            acc = list(loop.inner_iter_args)
            ok = self.cmp("eq", acc[0], self.const(0, i(32)))
            ifop = scf.IfOp(ok, rtypes, has_else=True, ip=self.ip, loc=op.location)
            self.ip = ir.InsertionPoint(ifop.then_block)
            it = tensor.EmptyOp([loop.induction_variable, 0], i(8), ip=self.ip).result
            res = func.CallOp(rtypes, body, buffers + [self.cast(it, it_type)] + acc[1 + D:] + inv,
                              ip=self.ip, loc=op.location).results
            scf.YieldOp(list(res), ip=self.ip)
            scf.YieldOp(acc, ip=ir.InsertionPoint(ifop.else_block))
            self.ip = ir.InsertionPoint(loop.body)
            scf.YieldOp(list(ifop.results), ip=self.ip)
            self.ip, self.cache = outer_ip, outer_cache
            return list(loop.results)

        res = self.guarded(build, rtypes,
                           lambda: head + [self.placeholder(t) for t in rtypes[1 + D:]], op.location)
        self.fresh.update(res[1 + D:])   # a graph function returns buffers its caller owns
        self.add_propagate(res[0], res[1:1 + D])
        self.flush()
        for r, v in zip(op.results, res[1 + D:]):
            self.vmap[r] = self.cast(v, strip(r.type))

    def lower_view(self, op, x) -> None:
        """``relax.view``: a ``memref.view`` of the i8 operand's buffer at the byte offset (no
        copy; identity layout, so kernels take it as they take any tensor), checked to lie
        inside the operand's bytes."""
        attrs = read_attrs(relax_opdef(op), op)
        off = Dim.of(attrs["offset"])
        t = strip(op.results[0].type)
        rt = ir.RankedTensorType(t)
        n = element_bytes(rt.element_type)
        for d in rt.shape:
            n *= d
        xt = ir.RankedTensorType(x.type)
        total = self.const(1)
        for k in range(xt.rank):
            total = arith.MulIOp(total, self.dim(x, k), ip=self.ip).result
        o = self.index(off)
        end = arith.AddIOp(o, self.const(n), ip=self.ip).result
        self.add_check(self.cmp("sle", end, total),
                       {"kind": "assert", "where": f"relax.view{at(op)}", "message": "relax.view within its operand",
                        "lhs": str(off + n), "rhs": "bytes of the operand", "predicate": "le",
                        "location": str(op.location)}, None)
        self.flush()
        dyn = ir.ShapedType.get_dynamic_size()
        src = bufferization.ToBufferOp(ir.MemRefType.get(list(xt.shape), i(8)), x, read_only=True, ip=self.ip).result
        if xt.rank > 1:   # the bytes as one row (a contiguous tensor: collapsing is free)
            size = dyn if any(xt.is_dynamic_dim(k) for k in range(xt.rank)) else int(np.prod(xt.shape))
            src = memref.CollapseShapeOp(ir.MemRefType.get([size], i(8)), src, [list(range(xt.rank))],
                                         ip=self.ip).result
        src = self._dynamic(src)
        view = memref.ViewOp(ir.MemRefType.get(list(rt.shape), rt.element_type), src, o, [], ip=self.ip,
                             loc=op.location).result
        self.vmap[op.results[0]] = bufferization.ToTensorOp(t, view, restrict=True, ip=self.ip).result

    def lower_match_cast(self, op, x) -> None:
        pattern = Shape.from_attr(op.attributes["shape"])
        bound = self.bound_now()
        new_syms = {s for s in pattern.symbols if s not in self.env}
        vname = value_name(op.operands[0])
        checks = self.bind([pattern], [x], ["value"], new_syms, "relax.match_cast", op)
        plain = {f"value dim {k}" for k in range(pattern.rank)}
        for cond, where in checks:
            self.add_check(cond, {"kind": "match_cast", "where": f"relax.match_cast{at(op)} of {vname}",
                                  "expected": str(pattern), "detail": "" if where in plain else self._readable(where),
                                  "location": str(op.location)}, x, bound)
        self.flush()
        self.vmap[op.results[0]] = self.cast(x, strip(op.results[0].type))

    def lower_assert(self, op) -> None:
        dims = Shape.from_attr(op.attributes["dims"])
        pred = ir.StringAttr(op.attributes["predicate"]).value if "predicate" in op.attributes else "eq"
        msg = ir.StringAttr(op.attributes["message"]).value if "message" in op.attributes else ""
        lhs, rhs = self.index(dims[0]), self.index(dims[1])
        cond = self.cmp("eq" if pred == "eq" else "sle", lhs, rhs)
        self.add_check(cond, {"kind": "assert", "where": f"relax.assert{at(op)}", "message": msg,
                              "lhs": str(dims[0]), "rhs": str(dims[1]), "predicate": pred,
                              "location": str(op.location)}, None)

    def lower_check_indices(self, op, idx: ir.Value) -> None:
        """Every element of ``idx`` in ``[-size, size)`` (``[0, size)`` unsigned): one pass
        over the indices for their min and max (a loop LLVM vectorizes; one iteration for a
        decode step's token), then a check reporting the worst index and the size. Where
        the host cannot read the indices before the kernels run (vulkan) the check is
        deferred to the runtime (:meth:`defer_check_indices`; vulkan and cuda)."""
        if not self.state.host_reads_tensors:
            if self.state.deferred_index_checks:
                self.defer_check_indices(op, idx)
            return
        size_dim = read_attrs(relax_opdef(op), op)["size"]
        msg = ir.StringAttr(op.attributes["message"]).value if "message" in op.attributes else ""
        rt = ir.RankedTensorType(idx.type)
        ety = rt.element_type
        unsigned = ir.IntegerType(ety).is_unsigned
        width = ir.IntegerType(ety).width
        signless = ir.IntegerType.get_signless(width)
        i64 = i(64)

        def as_i64(v: ir.Value) -> ir.Value:
            if ety != signless:
                v = builtin.UnrealizedConversionCastOp([signless], [v], ip=self.ip).result
            if width < 64:
                ext = arith.ExtUIOp if unsigned else arith.ExtSIOp
                v = ext(i64, v, ip=self.ip).result
            return v

        if rt.rank == 0:
            v = as_i64(tensor.ExtractOp(idx, [], ip=self.ip).result)
            lo, hi = v, v
        else:   # a loop nest (no collapse_shape: a static 0 beside a dynamic dim folds to invalid IR)
            zero, one, outer = self.const(0), self.const(1), self.ip
            bounds = [self.dim(idx, k) for k in range(rt.rank)]
            acc = [self.const(2 ** 63 - 1, i64), self.const(-2 ** 63, i64)]
            loops, ivs = [], []
            for k in range(rt.rank):
                loop = scf.ForOp(zero, bounds[k], one, acc, ip=self.ip, loc=op.location)
                loops.append(loop)
                ivs.append(loop.induction_variable)
                acc = list(loop.inner_iter_args)
                self.ip = ir.InsertionPoint(loop.body)
            v = as_i64(tensor.ExtractOp(idx, ivs, ip=self.ip).result)
            acc = [arith.MinSIOp(acc[0], v, ip=self.ip).result, arith.MaxSIOp(acc[1], v, ip=self.ip).result]
            for loop in reversed(loops):
                scf.YieldOp(acc, ip=ir.InsertionPoint(loop.body))
                acc = list(loop.results)
            self.ip = outer
            lo, hi = acc
        size = self.to_i64(self.index(size_dim))
        low = self.const(0, i64) if unsigned else arith.SubIOp(self.const(0, i64), size, ip=self.ip).result
        lo_ok = self.cmp("sge", lo, low)
        ok = arith.AndIOp(lo_ok, self.cmp("slt", hi, size), ip=self.ip).result
        worst = arith.SelectOp(lo_ok, hi, lo, ip=self.ip).result
        cast = arith.IndexCastOp(ir.IndexType.get(), worst, ip=self.ip).result
        self.add_check(ok, {"kind": "index", "where": f"{msg or op.name}{at(op)}", "expr": str(size_dim),
                            "detail": str(ety), "location": str(op.location)},
                       [cast, self.index(size_dim)])

    def defer_check_indices(self, op, idx: ir.Value) -> None:
        """``relax.check_indices`` on a GPU target: the indices live in device memory, written
        by launches that run after the host code, so the host hands them to the runtime:
        ``@relax_gpu_check_indices(check id, address, count, element code, size, details
        address, detail slots, index slot)``. The runtime copies the indices in stream order
        (a later kernel may reuse their buffer), reads the copy after the call's
        synchronization, and raises the check's failure (details: the bound symbols now,
        the worst index into slot ``index slot``) instead of returning the results."""
        size_dim = read_attrs(relax_opdef(op), op)["size"]
        msg = ir.StringAttr(op.attributes["message"]).value if "message" in op.attributes else ""
        rt = ir.RankedTensorType(idx.type)
        ety = ir.IntegerType(rt.element_type)
        size = self.index(size_dim)
        count = self.const(1)
        for k in range(rt.rank):
            count = arith.MulIOp(count, self.dim(idx, k), ip=self.ip).result
        self.flush()   # the size's own checks first
        bound = self.bound_now()
        cid = self.state.next_id()
        self.checks.append(Check(id=cid, kind="index", where=f"{msg or op.name}{at(op)}", bound=tuple(bound), rank=2,
                                 expr=str(size_dim), detail=str(rt.element_type), location=str(op.location)))
        D = self.state.detail_slots
        i64 = i(64)

        def build() -> list:
            details = self._detail([self.const(0), size], bound)
            details = [self.const(x, i64) if isinstance(x, int) else x for x in details]
            report = memref.AllocaOp(ir.MemRefType.get([D], i64), [], [], ip=self.ip, loc=op.location).result
            for k, v in enumerate(details):
                memref.StoreOp(v, report, [self.const(k)], ip=self.ip)
            buf = bufferization.ToBufferOp(ir.MemRefType.get(list(rt.shape), rt.element_type), idx,
                                           read_only=True, ip=self.ip, loc=op.location).result
            addr = memref.ExtractAlignedPointerAsIndexOp(buf, ip=self.ip).result
            rep = memref.ExtractAlignedPointerAsIndexOp(report, ip=self.ip).result
            code = ety.width * 2 + (1 if ety.is_unsigned else 0)
            args = [self.const(cid, i64), self.to_i64(addr), self.to_i64(count), self.const(code, i64),
                    self.to_i64(size), self.to_i64(rep), self.const(D, i64), self.const(len(self.symbols), i64)]
            declare_callback(self.state, CHECK_INDICES_FN, [a.type for a in args])
            func.CallOp([], ir.FlatSymbolRefAttr.get(CHECK_INDICES_FN), args, ip=self.ip, loc=op.location)
            return []
        self.guarded(build, [], list, loc=op.location)

    def lower_state(self, op, operands) -> None:
        """``relax.state_read``: rows [begin, end) of the state buffer as a view (no copy);
        ``relax.state_write``: the value copied into a view of rows [offset, offset + rows).
        Both check the rows against the buffer's capacity (its bytes // a row's bytes)."""
        attrs = read_attrs(relax_opdef(op), op)
        name = attrs["state"]
        sig = self.state.states.get(name)
        if sig is None:
            raise LowerError(op, f"unknown state '{name}' (module states: {', '.join(self.state.states) or 'none'})")
        buf = self.state_buffers[name]
        et = ir.RankedTensorType(strip(op.operands[0].type if op.operands else op.results[0].type)).element_type
        row_bytes = element_bytes(et)
        for d in row_shape(sig):
            row_bytes *= d.value
        if op.name == "relax.state_read":
            begin, end = Dim.of(attrs["begin"]), Dim.of(attrs["end"])
            t = strip(op.results[0].type)
            what = "relax.state_read"
        else:
            x = operands[0]
            t = x.type
            begin = Dim.of(attrs["offset"])
            rows = self.dim(x, 0)
            what = "relax.state_write"
        b = self.index(begin)
        e = self.index(end) if op.name == "relax.state_read" else arith.AddIOp(b, rows, ip=self.ip).result
        blocks, block = attrs["blocks"], Dim.of(attrs["block"])
        cap = None
        if row_bytes:
            nbytes = memref.DimOp(buf, self.const(0), ip=self.ip).result
            cap = arith.DivUIOp(nbytes, self.const(row_bytes * blocks), ip=self.ip).result   # a block's rows
            ok = self.cmp("sle", e, cap)
            blk = self.index(block)
            if blocks > 1 and not block.is_static:
                ok = arith.AndIOp(ok, self.cmp("slt", blk, self.const(blocks)), ip=self.ip).result
            last = end if op.name == "relax.state_read" else begin + read_tensor_type(op.operands[0].type).shape[0]
            where = f"[{begin}, {last})" + (f" of block {block} of {blocks}" if blocks > 1 else "")
            self.add_check(ok, {"kind": "state", "where": f"{what}{at(op)}", "detail": name,
                                "expr": where, "location": str(op.location)}, [b, e, cap])
        off = self.index(begin * row_bytes)
        if blocks > 1 and cap is not None and not (block.is_static and block.value == 0):
            first = arith.MulIOp(arith.MulIOp(blk, cap, ip=self.ip).result, self.const(row_bytes), ip=self.ip).result
            off = arith.AddIOp(off, first, ip=self.ip).result
        self.flush()
        rt = ir.RankedTensorType(t)
        mt = ir.MemRefType.get(list(rt.shape), rt.element_type)
        sizes = []
        if rt.is_dynamic_dim(0):
            sizes.append(arith.SubIOp(e, b, ip=self.ip).result)
        view = self.target.state_view(self, buf, off, mt, sizes, op.location)
        if op.name == "relax.state_read":
            self.vmap[op.results[0]] = bufferization.ToTensorOp(t, view, restrict=True, ip=self.ip).result
        else:
            self.guarded(lambda: self.target.copy_to_buffer(self, x, view, op.location) or [], [], list)

    def _dynamic(self, m: ir.Value) -> ir.Value:
        mt = ir.MemRefType(m.type)
        dyn = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * mt.rank, mt.element_type)
        if dyn == mt:
            return m
        return memref.CastOp(dyn, m, ip=self.ip).result

    def lower_library(self, op, operands) -> None:
        callee = ir.StringAttr(op.attributes["callee"]).value
        # relax-plan-memory: planned outputs are written into their memref.view directly
        dests = list(ir.DenseI64ArrayAttr(op.attributes["dests"])) if "dests" in op.attributes else []
        planned = {}
        if dests:
            planned = {k: self.planned_buffers[v] for k, v in zip(dests, operands[len(operands) - len(dests):])}
            operands = operands[:len(operands) - len(dests)]
        mem = []
        for v in operands:
            rt = ir.RankedTensorType(v.type)
            mt = ir.MemRefType.get(list(rt.shape), rt.element_type)
            mem.append(bufferization.ToBufferOp(mt, v, read_only=True, ip=self.ip).result)
        outs = []
        for k, r in enumerate(op.results):
            t = strip(r.type)
            if k in planned:
                outs.append((planned[k], t))
                continue
            rt = ir.RankedTensorType(t)
            what = f"result #{k} of {op.name}"
            sizes, nbytes = self._out_sizes(r.type, op, what)
            mt = ir.MemRefType.get(list(rt.shape), rt.element_type)
            outs.append((self.target.alloc_buffer(self, mt, sizes, nbytes, f"{what}{at(op)}",
                                                  str(read_tensor_type(r.type).shape), op.location), t))
        self.flush()
        # One declaration per symbol whatever the static dims at each call: every dim is
        # dynamic in it (the C descriptor ABI does not depend on them), call sites cast.
        args = [self._dynamic(m) for m in mem + [a for a, _ in outs]]
        self.guarded(lambda: self.target.call_library(self, callee, args, op.location) or [], [], list)
        for r, (a, t) in zip(op.results, outs):
            self.vmap[r] = bufferization.ToTensorOp(t, a, restrict=True, writable=True, ip=self.ip).result

    def lower_planned(self, op, operands) -> None:
        """relax-plan-memory: a storage of a static size is a view of the session workspace
        (see :meth:`ModuleState.workspace_bytes`), one of a symbolic size an allocation
        (freed by ownership-based deallocation); a planned tensor is a ``memref.view`` of
        its storage at its byte offset, as a ``bufferization.to_tensor restrict writable``
        destination."""
        if op.name == "relax.alloc_storage":
            t = op.results[0].type
            mt = ir.MemRefType.get(list(ir.RankedTensorType(t).shape), i(8))
            if mt.has_static_shape:
                offset = self.state.storage_offset(self.name, op)
                self.vmap[op.results[0]] = self.target.workspace_view(self, offset, mt, op.location)
                return
            sizes, nbytes = self._out_sizes(t, op, "relax.alloc_storage")
            self.vmap[op.results[0]] = self.target.alloc_buffer(self, mt, sizes, nbytes, f"relax.alloc_storage{at(op)}",
                                                                str(read_tensor_type(t).shape), op.location)
            return
        off = Dim.of(0)
        if "offset" in op.attributes:
            a = op.attributes["offset"]
            off = Dim.of(ir.IntegerAttr(a).value if isinstance(a, ir.IntegerAttr) else ir.StringAttr(a).value)
        t = strip(op.results[0].type)
        rt = ir.RankedTensorType(t)
        # a view inside a storage whose own size was checked when it was allocated
        sizes, _ = self._out_sizes(op.results[0].type, op, "relax.alloc_tensor", check_bytes=False)
        view = memref.ViewOp(ir.MemRefType.get(list(rt.shape), rt.element_type), operands[0], self.index(off),
                             sizes, ip=self.ip, loc=op.location).result
        self.vmap[op.results[0]] = bufferization.ToTensorOp(t, view, restrict=True, writable=True, ip=self.ip).result
        self.planned_buffers[self.vmap[op.results[0]]] = view  # for call_dps_library


def _json_attr(v) -> ir.Attribute:
    """A JSON value (the typed contract's serialization) as an MLIR attribute."""
    if isinstance(v, bool):
        return ir.BoolAttr.get(v)
    if isinstance(v, int):
        return ir.IntegerAttr.get(i(64), v)
    if isinstance(v, list):
        return ir.ArrayAttr.get([_json_attr(x) for x in v])
    if isinstance(v, dict):
        return ir.DictAttr.get({k: _json_attr(x) for k, x in v.items()})
    return ir.StringAttr.get(str(v))

