"""Fused attention for relax-dispatch-library: the imported scaled-dot-product attention
chain becomes ONE library call that never writes the (L, S) scores to memory.

The torch importer (``_sdpa`` in relax_mlir/frontend/torch/aten.py) writes attention as

    s = matmul(q3, permute_dims(k3, [0, 2, 1]))   q3 (nb, L, E), k3 (nb, S, E)
    s = multiply(s, scale)                        scale: 0-d relax.full       (optional)
    s = add(s, bias)                              bias (nb|1, L|1, S|1)         (optional)
    s = maximum(s, lo)                            lo: 0-d relax.full           (optional)
    p = softmax(s, axis=-1)                       [where(equal(max(s), -inf), 0, p): safe softmax]
    o = matmul(p, v3)                             v3 (nb, S, Ev)
    o = multiply(o, live)                         live (nb|1, L|1, 1)           (optional)
    [reshape (B, H, L, Ev), permute_dims [0, 2, 1, 3], reshape (B, L, H*Ev)]  (the head merge)

each op the single user of the previous one. :func:`dispatch_attention` replaces the chain
with ``relax.call_dps_library`` of ``relax_blas_attention_h<q><k><v><o>[_safe][_tiled]_<t>``
(see relax_mlir/runtime/blas_attention.c) on ``(q, k, v, scale (H,), bias, lo, live)``:

* q, k and v are passed as attention head views where they are the head split of a
  projection (``head_view`` of relax-dispatch-library: flag 1, no copy of the heads); a k or
  v repeated for grouped-query attention (expand_dims / broadcast_to / reshape of (B, Hk, S, D),
  :func:`repeat_source`) is passed as its Hk heads -- a head view of the (B, S, Hk*D)
  projection when K is its head split, else K as (B*Hk, S, D) -- and the library maps query
  head h to k / v head h / (H/Hk) (each head repeated in place, transformers' repeat_kv) or,
  in the ``_tiled`` entries, h % Hk (the heads tiled: relax_mlir/llm's group-major query
  heads); the output is written straight into the merged (B, L, H*Ev) tensor when the head
  merge follows (flag 1 for o: the merge's copy disappears too);
* a bias or live mask that the importer broadcast per head -- ``reshape(broadcast_to(W,
  (B, H, L, S)), (B*H, L, S))``, optionally behind the ``max(expand_dims(., 3), [-1])`` that
  keeps it a kernel of its own -- is passed as W reshaped to (B, L, S) (its batch rows only,
  computed once per call and shared by every layer), so no per-head copy of the mask is
  materialized; the per-head chain is erased when nothing else reads it;
* missing parts become neutral operands: scale 1, bias 0 (1, 1, 1), lo -inf, live 1.

The chain's products are the library's to decide at run time; the match follows the pass's
``min-flops`` rule on nb*L*S*(E + Ev).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from mlir import ir

from ...dialects._core import create
from ...shapes import UNKNOWN, Dim, Shape, TensorSig, Truth, prove_equal, tensor_type
from ...transforms.graph import defining_op, producer, single_user, users
from ...transforms.graph import other_operand as _other, relax_attrs as _attrs, value_sig as _sig

SYMBOL = "relax_blas_attention_h{flags}{safe}{tiled}_{dtype}"


def _eq(a, b) -> bool:
    return a is not UNKNOWN and b is not UNKNOWN and prove_equal(a, b) is Truth.TRUE


def _scalar_fill(v: ir.Value) -> Optional[float]:
    """The value of a 0-d ``relax.full``, else None."""
    op = defining_op(v)
    if op is None or op.name != "relax.full":
        return None
    sig, a = _sig(v), _attrs(op)
    return float(a["value"]) if sig is not None and sig.rank == 0 and a is not None else None


@dataclass
class AttentionMatch:
    ops: list[ir.Operation]                 # the chain, root first (erased)
    q: ir.Value
    k: ir.Value
    v: ir.Value
    flags: list[bool]                       # q, k, v, o passed as head views
    heads: Optional[int]                    # H where known (head views, merge, masks)
    scale: float
    bias: Optional[ir.Value]
    lo: Optional[ir.Value]
    live: Optional[ir.Value]
    result: ir.Value                        # the value the call replaces
    erase_views: list[ir.Operation] = field(default_factory=list)
    nb: Dim = None
    L: Dim = None
    S: Dim = None
    E: Dim = None
    Ev: Dim = None
    dtype: str = "f32"
    scale_src: Optional[ir.Value] = None    # the 0-d fill the scores were multiplied by
    safe: bool = False                      # rows whose every score is -inf give 0 (torch's safe softmax)
    consts: list = field(default_factory=list)   # the safe softmax's -inf and 0 fills
    grouped: list = field(default_factory=lambda: [False] * 3)   # q, k, v given as (B, Hk, S, D) heads
    tiled: bool = False                     # query head h reads k / v head h % Hk (else h / (H/Hk))

    @property
    def symbol(self) -> str:
        return SYMBOL.format(flags="".join("1" if f else "0" for f in self.flags), safe="_safe" if self.safe else "",
                             tiled="_tiled" if self.tiled else "", dtype=self.dtype)

    def flops(self) -> Dim:
        return self.nb * self.L * self.S * (self.E + self.Ev)


def _broadcasts(sig: TensorSig, dtype: str, to: tuple) -> bool:
    """``sig`` (rank <= 3, ``dtype``) broadcasts to ``to`` dim by dim (each equal or 1)."""
    if sig.dtype != dtype or sig.rank > 3:
        return False
    return all(_eq(d, w) or _eq(d, 1) for d, w in zip(sig.shape, to[3 - sig.rank:]))


def _safe_softmax(s: ir.Value, block_op: ir.Operation) -> Optional[tuple[ir.Operation, list[ir.Operation]]]:
    """torch's safe softmax as the importer writes it for a float mask (``_zero_dead_rows``):
    ``where(equal(max(s, [-1], keepdims), -inf), 0, softmax(s))`` where ``s`` has exactly those
    two users: (the softmax, [max, equal, where])."""
    both = users(s)
    if len(both) != 2 or any(u.parent != block_op.parent for u in both):
        return None
    sm = next((u for u in both if u.name == "relax.softmax"), None)
    mx = next((u for u in both if u.name == "relax.max"), None)
    ss = _sig(s)
    if sm is None or mx is None or ss is None:
        return None
    a = _attrs(mx)
    if a is None or a.get("axes") is None or [x % ss.rank for x in a["axes"]] != [ss.rank - 1] or not a.get("keepdims"):
        return None
    eq = single_user(mx.results[0], mx)
    if eq is None or eq.name != "relax.equal":
        return None
    c = _other(eq, mx.results[0])
    if c is None or _scalar_fill(c) != -math.inf:
        return None
    wh = single_user(eq.results[0], eq)
    if wh is None or wh.name != "relax.where" or len(wh.operands) != 3 or wh.operands[0] != eq.results[0]:
        return None
    only = single_user(sm.results[0], sm)
    if _scalar_fill(wh.operands[1]) != 0.0 or wh.operands[2] != sm.results[0] or only is None or only != wh:
        return None
    return sm, [mx, eq, wh]


def head_split(v: ir.Value, user: ir.Operation) -> Optional[tuple[ir.Value, list[ir.Operation], int]]:
    """Attention's head split before the batch merge: ``v`` (B, H, S, D) computed, for ``user``
    alone, as ``permute_dims(reshape(X, [B, S, H, D]), [0, 2, 1, 3])`` of a projection X
    (B, S, H*D) with static H and D: (X, the two ops, users first, H). The library reads
    head h of batch row b in place: a (S, D) matrix of X, rows H*D apart."""
    perm = producer(v, "relax.permute_dims", user)
    r1 = perm and producer(perm.operands[0], "relax.reshape", perm)
    if r1 is None:
        return None
    x = r1.operands[0]
    a, xs, s4, vs = _attrs(perm), _sig(x), _sig(r1.results[0]), _sig(v)
    if a is None or a.get("axes") is None or [e % 4 for e in a["axes"]] != [0, 2, 1, 3]:
        return None
    if xs is None or s4 is None or vs is None or xs.rank != 3 or s4.rank != 4 or xs.dtype != vs.dtype:
        return None
    b, s_, h, d = s4.shape
    if not (h.is_static and d.is_static):
        return None
    if not all(_eq(p, q) for p, q in ((b, xs.shape[0]), (s_, xs.shape[1]), (h * d, xs.shape[2]))):
        return None
    return x, [perm, r1], h.value


@dataclass
class Repeat:
    """Grouped-query attention's repeat of k or v heads (see :func:`repeat_source`)."""

    source: ir.Value                        # K (B, Hk, S, D)
    ops: list[ir.Operation]                 # the repeat, users first
    heads: int                              # Hq = Hk * rep
    tiled: bool                             # head h is K's head h % Hk (else h / rep)


