"""Fused decode attention on the GPU targets (flash-decoding style, issue 27).

relax-gpu-decode-attention (graph level, before relax-legalize): the cached attention of
relax_mlir/llm (``LlamaModel._attend_cached``) is written as

    q5 = reshape(q, (s, G, 1, KV, D))
    sc = sum(multiply(q5, k), axes=[-1])          k (t, KV, D)          -> (s, G, t, KV)
    p  = softmax(add(sc, mask), axis=2)           mask broadcasts to (s, G, t, KV)
    o  = sum(multiply(expand_dims(p, [4]), v), axes=[2])   v (t, KV, D)  -> (s, G, KV, D)

which legalizes to three kernels (q.k, softmax, p.v: three launches per layer, the scores
written to and read back from memory twice). Each intermediate used only by the next op,
the chain becomes ONE ``relax.call_tir`` of a kernel ``relax.kernel_op = "decode_attention"``
whose linalg body computes the same (scores, max, sum of exponentials, weighted sum of v,
division), so every route that does not take it still computes attention.

The GPU rule (:class:`relax_mlir.backends.gpu.rules.DecodeAttention`, f32, a known subgroup
size, a static head dim that is a multiple of it) replaces that body with one launch
(:func:`build`): a workgroup per query row (s, g, kv), ``splits`` subgroups per workgroup
each taking every ``splits``-th key, a lane holding ``D / subgroup`` elements of q, of the
output and its accumulators: per key a partial q.k, a ``gpu.shuffle xor`` sum over the
subgroup, the online softmax update (running max, rescaled sum and accumulators); the
subgroups' partial results meet in workgroup memory after one barrier. Above
``attention_chunk`` keys (at run time) flash-decoding's split across workgroups: a workgroup
per (row, chunk) writes (max, sum, accumulators) to a workspace and the last one of each row
to finish combines them, found through atomic counters that live in a session state
(:data:`COUNTERS_STATE`), still one launch; or a second launch, a subgroup per row, combines
them (``attention_launches=2``, or more counters needed than the state holds). 12 rows alone
leave most of a GPU idle at long contexts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from mlir import ir
from mlir.dialects import arith, gpu, llvm, math as mmath, memref, scf, spirv

from ...dialects._core import create
from ...ops.kernels import KType, KernelBuilder, broadcast_map
from ...shapes import Shape, TensorSig, Truth, prove_equal
from ...target import Target
from ...transforms.graph import body_ops, defining_op, graph_functions, other_operand, relax_attrs, users
from ...transforms.graph import value_sig as _sig
from ...transforms.legalize import KERNEL_OP_ATTR, KernelTable
from ...transforms.registry import Option, register_pass
from .launch_builder import (CONTRACT, MAX_GRID, Launch, barrier, f32, for_loop, index, indexing_maps, load, store,
                             to_f32, when)

KERNEL_OP = "decode_attention"
#: the launch skips keys masked by the lowest f32 once a visible key set the running max
#: (exact: they add exp(lowest - max) = 0); bench/README.md compares
SKIP_MASKED_KEYS = True
#: the initial running maximum: the lowest finite f32 (x - m stays finite, exp gives 0)
_LOWEST = float(np.finfo(np.float32).min)


# -- graph level ---------------------------------------------------------------------------

def _attrs(op: ir.Operation) -> dict:
    return relax_attrs(op) or {}


def _eq(a, b) -> bool:
    return prove_equal(a, b) is Truth.TRUE


def _only_user(v: ir.Value, name: str) -> Optional[ir.Operation]:
    us = users(v)
    return us[0] if len(us) == 1 and us[0].name == name else None


def _axes(op: ir.Operation, rank: int, key: str) -> Optional[list[int]]:
    a = _attrs(op).get(key)
    if a is None:
        return None
    a = [a] if isinstance(a, int) else list(a)
    return sorted(x % rank for x in a)


@dataclass
class _Chain:
    q5: ir.Value
    k: ir.Value
    mask: ir.Value
    v: ir.Value
    ops: list            # root (the q.k multiply) first
    result: ir.Value


def match_chain(mul: ir.Operation) -> Optional[_Chain]:
    """The decode attention chain starting at ``relax.multiply`` ``mul`` (q5 * k), or None."""
    if mul.name != "relax.multiply" or len(mul.operands) != 2:
        return None
    q5, k = mul.operands
    sq, sk = _sig(q5), _sig(k)
    if sq is None or sk is None or sq.rank != 5 or sk.rank != 3 or sq.dtype != "f32" or sk.dtype != "f32":
        return None
    s_, G, one, KV, D = sq.shape
    t, kv_k, d_k = sk.shape
    if not (_eq(one, 1) and _eq(kv_k, KV) and _eq(d_k, D)):
        return None
    red = _only_user(mul.results[0], "relax.sum")
    if red is None or _axes(red, 5, "axes") != [4] or _attrs(red).get("keepdims"):
        return None
    add = _only_user(red.results[0], "relax.add")
    if add is None:
        return None
    mask = other_operand(add, red.results[0])
    sm_sig, scores = (_sig(mask) if mask is not None else None), (s_, G, t, KV)
    if sm_sig is None or sm_sig.dtype != "f32" or sm_sig.rank > 4:
        return None
    if not all(_eq(d, w) or _eq(d, 1) for d, w in zip(sm_sig.shape, scores[4 - sm_sig.rank:])):
        return None
    sm = _only_user(add.results[0], "relax.softmax")
    if sm is None or _axes(sm, 4, "axis") != [2]:
        return None
    ex = _only_user(sm.results[0], "relax.expand_dims")
    if ex is None or _axes(ex, 5, "axis") != [4]:
        return None
    mul2 = _only_user(ex.results[0], "relax.multiply")
    if mul2 is None:
        return None
    v = other_operand(mul2, ex.results[0])
    sv = _sig(v) if v is not None else None
    if sv is None or sv.rank != 3 or sv.dtype != "f32" or \
            not all(_eq(x, y) for x, y in zip(sv.shape, (t, KV, D))):
        return None
    red2 = _only_user(mul2.results[0], "relax.sum")
    if red2 is None or _axes(red2, 5, "axes") != [2] or _attrs(red2).get("keepdims"):
        return None
    return _Chain(q5, k, mask, v, [mul, red, add, sm, ex, mul2, red2], red2.results[0])


def _static(d) -> Optional[int]:
    d = str(d)
    return int(d) if d.isdigit() else None


def absorb_reshapes(ch: _Chain) -> tuple[ir.Value, Optional[ir.Operation]]:
    """(the q operand, the output reshape to absorb): q5's ``relax.reshape`` from
    (s, G*KV, D) when q5 has no other user, and the result's single user when it is a
    reshape to (s, G*KV*D); on the GPU each would be a copy kernel of its own (a launch)."""
    q = ch.q5
    op = defining_op(q)
    if op is not None and op.name == "relax.reshape" and len(users(q)) == 1:
        src = _sig(op.operands[0])
        if src is not None and src.rank == 3 and src.dtype == "f32":
            q = op.operands[0]
    us = users(ch.result)
    out = us[0] if len(us) == 1 and us[0].name == "relax.reshape" else None
    if out is not None:
        so = _sig(out.results[0])
        if so is None or so.rank != 2:
            out = None
    return q, out



@dataclass
class _Prefill:
    q: ir.Value          # (s, H, D), query head h = g * KV + kv
    k: ir.Value          # (t, KV, D)
    v: ir.Value          # (t, KV, D)
    mask: ir.Value       # (s, t) or (1, s, t), shared by every head
    ops: list            # every op of the chain (the head splits, the products, the merge)
    result: ir.Value     # (s, H*D)
    G: int
    KV: int
    D: int


def _step(v: ir.Value, name: str, user: ir.Operation, shape: tuple, attr: Optional[tuple] = None):
    """The op ``name`` defining ``v`` whose only user is ``user``, its result of ``shape`` and
    (``attr`` = (key, value)) that attribute, else None."""
    op = defining_op(v)
    if op is None or op.name != name or users(v) != [user] or op.parent != user.parent:
        return None
    sig = _sig(v)
    if sig is None or sig.rank != len(shape) or not all(_eq(a, b) for a, b in zip(sig.shape, shape)):
        return None
    if attr is not None and list(_attrs(op).get(attr[0]) or []) != list(attr[1]):
        return None
    return op


def _heads(v: ir.Value, user: ir.Operation, s, D, H: int) -> Optional[tuple[ir.Value, list, int]]:
    """(x, ops, n): ``v`` (H, s, D) is the head split of x (s, n, D) as ``LlamaModel._attend_blas``
    writes it -- ``reshape(reshape(x, (1, s, n*D)), (1, s, n, D))``, ``permute_dims [0, 2, 1, 3]``,
    for n < H the n heads tiled H / n times (``expand_dims`` [1], ``broadcast_to`` (1, G, n, s, D):
    head h reads head h % n), ``reshape`` (H, s, D); each op used only by the next."""
    ops = []
    r = _step(v, "relax.reshape", user, (H, s, D))
    if r is None:
        return None
    ops.append(r)
    x = r.operands[0]
    sig = _sig(x)
    if sig is None:
        return None
    if sig.rank == 5:   # the tiled kv heads
        G, n = _static(sig.shape[1]), _static(sig.shape[2])
        if G is None or n is None or G * n != H:
            return None
        b = _step(x, "relax.broadcast_to", r, (1, G, n, s, D))
        e = b and _step(b.operands[0], "relax.expand_dims", b, (1, 1, n, s, D), ("axis", [1]))
        if e is None:
            return None
        ops += [b, e]
        x, r = e.operands[0], e
    else:
        n = H
    p = _step(x, "relax.permute_dims", r, (1, n, s, D), ("axes", [0, 2, 1, 3]))
    r1 = p and _step(p.operands[0], "relax.reshape", p, (1, s, n, D))
    r2 = r1 and _step(r1.operands[0], "relax.reshape", r1, (1, s, n * D))
    src = _sig(r2.operands[0]) if r2 is not None else None
    if src is None or src.rank != 3 or src.dtype != "f32" or \
            not all(_eq(a, b) for a, b in zip(src.shape, (s, n, D))):
        return None
    return r2.operands[0], ops + [p, r1, r2], n


def match_prefill(mm: ir.Operation) -> Optional[_Prefill]:
    """The prefill attention chain of ``LlamaModel._attend_blas`` ending at ``relax.matmul``
    ``mm`` (probs . v), or None: ``matmul(qh, permute_dims(kh, [0, 2, 1]))`` (H, s, s),
    ``+ mask`` (s, s) shared by every head, ``softmax(axis=-1)``, ``matmul(., vh)``, the head
    merge ``reshape`` (1, H, s, D), ``permute_dims [0, 2, 1, 3]``, reshapes to (s, H*D); qh, kh
    and vh the head splits of q (s, H, D), k and v (s, KV, D) (:func:`_heads`). Each
    intermediate used only by the next op; H, KV and D static."""
    if mm.name != "relax.matmul" or len(mm.operands) != 2:
        return None
    so = _sig(mm.results[0])
    if so is None or so.rank != 3 or so.dtype != "f32":
        return None
    H, s, D = _static(so.shape[0]), so.shape[1], _static(so.shape[2])
    if H is None or D is None:
        return None
    sm = _step(mm.operands[0], "relax.softmax", mm, (H, s, s))
    if sm is None or _axes(sm, 3, "axis") != [2]:
        return None
    add = _step(sm.operands[0], "relax.add", sm, (H, s, s))
    if add is None:
        return None
    qk = next((defining_op(x) for x in add.operands if (o := defining_op(x)) is not None and o.name == "relax.matmul"),
              None)
    if qk is None or users(qk.results[0]) != [add]:
        return None
    mask = other_operand(add, qk.results[0])
    ms = _sig(mask) if mask is not None else None
    if ms is None or ms.dtype != "f32" or ms.rank not in (2, 3) or (ms.rank == 3 and not _eq(ms.shape[0], 1)) or \
            not all(_eq(a, s) for a in ms.shape[-2:]):
        return None
    kt = _step(qk.operands[1], "relax.permute_dims", qk, (H, D, s), ("axes", [0, 2, 1]))
    q = _heads(qk.operands[0], qk, s, D, H)
    k = kt and _heads(kt.operands[0], kt, s, D, H)
    v = _heads(mm.operands[1], mm, s, D, H)
    if q is None or k is None or v is None or q[2] != H or k[2] != v[2] or H % k[2]:
        return None
    ops = [mm, sm, add, qk, kt] + q[1] + k[1] + v[1]
    # the head merge: (H, s, D) -> (1, H, s, D) -> (1, s, H, D) -> reshapes to (s, H*D)
    us = users(mm.results[0])
    r = us[0] if len(us) == 1 and us[0].name == "relax.reshape" else None
    p = _only_user(r.results[0], "relax.permute_dims") if r is not None else None
    if p is None or _attrs(p).get("axes") is None or list(_attrs(p)["axes"]) != [0, 2, 1, 3]:
        return None
    ops += [r, p]
    out = p.results[0]
    while True:
        nxt = _only_user(out, "relax.reshape")
        if nxt is None:
            break
        ops.append(nxt)
        out = nxt.results[0]
        osig = _sig(out)
        if osig.rank == 2 and _eq(osig.shape[0], s) and _eq(osig.shape[1], H * D):
            break
    osig = _sig(out)
    if osig is None or osig.rank != 2 or not _eq(osig.shape[0], s) or not _eq(osig.shape[1], H * D):
        return None
    KV = k[2]
    return _Prefill(q[0], k[0], v[0], mask, ops, out, H // KV, KV, D)


#: element types of K / V the fused kernel reads as they are (widened to f32 per load: f16
#: by a conversion, bf16 by a shift into an f32's high half)
KV_DTYPES = ("f32", "f16", "bf16")

#: The session state (``relax.state``) holding the arrival counters of the split's
#: combination in the last workgroup of a row (:func:`build`), one per query row and live
#: lane (rows x min(subgroup, D)): zero-filled when a session is made, left zero by every
#: launch (the last arrival resets its counter), at a fixed address for the session's life (a
#: replayed CUDA graph finds them zero). A call needing more takes the two-launch split.
COUNTERS_STATE = "relax_gpu_attention_counters"
COUNTERS = 65536


def counters_operand(module: ir.Operation, ip: ir.InsertionPoint, loc: ir.Location) -> ir.Value:
    """A ``relax.state_read`` of every row of :data:`COUNTERS_STATE` (declared on ``module``
    on first use): the fused kernel's fifth operand, which only the GPU rule's launch uses."""
    from ...ops.state import declare_states, module_states
    from ...shapes import tensor_type
    if COUNTERS_STATE not in module_states(module):
        declare_states(module, {COUNTERS_STATE: ([COUNTERS], "i32")})
    t = tensor_type(Shape.of([COUNTERS]), "i32")
    return create("state_read", [], [t], {"state": ir.StringAttr.get(COUNTERS_STATE),
                                          "end": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), COUNTERS)},
                  loc=loc, ip=ip).results[0]


def absorb_cast(v: ir.Value) -> tuple[ir.Value, Optional[ir.Operation]]:
    """(the K or V operand, the cast to absorb): a ``relax.astype`` to f32 of an f16 or bf16
    tensor used only by the chain (relax_mlir/llm's 16-bit KV cache, ``kv_dtype``) is read
    as stored by the kernel, which widens each element as it loads it: converting the whole
    cache first would be a launch and a full f32 copy of it per layer."""
    op = defining_op(v)
    if op is None or op.name != "relax.astype" or len(users(v)) != 1:
        return v, None
    src = _sig(op.operands[0])
    if src is None or src.dtype not in KV_DTYPES or src.rank != 3:
        return v, None
    return op.operands[0], op


def attention_kernel(q: TensorSig, k: TensorSig, mask: TensorSig, v: TensorSig, out: TensorSig,
                     G: int, KV: int, D: int, counters: Optional[TensorSig] = None, rows_keys: bool = False):
    """The kernel of the fused chain, in linalg on tensors (what every route but the GPU
    rule's launch runs): scores + mask, row max, sum of exponentials, weighted sum of v,
    division. q is (s, G, 1, KV, D) or (s, G*KV, D); the output (s, G, KV, D) or
    (s, G*KV*D); k and v f32 or f16 (:data:`KV_DTYPES`: widened where read, f32 arithmetic).
    ``counters``: the row counters' state view (:data:`COUNTERS_STATE`), a fifth input the
    linalg body does not read. Loops: (s, g, t, kv[, d]). ``rows_keys``: the mask is (s, t)
    or (1, s, t), one bias per (query, key) shared by every head (prefill's causal mask),
    else it broadcasts (numpy rules) to the scores (s, g, t, kv)."""
    types = [KType.of(x) for x in (q, k, mask, v)] + ([KType.of(counters)] if counters is not None else [])
    ot = KType.of(out)
    kvt = "" if types[1].dtype == "f32" else f"{types[1].dtype}kv_"
    kvt += "st_" if rows_keys else ""
    kb = KernelBuilder("relax_gpu_decode_attention_f32_" + kvt + "_".join(t.tag for t in types + [ot]), types, [ot])
    qq, kk, mk, vv = kb.ins[:4]
    ex = lambda x: kb.un(mmath.ExpOp, x)   # noqa: E731
    qmap = ["d0", "d1", "0", "d3", "d4"] if types[0].rank == 5 else ["d0", f"d1 * {KV} + d3", "d4"]
    omap = ["d0", "d1", "d2", "d3"] if ot.rank == 4 else ["d0", f"d1 * {KV * D} + d2 * {D} + d3"]
    # scores (s, g, t, kv) = sum_d q[s, g, kv, d] k[t, kv, d] + mask
    s_dim = ot.dims[0]
    st = KType((s_dim, G, types[1].dims[0], KV), "f32")
    sizes = [kb.dim(qq, 0), kb.index(G), kb.dim(kk, 0), kb.index(KV)]
    mask_map = (["0"] * (types[2].rank - 2) + ["d0", "d2"]) if rows_keys else broadcast_map(types[2], st)
    zero = kb.fill(0.0, kb.empty_dims(st, sizes))
    (sc,) = kb.generic([(qq, qmap), (kk, ["d2", "d3", "d4"])], [(zero, ["d0", "d1", "d2", "d3"])],
                       ["parallel"] * 4 + ["reduction"],
                       lambda a, b, acc: [kb.bin(arith.AddFOp, acc, kb.bin(arith.MulFOp, a, kb.cast(b, "f32")))])
    (sc,) = kb.generic([(sc, ["d0", "d1", "d2", "d3"]), (mk, mask_map)],
                       [(kb.empty_dims(st, sizes), ["d0", "d1", "d2", "d3"])], ["parallel"] * 4,
                       lambda a, b, _: [kb.bin(arith.AddFOp, a, b)])
    rt = KType((s_dim, G, KV), "f32")
    rsizes = [sizes[0], sizes[1], sizes[3]]
    rows = ["d0", "d1", "d3"]
    its = ["parallel", "parallel", "reduction", "parallel"]
    (mx,) = kb.generic([(sc, ["d0", "d1", "d2", "d3"])], [(kb.fill(float("-inf"), kb.empty_dims(rt, rsizes)), rows)],
                       its, lambda a, acc: [kb.bin(arith.MaximumFOp, a, acc)])
    (den,) = kb.generic([(sc, ["d0", "d1", "d2", "d3"]), (mx, rows)], [(kb.fill(0.0, kb.empty_dims(rt, rsizes)), rows)],
                        its, lambda a, m, acc: [kb.bin(arith.AddFOp, acc, ex(kb.bin(arith.SubFOp, a, m)))])
    nt = KType((s_dim, G, KV, D), "f32")
    # loops (s, g, kv, d, t)
    (num,) = kb.generic([(sc, ["d0", "d1", "d4", "d2"]), (mx, ["d0", "d1", "d2"]), (vv, ["d4", "d2", "d3"])],
                        [(kb.fill(0.0, kb.empty_dims(nt, [sizes[0], sizes[1], sizes[3], kb.index(D)])),
                          ["d0", "d1", "d2", "d3"])],
                        ["parallel"] * 4 + ["reduction"],
                        lambda a, m, x, acc: [kb.bin(arith.AddFOp, acc,
                                                     kb.bin(arith.MulFOp, ex(kb.bin(arith.SubFOp, a, m)),
                                                            kb.cast(x, "f32")))])
    (o,) = kb.generic([(num, ["d0", "d1", "d2", "d3"]), (den, ["d0", "d1", "d2"])], [(kb.outs[0], omap)],
                      ["parallel"] * 4, lambda n, d, _: [kb.bin(arith.DivFOp, n, d)])
    return kb.finish([o])


def takes(head_dim: Optional[int], subgroup: Optional[int]) -> bool:
    """Whether the launch (:func:`build`) serves head dim ``head_dim`` at subgroup width
    ``subgroup``: a static D that is a multiple of the width (at most 16 elements per lane)
    or divides it (lanes past D idle)."""
    if not head_dim or not subgroup:
        return False
    return (head_dim % subgroup == 0 and head_dim // subgroup <= 16) or subgroup % head_dim == 0


def fuse(module: ir.Operation, require_rule: bool = True, kind: str = "vulkan", counters: bool = True,
         prefill: bool = True) -> int:
    """Rewrite every decode attention chain of the graph functions, and with ``prefill``
    every prefill attention chain (:func:`match_prefill`); how many. With
    ``require_rule`` only chains the GPU rule will take on the module's target (a known
    subgroup width, :func:`takes`): the fused kernel's linalg body alone is slower than the
    three scheduled kernels it replaces. With ``counters`` the kernel also reads the row
    counters' state (:func:`counters_operand`), which lets the split combine its chunks in
    the last workgroup of each row (one launch)."""
    sg = Target.for_module(module, kind).subgroup_size
    width = sg if sg and not sg & (sg - 1) else None    # as rules.subgroup: a power of two
    table, n = None, 0
    for f in graph_functions(module):
        # the chains first, then the rewrites (a rewrite erases ops a later match would visit)
        chains = []
        for op in body_ops(f):
            ch = match_chain(op) if op.name == "relax.multiply" else None
            if ch is None or any(ch.ops[0] == o for c in chains for o in c.ops):
                continue
            chains.append(ch)
        prefills = []
        for op in body_ops(f):
            pf = match_prefill(op) if op.name == "relax.matmul" else None
            if pf is not None and prefill and not any(pf.ops[0] == o for c in prefills for o in c.ops):
                prefills.append(pf)
        for pf in prefills:
            if require_rule and not takes(pf.D, width):
                continue
            table = table or KernelTable(module)
            _rewrite(module, table, [pf.q, pf.k, pf.mask, pf.v], pf.result, pf.G, pf.KV, pf.D, counters, True)
            _erase_dead(pf.ops)
            n += 1
        for ch in chains:
            G, KV, D = (_static(_sig(ch.q5).shape[i]) for i in (1, 3, 4))
            if G is None or KV is None or D is None or (require_rule and not takes(D, width)):
                continue
            q, reshape = absorb_reshapes(ch)
            (k, kcast), (v, vcast) = absorb_cast(ch.k), absorb_cast(ch.v)
            result = reshape.results[0] if reshape is not None else ch.result
            table = table or KernelTable(module)
            _rewrite(module, table, [q, k, ch.mask, v], result, G, KV, D, counters, False)
            dead = ([reshape] if reshape is not None else []) + list(reversed(ch.ops))
            if q != ch.q5:
                dead.append(defining_op(ch.q5))
            dead += [c for c in (kcast, vcast) if c is not None]
            for o in dead:
                o.erase()
            n += 1
    return n


def _rewrite(module: ir.Operation, table: KernelTable, operands: list, result: ir.Value, G: int, KV: int, D: int,
             counters: bool, rows_keys: bool) -> None:
    """``result`` replaced by a ``relax.call_tir`` of the fused kernel on ``operands`` (q, k,
    mask, v [+ the counters' state]), inserted right before the op defining ``result``."""
    last = defining_op(result)
    if counters:
        operands = operands + [counters_operand(module, ir.InsertionPoint(last), last.location)]
    kern = attention_kernel(*(_sig(x) for x in operands[:4]), _sig(result), G, KV, D,
                            _sig(operands[4]) if counters else None, rows_keys)
    callee = table.symbol(kern, KERNEL_OP)
    new = create("call_tir", operands, [result.type],
                 {"callee": ir.FlatSymbolRefAttr.get(callee)}, loc=last.location, ip=ir.InsertionPoint(last))
    result.replace_all_uses_with(new.results[0])


def _erase_dead(ops: list) -> None:
    """Erase ``ops`` (a replaced chain), each once nothing uses its results any more."""
    left = list(ops)
    while left:
        dead = [o for o in left if all(not list(r.uses) for r in o.results)]
        if not dead:
            return
        for o in dead:
            left.remove(o)
            o.erase()


@register_pass("relax-gpu-decode-attention",
               "GPU targets: the cached (decode) attention chain q.k + mask -> softmax over the KV length -> "
               "p.v, and prefill's (head splits, q.k^T + causal mask, softmax, p.v, head merge), becomes one "
               "call_tir of a decode_attention kernel (one launch on the GPU rule).",
               options=[Option("require-rule", bool, True, "only where the GPU rule takes the kernel on the "
                                                           "module's target (false: every chain)"),
                        Option("kind", str, "vulkan", "the target kind when the module records none"),
                        Option("counters", bool, True, "the kernel reads the session's row counters "
                                                       f"(state {COUNTERS_STATE}): a split combined in "
                                                       "the last workgroup of each row, one launch"),
                        Option("prefill", bool, True, "the prefill chain too (LlamaModel._attend_blas: "
                                                      "the causal (s, s) mask shared by every head)")])
def relax_gpu_decode_attention(module: ir.Operation, opts) -> None:
    fuse(module, opts.require_rule, opts.kind, opts.counters, opts.prefill)


# -- the launch (relax-gpu-schedule's DecodeAttention rule) ----------------------------------

@dataclass
class _Bufs:
    q: ir.Value
    k: ir.Value
    mask: ir.Value
    mask_map: ir.AffineMap
    v: ir.Value
    out: ir.Value
    ops: list
    counters: Optional[ir.Value] = None    # the row counters (COUNTERS_STATE), if the kernel reads them


def _kernel_op(fn: ir.Operation) -> str:
    return ir.StringAttr(fn.attributes[KERNEL_OP_ATTR]).value if KERNEL_OP_ATTR in fn.attributes else ""


def match(fn: ir.Operation) -> Optional[_Bufs]:
    """The buffers of a bufferized decode_attention kernel (exactly the body
    :func:`attention_kernel` built: 5 fills, 6 generics), else None."""
    if _kernel_op(fn) != KERNEL_OP:
        return None
    ops = [o.operation for o in fn.regions[0].blocks[0].operations]
    work = [o for o in ops if o.name.startswith(("linalg.", "memref.copy", "scf.", "gpu."))]
    if [o.name for o in work] != ["linalg.fill", "linalg.generic", "linalg.generic", "linalg.fill", "linalg.generic",
                                  "linalg.fill", "linalg.generic", "linalg.fill", "linalg.generic", "linalg.generic"]:
        return None
    qk, add, pv, div = work[1].opview, work[2].opview, work[8].opview, work[9].opview
    args = list(fn.regions[0].blocks[0].arguments)
    counters = None
    if len(args) == 6:   # q, k, mask, v, the counters, the output
        ct = args[4].type
        if isinstance(ct, ir.MemRefType) and ct.rank == 1 and ct.shape[0] == COUNTERS and \
                ct.element_type == ir.IntegerType.get_signless(32):
            counters = args[4]
    return _Bufs(qk.inputs[0], qk.inputs[1], add.inputs[1], indexing_maps(work[2])[1], pv.inputs[2], div.outputs[0],
                 work, counters)


def head_dim(fn: ir.Operation) -> Optional[int]:
    """D of a decode_attention kernel's q (static), else None."""
    m = match(fn)
    if m is None:
        return None
    d = ir.MemRefType(m.k.type).shape[2]
    return None if d == ir.ShapedType.get_dynamic_size() else d


def device_fence(kind: str) -> None:
    """A device-scope acquire-release fence on global memory: what one workgroup wrote
    before it is visible to another that synchronizes with it through an atomic (the gpu
    dialect has none: ``fence.acq_rel.gpu`` on NVVM, ``OpMemoryBarrier Device
    AcquireRelease|UniformMemory`` on SPIR-V, GLSL's ``memoryBarrierBuffer()``)."""
    if kind == "cuda":
        llvm.FenceOp(llvm.AtomicOrdering.acq_rel, syncscope="device")
    else:
        spirv.MemoryBarrierOp(ir.Attribute.parse("#spirv.scope<Device>"),
                              ir.Attribute.parse("#spirv.memory_semantics<AcquireRelease|UniformMemory>"))


def _row_indices(row: ir.Value, G: int, KV: int) -> tuple:
    """(s, g, kv, h) of query row ``row`` = (s * G + g) * KV + kv; h = g * KV + kv."""
    kv_n, g_n = index(KV), index(G)
    kv = arith.RemUIOp(row, kv_n).result
    rest = arith.DivUIOp(row, kv_n).result
    g = arith.RemUIOp(rest, g_n).result
    s = arith.DivUIOp(rest, g_n).result
    return s, g, kv, arith.AddIOp(arith.MulIOp(g, index(KV)).result, kv).result


def build(fn: ir.Operation, m: _Bufs, subgroup: int, splits: int, chunk: int = 0, workgroups: int = 0,
          launches: int = 1, kind: str = "vulkan") -> None:
    """Replace the kernel's body ops by the launches: a workgroup of ``splits`` subgroups
    per query row (s, g, kv); D a multiple of ``subgroup``. With ``chunk`` > 0 and a KV
    length above it (decided at run time), flash-decoding's split across workgroups
    instead: a workgroup per (row, chunk of keys) writing its (max, sum, accumulators) to
    a workspace, then a second launch (a subgroup per row) combining them. The chunk is
    ``chunk`` keys, or with ``workgroups`` > 0 (the device's multiprocessors times the
    workgroups each should get) sized at run time so that all rows together make about
    ``workgroups`` workgroups: ``max(ceil(t / ceil(workgroups / rows)), chunk)`` keys
    (``chunk`` the least; many rows or a short cache split less).

    ``launches`` = 1 and a kernel that reads the counters (``m.counters``, at most
    :data:`COUNTERS` of them needed at run time: rows x live lanes): the split is ONE launch.
    Each live lane of a workgroup's first subgroup stores its elements of the partial result
    and its own copy of (max, sum), fences them (device scope: :func:`device_fence`) and adds
    1 to its own counter of the row (``memref.atomic_rmw``); the lane that finds ``parts - 1``
    there arrived last for its elements: it fences again (acquire), combines them over the
    row's chunks, writes them and stores 0 into the counter for the next launch (the
    threadfence-reduction pattern, per lane: no barrier, no broadcast). ``launches`` = 2:
    the combining launch."""
    _, KV, D = ir.MemRefType(m.k.type).shape
    qt = ir.MemRefType(m.q.type)
    G = qt.shape[1] if qt.rank == 5 else qt.shape[1] // KV
    S, W = subgroup, splits
    per = max(D // S, 1)
    idle = D < S           # lanes past D hold nothing (their q and v read as 0)
    i32t = ir.IntegerType.get_signless(32)
    contract = ir.Attribute.parse(CONTRACT)
    slot = D + 2           # the subgroups' partial results in workgroup memory: max, sum, D accumulators
    lanes_live = min(S, D)   # lanes holding elements of the row (the fused split: a counter each)
    last = m.ops[-1]   # every buffer is defined before the division

    def lanes(launch: Launch):
        tid = launch.thread_id[0]
        lane = arith.RemUIOp(tid, index(S)).result
        sg = arith.DivUIOp(tid, index(S)).result
        ds = [arith.AddIOp(lane, index(i * S)).result for i in range(per)]
        live = arith.CmpIOp(arith.CmpIPredicate.ult, lane, index(D)).result if idle else None
        if idle:
            ds = [arith.MinUIOp(ds[0], index(D - 1)).result]
        return lane, sg, ds, live

    def at_out(s, h, g, kv, d: ir.Value) -> list:
        if ir.MemRefType(m.out.type).rank == 4:
            return [s, g, kv, d]
        return [s, arith.AddIOp(arith.MulIOp(h, index(D)).result, d).result]

    def final(s, g, kv, h, ds, live):
        """The emit of a whole row: the output, accumulators over the sum."""
        def emit(mx, l, acc):
            def out():
                for a, d in zip(acc, ds):
                    store(arith.DivFOp(a, l).result, m.out, at_out(s, h, g, kv, d))
            out() if not idle else when(live, out)
        return emit

    def row_launch(grid_items: ir.Value, key_range, emitter) -> None:
        """A launch of ``W`` subgroups per item: keys ``key_range(item)`` = (row, lo, hi),
        online softmax per subgroup, the subgroups met in workgroup memory, then
        ``emitter(item, s, g, kv, h, ds, lane, live)(max, sum, accumulators)`` (by the first
        subgroup)."""
        grid = arith.MinUIOp(grid_items, index(MAX_GRID)).result
        launch = Launch((grid, index(1), index(1)), (S * W, 1, 1), [W * slot] if W > 1 else [])
        with launch:
            lane, sg, ds, live = lanes(launch)
            width = arith.ConstantOp(i32t, S).result

            def only_live(v: ir.Value) -> ir.Value:
                return arith.SelectOp(live, v, f32(0.0)).result if idle else v

            def item_body(item: ir.Value, _: list) -> list:
                row, lo, hi = key_range(item)
                s, g, kv, h = _row_indices(row, G, KV)
                qs = [only_live(load(m.q, [s, g, index(0), kv, d] if qt.rank == 5 else [s, h, d])) for d in ds]
                loop4 = {0: s, 1: g, 3: kv}
                emit = emitter(item, s, g, kv, h, ds, lane, live)

                def key(j: ir.Value, c: list) -> list:
                    dims = {**loop4, 2: j}
                    bias = load(m.mask, [dims[ir.AffineDimExpr(e).position] if isinstance(e, ir.AffineDimExpr)
                                         else index(0) for e in m.mask_map.results])
                    if not SKIP_MASKED_KEYS:
                        return visit(j, c, bias)
                    mrun = c[0]
                    # a key masked by the lowest f32 after a visible one adds exp(lowest - max) = 0
                    # and rescales by 1: skipped (uniform: every lane holds the same bias and max)
                    skip = arith.AndIOp(arith.CmpFOp(arith.CmpFPredicate.OEQ, bias, f32(_LOWEST)).result,
                                        arith.CmpFOp(arith.CmpFPredicate.OGT, mrun, f32(_LOWEST)).result).result
                    branch = scf.IfOp(skip, [x.type for x in c], has_else=True)
                    with ir.InsertionPoint(branch.then_block):
                        scf.YieldOp(c)
                    with ir.InsertionPoint(branch.else_block):
                        scf.YieldOp(visit(j, c, bias))
                    return list(branch.results)

                def visit(j: ir.Value, c: list, bias: ir.Value) -> list:
                    mrun, l, acc = c[0], c[1], c[2:]
                    x = f32(0.0)
                    for qd, d in zip(qs, ds):
                        x = arith.AddFOp(x, arith.MulFOp(qd, to_f32(load(m.k, [j, kv, d])), fastmath=contract).result,
                                         fastmath=contract).result
                    off = 1
                    while off < S:
                        o = arith.ConstantOp(i32t, off).result
                        x = arith.AddFOp(x, gpu.ShuffleOp(x, o, width, gpu.ShuffleMode.XOR).results[0]).result
                        off *= 2
                    x = arith.AddFOp(x, bias).result
                    mnew = arith.MaximumFOp(mrun, x).result
                    alpha = mmath.ExpOp(arith.SubFOp(mrun, mnew).result).result
                    p = mmath.ExpOp(arith.SubFOp(x, mnew).result).result
                    l = arith.AddFOp(arith.MulFOp(l, alpha).result, p).result
                    acc = [arith.AddFOp(arith.MulFOp(a, alpha).result,
                                        arith.MulFOp(p, to_f32(load(m.v, [j, kv, d]))).result).result
                           for a, d in zip(acc, ds)]
                    return [mnew, l, *acc]

                init = [f32(_LOWEST), f32(0.0)] + [f32(0.0)] * per
                res = for_loop(arith.AddIOp(lo, sg).result, hi, index(W), init, key)
                if W == 1:
                    emit(res[0], res[1], res[2:])
                    return []
                buf = launch.shared[0]
                base = arith.MulIOp(sg, index(slot)).result
                head = arith.CmpIOp(arith.CmpIPredicate.eq, lane, index(0)).result

                def put_ml():
                    store(res[0], buf, [base])
                    store(res[1], buf, [arith.AddIOp(base, index(1)).result])
                when(head, put_ml)

                def put_acc():
                    for a, d in zip(res[2:], ds):
                        store(a, buf, [arith.AddIOp(base, arith.AddIOp(d, index(2)).result).result])
                put_acc() if not idle else when(live, put_acc)
                barrier()

                def combine():
                    ms = [load(buf, [index(w * slot)]) for w in range(W)]
                    big = ms[0]
                    for x in ms[1:]:
                        big = arith.MaximumFOp(big, x).result
                    scale = [mmath.ExpOp(arith.SubFOp(x, big).result).result for x in ms]
                    den = f32(0.0)
                    for w in range(W):
                        den = arith.AddFOp(den, arith.MulFOp(load(buf, [index(w * slot + 1)]), scale[w]).result).result
                    nums = []
                    for d in ds:
                        num = f32(0.0)
                        for w in range(W):
                            a = load(buf, [arith.AddIOp(d, index(w * slot + 2)).result])
                            num = arith.AddFOp(num, arith.MulFOp(a, scale[w]).result).result
                        nums.append(num)
                    emit(big, den, nums)
                first_sg = arith.CmpIOp(arith.CmpIPredicate.eq, sg, index(0)).result
                when(arith.AndIOp(first_sg, live).result if idle else first_sg, combine)
                barrier()   # the next item reuses the workgroup memory
                return []

            for_loop(launch.block_id[0], grid_items, launch.grid_dim[0], [], item_body)

    def split(rows: ir.Value, t_n: ir.Value, parts: ir.Value, chunk_n: ir.Value, fused: bool) -> None:
        """Flash-decoding: ``parts`` workgroups per row, each over ``chunk_n`` keys, their
        (max, sum, accumulators) in a workspace; combined by the last workgroup of the row
        to finish, per lane (``fused``), or by a second launch, a subgroup per row."""
        items = arith.MulIOp(rows, parts).result
        # a partial result: D accumulators, then the max and the sum (once, by lane 0; fused:
        # one copy per live lane, each lane synchronizing through its own counter)
        copies = lanes_live if fused else 1
        width = D + 2 * copies
        ws = memref.AllocOp(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.F32Type.get()),
                            [arith.MulIOp(items, index(width)).result], []).result

        def ws_base(row, c):
            """The partial result of chunk ``c`` of ``row`` (row-major by row, then chunk)."""
            return arith.MulIOp(arith.AddIOp(arith.MulIOp(row, parts).result, c).result, index(width)).result

        def m_slot(base, lane):
            # fused: the live lanes' maxima at base + D + lane, their sums after them
            return arith.AddIOp(base, arith.AddIOp(lane, index(D)).result).result if fused else \
                arith.AddIOp(base, index(D)).result

        def l_slot(base, lane):
            return arith.AddIOp(base, arith.AddIOp(lane, index(D + copies)).result).result if fused else \
                arith.AddIOp(base, index(D + 1)).result

        # item c * rows + row: neighbouring workgroups read the same chunk of K and V (the G
        # query rows of a KV head share it); its partial result at row * parts + c
        def key_range(item):
            c = arith.DivUIOp(item, rows).result
            lo = arith.MulIOp(c, chunk_n).result
            return (_head_major(arith.RemUIOp(item, rows).result), lo,
                    arith.MinUIOp(arith.AddIOp(lo, chunk_n).result, t_n).result)

        def combine_row(row: ir.Value, s, g, kv, h, ds, lane, live) -> None:
            """The row's ``parts`` partial results combined (online rescaling) by one
            subgroup (fused: by each lane for its own elements), the output written."""
            def part(c: ir.Value, run: list) -> list:
                mrun, l, acc = run[0], run[1], run[2:]
                base = ws_base(row, c)
                mc = load(ws, [m_slot(base, lane)])
                mnew = arith.MaximumFOp(mrun, mc).result
                a = mmath.ExpOp(arith.SubFOp(mrun, mnew).result).result
                b = mmath.ExpOp(arith.SubFOp(mc, mnew).result).result
                l = arith.AddFOp(arith.MulFOp(l, a).result,
                                 arith.MulFOp(load(ws, [l_slot(base, lane)]), b).result).result
                acc = [arith.AddFOp(arith.MulFOp(x, a).result,
                                    arith.MulFOp(load(ws, [arith.AddIOp(base, d).result]), b).result).result
                       for x, d in zip(acc, ds)]
                return [mnew, l, *acc]
            res = for_loop(index(0), parts, index(1), [f32(_LOWEST), f32(0.0)] + [f32(0.0)] * per, part)
            final(s, g, kv, h, ds, live)(res[0], res[1], res[2:])

        def partial(item, s, g, kv, h, ds, lane, live):
            row = arith.AddIOp(arith.MulIOp(arith.AddIOp(arith.MulIOp(s, index(G)).result, g).result,
                                            index(KV)).result, kv).result
            base = ws_base(row, arith.DivUIOp(item, rows).result)

            def emit(mx, l, acc):
                def put_acc():
                    for a, d in zip(acc, ds):
                        store(a, ws, [arith.AddIOp(base, d).result])
                    if fused:
                        store(mx, ws, [m_slot(base, lane)])
                        store(l, ws, [l_slot(base, lane)])
                        arrive(row, s, g, kv, h, ds, lane, live)
                if not fused:
                    def put_ml():
                        store(mx, ws, [m_slot(base, lane)])
                        store(l, ws, [l_slot(base, lane)])
                    when(arith.CmpIOp(arith.CmpIPredicate.eq, lane, index(0)).result, put_ml)
                put_acc() if not idle else when(live, put_acc)
            return emit

        def arrive(row, s, g, kv, h, ds, lane, live) -> None:
            """A lane's partial result is stored: count its arrival on the row's counter of
            this lane; the lane that arrives last combines its elements of the row and
            resets the counter (no barrier, no broadcast: each lane synchronizes alone)."""
            device_fence(kind)     # release: this lane's stores to the workspace
            at = arith.AddIOp(arith.MulIOp(row, index(lanes_live)).result, lane).result
            one = arith.ConstantOp(i32t, 1).result
            old = memref.AtomicRMWOp(arith.AtomicRMWKind.addi, one, m.counters, [at]).result
            need = arith.IndexCastOp(i32t, arith.SubIOp(parts, index(1)).result).result

            def combine():
                device_fence(kind)     # acquire: the other workgroups' stores of this lane
                combine_row(row, s, g, kv, h, ds, lane, live)
                store(arith.ConstantOp(i32t, 0).result, m.counters, [at])   # zero for the next launch
            when(arith.CmpIOp(arith.CmpIPredicate.eq, old, need).result, combine)

        row_launch(items, key_range, partial)
        if not fused:
            launch = Launch((arith.MinUIOp(rows, index(MAX_GRID)).result, index(1), index(1)), (S, 1, 1), [])
            with launch:
                lane, _, ds, live = lanes(launch)

                def row_body(row: ir.Value, _: list) -> list:
                    s, g, kv, h = _row_indices(row, G, KV)
                    combine_row(row, s, g, kv, h, ds, lane, live)
                    return []

                for_loop(launch.block_id[0], rows, launch.grid_dim[0], [], row_body)
        memref.DeallocOp(ws)

    def _head_major(item: ir.Value) -> ir.Value:
        """The row of workgroup item ``item`` when the G query rows of a KV head are
        neighbours (g fastest): they read the same K and V rows."""
        g = arith.RemUIOp(item, index(G)).result
        rest = arith.DivUIOp(item, index(G)).result
        kv = arith.RemUIOp(rest, index(KV)).result
        s = arith.DivUIOp(rest, index(KV)).result
        return arith.AddIOp(arith.MulIOp(arith.AddIOp(arith.MulIOp(s, index(G)).result, g).result,
                                         index(KV)).result, kv).result

    with ir.InsertionPoint(last), last.location:
        s_n, g_n, kv_n = memref.DimOp(m.q, index(0)).result, index(G), index(KV)
        t_n = memref.DimOp(m.k, index(0)).result
        rows = arith.MulIOp(arith.MulIOp(s_n, g_n).result, kv_n).result

        def whole():
            row_launch(rows, lambda item: (_head_major(item), index(0), t_n),
                       lambda item, s, g, kv, h, ds, lane, live: final(s, g, kv, h, ds, live))

        if not chunk:
            whole()
        else:
            chunk_n = index(chunk)
            if workgroups:   # per row ceil(workgroups / rows) chunks of at least `chunk` keys
                r1 = arith.MaxUIOp(rows, index(1)).result     # (host code: no division by 0 rows)
                per_row = arith.DivUIOp(arith.AddIOp(index(workgroups - 1), r1).result, r1).result
                even = arith.DivUIOp(arith.AddIOp(t_n, arith.SubIOp(per_row, index(1)).result).result, per_row).result
                chunk_n = arith.MaxUIOp(even, chunk_n).result
            parts = arith.DivUIOp(arith.AddIOp(t_n, arith.SubIOp(chunk_n, index(1)).result).result, chunk_n).result
            short = arith.CmpIOp(arith.CmpIPredicate.ule, parts, index(1)).result
            branch = scf.IfOp(short, [], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                whole()
                scf.YieldOp([])
            with ir.InsertionPoint(branch.else_block):
                if launches == 1 and m.counters is not None:   # one launch while the counters suffice
                    fits = arith.CmpIOp(arith.CmpIPredicate.ule, arith.MulIOp(rows, index(lanes_live)).result,
                                        index(COUNTERS)).result
                    inner = scf.IfOp(fits, [], has_else=True)
                    with ir.InsertionPoint(inner.then_block):
                        split(rows, t_n, parts, chunk_n, True)
                        scf.YieldOp([])
                    with ir.InsertionPoint(inner.else_block):
                        split(rows, t_n, parts, chunk_n, False)
                        scf.YieldOp([])
                else:
                    split(rows, t_n, parts, chunk_n, False)
                scf.YieldOp([])
    for o in reversed(m.ops):
        o.erase()
