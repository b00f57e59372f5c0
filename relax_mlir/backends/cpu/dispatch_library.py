"""relax-dispatch-library: offload graph-level subgraphs to a library (BLAS) before legalization.

First, each scaled-dot-product attention chain as the torch importer writes it (matmul of q
and k^T, scale, mask bias, clamp, softmax, matmul with v, live-row mask, head merge) becomes
one ``relax_blas_attention_h<q><k><v><o>_<t>`` call that never writes the scores to memory
(:mod:`.dispatch_attention`; option ``attention``). Then each chain of relax ops matching a
pattern of :mod:`.dispatch_patterns` (by default
``relax.matmul`` and ``relax.matmul`` + bias ``relax.add`` on f32/f64, 2-D, batched 3-D
with equal or broadcast batch, 3-D x 2-D, 2-D x 3-D) becomes one
``relax.call_dps_library`` of the pattern's symbol with the chain's result type::

    %0 = relax.matmul(%x, %w) ; %1 = relax.add(%0, %b)
      ->  %1 = "relax.call_dps_library"(%x, %w, %b) {callee = "relax_blas_matmul_bias_22_f32"}

and the module records the runtime library defining it in ``relax.libraries``
(:func:`relax_mlir.compile` links it). An epilogue after the chain (relu, silu...)
stays a relax op, legalized into a generated kernel as usual.

Policy (``min-flops``, default 4096): the work estimate (batch*M*N*K) of a match is a
symbolic expression. Static: dispatch when it is >= min-flops. Symbolic: substitute the
function's ``relax.upper_bounds``; when every symbol is bounded and the bound is below
min-flops the op stays generated code, otherwise it is dispatched and the size is
decided at run time inside the library (the relax_blas shim uses gemv for M == 1 or
N == 1 and a plain loop below ``RELAX_BLAS_SMALL_FLOPS``), so one executable serves
every size. ``min-flops=0`` dispatches every match. Run after relax-infer-shapes.

The target: the policy (when the ``policy`` option is not given), the calibration table, the
fused attention switch, the CPU model, ISA and thread count the table is chosen by come from
the module's ``relax.target`` (:class:`relax_mlir.target.Target`, recorded by
:func:`relax_mlir.compile`), else from :meth:`Target.detect` (this host and the
environment: a pass run alone). A target whose policy is ``off`` (no library dispatch)
leaves the module as it is.

Policy ``measured`` (``policy=measured``; the cpu pipeline's default, and so
:func:`relax_mlir.compile`'s, with schedules on: ``cpu{dispatch-policy=...}``,
``options={"dispatch_policy": ...}`` or ``RELAX_MLIR_DISPATCH_POLICY`` choose; the pass alone
defaults to ``flops``, so that its lit tests do not depend on the machine): a 2-D matmul (+ bias) with static K and N is
decided by a calibration table measured on the machine (``bench/calibrate_dispatch.py``;
the ``table`` option, else the target's (``$RELAX_MLIR_DISPATCH_TABLE``), else the checked-in
``dispatch_calibration.json``). A file may hold several tables (``{"tables": [...]}``), each
with the CPU model and ISA it was measured on: the one of the target's CPU model, else one of
its ISA, is used; none fits: the ``min-flops`` rule, with the reason in the module attribute
``relax.dispatch_note``. A table lists, per (K, N) class (and dtype, f32 when absent), the
ranges of M where the generated (scheduled) kernel beat BLAS. The match keeps generated
code when its whole M range -- the static M, or ``[1, bound]`` from ``relax.upper_bounds``
-- lies in one such range of the nearest class (within a factor of 2 in K and in N), and is
dispatched when no M of its range lies in one. A symbolic M that meets both (an unbounded M
does as soon as the class has a generated range) is split at run time
(:mod:`.dispatch_split`): the matmul stays a relax op marked ``relax.dispatch_split`` with
the library symbols and the generated ranges, and relax-specialize-ranges gives its kernel a
variant that calls the library for the other M (``split=false``: dispatched, decided at
compile time). Matches the table says nothing about (batched, symbolic K or N, no near
class) follow ``min-flops``.
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Optional

from mlir import ir

from ...dialects._core import create
from ...ops.registry import RelaxError, read_attrs
from ...runtime.libraries import request
from ...shapes import Dim, Truth, is_tensor, prove_equal, read_tensor_type
from ...target import Target
from .dispatch_attention import dispatch_attention, head_split
from ...transforms.dispatch_patterns import DispatchPattern, Match, ordered_patterns
from ...transforms.dispatch_split import (CANDIDATE_ATTR, NOTE_ATTR, Split, decide, mark, nearest_class, select_table,
                             tables_of)
from ...transforms.graph import body_ops, graph_functions, producer, relax_opdef, single_user, upper_bounds
from ...transforms.registry import Option, emit_error, register_pass


def _single_user(op: ir.Operation) -> Optional[ir.Operation]:
    return single_user(op.results[0], op) if len(op.results) == 1 else None


def match_chain(root: ir.Operation, p: DispatchPattern) -> Optional[Match]:
    """``p`` at ``root``: the chain of ops, the call inputs and their signatures, or None."""
    if root.name != "relax." + p.ops[0]:
        return None
    ops = [root]
    values = list(root.operands)
    for name in p.ops[1:]:
        nxt = _single_user(ops[-1])
        if nxt is None or nxt.name != "relax." + name:
            return None
        chained = ops[-1].results[0]
        others = [v for v in nxt.operands if v != chained]
        if len(others) != len(nxt.operands) - 1:   # the chained value used twice
            return None
        values += others
        ops.append(nxt)
    if len(ops[-1].results) != 1 or not all(is_tensor(v.type) for v in values):
        return None
    try:
        attrs = [read_attrs(relax_opdef(o), o) for o in ops]
        m = Match(ops, values, [read_tensor_type(v.type) for v in values],
                  read_tensor_type(ops[-1].results[0].type), attrs)
    except (RelaxError, ValueError):
        return None
    return m if p.predicate(m) else None


def transposed_operand(root: ir.Operation) -> Optional[ir.Operation]:
    """The ``relax.permute_dims`` producing the root's operand #1 when it swaps exactly the
    last two axes and the root is its only user (same block); else None."""
    v = root.operands[1]
    perm = producer(v, "relax.permute_dims", root)
    if perm is None or sum(1 for o in root.operands if o == v) != 1:
        return None
    try:
        axes = read_attrs(relax_opdef(perm), perm).get("axes")
        rank = read_tensor_type(v.type).rank
    except (RelaxError, ValueError):
        return None
    if rank < 2:
        return None
    want = list(range(rank - 2)) + [rank - 1, rank - 2]
    axes = list(range(rank))[::-1] if axes is None else [a + rank if a < 0 else a for a in axes]
    return perm if axes == want else None


def head_view(v: ir.Value, user: ir.Operation) -> Optional[tuple[ir.Value, list[ir.Operation]]]:
    """Attention's head split: ``v`` (B*H, S, D) computed, for ``user`` alone, as
    ``reshape(permute_dims(reshape(X, [B, S, H, D]), [0, 2, 1, 3]), [B*H, S, D])`` of a
    projection X (B, S, H*D) with static H and D (:func:`.dispatch_attention.head_split`):
    (X, those three ops, users first). The library then reads head h of batch row b in place
    (a (S, D) matrix of X, rows H*D apart) and the copy of every head disappears."""
    r2 = producer(v, "relax.reshape", user)
    split = r2 and head_split(r2.operands[0], r2)
    if split is None:
        return None
    x, ops, _ = split
    try:
        s4, s3 = (read_tensor_type(t.type) for t in (r2.operands[0], v))
    except (RelaxError, ValueError):
        return None
    b, h, s, d = (Dim.of(e) for e in s4.shape)
    if s3.rank != 3 or s3.dtype != s4.dtype or not all(
            prove_equal(p, q) is Truth.TRUE for p, q in ((b * h, s3.shape[0]), (s, s3.shape[1]), (d, s3.shape[2]))):
        return None
    return x, [r2, *ops]


def worth_it(flops: Optional[Dim], bounds: dict[str, int], min_flops: int) -> bool:
    """The ``min-flops`` policy (see the module docstring)."""
    if flops is None or min_flops <= 0:
        return True
    if flops.is_static:
        return flops.value >= min_flops
    if not flops.symbols <= set(bounds):
        return True                     # unbounded: decided at run time by the library
    return flops.evaluate(bounds) >= min_flops


#: The checked-in calibration table (see the module docstring).
DEFAULT_TABLE = Path(__file__).with_name("dispatch_calibration.json")


@functools.lru_cache(maxsize=8)
def load_table(path: str) -> dict:
    """A calibration table: ``{"classes": [{"k", "n", "generated_m": [[lo, hi], ...]}], ...}``."""
    with open(path) as f:
        table = json.load(f)
    for t in tables_of(table):
        if not isinstance(t.get("isa"), str):
            raise ValueError(f"{path}: a table without its 'isa'")
        for c in t["classes"]:
            if not (isinstance(c["k"], int) and isinstance(c["n"], int) and c["k"] > 0 and c["n"] > 0
                    and all(len(r) == 2 and all(isinstance(x, int) for x in r) and 1 <= r[0] <= r[1]
                            for r in c["generated_m"])):
                raise ValueError(f"{path}: malformed class {c}")
    return table


def table_path(option: str) -> str:
    """``option`` (the pass's ``table``, else the target's), else the checked-in table."""
    return option or str(DEFAULT_TABLE)


def measured_choice(m: Match, bounds: dict[str, int], table: dict) -> Optional[bool]:
    """The compile-time-only measured policy (``split=false``): True: dispatch to BLAS;
    False: keep generated code; None: the table does not say."""
    d = decide(m, bounds, table)
    return True if isinstance(d, Split) else d


def dispatch_key(m: Match, p: DispatchPattern) -> str:
    """The tuning database's key of a match: its pattern and the types of the call, the
    symbols renamed ``s0``, ``s1``... in order of appearance (the same chain in another
    model, with other symbol names, has the same key), e.g.
    ``matmul_bias(f32[s0,512], f32[512,2048], f32[2048]) -> f32[s0,2048]``."""
    names: dict[str, str] = {}
    sigs = list(m.inputs) + [m.out]
    for sig in sigs:
        for d in sig.shape:
            for sym in sorted(Dim.of(d).symbols):
                names.setdefault(sym, f"s{len(names)}")

    def text(sig) -> str:
        return f"{sig.dtype}[" + ",".join(str(Dim.of(d).subs(names)) for d in sig.shape) + "]"

    return f"{p.name}(" + ", ".join(text(x) for x in m.inputs) + f") -> {text(m.out)}"


def mark_candidate(m: Match, p: DispatchPattern) -> None:
    """``mark-candidates``: the chain stays, its root marked for the tuner (see the docstring)."""
    types = [v.type for v in m.values] + [m.ops[-1].results[0].type]
    m.ops[0].attributes[CANDIDATE_ATTR] = ir.DictAttr.get({
        "key": ir.StringAttr.get(dispatch_key(m, p)), "callee": ir.StringAttr.get(p.symbol_for(m)),
        "library": ir.StringAttr.get(p.library), "types": ir.ArrayAttr.get([ir.TypeAttr.get(t) for t in types])})


def tuned_choice(m: Match, rec, bounds: dict[str, int], split: bool) -> tuple[object, str]:
    """A database decision for match ``m``: (True: BLAS, False: generated, or a
    :class:`Split`; the note saying why)."""
    from ...tuning.database import GENERATED, LIBRARY

    def at(w: str) -> str:
        return ",".join(str(s) for s, x in zip(rec.sizes, rec.winners) if x == w)

    head = f"tuning db ({rec.bucket}): "
    wins = set(rec.winners)
    if wins == {LIBRARY}:
        return True, head + f"library at every measured size (n={at(LIBRARY)})"
    if wins == {GENERATED}:
        return False, head + f"generated at every measured size (n={at(GENERATED)})"
    head += f"library at n={at(LIBRARY)}, generated at n={at(GENERATED)}: "
    md = Dim.of(m.out.shape[-2]) if m.out.rank >= 2 else None
    if m.ranks[:2] == "22" and md is not None and not md.is_static and split:
        upper = md.evaluate(bounds) if md.symbols <= set(bounds) else None
        gen = rec.generated_ranges(upper)
        if not gen:
            return True, head + "library for every M up to the bound"
        if upper is not None and gen == [(1, upper)]:
            return False, head + "generated for every M up to the bound"
        ranges = ", ".join(f"[{lo}, {hi}]" for lo, hi in gen)
        return Split(tuple(gen)), head + f"split per call, generated for M in {ranges}"
    big = max(range(len(rec.sizes)), key=lambda i: rec.sizes[i])
    w = rec.winners[big]
    return w == LIBRARY, head + f"{w}, the winner at the largest size (n={rec.sizes[big]})"


class _TunedDecisions:
    """The decisions of a tuning database for one module (see the docstring)."""

    def __init__(self, module: ir.Operation, path: str, target: Target):
        from ...tuning.database import Database, module_bucket, target_key

        self.db = Database(path)
        self.target = target_key(target.simd, target.threads)
        self.bucket = module_bucket(module)

    def lookup(self, m: Match, p: DispatchPattern):
        return self.db.decision(dispatch_key(m, p), self.target, self.bucket)

    def close(self) -> None:
        self.db.close()


@register_pass("relax-dispatch-library",
               "Offload matched graph-level subgraphs (matmul, matmul + bias) to library "
               "calls (relax.call_dps_library) by a user-extensible pattern table.",
               options=[Option("min-flops", int, 4096,
                               "dispatch when batch*M*N*K (static, or at the upper bounds) is at "
                               "least this; symbolic unbounded sizes are decided at run time"),
                        Option("policy", str, "",
                               "flops: the min-flops rule; measured: the calibration table "
                               "decides 2-D matmuls with static K, N (see the module docstring); "
                               "default: the module's relax.target (compile() records it), else "
                               "$RELAX_MLIR_DISPATCH_POLICY, else flops"),
                        Option("table", str, "",
                               "calibration table for policy=measured (default: the target's, "
                               "$RELAX_MLIR_DISPATCH_TABLE without one, else the checked-in one)"),
                        Option("split", bool, True,
                               "policy=measured: a symbolic M whose range meets both generated-wins "
                               "and BLAS-wins sizes is decided per call (relax.dispatch_split); "
                               "false: at compile time (BLAS)"),
                        Option("patterns", str, "",
                               "comma-separated pattern names to use (default: all registered, and "
                               "'attention')"),
                        Option("attention", bool, True,
                               "fuse scaled-dot-product attention chains into one library call "
                               "(relax_blas_attention: the scores never reach memory); "
                               "$RELAX_MLIR_DISPATCH_ATTENTION=0 turns it off"),
                        Option("tuning-db", str, "",
                               "a tuning database (relax-mlir tune): a match it has a decision for "
                               "(BLAS or generated per size bucket) follows it, the others the policy; "
                               "each op says why in relax.dispatch_note"),
                        Option("mark-candidates", bool, False,
                               "for relax-mlir tune: dispatch nothing, mark each match "
                               "relax.dispatch_candidate (its kernel is compared with the library)")])
def dispatch_library(module: ir.Operation, opts) -> None:
    try:
        target = Target.for_module(module)
    except ValueError as e:
        emit_error(module, str(e))
        return
    only = {s.strip() for s in opts.patterns.split(",") if s.strip()}
    attention = (opts.attention and (not only or "attention" in only)
                 and target.dispatch_attention)
    patterns = [p for p in ordered_patterns() if not only or p.name in only]
    policy = opts.policy or target.dispatch_policy
    if not opts.policy and policy == "off":   # a target without library dispatch (no BLAS)
        return
    if policy not in ("flops", "measured"):
        emit_error(module, f"policy must be 'flops' or 'measured', got '{policy}'")
        return
    table = None
    if policy == "measured":
        path = table_path(opts.table or target.dispatch_table)
        try:
            data = load_table(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            emit_error(module, f"dispatch calibration table {path}: {e}")
            return
        table, note = select_table(data, target.isa, target.chip, target.threads)
        if table is None:
            module.attributes[NOTE_ATTR] = ir.StringAttr.get(f"{Path(path).name}: {note}")
    tuned = None
    if opts.tuning_db and not opts.mark_candidates and os.path.exists(opts.tuning_db):
        import sqlite3
        try:
            tuned = _TunedDecisions(module, opts.tuning_db, target)
        except sqlite3.Error as e:
            emit_error(module, f"tuning database '{opts.tuning_db}': {e}")
            return
    try:
        _dispatch(module, opts, attention, patterns, table, tuned)
    finally:
        if tuned is not None:
            tuned.close()


def _dispatch(module: ir.Operation, opts, attention: bool, patterns: list[DispatchPattern], table: Optional[dict],
              tuned: Optional[_TunedDecisions]) -> None:
    for f in graph_functions(module):
        bounds = upper_bounds(f)
        if attention and dispatch_attention(
                f, body_ops(f), head_view, lambda flops: worth_it(flops, bounds, opts.min_flops)):
            request(module, "relax_blas")
        ops = body_ops(f)
        dead: set[int] = set()
        for i, op in enumerate(ops):
            if i in dead or not op.name.startswith("relax."):
                continue
            for p in patterns:
                m = match_chain(op, p)
                if m is None:
                    continue
                if opts.mark_candidates:
                    mark_candidate(m, p)
                    break
                note = None
                rec = tuned.lookup(m, p) if tuned is not None else None
                if rec is not None:
                    choice, note = tuned_choice(m, rec, bounds, opts.split)
                else:
                    # a pattern with no work estimate always dispatches (no calibration either)
                    choice = decide(m, bounds, table) if table is not None and p.flops is not None else None
                    if tuned is not None:
                        note = (f"tuning db ({tuned.bucket}): no decision for this match: "
                                f"{'the measured' if choice is not None else 'the min-flops'} policy")
                if isinstance(choice, Split):
                    if opts.split and mark(m, p, choice):
                        request(module, p.library)   # the split kernel calls it (relax-specialize-ranges)
                        if note:
                            m.ops[0].attributes[NOTE_ATTR] = ir.StringAttr.get(note)
                        break
                    choice = True
                if choice is None:
                    choice = worth_it(p.flops(m) if p.flops else None, bounds, opts.min_flops)
                if not choice:
                    if note:
                        m.ops[0].attributes[NOTE_ATTR] = ir.StringAttr.get(note)
                    break
                last = m.ops[-1]
                symbol, values = p.symbol_for(m), m.values
                perm = transposed_operand(m.ops[0]) if p.transposed_b is not None else None
                if perm is not None:
                    symbol, values = p.transposed_b(m), [values[0], perm.operands[0], *values[2:]]
                views = [head_view(values[0], m.ops[0]),
                         head_view(values[1], perm if perm is not None else m.ops[0])]
                hsym = (p.head_views(m, perm is not None, "h%d%d" % tuple(w is not None for w in views))
                        if p.head_views is not None and any(views) else None)
                if hsym is not None:
                    symbol = hsym
                    values = [w[0] if w is not None else v for w, v in zip(views, values)] + values[2:]
                else:
                    views = []
                attrs = {"callee": ir.StringAttr.get(symbol)}
                if note:
                    attrs[NOTE_ATTR] = ir.StringAttr.get(note)
                call = create("call_dps_library", values, [last.results[0].type], attrs,
                              loc=last.location, ip=ir.InsertionPoint(last))
                last.results[0].replace_all_uses_with(call.results[0])
                dead |= {j for j in range(i, len(ops)) if any(ops[j] == o for o in m.ops)}
                for o in reversed(m.ops):
                    o.erase()
                if perm is not None:
                    perm.erase()
                for w in views:
                    for o in (w[1] if w is not None else []):
                        o.erase()
                request(module, p.library)
                break