def repeat_source(v: ir.Value, user: ir.Operation) -> Optional[Repeat]:
    """Grouped-query attention's repeat of k or v: ``v`` (B*Hq, S, D) computed, for ``user``
    alone, as ``reshape([reshape(] broadcast_to(expand_dims(K, [a]), R) [, (B, Hq, S, D))],
    (B*Hq, S, D))`` of K (B, Hk, S, D), Hq = Hk*rep static. ``a`` = 2, R = (B, Hk, rep, S, D):
    each head repeated in place (transformers' repeat_kv, sdpa's enable_gqa), query head h
    reads K's head h / rep; ``a`` = 1, R = (B, rep, Hk, S, D): the heads tiled (as
    relax_mlir/llm's group-major query heads), h reads h % Hk. The library then reads K's Hk
    heads in place for the Hq query heads."""
    r = defining_op(v)
    if r is None or r.name != "relax.reshape" or single_user(v, user) is None:
        return None
    ops = [r]
    bc = defining_op(r.operands[0])
    if bc is not None and bc.name == "relax.reshape" and single_user(r.operands[0], r) is not None:
        ops.append(bc)
        bc = defining_op(bc.operands[0])
    if bc is None or bc.name != "relax.broadcast_to" or single_user(ops[-1].operands[0], ops[-1]) is None:
        return None
    ex = defining_op(bc.operands[0])
    if ex is None or ex.name != "relax.expand_dims" or single_user(bc.operands[0], bc) is None:
        return None
    a = _attrs(ex)
    k4 = ex.operands[0]
    ks, bs, vs = _sig(k4), _sig(bc.results[0]), _sig(v)
    if a is None or ks is None or bs is None or vs is None or ks.rank != 4 or bs.rank != 5 or vs.rank != 3:
        return None
    axis = a.get("axis")
    axes = [x % 5 for x in (axis if isinstance(axis, (list, tuple)) else [axis])] if axis is not None else None
    if axes not in ([1], [2]):
        return None
    tiled = axes == [1]
    b, s_, d = bs.shape[0], bs.shape[3], bs.shape[4]
    hk, rep = (bs.shape[2], bs.shape[1]) if tiled else (bs.shape[1], bs.shape[2])
    if not (hk.is_static and rep.is_static):
        return None
    if not all(_eq(x, y) for x, y in ((ks.shape[0], b), (ks.shape[1], hk), (ks.shape[2], s_), (ks.shape[3], d),
                                      (vs.shape[0], b * hk * rep), (vs.shape[1], s_), (vs.shape[2], d))):
        return None
    return Repeat(k4, ops + [bc, ex], hk.value * rep.value, tiled)


