"""Matching shapes against patterns: binding symbols and collecting the conditions.

Used by ``relax.match_cast`` (a pattern in the function's own symbols, some of
them new) and by calls between graph functions (the callee's parameter patterns,
all in the callee's symbols, against the caller's argument shapes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import sympy

from .expr import Dim, Truth, prove_equal, solve_for, symbol
from .shape import UNKNOWN, Shape


@dataclass
class Match:
    """Result of matching: symbol -> value bindings and what must hold at run time.

    ``checks`` are ``(pattern_dim_substituted, value_dim, where)`` triples whose
    equality could not be proven; ``error`` is set when a relation is provably false.
    """

    bindings: dict[str, Dim] = field(default_factory=dict)
    checks: list[tuple[Dim, Dim, str]] = field(default_factory=list)
    error: Optional[str] = None
    unresolved: set[str] = field(default_factory=set)
    #: symbol -> (its coefficient a, where): bound from ``a*k + b`` with an ``a`` that may be
    #: 0, when every k fits (k = 0 is chosen); a caller that needs k checks ``a >= 1``
    free_when_zero: dict[str, tuple[Dim, str]] = field(default_factory=dict)


#: match_shapes' results by their (canonical, structural) arguments: a model calls its layer
#: functions with the same argument shapes once per layer, and each match runs the prover
#: (sympy) on every dim; a 60-layer decoder matched 180 identical calls (0.07 s per layer).
_MEMO: dict = {}
_MEMO_LIMIT = 4096


def match_shapes(patterns: Sequence[Shape], values: Sequence[Shape], unknowns: Iterable[str],
                 names: Optional[Sequence[str]] = None) -> Match:
    """Solve ``patterns[i] == values[i]`` (dimension-wise) for the ``unknowns`` symbols.

    Plain-symbol dims bind first, then dims linear in one remaining unknown
    (``2*k`` against ``n`` gives ``k = n // 2`` with the run-time check
    ``n % 2 == 0``); every other dim is checked with the prover. Unknowns no dim
    determines (or bound only by ``?`` dims) end up in ``unresolved``. A pure function of
    its arguments: repeated matches come from a memo (each caller gets its own copy).
    """
    key = (tuple(patterns), tuple(values), frozenset(unknowns), tuple(names) if names is not None else None)
    m = _MEMO.get(key)
    if m is None:
        m = _match_shapes(patterns, values, key[2], names)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = m
    return Match(dict(m.bindings), list(m.checks), m.error, set(m.unresolved), dict(m.free_when_zero))


def _match_shapes(patterns: Sequence[Shape], values: Sequence[Shape], unknowns: Iterable[str],
                  names: Optional[Sequence[str]] = None) -> Match:
    m = Match()
    todo = set(unknowns)
    names = names or [f"#{i}" for i in range(len(patterns))]
    pairs = []
    for name, p, v in zip(names, patterns, values):
        if p.rank != v.rank:
            m.error = f"{name}: rank {v.rank} does not match rank {p.rank} of {p}"
            return m
        pairs.extend((f"{name} dim {i}", pd, vd) for i, (pd, vd) in enumerate(zip(p, v)))

    def subst(d):   # sympy's subs only where a bound symbol occurs (static weight dims: never)
        return d if d is UNKNOWN or not (d.symbols & m.bindings.keys()) else d.subs(m.bindings)

    # pass 1: plain symbols; pass 2: linear patterns; repeat until nothing new binds
    solved: set[int] = set()  # pairs that bound a symbol: they hold by construction
    progress = True
    while progress:
        progress = False
        for where, pd, vd in pairs:
            if pd is UNKNOWN or vd is UNKNOWN:
                continue
            p = subst(pd)
            free = [s for s in p.symbols if s in todo and s not in m.bindings]
            if len(free) != 1:
                continue
            if str(p) == free[0]:
                m.bindings[free[0]] = vd
                progress = True
        # a coefficient that may be 0 (m*k, any k when m = 0) only once nothing else binds:
        # k from a pattern that determines it (2*k) first
        for zero in (False, True):
            if progress:
                break
            for idx, (where, pd, vd) in enumerate(pairs):
                if pd is UNKNOWN or vd is UNKNOWN:
                    continue
                p = subst(pd)
                free = [s for s in p.symbols if s in todo and s not in m.bindings]
                if len(free) != 1:
                    continue
                sol = solve_for(p, vd, free, zero_coefficient=zero)
                if sol is None:
                    continue
                binding, conds = sol
                for lhs, rhs in conds:
                    t = prove_equal(lhs, rhs)
                    if t is Truth.FALSE:
                        m.error = f"{where}: {pd} cannot equal {vd} ({lhs} != {rhs})"
                        return m
                    m.checks.append((lhs, rhs, f"{where}: {pd} divides {vd}"))
                if zero:
                    (k,) = binding
                    a = sympy.Poly(pd.expr, symbol(k)).all_coeffs()[0]   # in the pattern's symbols
                    m.free_when_zero[k] = (Dim(a), where)
                m.bindings.update(binding)
                solved.add(idx)
                progress = True
    m.unresolved = {s for s in todo if s not in m.bindings}
    for idx, (where, pd, vd) in enumerate(pairs):
        # A pair solved linearly (2*k against n: k = n // 2) holds once its
        # divisibility condition does; checking 2*(n // 2) == n again is noise.
        if pd is UNKNOWN or idx in solved:
            continue
        p = subst(pd)
        if p.symbols & m.unresolved:
            continue
        if vd is UNKNOWN:
            m.checks.append((p, vd, where))
            continue
        t = prove_equal(p, vd)
        if t is Truth.FALSE:
            m.error = f"{where}: expected {p} but got {vd}"
            return m
        if t is Truth.UNKNOWN:
            m.checks.append((p, vd, where))
    return m

