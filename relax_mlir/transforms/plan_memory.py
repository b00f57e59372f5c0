"""relax-plan-memory: intermediate tensors share storage by liveness, with symbolic sizes.

Runs on legalized graph functions (before relax-lower-host). The planned values are the
``relax.call_tir`` / ``relax.call_dps_library`` outputs that are neither returned nor aliased by a returned value;
a value's lifetime runs from its call_tir to the last use of it or of any value derived
from it by an op other than call_tir / call_dps_library (those may alias their operands:
``relax.match_cast``, ``relax.call``, cloned upstream ops), both ends included (a kernel
reads its inputs while it writes its outputs).

* **Static arena** (the value's byte size is static, or ``relax.upper_bounds`` bounds each
  of its symbols and the size is monotone in them): one ``relax.alloc_storage`` of a static size per function;
  each value gets a byte offset computed at compile time (64-byte aligned, best fit by
  decreasing size among values whose lifetimes overlap) from its byte size evaluated at
  the upper bounds. A ``relax.assert`` ``sym <= bound`` is added where each such symbol is
  bound, so an input beyond its bound is a run-time ShapeError, never an out-of-bounds write
  (unless the function already checks that before its first kernel: the torch importer's range).
  The arena is capped (``max-arena-bytes``, default :data:`MAX_ARENA_BYTES` = 256 MiB): it
  lives in the session workspace, allocated in full at a session's first call whatever
  the sizes of that call, so a huge bound (``n = 2**40``) must not make every call
  allocate terabytes. The largest arena values leave it until it fits; they are planned
  like unbounded values (symbolic storages, allocated per call at their actual size), or,
  when their size is a constant (no symbol), left to the allocation of their call.
* **Symbolic storages** (everything else): a linear scan in program order; a value reuses
  a dead storage whose byte size is provably >= its own (``prove_equal`` first, then
  ``prove_le``), or a dead storage it provably contains when the storage can be enlarged
  at its allocation point (all symbols of the new size bound there); else a new storage.

Each planned output becomes ``relax.alloc_tensor(storage) {offset}`` passed as the last
operands of its call_tir, whose ``dests`` attribute lists the results they stand for.
relax-lower-host lowers storages to ``memref.alloc`` (i8), tensors to ``memref.view`` +
``bufferization.to_tensor restrict writable``. ``i1`` values (widened later) and values
with an unknown ``?`` dim are not planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import sympy
from mlir import ir

from ..dialects.relax import create
from ..shapes import Dim, Shape, Truth, prove_equal, prove_le, read_tensor_type, symbol
from .graph import (body_ops, bound_by_params, entry_block, func_name, graph_functions, param_sigs,
                    upper_bounds)
from .registry import Option, register_pass

#: Bytes per element of the planned element types.
DTYPE_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "i8": 1}
ALIGN = 64
#: Largest static arena (bytes): above it, values are allocated per call instead.
MAX_ARENA_BYTES = 256 << 20
#: Function attribute recording the plan (for tests and the memory benchmark).
PLAN_ATTR = "relax.memory_plan"


@dataclass
class _Value:
    value: ir.Value
    op: ir.Operation
    index: int           # the defining op's position
    result: int          # result number on the call_tir
    size: Dim            # bytes, symbolic
    last: int = -1       # last use (alias closure), inclusive
    escapes: bool = False
    static: Optional[int] = None   # bytes at the upper bounds (arena values)
    offset: int = 0
    storage: Optional["_Storage"] = None


@dataclass
class _Storage:
    size: Dim
    index: int                      # op position where it is allocated
    bound: frozenset                # symbols bound at that position
    values: list = field(default_factory=list)
    free_at: int = -1               # last use of its current value


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _byte_size(t: ir.Type) -> Optional[Dim]:
    if not isinstance(t, ir.RankedTensorType):
        return None
    sig = read_tensor_type(t)
    if sig.dtype not in DTYPE_BYTES or sig.shape.has_unknown:
        return None
    n = sig.shape.numel()
    return n * DTYPE_BYTES[sig.dtype] if n is not None else None


def _monotone(size: Dim, bounds: dict[str, int]) -> bool:
    """Is ``size`` at most its value at the upper bounds whenever 0 <= sym <= bound?"""
    syms = sorted(size.symbols)
    if not syms:
        return True
    e = sympy.expand(size.expr)
    try:
        poly = sympy.Poly(e, *[symbol(s) for s in syms])
        if all(c >= 0 for c in poly.coeffs()):
            return True
    except sympy.PolynomialError:
        pass
    if _monotone_floors(e, [symbol(s) for s in syms]):
        return True
    # sym = bound - t with t >= 0: size(bound - t) <= size(bound)
    sub = {s: Dim.of(bounds[s]) - Dim(symbol(f"_t_{s}")) for s in syms}
    return prove_le(size.subs(sub), size.evaluate(bounds)) is Truth.TRUE


def _monotone_floors(e: sympy.Expr, gens: list) -> bool:
    """Nondecreasing in every symbol (all >= 0) through floor divisions: a strided conv's or
    pool's output size, e.g. ``588*n*floor(h/2 - 1/2) + 588*n``. Each ``floor(a / c)`` with
    ``a`` a polynomial whose non-constant coefficients are >= 0 and ``c`` a positive integer
    is nondecreasing and at least its value at 0, ``lo``: written ``lo + v`` with ``v >= 0``
    nondecreasing, the size is nondecreasing when it is a polynomial in the symbols and the
    ``v`` with coefficients >= 0."""
    floors = list(e.atoms(sympy.floor))
    if not floors or e.has(sympy.Mod, sympy.Min, sympy.Max):
        return False
    subs, vs = {}, []
    for k, f in enumerate(floors):
        num, den = f.args[0].as_numer_denom()
        if not den.is_Integer or den <= 0 or num.has(sympy.floor):
            return False
        try:
            poly = sympy.Poly(sympy.expand(num), *gens)
        except sympy.PolynomialError:
            return False
        if any(c < 0 for m, c in poly.terms() if any(m)):
            return False
        v = sympy.Symbol(f"_floor{k}", nonnegative=True)
        vs.append(v)
        subs[f] = sympy.floor(num.subs({g: 0 for g in gens}) / den) + v
    try:
        poly = sympy.Poly(sympy.expand(e.xreplace(subs)), *gens, *vs)
    except sympy.PolynomialError:
        return False
    return all(c >= 0 for c in poly.coeffs())


#: Ops whose results are fresh tensors (never views of their operands).
_FRESH = ("relax.call_tir", "relax.call_dps_library")


class _Aliases:
    """Which operands each result of a graph-level op may alias (share storage with).

    A ``relax.call`` result aliases only the arguments its callee may return (directly or
    through views such as ``match_cast``); its fresh results (the callee's call_tir outputs)
    alias nothing of the caller. Summaries are computed once per callee: the sets stay as
    small as the data flow, so a chain of N layer calls costs O(N), never 2**N."""

    def __init__(self, module: ir.Operation):
        self.funcs = {func_name(f): f for f in graph_functions(module)}
        self.summary: dict[str, list[frozenset]] = {}

    def of(self, op: ir.Operation) -> list[frozenset]:
        """Per result: the operand positions it may alias."""
        n = len(op.operands)
        if op.name == "relax.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee in self.funcs:
                return [frozenset(j for j in s if j < n) for s in self.returns(callee)]
        return [frozenset(range(n))] * len(op.results)

    def returns(self, name: str) -> list[frozenset]:
        """Per result of graph function ``name``: the parameter positions it may alias."""
        if name not in self.summary:
            self.summary[name] = []   # a recursive call (rejected elsewhere) aliases nothing more
            f = self.funcs[name]
            src: dict = {a: frozenset([i]) for i, a in enumerate(entry_block(f).arguments)}
            out: list[frozenset] = []
            for op in body_ops(f):
                if op.name == "func.return":
                    out = [src.get(v, frozenset()) for v in op.operands]
                    break
                if op.name in _FRESH:
                    continue
                for res, srcs in zip(op.results, self.of(op)):
                    src[res] = frozenset().union(*(src.get(op.operands[j], ()) for j in srcs))
            self.summary[name] = out
        return self.summary[name]


class _Planner:
    def __init__(self, f: ir.Operation, opts, aliases: _Aliases):
        self.f = f
        self.aliases = aliases
        self.opts = opts
        self.ops = body_ops(f)
        self.bounds = upper_bounds(f) if opts.use_upper_bounds else {}
        self.values: list[_Value] = []

    # -- analysis ------------------------------------------------------------------
    def analyse(self) -> None:
        root: dict = {}          # value -> frozenset of planned roots (indices) it may alias
        for i, op in enumerate(self.ops):
            for v in op.operands:
                for r in root.get(v, ()):
                    pv = self.values[r]
                    pv.last = max(pv.last, i)
            if op.name == "func.return":
                for v in op.operands:
                    for r in root.get(v, ()):
                        self.values[r].escapes = True
                continue
            if op.name in _FRESH:
                if "dests" in op.attributes:
                    continue  # already planned
                for k, res in enumerate(op.results):
                    size = _byte_size(res.type)
                    if size is None:
                        continue
                    root[res] = frozenset([len(self.values)])
                    self.values.append(_Value(res, op, i, k, size, last=i))
            else:
                may = self.aliases.of(op)
                for res, srcs in zip(op.results, may):
                    root[res] = frozenset().union(*(root.get(op.operands[j], ()) for j in srcs))
        self.values = [v for v in self.values if not v.escapes]

    def bound_at(self) -> list[frozenset]:
        """Symbols bound before each op position."""
        sigs = param_sigs(self.f)
        bound = set(bound_by_params(sigs)[0])
        out = []
        for op in self.ops:
            out.append(frozenset(bound))
            if op.name == "relax.match_cast":
                bound |= Shape.from_attr(op.attributes["shape"]).symbols
        return out

    # -- static arena --------------------------------------------------------------
    def plan_arena(self, vals: list[_Value]) -> int:
        """Offsets by decreasing size, each in the tightest gap among live neighbours."""
        placed: list[_Value] = []
        for v in sorted(vals, key=lambda v: (-v.static, v.index, v.result)):
            need = _align(v.static)
            busy = sorted((p.offset, p.offset + _align(p.static)) for p in placed
                          if not (p.last < v.index or v.last < p.index))
            best, best_gap, cur = None, None, 0
            for lo, hi in busy:
                if lo - cur >= need and (best_gap is None or lo - cur < best_gap):
                    best, best_gap = cur, lo - cur
                cur = max(cur, hi)
            v.offset = cur if best is None else best
            placed.append(v)
        return max((_align(p.offset + p.static) for p in placed), default=0)

    def cap_arena(self, vals: list[_Value]) -> tuple[list[_Value], int, list[_Value]]:
        """(arena values, arena bytes, evicted values): the largest values leave the arena
        (ties: the later one) until it holds at most ``max-arena-bytes``."""
        cap = max(0, self.opts.max_arena_bytes)
        evicted = [v for v in vals if _align(v.static) > cap]
        vals = [v for v in vals if _align(v.static) <= cap]
        size = self.plan_arena(vals) if vals else 0
        while size > cap:
            big = max(vals, key=lambda v: (v.static, v.index, v.result))
            vals.remove(big)
            evicted.append(big)
            size = self.plan_arena(vals) if vals else 0
        return vals, size, evicted

    # -- symbolic storages ----------------------------------------------------------
    def plan_symbolic(self, vals: list[_Value], bound_at: list[frozenset]) -> list[_Storage]:
        storages: list[_Storage] = []
        for v in sorted(vals, key=lambda v: (v.index, v.result)):
            free = [s for s in storages if s.free_at < v.index]
            pick = next((s for s in free if prove_equal(v.size, s.size) is Truth.TRUE), None)
            if pick is None:
                fits = [s for s in free if prove_le(v.size, s.size) is Truth.TRUE]
                # the smallest that provably fits
                for s in fits:
                    if pick is None or prove_le(s.size, pick.size) is Truth.TRUE:
                        pick = s
            if pick is None:
                for s in free:
                    if v.size.symbols <= s.bound and prove_le(s.size, v.size) is Truth.TRUE:
                        s.size = v.size     # enlarge: allocated where v's symbols are bound
                        pick = s
                        break
            if pick is None:
                pick = _Storage(v.size, v.index, bound_at[v.index])
                storages.append(pick)
            pick.values.append(v)
            pick.free_at = v.last
            v.storage = pick
        return storages

    # -- rewriting ------------------------------------------------------------------
    def checked_before_calls(self) -> set[str]:
        """The ``dims`` (printed) of the ``relax.assert`` ``le`` ops before the first kernel call."""
        found = set()
        for op in self.ops:
            if op.name in _FRESH:
                break
            if op.name == "relax.assert" and ir.StringAttr(op.attributes["predicate"]).value == "le":
                found.add(str(op.attributes["dims"]))
        return found

    def run(self) -> Optional[dict]:
        self.analyse()
        if not self.values:
            return None
        bound_at = self.bound_at()
        arena_vals, sym_vals = [], []
        for v in self.values:
            if v.size.symbols <= set(self.bounds) and _monotone(v.size, self.bounds):
                v.static = v.size.evaluate(self.bounds)
                arena_vals.append(v)
            else:
                sym_vals.append(v)
        arena_vals, arena_size, evicted = self.cap_arena(arena_vals)
        for v in evicted:   # planned per call from here on: its storage holds it at 0
            v.static = None
            v.offset = 0
        sym_vals += [v for v in evicted if not v.size.is_static]
        unplanned = {id(v) for v in evicted if v.size.is_static}
        self.values = [v for v in self.values if id(v) not in unplanned]
        sym_vals.sort(key=lambda v: (v.index, v.result))
        storages = self.plan_symbolic(sym_vals, bound_at)

        i8 = ir.IntegerType.get_signless(8)
        loc = self.f.location
        first = self.ops[0]
        # run-time checks: every symbol the arena relies on stays within its bound
        used = sorted(set().union(*(v.size.symbols for v in arena_vals))) if arena_vals else []
        checked = self.checked_before_calls()
        for s in used:
            if str(Shape([Dim(symbol(s)), Dim.of(self.bounds[s])]).to_attr()) in checked:
                continue   # the function checks it already (the torch importer's range), before any kernel
            where = next((op for op in self.ops if op.name == "relax.match_cast"
                          and s in Shape.from_attr(op.attributes["shape"]).symbols), None)
            ip = _after(where) if where is not None else ir.InsertionPoint(first)
            create("assert", [], [], {
                "dims": Shape([Dim(symbol(s)), Dim.of(self.bounds[s])]).to_attr(),
                "predicate": ir.StringAttr.get("le"),
                "message": ir.StringAttr.get(f"{s} <= {self.bounds[s]} (relax.upper_bounds: the "
                                             "memory plan is sized at the bound)")}, loc=loc, ip=ip)
        arena = None
        if arena_vals:
            t = ir.RankedTensorType.get([arena_size], i8)
            arena = create("alloc_storage", [], [t], {}, loc=loc, ip=ir.InsertionPoint(first)).result
        storage_val: dict[int, ir.Value] = {}
        for s in storages:
            t = _storage_type(s.size)
            op0 = self.ops[s.index]
            storage_val[id(s)] = create("alloc_storage", [], [t], {}, loc=op0.location,
                                        ip=ir.InsertionPoint(op0)).result
        # destinations, per call_tir
        by_op: dict[int, list[_Value]] = {}
        for v in self.values:
            by_op.setdefault(v.index, []).append(v)
        for idx, vs in sorted(by_op.items()):
            op = self.ops[idx]
            vs.sort(key=lambda v: v.result)
            dests = []
            for v in vs:
                st = arena if v.static is not None else storage_val[id(v.storage)]
                t = v.value.type
                a = create("alloc_tensor", [st], [t],
                           {"offset": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v.offset)},
                           loc=op.location, ip=ir.InsertionPoint(op))
                dests.append(a.result)
            self._add_dests(op, dests, [v.result for v in vs])
        plan = {"arena_bytes": arena_size, "arena_values": len(arena_vals), "unplanned": len(unplanned),
                "storages": [str(s.size) for s in storages], "symbolic_values": len(sym_vals)}
        self.f.attributes[PLAN_ATTR] = ir.DictAttr.get({
            "arena_bytes": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), arena_size),
            "planned": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(self.values)),
            "storages": ir.ArrayAttr.get([ir.StringAttr.get(x) for x in plan["storages"]]),
        })
        return plan

    def _add_dests(self, op: ir.Operation, dests: list[ir.Value], results: list[int]) -> None:
        attrs = {k: op.attributes[k] for k in op.attributes
                 if k not in ("operandSegmentSizes", "resultSegmentSizes")}
        attrs["dests"] = ir.DenseI64ArrayAttr.get(results)
        new = create(op.name[len("relax."):], list(op.operands) + dests, [r.type for r in op.results], attrs,
                     loc=op.location, ip=ir.InsertionPoint(op))
        for a, b in zip(op.results, new.results):
            a.replace_all_uses_with(b)
        op.erase()


def _after(op: ir.Operation) -> ir.InsertionPoint:
    block = op.block
    ops = [o.operation for o in block.operations]
    i = next(k for k, o in enumerate(ops) if o == op)
    return ir.InsertionPoint(ops[i + 1]) if i + 1 < len(ops) else ir.InsertionPoint(block)


def _storage_type(size: Dim) -> ir.Type:
    if size.is_static:
        return ir.RankedTensorType.get([size.value], ir.IntegerType.get_signless(8))
    return ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
                                   Shape([size]).to_attr())


@register_pass("relax-plan-memory",
               "Plan call_tir intermediates into reused storage by liveness: one static arena "
               "sized at relax.upper_bounds, else symbolic storages reused when sizes provably fit.",
               options=[Option("use-upper-bounds", bool, True,
                               "plan a static arena where relax.upper_bounds bound the sizes"),
                        Option("max-arena-bytes", int, MAX_ARENA_BYTES,
                               "largest static arena; the largest values above it are allocated "
                               "per call")])
def relax_plan_memory(module: ir.Operation, opts) -> None:
    aliases = _Aliases(module)
    for f in graph_functions(module):
        _Planner(f, opts, aliases).run()