def merge_view(v: ir.Value, user_of: ir.Operation) -> Optional[tuple[ir.Value, list[ir.Operation], int]]:
    """The head merge ``reshape(permute_dims(reshape(o, [B, H, L, Ev]), [0, 2, 1, 3]),
    [B, L, H*Ev])`` of ``v`` (nb, L, Ev) when each op is the single user of the one before:
    (the merged value, the three ops, H)."""
    r1 = single_user(v, user_of)
    if r1 is None or r1.name != "relax.reshape":
        return None
    perm = single_user(r1.results[0], r1)
    if perm is None or perm.name != "relax.permute_dims":
        return None
    r2 = single_user(perm.results[0], perm)
    if r2 is None or r2.name != "relax.reshape":
        return None
    a = _attrs(perm)
    s3, s4, out = _sig(v), _sig(r1.results[0]), _sig(r2.results[0])
    if a is None or a.get("axes") is None or [x % 4 for x in a["axes"]] != [0, 2, 1, 3]:
        return None
    if s3 is None or s4 is None or out is None or s3.rank != 3 or s4.rank != 4 or out.rank != 3:
        return None
    b, h, l, ev = s4.shape
    if not (h.is_static and ev.is_static):
        return None
    if not all(_eq(x, y) for x, y in ((b * h, s3.shape[0]), (l, s3.shape[1]), (ev, s3.shape[2]),
                                      (b, out.shape[0]), (l, out.shape[1]), (h * ev, out.shape[2]))):
        return None
    return r2.results[0], [r1, perm, r2], h.value


