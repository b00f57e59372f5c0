"""relax-lower-host: graph functions become ordinary host functions with run-time shape checks.

Every graph function ``@f`` (``func.func`` with ``relax.function``) is rewritten into a
plain ``func.func @f`` on tensors WITHOUT ``#relax.shape`` encodings:

* every symbol is materialized once as an ``index`` value: parameter symbols from
  ``tensor.dim`` of the parameters (``2*k`` binds ``k = d // 2``), ``relax.match_cast``
  symbols from ``tensor.dim`` of its operand; every symbolic expression is computed
  once with ``arith`` ops (cached per expression);
* ``relax.call_tir`` -> ``tensor.empty`` of each output's size, then ``func.call`` of the
  kernel with (inputs, outputs, tir_vars as ``index``), ``tensor.cast`` where the kernel's
  types are more (or less) static than the values;
* ``relax.call`` -> ``func.call`` of the lowered callee, whose status is propagated;
* ``relax.shape_of`` -> ``tensor.from_elements`` of the dims as ``i64``;
* ``relax.call_dps_library`` -> ``func.call`` of a private declaration with memref
  arguments and ``llvm.emit_c_interface`` (inputs via ``bufferization.to_buffer``, outputs
  ``memref.alloc`` then ``bufferization.to_tensor restrict writable``); the library provides
  ``void _mlir_ciface_<callee>(memref descriptor *...)`` (inputs, then outputs);
* parameter patterns (two params ``(n, 4)`` must agree, ``2*k`` needs an even size),
  ``relax.match_cast`` and ``relax.assert`` become run-time checks.

Calling convention of a lowered function (the contract with the runtime)::

    func.func @f(%params: tensor<...>...) -> (i32, i64 x D, results...)
        attributes {llvm.emit_c_interface, relax.lowered, relax.graph_type = <original type>,
                    relax.detail_symbols = [...], relax.checks = [{...}, ...]}

The first result is the status: ``0`` when every check passed, else the module-wide id
of the failed check (``relax.checks`` of the function that failed lists it; ids are
unique in the module, so a failure inside a callee propagates unchanged). The ``D``
``i64`` results (``D`` is the same for every function of the module, recorded as
``relax.detail_slots`` on the module) report the failure: slot ``i < len(detail_symbols)``
is the value of that symbol (``0`` when not yet bound), the next ``rank`` slots are the
actual dims of the checked value (parameter or match_cast operand). No check aborts the
process: the checks of one point are combined into one ``scf.if`` whose ``then`` region
holds the rest of the function and whose ``else`` region yields the status, the details
and empty placeholder tensors (every dynamic dim 0) for the results. One-shot
bufferization sees a single-return function.

Each check is described by an entry of ``relax.checks``::

    {id = 3, kind = "param" | "match_cast" | "assert", where = "argument #1" | "relax.match_cast
     of value #2" | ..., expected = #relax.shape<[...]> (param, match_cast), rank = R,
     bound = ["n"] (symbols bound before the check), message = "..." (assert),
     lhs/rhs/predicate (assert)}

:func:`host_metadata` turns those attributes into a plain JSON-able dict (the runtime's
view, see ``relax_mlir.runtime.executable``).
"""

from __future__ import annotations

import re
from typing import Optional

import sympy
from mlir import ir

from ..dialects.relax import FUNCTION_ATTR
from ..shapes import UNKNOWN, Dim, Shape, Truth, prove_le, read_tensor_type, symbol
from ..shapes.match import match_shapes
from .graph import (body_ops, func_name, function_type, functions_by_name, graph_functions,
                    param_sigs, top_ops)
from .registry import emit_error, register_pass

LOWERED_ATTR = "relax.lowered"
GRAPH_TYPE_ATTR = "relax.graph_type"
CHECKS_ATTR = "relax.checks"
DETAIL_SYMBOLS_ATTR = "relax.detail_symbols"
DETAIL_SLOTS_ATTR = "relax.detail_slots"


class LowerError(Exception):
    """Reported at an op's location."""

    def __init__(self, op, message: str):
        super().__init__(message)
        self.op = op


