"""The ``contraction`` schedule on decode attention's kernels (relax_mlir/llm/model.py's
``_attend_cached``): the grouped-query scores ``sum(q * K, -1)`` and the mix
``sum(p * V, axis=kv_len)`` over a symbolic KV length ``p``. Both kernels get the
schedule, and ONE compiled executable gives numpy's answer at p = 1, odd and large."""

from __future__ import annotations

import numpy as np
import pytest

from test_schedules import compile_scheduled, f32, op, program, schedules_applied

P_SIZES = [1, 7, 64, 513]


def attention_program(G: int, KV: int, D: int) -> str:
    """q (1, G*KV, D) reshaped to (1, G, 1, KV, D) as the model does; K, V (p, KV, D)."""
    Q, Q5, K = [1, G * KV, D], [1, G, 1, KV, D], ["p", KV, D]
    M, S = [1, G, "p", KV, D], [1, G, "p", KV]
    P5, O = [1, G, "p", KV, 1], [1, G, KV, D]
    return program(
        [("q", Q), ("k", K), ("pr", S), ("v", K)],
        [op("q5", "reshape", [("q", Q)], Q5, f" {{shape = #relax.shape<[1, {G}, 1, {KV}, {D}]>}}"),
         op("m", "multiply", [("q5", Q5), ("k", K)], M),
         op("s", "sum", [("m", M)], S, " {axes = array<i64: -1>}"),
         op("e", "expand_dims", [("pr", S)], P5, " {axis = array<i64: 4>}"),
         op("mv", "multiply", [("e", P5), ("v", K)], M),
         op("o", "sum", [("mv", M)], O, " {axes = array<i64: 2>}")],
        [("s", S), ("o", O)])


@pytest.mark.parametrize("G,KV,D", [(4, 2, 64), (3, 1, 40), (1, 2, 512)])
def test_decode_attention_kernels(G, KV, D):
    """(4, 2, 64): grouped-query heads, hd = 64; (3, 1, 40): hd not a multiple of 16;
    (1, 2, 512): hd above MAX_LANES, vectorized in 64-lane chunks."""
    src = attention_program(G, KV, D)
    assert sorted(schedules_applied(src).values()) == ["contraction", "contraction"]
    exe = compile_scheduled(src)
    for p in P_SIZES:
        q, k, pr, v = f32(1, G * KV, D), f32(p, KV, D), f32(1, G, p, KV), f32(p, KV, D)
        s, o = exe(q, k, pr, v)
        q5 = q.reshape(1, G, 1, KV, D).astype(np.float64)
        ref_s = (q5 * k.astype(np.float64)).sum(-1)
        ref_o = (pr.astype(np.float64)[..., None] * v.astype(np.float64)).sum(2)
        assert s.shape == (1, G, p, KV) and o.shape == (1, G, KV, D)
        np.testing.assert_allclose(s, ref_s, rtol=1e-4, atol=1e-4 * np.sqrt(D))
        np.testing.assert_allclose(o, ref_o, rtol=1e-4, atol=1e-4 * np.sqrt(p))