def mask_source(v: ir.Value) -> Optional[tuple[ir.Value, list[ir.Operation], int]]:
    """A per-head broadcast of a per-row mask: ``v`` (B*H, X, Y) computed as
    ``reshape(broadcast_to(W, (B, H, X, Y)), (B*H, X, Y))`` -- possibly behind
    ``max(expand_dims(., 3), axes=[-1])`` -- with W (B, 1, X, Y): (W, the ops from v back, H)."""
    ops = []
    op = defining_op(v)
    if op is not None and op.name == "relax.max":
        a, ex = _attrs(op), defining_op(op.operands[0])
        if (a is None or a.get("axes") is None or [x % 4 for x in a["axes"]] != [3] or a.get("keepdims")
                or ex is None or ex.name != "relax.expand_dims"):
            return None
        xs = _sig(ex.results[0])
        if xs is None or xs.rank != 4 or not _eq(xs.shape[3], 1):
            return None
        ops += [op, ex]
        op = defining_op(ex.operands[0])
    if op is None or op.name != "relax.reshape":
        return None
    bc = defining_op(op.operands[0])
    if bc is None or bc.name != "relax.broadcast_to":
        return None
    ops += [op, bc]
    w = bc.operands[0]
    ws, bs, vs = _sig(w), _sig(bc.results[0]), _sig(op.results[0])
    if ws is None or bs is None or vs is None or ws.rank != 4 or bs.rank != 4 or vs.rank != 3:
        return None
    b, h, x, y = bs.shape
    if not h.is_static or not _eq(ws.shape[1], 1) or not _eq(ws.shape[0], b):
        return None
    if not all(_eq(p, q) for p, q in ((ws.shape[2], x), (ws.shape[3], y), (b * h, vs.shape[0]),
                                      (x, vs.shape[1]), (y, vs.shape[2]))):
        return None
    return w, ops, h.value


