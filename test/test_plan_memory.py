"""relax-plan-memory end to end: the transformer block gives the numpy answer with memory
planning on and off (one executable, several sequence lengths), with the static arena
(upper bounds) and with symbolic storages (bounds removed); beyond the bound is a
ShapeError, and the executable keeps working afterwards."""

from __future__ import annotations

import numpy as np
import pytest

import relax_mlir
from relax_mlir.frontend.models import BlockConfig, block_module, block_params, block_reference
from relax_mlir.pipelines import cpu
from relax_mlir.transforms.pipeline import run_pipeline

CFG = BlockConfig(d_model=32, heads=2, d_ffn=64, max_seq=48)
SEQS = (1, 5, 17, 48)


def _module(bounds: bool):
    ctx = relax_mlir.make_context()
    m = block_module(ctx, CFG)
    if not bounds:
        for op in m.body.operations:
            if "relax.upper_bounds" in op.attributes:
                del op.attributes["relax.upper_bounds"]
    return m


@pytest.fixture(scope="module", params=[("on", True), ("on", False), ("off", True)],
                ids=["plan-arena", "plan-symbolic", "no-plan"])
def exe(request):
    mode, bounds = request.param
    return relax_mlir.compile(_module(bounds), options={"plan_memory": mode == "on"}), mode, bounds


def test_block_numerics(exe):
    ex, _, _ = exe
    rng = np.random.default_rng(1)
    params = block_params(CFG, rng)
    for s in SEQS:
        x = rng.standard_normal((s, CFG.d_model)).astype(np.float32)
        np.testing.assert_allclose(ex(x, *params), block_reference(x, *params, cfg=CFG), rtol=2e-4, atol=2e-5)


def test_beyond_upper_bound(exe):
    ex, mode, bounds = exe
    rng = np.random.default_rng(2)
    params = block_params(CFG, rng)
    big = rng.standard_normal((CFG.max_seq + 1, CFG.d_model)).astype(np.float32)
    if mode == "on" and bounds:
        with pytest.raises(relax_mlir.ShapeError, match=r"s <= 48"):
            ex(big, *params)
    else:  # no arena sized at the bound: any length works
        np.testing.assert_allclose(ex(big, *params), block_reference(big, *params, cfg=CFG), rtol=2e-4, atol=2e-5)
    x = rng.standard_normal((9, CFG.d_model)).astype(np.float32)
    np.testing.assert_allclose(ex(x, *params), block_reference(x, *params, cfg=CFG), rtol=2e-4, atol=2e-5)


def test_plan_shape():
    """The block plans every intermediate into one arena (no per-value allocation left)."""
    from mlir import ir

    m = _module(True)
    with m.context, ir.Location.unknown():
        run_pipeline(m, "builtin.module(" + ", ".join(cpu.graph_stage(plan_memory=True)) + ")")
    text = str(m)
    main = text[text.index("func.func @main"):]
    # the arena is ONE view of the session workspace (the first argument), no module global
    assert main.count("memref.view %arg0[%c0][] : memref<?xi8> to memref<") == 1
    assert "memref.global" not in text and "memref.get_global" not in text
    # only the returned value is still allocated on the success path
    assert main.count("memref.alloc(") == 1


T = 'tensor<?xf32, #relax.shape<["n"]>>'
HUGE_BOUND = f"""
func.func @main(%x: {T}) -> {T} attributes {{relax.function, relax.upper_bounds = {{n = {{bound}} : i64}}}} {{
  %0 = "relax.exp"(%x) : ({T}) -> {T}
  %1 = "relax.negative"(%0) : ({T}) -> {T}
  %2 = "relax.exp"(%1) : ({T}) -> {T}
  return %2 : {T}
}}
"""


@pytest.mark.parametrize("bound", [2**40, 2**62])
def test_huge_upper_bound_allocates_per_call(bound):
    """n <= 2**40 sized an 8 TiB static arena, allocated at the first call (MemoryError);
    n <= 2**62 one whose byte size overflows i64 (a traceback in the planner). Above
    MAX_ARENA_BYTES (256 MiB) the values are allocated per call at their actual size."""
    src = HUGE_BOUND.replace("{bound}", str(bound))
    exe = relax_mlir.compile(src, options={"fusion": False})
    assert exe.workspace_bytes == 0
    for n in (1, 7, 1000):
        x = np.linspace(-2, 2, n, dtype=np.float32)
        np.testing.assert_allclose(exe(x), np.exp(-np.exp(x)), rtol=1e-5)


V = 'tensor<?xf32, #relax.shape<["n"]>>'
C = 'tensor<?x1xf32, #relax.shape<["n", 1]>>'
R = 'tensor<1x?xf32, #relax.shape<[1, "n"]>>'
NN = 'tensor<?x?xf32, #relax.shape<["n", "n"]>>'
TWO_SQUARES = f"""
func.func @main(%x: {V}) -> {V} attributes {{relax.function, relax.upper_bounds = {{n = 6000 : i64}}}} {{
  %c = "relax.reshape"(%x) {{shape = #relax.shape<["n", 1]>}} : ({V}) -> {C}
  %r = "relax.reshape"(%x) {{shape = #relax.shape<[1, "n"]>}} : ({V}) -> {R}
  %a = "relax.multiply"(%c, %r) : ({C}, {R}) -> {NN}
  %b = "relax.exp"(%a) : ({NN}) -> {NN}
  %sa = "relax.sum"(%a) {{axes = array<i64: 1>}} : ({NN}) -> {V}
  %sb = "relax.sum"(%b) {{axes = array<i64: 1>}} : ({NN}) -> {V}
  %o = "relax.add"(%sa, %sb) : ({V}, {V}) -> {V}
  return %o : {V}
}}
"""


def test_value_evicted_from_the_arena_is_at_offset_zero_of_its_storage():
    """Two (n, n) f32 values live together, n <= 6000: 144 MB each at the bound, so the arena
    (capped at 256 MiB) keeps one and the other leaves it for a per-call storage. The
    evicted one kept the arena offset the first plan had given it, and was written that far
    into its (n*n*4-byte) storage: a segfault (all-MiniLM-L6-v2 at its default bounds)."""
    exe = relax_mlir.compile(TWO_SQUARES, options={"fusion": False})
    assert 0 < exe.workspace_bytes <= 256 << 20
    for n in (1, 7, 300):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        a = np.outer(x, x)
        np.testing.assert_allclose(exe(x), a.sum(1) + np.exp(a).sum(1), rtol=1e-5)