def strip(t: ir.Type) -> ir.Type:
    """The tensor type without its ``#relax.shape`` encoding."""
    if isinstance(t, ir.RankedTensorType) and t.encoding is not None:
        return ir.RankedTensorType.get(list(t.shape), t.element_type)
    return t


def _i(n: int) -> ir.Type:
    return ir.IntegerType.get_signless(n)


def _create(name, operands, results, attrs=None, ip=None, loc=None, regions=0):
    return ir.Operation.create(name, results=list(results), operands=list(operands),
                               attributes=attrs or {}, ip=ip, loc=loc, regions=regions)


# -- analysis: symbols per function, detail slots --------------------------------------

def _function_symbols(f: ir.Operation) -> tuple[list[str], int]:
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
        if op.name == "relax.match_cast":
            rank = max(rank, ir.RankedTensorType(op.operands[0].type).rank)
            pat = Shape.from_attr(op.attributes["shape"])
            for x in sorted(pat.symbols):
                if x not in syms:
                    syms.append(x)
    return syms, rank


# -- the per-function lowering ---------------------------------------------------------

class _FunctionLowering:
    def __init__(self, f: ir.Operation, state: "_ModuleState"):
        self.f = f
        self.name = func_name(f)
        self.state = state
        self.symbols, _ = _function_symbols(f)
        self.env: dict[str, ir.Value] = {}
        self.cache: dict[str, ir.Value] = {}
        self.vmap: dict = {}
        self.planned_buffers: dict = {}   # planned destination tensor -> its memref.view
        self.pending: list[tuple] = []
        self.levels: list[tuple] = []
        self.checks: list[dict] = []
        self.result_types = state.lowered_type(f).results
        self.loc = f.location
        self.uid = 0

    # -- small builders ------------------------------------------------------
    def const(self, value: int, t: Optional[ir.Type] = None) -> ir.Value:
        t = t or ir.IndexType.get()
        key = f"const:{t}:{value}"
        if key in self.cache:
            return self.cache[key]
        v = _create("arith.constant", [], [t], {"value": ir.IntegerAttr.get(t, value)}, ip=self.ip).result
        self.cache[key] = v
        return v

    def binop(self, name: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return _create(name, [a, b], [a.type], ip=self.ip).result

    def cmp(self, pred: str, a: ir.Value, b: ir.Value) -> ir.Value:
        preds = {"eq": 0, "ne": 1, "slt": 2, "sle": 3, "sgt": 4, "sge": 5}
        return _create("arith.cmpi", [a, b], [_i(1)],
                       {"predicate": ir.IntegerAttr.get(_i(64), preds[pred])}, ip=self.ip).result

    def to_i64(self, v: ir.Value) -> ir.Value:
        return _create("arith.index_cast", [v], [_i(64)], ip=self.ip).result

    def cast(self, v: ir.Value, t: ir.Type) -> ir.Value:
        if v.type == t:
            return v
        return _create("tensor.cast", [v], [t], ip=self.ip).result

    def dim(self, v: ir.Value, i: int) -> ir.Value:
        rt = ir.RankedTensorType(v.type)
        if not rt.is_dynamic_dim(i):
            return self.const(rt.get_dim_size(i))
        return _create("tensor.dim", [v, self.const(i)], [ir.IndexType.get()], ip=self.ip).result

    # -- symbolic expressions -> index arithmetic ----------------------------
    def index(self, d) -> ir.Value:
        e = d.expr if isinstance(d, Dim) else sympy.sympify(d)
        key = "expr:" + sympy.srepr(e)
        if key in self.cache:
            return self.cache[key]
        v = self._index(e)
        self.cache[key] = v
        return v

    def _index(self, e) -> ir.Value:
        if e.is_Integer:
            return self.const(int(e))
        if e.is_Symbol:
            if e.name not in self.env:
                raise KeyError(e.name)
            return self.env[e.name]
        if isinstance(e, sympy.Add):
            args = [self.index(a) for a in e.args]
            out = args[0]
            for a in args[1:]:
                out = self.binop("arith.addi", out, a)
            return out
        if isinstance(e, sympy.Mul):
            if any(a.is_Rational and not a.is_Integer for a in e.args):
                num, den = sympy.fraction(e)
                return self.binop("arith.floordivsi", self.index(num), self.index(den))
            args = [self.index(a) for a in e.args]
            out = args[0]
            for a in args[1:]:
                out = self.binop("arith.muli", out, a)
            return out
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) >= 1:
            b = self.index(e.base)
            out = b
            for _ in range(int(e.exp) - 1):
                out = self.binop("arith.muli", out, b)
            return out
        if isinstance(e, sympy.floor):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            return self.binop("arith.floordivsi", self.index(num), self.index(den))
        if isinstance(e, sympy.Mod):
            a, b = self.index(e.args[0]), self.index(e.args[1])
            q = self.binop("arith.floordivsi", a, b)
            return self.binop("arith.subi", a, self.binop("arith.muli", q, b))
        if isinstance(e, (sympy.Min, sympy.Max)):
            name = "arith.minsi" if isinstance(e, sympy.Min) else "arith.maxsi"
            args = [self.index(a) for a in e.args]
            out = args[0]
            for a in args[1:]:
                out = self.binop(name, out, a)
            return out
        raise ValueError(f"cannot compute the dimension expression {e} at run time")

    # -- checks -----------------------------------------------------------------
    def _detail(self, value: Optional[ir.Value], bound: list[str]) -> list:
        out: list = []
        for s in self.symbols:
            out.append(self.to_i64(self.env[s]) if s in bound else 0)
        if value is not None:
            rt = ir.RankedTensorType(value.type)
            out.extend(self.to_i64(self.dim(value, i)) for i in range(rt.rank))
        return out

    def add_check(self, cond: ir.Value, entry: dict, value: Optional[ir.Value], bound: list[str]) -> None:
        cid = self.state.next_id()
        entry = dict(entry, id=cid, bound=list(bound))
        entry.setdefault("rank", ir.RankedTensorType(value.type).rank if value is not None else 0)
        self.checks.append(entry)
        self.pending.append((cond, cid, (value, list(bound))))

    def add_propagate(self, status: ir.Value, details: list[ir.Value]) -> None:
        ok = self.cmp("eq", status, self.const(0, _i(32)))
        self.pending.append((ok, status, details))

    def flush(self) -> None:
        """Guard the rest of the function by the pending checks (one scf.if)."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        ok = pending[0][0]
        for c in pending[1:]:
            ok = self.binop("arith.andi", ok, c[0])
        ifop = _create("scf.if", [ok], self.result_types, ip=self.ip, loc=self.loc, regions=2)
        ifop.regions[0].blocks.append()
        ifop.regions[1].blocks.append()
        outer_ip, outer_cache = self.ip, self.cache
        # else: the first failing check's status and details, placeholder results
        self.ip = ir.InsertionPoint(ifop.regions[1].blocks[0])
        self.cache = dict(outer_cache)
        D = self.state.detail_slots
        status = self.const(0, _i(32))
        details = [self.const(0, _i(64))] * D
        for cond, st, det in reversed(pending):
            if isinstance(st, int):
                value, bound = det
                det = self._detail(value, bound)
                st = self.const(st, _i(32))
            det = [self.const(x, _i(64)) if isinstance(x, int) else x for x in det]
            det = det + [self.const(0, _i(64))] * (D - len(det))
            status = _create("arith.select", [cond, status, st], [_i(32)], ip=self.ip).result
            details = [_create("arith.select", [cond, a, b], [_i(64)], ip=self.ip).result
                       for a, b in zip(details, det)]
        dummies = []
        for t in self.result_types[1 + D:]:
            rt = ir.RankedTensorType(t)
            zero = self.const(0)
            sizes = [zero for i in range(rt.rank) if rt.is_dynamic_dim(i)]
            dummies.append(_create("tensor.empty", sizes, [t], ip=self.ip).result)
        _create("scf.yield", [status] + details + dummies, [], ip=self.ip)
        self.cache = outer_cache
        self.levels.append((outer_ip, ifop))
        self.ip = ir.InsertionPoint(ifop.regions[0].blocks[0])

    # -- matching (params, match_cast) -------------------------------------------
    def bind(self, patterns: list[Shape], values: list[ir.Value], names: list[str], unknowns,
             kind: str, op=None) -> list[tuple]:
        """Bind ``unknowns`` from the run-time dims of ``values``; returns the checks to add."""
        self.uid += 1
        shapes = []
        for j, v in enumerate(values):
            rt = ir.RankedTensorType(v.type)
            dims = []
            for i in range(rt.rank):
                if not rt.is_dynamic_dim(i):
                    dims.append(rt.get_dim_size(i))
                else:
                    ph = f"?{self.uid}_{j}_{i}"
                    self.env[ph] = self.dim(v, i)
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
        return checks

    # -- driver ---------------------------------------------------------------------
    def run(self) -> ir.Operation:
        f = self.f
        lt = self.state.lowered_type(f)
        new = _create("func.func", [], [], {"sym_name": ir.StringAttr.get(self.name),
                                            "function_type": ir.TypeAttr.get(lt)},
                      ip=ir.InsertionPoint(f), loc=f.location, regions=1)
        new.regions[0].blocks.append(*lt.inputs)
        block = new.regions[0].blocks[0]
        self.ip = ir.InsertionPoint(block)
        old_block = f.regions[0].blocks[0]
        for a, b in zip(old_block.arguments, block.arguments):
            self.vmap[a] = b
        # parameter patterns
        sigs = param_sigs(f)
        idx = [i for i, s in enumerate(sigs) if s is not None]
        pats = [sigs[i].shape for i in idx]
        vals = [block.arguments[i] for i in idx]
        if pats:
            syms = set().union(*(p.symbols for p in pats))
            checks = self.bind(pats, vals, [f"argument #{i}" for i in idx], syms, "parameters")
            bound = [s for s in self.symbols if s in self.env]
            for cond, where in checks:
                m = re.match(r"argument #(\d+)", where)
                j = int(m.group(1)) if m else idx[0]
                self.add_check(cond, {"kind": "param", "where": f"argument #{j}", "index": j,
                                      "expected": str(sigs[j].shape), "detail": _readable(where)},
                               block.arguments[j], bound)
        for op in body_ops(f):
            try:
                self.lower_op(op)
            except LowerError:
                raise
            except KeyError as e:
                raise LowerError(op, f"symbol {e} is not bound at this point") from None
            except ValueError as e:
                raise LowerError(op, str(e)) from None
        # metadata
        attrs = new.attributes
        for key in list(f.attributes):
            if key not in ("sym_name", "function_type", FUNCTION_ATTR, "arg_attrs", "res_attrs"):
                attrs[key] = f.attributes[key]
        attrs["llvm.emit_c_interface"] = ir.UnitAttr.get()
        attrs[LOWERED_ATTR] = ir.UnitAttr.get()
        attrs[GRAPH_TYPE_ATTR] = ir.TypeAttr.get(function_type(f))
        attrs[DETAIL_SYMBOLS_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in self.symbols])
        attrs[CHECKS_ATTR] = ir.ArrayAttr.get([_entry_attr(e) for e in self.checks])
        return new

    def lower_op(self, op: ir.Operation) -> None:
        name = op.name
        if name != "relax.assert":
            self.flush()
        operands = [self.vmap[v] for v in op.operands]
        if name == "func.return":
            D = self.state.detail_slots
            outs = [self.cast(v, t) for v, t in zip(operands, self.result_types[1 + D:])]
            vals = [self.const(0, _i(32))] + [self.const(0, _i(64))] * D + outs
            for outer_ip, ifop in reversed(self.levels):
                _create("scf.yield", vals, [], ip=self.ip)
                vals = list(ifop.results)
                self.ip = outer_ip
            _create("func.return", vals, [], ip=self.ip, loc=op.location)
        elif name == "relax.call_tir":
            self.lower_call_tir(op, operands)
        elif name == "relax.call":
            self.lower_call(op, operands)
        elif name == "relax.match_cast":
            self.lower_match_cast(op, operands[0])
        elif name == "relax.assert":
            self.lower_assert(op)
        elif name == "relax.shape_of":
            x = operands[0]
            rank = ir.RankedTensorType(x.type).rank
            dims = [self.to_i64(self.dim(x, i)) for i in range(rank)]
            r = _create("tensor.from_elements", dims, [strip(op.results[0].type)], ip=self.ip).result
            self.vmap[op.results[0]] = r
        elif name == "relax.call_dps_library":
            self.lower_library(op, operands)
        elif name in ("relax.alloc_storage", "relax.alloc_tensor"):
            self.lower_planned(op, operands)
        elif name.startswith("relax."):
            raise LowerError(op, f"'{name}' has no host lowering: run relax-legalize first "
                                 "(it turns every other relax op into relax.call_tir)")
        else:
            new = op.clone(ip=self.ip)
            for i, v in enumerate(op.operands):
                new.operands[i] = self.vmap[v]
            for r_old, r_new in zip(op.results, new.results):
                r_new.set_type(strip(r_old.type))
                self.vmap[r_old] = r_new

    def _out_sizes(self, t: ir.Type, op) -> list:
        sig = read_tensor_type(t)
        rt = ir.RankedTensorType(t)
        sizes = []
        for i, d in enumerate(sig.shape):
            if not rt.is_dynamic_dim(i):
                sizes.append(None)
            elif d is UNKNOWN:
                raise LowerError(op, f"result dim {i} is unknown ('?'): outputs need a symbolic size")
            else:
                sizes.append(self.index(d))
        return sizes

    def _empty(self, t: ir.Type, op) -> ir.Value:
        sizes = [s for s in self._out_sizes(t, op) if s is not None]
        return _create("tensor.empty", sizes, [strip(t)], ip=self.ip).result

    def lower_call_tir(self, op, operands) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        kernel = self.state.funcs.get(callee)
        if kernel is None:
            raise LowerError(op, f"call_tir callee @{callee} is not a func.func in this module")
        kt = function_type(kernel)
        tir = Shape.from_attr(op.attributes["tir_vars"]) if "tir_vars" in op.attributes else Shape([])
        # relax-plan-memory: destinations of the results listed in `dests` are the last operands
        dests = list(ir.DenseI64ArrayAttr(op.attributes["dests"])) if "dests" in op.attributes else []
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
        args += [self.cast(planned[i] if dests and i in planned else self._empty(r.type, op), t)
                 for i, (r, t) in enumerate(zip(op.results, kt.inputs[n_in:]))]
        for d, t in zip(tir, kt.inputs[n_in + n_out:]):
            v = self.index(d)
            if t != v.type:
                v = _create("arith.index_cast", [v], [t], ip=self.ip).result
            args.append(v)
        call = _create("func.call", args, list(kt.results),
                       {"callee": ir.FlatSymbolRefAttr.get(callee)}, ip=self.ip, loc=op.location)
        for r, v in zip(op.results, call.results):
            self.vmap[r] = self.cast(v, strip(r.type))

    def lower_call(self, op, operands) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        g = self.state.graph.get(callee)
        if g is None:
            raise LowerError(op, f"relax.call callee @{callee} is not a graph function")
        lt = self.state.lowered_type(g)
        args = [self.cast(v, t) for v, t in zip(operands, lt.inputs)]
        call = _create("func.call", args, list(lt.results),
                       {"callee": ir.FlatSymbolRefAttr.get(callee)}, ip=self.ip, loc=op.location)
        D = self.state.detail_slots
        res = list(call.results)
        self.add_propagate(res[0], res[1:1 + D])
        self.flush()
        for r, v in zip(op.results, res[1 + D:]):
            self.vmap[r] = self.cast(v, strip(r.type))

    def lower_match_cast(self, op, x) -> None:
        pattern = Shape.from_attr(op.attributes["shape"])
        bound = [s for s in self.symbols if s in self.env]
        new_syms = {s for s in pattern.symbols if s not in self.env}
        vname = _value_name(op.operands[0])
        checks = self.bind([pattern], [x], ["value"], new_syms, "relax.match_cast", op)
        for cond, where in checks:
            self.add_check(cond, {"kind": "match_cast", "where": f"relax.match_cast{_at(op)} of {vname}",
                                  "expected": str(pattern), "detail": _readable(where),
                                  "location": str(op.location)}, x, bound)
        self.flush()
        self.vmap[op.results[0]] = self.cast(x, strip(op.results[0].type))

    def lower_assert(self, op) -> None:
        dims = Shape.from_attr(op.attributes["dims"])
        pred = ir.StringAttr(op.attributes["predicate"]).value if "predicate" in op.attributes else "eq"
        msg = ir.StringAttr(op.attributes["message"]).value if "message" in op.attributes else ""
        lhs, rhs = self.index(dims[0]), self.index(dims[1])
        cond = self.cmp("eq" if pred == "eq" else "sle", lhs, rhs)
        bound = [s for s in self.symbols if s in self.env]
        self.add_check(cond, {"kind": "assert", "where": f"relax.assert{_at(op)}", "message": msg,
                              "lhs": str(dims[0]), "rhs": str(dims[1]), "predicate": pred,
                              "location": str(op.location)}, None, bound)

    def _dynamic(self, m: ir.Value) -> ir.Value:
        mt = ir.MemRefType(m.type)
        dyn = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * mt.rank, mt.element_type)
        if dyn == mt:
            return m
        return _create("memref.cast", [m], [dyn], ip=self.ip).result

    def lower_library(self, op, operands) -> None:
        callee = ir.StringAttr(op.attributes["callee"]).value
        # relax-plan-memory: planned outputs are written into their memref.view directly
        dests = list(ir.DenseI64ArrayAttr(op.attributes["dests"])) if "dests" in op.attributes else []
        planned = {}
        if dests:
            planned = {i: self.planned_buffers[v] for i, v in zip(dests, operands[len(operands) - len(dests):])}
            operands = operands[:len(operands) - len(dests)]
        mem = []
        for v in operands:
            rt = ir.RankedTensorType(v.type)
            mt = ir.MemRefType.get(list(rt.shape), rt.element_type)
            mem.append(_create("bufferization.to_buffer", [v], [mt], {"read_only": ir.UnitAttr.get()},
                               ip=self.ip).result)
        outs = []
        for i, r in enumerate(op.results):
            t = strip(r.type)
            rt = ir.RankedTensorType(t)
            if i in planned:
                outs.append((planned[i], t))
                continue
            sizes = [s for s in self._out_sizes(r.type, op) if s is not None]
            mt = ir.MemRefType.get(list(rt.shape), rt.element_type)
            alloc = _create("memref.alloc", sizes, [mt],
                            {"operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(sizes), 0])}, ip=self.ip)
            outs.append((alloc.result, t))
        # One declaration per symbol whatever the static dims at each call: every dim is
        # dynamic in it (the C descriptor ABI does not depend on them), call sites cast.
        args = [self._dynamic(m) for m in mem + [a for a, _ in outs]]
        self.state.declare_library(callee, [a.type for a in args], op)
        _create("func.call", args, [],
                {"callee": ir.FlatSymbolRefAttr.get(callee)}, ip=self.ip, loc=op.location)
        for r, (a, t) in zip(op.results, outs):
            self.vmap[r] = _create("bufferization.to_tensor", [a], [t],
                                   {"restrict": ir.UnitAttr.get(), "writable": ir.UnitAttr.get()},
                                   ip=self.ip).result


    def lower_planned(self, op, operands) -> None:
        """relax-plan-memory: a storage is an aligned ``memref.alloc`` of i8 (freed by
        ownership-based deallocation); a planned tensor is a ``memref.view`` of it at its
        byte offset, as a ``bufferization.to_tensor restrict writable`` destination."""
        i8 = _i(8)
        if op.name == "relax.alloc_storage":
            t = op.results[0].type
            size = [s for s in self._out_sizes(t, op) if s is not None]
            mt = ir.MemRefType.get(list(ir.RankedTensorType(t).shape), i8)
            if not size:
                # A static arena (sized at the upper bounds) lives in a module global: allocated
                # once, its pages stay mapped across calls (a fresh multi-MB malloc per call
                # would page-fault on every touch). Calls into one executable are serialized.
                name = self.state.arena_global(self.name, mt)
                self.vmap[op.results[0]] = _create("memref.get_global", [], [mt],
                                                   {"name": ir.FlatSymbolRefAttr.get(name)},
                                                   ip=self.ip, loc=op.location).result
                return
            alloc = _create("memref.alloc", size, [mt],
                            {"operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(size), 0]),
                             "alignment": ir.IntegerAttr.get(_i(64), 64)}, ip=self.ip, loc=op.location)
            self.vmap[op.results[0]] = alloc.result
            return
        off = Dim.of(0)
        if "offset" in op.attributes:
            a = op.attributes["offset"]
            off = Dim.of(ir.IntegerAttr(a).value if isinstance(a, ir.IntegerAttr) else ir.StringAttr(a).value)
        t = strip(op.results[0].type)
        rt = ir.RankedTensorType(t)
        sizes = [s for s in self._out_sizes(op.results[0].type, op) if s is not None]
        view = _create("memref.view", [operands[0], self.index(off)] + sizes,
                       [ir.MemRefType.get(list(rt.shape), rt.element_type)], ip=self.ip, loc=op.location)
        self.vmap[op.results[0]] = _create("bufferization.to_tensor", [view.result], [t],
                                           {"restrict": ir.UnitAttr.get(), "writable": ir.UnitAttr.get()},
                                           ip=self.ip).result
        self.planned_buffers[self.vmap[op.results[0]]] = view.result  # for call_dps_library


def _at(op: ir.Operation) -> str:
    """`` at file:line:col`` for a file location, else empty."""
    m = re.match(r'loc\("([^"]*)":(\d+):(\d+)', str(op.location))
    return f" at {m.group(1)}:{m.group(2)}:{m.group(3)}" if m else ""


def _value_name(v: ir.Value) -> str:
    """A readable name for a value: ``argument #i`` or ``the result of relax.x at file:line:col``."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return f"argument #{v.arg_number}"
    op = owner.operation if hasattr(owner, "operation") else owner
    return f"the result of {op.name}{_at(op)}"