def match_attention(root: ir.Operation, head_view) -> Optional[AttentionMatch]:
    """The chain of the module docstring at ``root`` (a ``relax.matmul``), or None.
    ``head_view``: relax-dispatch-library's head-split recognizer."""
    if root.name != "relax.matmul" or len(root.operands) != 2:
        return None
    q3, kt = root.operands[0], root.operands[1]
    perm = defining_op(kt)
    if perm is None or perm.name != "relax.permute_dims" or q3 == kt or perm.parent != root.parent:
        return None
    only = single_user(kt, root)
    perm_shared = only is None or only != root   # read k through it; the transpose stays for its other users
    pa = _attrs(perm)
    if pa is None or pa.get("axes") is None or [x % 3 for x in pa["axes"]] != [0, 2, 1]:
        return None
    k3 = perm.operands[0]
    qs, ks, ss = _sig(q3), _sig(k3), _sig(root.results[0])
    ra = _attrs(root)
    if qs is None or ks is None or ss is None or ra is None or ra.get("out_dtype") not in (None, qs.dtype):
        return None
    if not (qs.rank == ks.rank == ss.rank == 3 and qs.dtype == ks.dtype == ss.dtype and qs.dtype in ("f32", "f64")):
        return None
    nb, L, E = qs.shape
    S = ks.shape[1]
    if not (_eq(ks.shape[0], nb) and _eq(ks.shape[2], E) and _eq(ss.shape[0], nb) and _eq(ss.shape[1], L)
            and _eq(ss.shape[2], S)):
        return None
    ops, x = [root], root
    scale, bias, lo, live, scale_src = 1.0, None, None, None, None
    nxt = single_user(x.results[0], x)
    if nxt is not None and nxt.name == "relax.multiply":
        c = _other(nxt, x.results[0])
        scale = _scalar_fill(c) if c is not None else None
        if scale is None:
            return None
        scale_src = c
        ops.append(nxt)
        x, nxt = nxt, single_user(nxt.results[0], nxt)
    if nxt is not None and nxt.name == "relax.add":
        bias = _other(nxt, x.results[0])
        bs = _sig(bias) if bias is not None else None
        if bs is None or not _broadcasts(bs, qs.dtype, (nb, L, S)):
            return None
        ops.append(nxt)
        x, nxt = nxt, single_user(nxt.results[0], nxt)
    if nxt is not None and nxt.name == "relax.maximum":
        lo = _other(nxt, x.results[0])
        if lo is None or _scalar_fill(lo) is None:
            return None
        ops.append(nxt)
        x, nxt = nxt, single_user(nxt.results[0], nxt)
    safe, extra = False, []
    if nxt is None:
        got = _safe_softmax(x.results[0], x)
        if got is None:
            return None
        (nxt, extra), safe = got, True
    elif nxt.name != "relax.softmax":
        return None
    sa = _attrs(nxt)
    if sa is None or sa.get("axis") not in (-1, 2):
        return None
    ops += [nxt] + extra
    x = extra[-1] if extra else nxt
    mm = single_user(x.results[0], x)
    if mm is None or mm.name != "relax.matmul" or mm.operands[0] != x.results[0] or mm.operands[1] == x.results[0]:
        return None
    ma = _attrs(mm)
    v3 = mm.operands[1]
    vs, os_ = _sig(v3), _sig(mm.results[0])
    if ma is None or ma.get("out_dtype") not in (None, qs.dtype) or vs is None or os_ is None:
        return None
    if not (vs.rank == os_.rank == 3 and vs.dtype == os_.dtype == qs.dtype):
        return None
    Ev = vs.shape[2]
    if not (_eq(vs.shape[0], nb) and _eq(vs.shape[1], S) and _eq(os_.shape[0], nb) and _eq(os_.shape[1], L)
            and _eq(os_.shape[2], Ev)):
        return None
    ops.append(mm)
    x, nxt = mm, single_user(mm.results[0], mm)
    if nxt is not None and nxt.name == "relax.multiply":
        cand = _other(nxt, x.results[0])
        ls = _sig(cand) if cand is not None else None
        rs = _sig(nxt.results[0])
        if ls is not None and rs is not None and rs.rank == 3 and _broadcasts(ls, qs.dtype, (nb, L, Dim.of(1))):
            live = cand
            ops.append(nxt)
            x = nxt
    result = x.results[0]
    heads: set[int] = set()
    views = [head_view(q3, root), None if perm_shared else head_view(k3, perm), head_view(v3, mm)]
    flags = [w is not None for w in views]
    erase_views: list[ir.Operation] = [] if perm_shared else [perm]
    operands: list = []
    repeats = [None, None if perm_shared else repeat_source(k3, perm), repeat_source(v3, mm)]
    grouped = [False] * 3
    mappings: set[bool] = set()
    for i, (w, g, val) in enumerate(zip(views, repeats, (q3, k3, v3))):
        if w is None and g is not None:   # K's Hk heads read in place for the Hq query heads: no repeat
            split = head_split(g.source, g.ops[-1])
            if split is not None:         # K a head split of X (B, S, Hk*D): X's heads in place
                operands.append(split[0])
                erase_views += g.ops + split[1]
                flags[i] = True
            else:                         # K (B, Hk, S, D) as its (B*Hk, S, D) products
                operands.append(g.source)
                erase_views += g.ops
                grouped[i] = True
            heads.add(g.heads)
            mappings.add(g.tiled)
            continue
        if w is None:
            operands.append(val)
            continue
        operands.append(w[0])
        erase_views += w[1]
        heads.add(_sig(w[1][2].results[0]).shape[2].value)   # reshape (B, S, H, D)
    if len(mappings) > 1:   # k repeated in place, v tiled (or the reverse): no single mapping
        return None
    merged = merge_view(result, x)
    if merged is not None:
        result = merged[0]
        ops += merged[1]
        heads.add(merged[2])
    flags.append(merged is not None)
    if len(heads) > 1:
        return None
    m = AttentionMatch(ops, operands[0], operands[1], operands[2], flags, next(iter(heads), None), scale, bias,
                       lo, live, result, erase_views, nb, L, S, E, Ev, qs.dtype, scale_src, safe,
                       [_other(extra[1], extra[0].results[0]), extra[2].operands[1]] if safe else [], grouped,
                       any(mappings))
    if any(flags) and m.heads is None:
        return None
    return m


class _Operands:
    """The call's extra operands, created once per function before their first use."""

    def __init__(self):
        self.memo: dict = {}

    def get(self, key, build):
        if key not in self.memo:
            self.memo[key] = build()
        return self.memo[key]


def _full(shape: list, value: float, dtype: str, loc, ip) -> ir.Value:
    attrs = {"shape": Shape.of(shape).to_attr(), "value": ir.FloatAttr.get(ir.F64Type.get(), value),
             "dtype": ir.TypeAttr.get(ir.Type.parse(dtype))}
    return create("full", [], [tensor_type(shape, dtype)], attrs, loc=loc, ip=ip).results[0]


def _reshape(v: ir.Value, shape: list, loc, ip) -> ir.Value:
    return create("reshape", [v], [tensor_type(shape, _sig(v).dtype)], {"shape": Shape.of(shape).to_attr()},
                  loc=loc, ip=ip).results[0]


def _mask_operand(v: ir.Value, heads: Optional[int], memo: _Operands, loc, ip) -> tuple[ir.Value, list, Optional[int]]:
    """(the operand for a bias / live value, the per-head ops it makes dead, H)."""
    src = mask_source(v)
    if src is None or (heads is not None and src[2] != heads):
        vs = _sig(v)
        if vs.rank < 3:   # leading unit dims added (numpy broadcasting)
            lifted = [Dim.of(1)] * (3 - vs.rank) + list(vs.shape)
            return memo.get(("reshape", v), lambda: _reshape(v, lifted, loc, ip)), [], None
        return v, [], None
    w, ops, h = src
    ws = _sig(w)   # W (B, 1, X, Y) as (B, X, Y)
    rows = [ws.shape[0], ws.shape[2], ws.shape[3]]
    return memo.get(("reshape", w), lambda: _reshape(w, rows, loc, ip)), ops, h


def rewrite_attention(m: AttentionMatch, memo: _Operands) -> list[ir.Operation]:
    """Replace the match with the library call; returns the ops that may now be dead."""
    last = defining_op(m.result)
    loc, ip = last.location, ir.InsertionPoint(last)
    dead: list[ir.Operation] = [defining_op(v) for v in ([m.scale_src] if m.scale_src is not None else []) + m.consts]
    heads = m.heads
    bias = live = None
    if m.bias is not None:
        bias, ops, h = _mask_operand(m.bias, heads, memo, loc, ip)
        dead += ops
        heads = heads or h
    if m.live is not None:
        live, ops, h = _mask_operand(m.live, heads, memo, loc, ip)
        if h is not None and heads is not None and h != heads:
            live, ops = m.live, []
        dead += ops
        heads = heads or h
    dt = m.dtype
    if heads is None:
        heads = 1   # all operands plain: one "head" per product (B = nb)
    if bias is None:
        bias = memo.get(("zeros", dt), lambda: _full([1, 1, 1], 0.0, dt, loc, ip))
    if live is None:
        live = memo.get(("ones", dt), lambda: _full([1, 1, 1], 1.0, dt, loc, ip))
    lo = m.lo if m.lo is not None else memo.get(("ninf", dt), lambda: _full([], -math.inf, dt, loc, ip))
    scale = memo.get(("scale", dt, heads, m.scale), lambda: _full([heads], m.scale, dt, loc, ip))
    operands = []
    for x, grouped in zip((m.q, m.k, m.v), m.grouped):
        if grouped:   # a grouped-query K (B, Hk, S, D) as its (B*Hk, S, D) products
            ks = _sig(x)
            flat = [ks.shape[0] * ks.shape[1], ks.shape[2], ks.shape[3]]
            x = memo.get(("reshape", x), lambda: _reshape(x, flat, loc, ip))
        operands.append(x)
    call = create("call_dps_library", operands + [scale, bias, lo, live], [m.result.type],
                  {"callee": ir.StringAttr.get(m.symbol)}, loc=loc, ip=ip)
    m.result.replace_all_uses_with(call.results[0])
    for o in reversed(m.ops):
        o.erase()
    for o in m.erase_views:
        o.erase()
    return dead


def dispatch_attention(f: ir.Operation, ops: list[ir.Operation], head_view, worth_it) -> int:
    """Rewrite every attention chain of the graph function ``f`` (body ``ops``) whose work
    ``worth_it`` accepts; returns how many. The per-head mask ops left without users are
    erased at the end (every layer reads the same ones)."""
    matches = []
    for op in ops:   # all matched first: a rewrite erases ops, chains never overlap
        m = match_attention(op, head_view) if op.name == "relax.matmul" else None
        if m is not None and worth_it(m.flops()):
            matches.append(m)
    memo, dead = _Operands(), []
    for m in matches:
        dead += rewrite_attention(m, memo)
    keys = {hash(d) for d in dead}
    for op in reversed([o.operation for o in f.regions[0].blocks[0].operations]):
        if hash(op) in keys and all(len(list(r.uses)) == 0 for r in op.results):
            op.erase()
    return len(matches)