def _readable(where: str) -> str:
    """Match descriptions with the run-time dims spelled ``argument #j dim i``."""
    return re.sub(r"\?\d+_(\d+)_(\d+)", lambda m: f"(actual dim {m.group(2)})", where)


def _entry_attr(e: dict) -> ir.Attribute:
    items = {}
    for k, v in e.items():
        if isinstance(v, bool):
            items[k] = ir.BoolAttr.get(v)
        elif isinstance(v, int):
            items[k] = ir.IntegerAttr.get(_i(64), v)
        elif isinstance(v, list):
            items[k] = ir.ArrayAttr.get([ir.StringAttr.get(str(x)) for x in v])
        else:
            items[k] = ir.StringAttr.get(str(v))
    return ir.DictAttr.get(items)


class _ModuleState:
    def __init__(self, module: ir.Operation):
        self.module = module
        self.funcs = functions_by_name(module)
        self.graph = {func_name(f): f for f in graph_functions(module)}
        slots = [sum(len(x) if isinstance(x, list) else x for x in _function_symbols(f)) for f in self.graph.values()]
        self.detail_slots = max(slots, default=0)
        self._types: dict[str, ir.FunctionType] = {}
        self._id = 0
        self.declared: dict[str, ir.Operation] = {}

    def next_id(self) -> int:
        self._id += 1
        return self._id

    def lowered_type(self, f: ir.Operation) -> ir.FunctionType:
        n = func_name(f)
        if n not in self._types:
            ft = function_type(f)
            res = [_i(32)] + [_i(64)] * self.detail_slots + [strip(t) for t in ft.results]
            self._types[n] = ir.FunctionType.get([strip(t) for t in ft.inputs], res)
        return self._types[n]

    def arena_global(self, fname: str, mt: ir.MemRefType) -> str:
        """A private, 64-byte aligned, uninitialized ``memref.global`` for a static arena."""
        name = f"__relax_arena_{fname}_{self.next_id()}"
        first = top_ops(self.module)[0]
        _create("memref.global", [], [], {"sym_name": ir.StringAttr.get(name),
                                          "sym_visibility": ir.StringAttr.get("private"),
                                          "type": ir.TypeAttr.get(mt),
                                          "initial_value": ir.UnitAttr.get(),
                                          "alignment": ir.IntegerAttr.get(_i(64), 64)},
                ip=ir.InsertionPoint(first))
        return name

    def declare_library(self, callee: str, types: list, op) -> None:
        ft = ir.FunctionType.get(types, [])
        if callee in self.declared or callee in self.funcs:
            old = self.declared.get(callee) or self.funcs[callee]
            if function_type(old) != ft:
                raise LowerError(op, f"library function '{callee}' is called with types {ft} "
                                     f"but was declared as {function_type(old)}")
            return
        first = top_ops(self.module)[0]
        d = _create("func.func", [], [], {"sym_name": ir.StringAttr.get(callee),
                                          "function_type": ir.TypeAttr.get(ft),
                                          "sym_visibility": ir.StringAttr.get("private"),
                                          "llvm.emit_c_interface": ir.UnitAttr.get()},
                    ip=ir.InsertionPoint(first), regions=1)
        self.declared[callee] = d


@register_pass("relax-lower-host",
               "Lower graph functions to host functions: shapes as index arithmetic, call_tir as "
               "func.call, run-time shape checks reported through a status result.")
def relax_lower_host(module: ir.Operation, opts) -> None:
    state = _ModuleState(module)
    lowered = []
    for f in list(state.graph.values()):
        try:
            new = _FunctionLowering(f, state).run()
        except LowerError as e:
            emit_error(e.op, f"@{func_name(f)}: {e}")
            return
        lowered.append((f, new))
    for f, _ in lowered:
        f.erase()
    module.attributes[DETAIL_SLOTS_ATTR] = ir.IntegerAttr.get(_i(64), state.detail_slots)


# -- metadata: the runtime's view ------------------------------------------------------

def _attr_py(a: ir.Attribute):
    if isinstance(a, ir.BoolAttr):
        return a.value
    if isinstance(a, ir.IntegerAttr):
        return a.value
    if isinstance(a, ir.StringAttr):
        return a.value
    if isinstance(a, ir.ArrayAttr):
        return [_attr_py(x) for x in a]
    if isinstance(a, ir.DictAttr):
        return {a[i].name: _attr_py(a[i].attr) for i in range(len(a))}
    return str(a)


def _sig_json(t: ir.Type) -> dict:
    s = read_tensor_type(t)
    return {"shape": [str(d) for d in s.shape], "dtype": s.dtype}


def host_metadata(module: ir.Operation) -> dict:
    """Per-function metadata of a module after relax-lower-host, as a plain JSON-able dict::

        {"detail_slots": D, "functions": {"main": {"params": [{"shape": ["n", "4"], "dtype": "f32"}],
         "results": [...], "detail_symbols": ["n"], "checks": [{...}]}}}
    """
    op = module.operation if hasattr(module, "operation") else module
    D = ir.IntegerAttr(op.attributes[DETAIL_SLOTS_ATTR]).value if DETAIL_SLOTS_ATTR in op.attributes else 0
    out: dict = {"detail_slots": D, "functions": {}}
    for f in top_ops(op):
        if f.name != "func.func" or LOWERED_ATTR not in f.attributes:
            continue
        gt = ir.FunctionType(ir.TypeAttr(f.attributes[GRAPH_TYPE_ATTR]).value)
        out["functions"][func_name(f)] = {
            "params": [_sig_json(t) for t in gt.inputs],
            "results": [_sig_json(t) for t in gt.results],
            "detail_symbols": _attr_py(f.attributes[DETAIL_SYMBOLS_ATTR]),
            "checks": _attr_py(f.attributes[CHECKS_ATTR]),
        }
    return out
