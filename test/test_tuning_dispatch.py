"""The tuner decides dispatch (issue 12, item 5): ``relax-mlir tune`` times the library
call of each matmul (+ bias) match against its best tuned kernel and records the winner
per size (the database's ``decisions``); ``relax-dispatch-library{tuning-db}`` /
``compile(..., tuning_db=...)`` follows it, per call where the winners alternate (the
run-time split). Records are written directly where an outcome must be forced; numerics
against numpy at sizes 1, odd and large through one executable."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import relax_mlir
from relax_mlir.backends.cpu.schedules.target import host_target
from relax_mlir.backends.cpu.apply_schedules import num_threads
from relax_mlir.tuning.database import (GENERATED, LIBRARY, SCHEMA_VERSION, Database, Decision,
                                        target_key)
from relax_mlir.tuning.search import tune
from relax_mlir.tuning.tasks import extract_tasks

#: x (n, 64) -> 128 (bias, relu) -> 64 (bias), n <= 512: two matmul + bias matches.
MLP = """
func.func @main(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w1: tensor<64x128xf32>, %b1: tensor<128xf32>,
                %w2: tensor<128x64xf32>, %b2: tensor<64xf32>)
    -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function, relax.upper_bounds = {n = 512 : i64}} {
  %0 = "relax.matmul"(%x, %w1) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %1 = "relax.add"(%0, %b1) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %2 = "relax.relu"(%1) : (tensor<?x128xf32, #relax.shape<["n", 128]>>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %3 = "relax.matmul"(%2, %w2) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.add"(%3, %b2) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %4 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
"""
KEYS = ["blas_matmul_bias(f32[s0,64], f32[64,128], f32[128]) -> f32[s0,128]",
        "blas_matmul_bias(f32[s0,128], f32[128,64], f32[64]) -> f32[s0,64]"]
SIZES = [1, 16, 128, 512]
CALLEE = "relax_blas_matmul_bias_22_f32"


def params(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in ((64, 128), (128,), (128, 64), (64,))]


def reference(x, w1, b1, w2, b2):
    f = np.float64
    return np.maximum(x.astype(f) @ w1.astype(f) + b1, 0) @ w2.astype(f) + b2


def check_numerics(exe, ns=(1, 7, 45, 46, 200, 512)):
    ps = params()
    rng = np.random.default_rng(1)
    for n in ns:
        x = rng.standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_allclose(exe(x, *ps), reference(x, *ps), rtol=1e-4, atol=1e-4, err_msg=f"n = {n}")


def record(db: str, winners: dict) -> None:
    """Decisions for the MLP's two matches: ``winners[i]``: 'l' / 'g' per size."""
    key = target_key(host_target(), num_threads())
    with Database(db) as d:
        for i, w in winners.items():
            d.record_decision(KEYS[i], key, "le512", CALLEE, SIZES, SIZES,
                              [1e-3 if c == "l" else 2e-3 for c in w], [1e-3 if c == "g" else 2e-3 for c in w], "")


def graph_ir(tmp_path, db: str) -> tuple[object, str, str]:
    """Compile the MLP with ``db``: (the executable, the graph stage's IR, the codegen stage's)."""
    dump = tmp_path / "ir"
    exe = relax_mlir.compile(MLP, options=relax_mlir.CompileOptions(tuning_db=db, dump_ir=str(dump)))
    return exe, (dump / "01-graph.mlir").read_text(), (dump / "03-codegen.mlir").read_text()


def calls(text: str) -> list[str]:
    """The main function's calls, in order: ``library <callee>`` / ``kernel <callee>``."""
    out = []
    for line in text.splitlines():
        if '"relax.call_dps_library"' in line:
            out.append("library " + line.split('callee = "')[1].split('"')[0])
        elif '"relax.call_tir"' in line:
            out.append("kernel " + line.split("callee = @")[1].split(",")[0].split("}")[0])
    return out


# -- the tuner ------------------------------------------------------------------------------

def test_tasks_carry_the_dispatch_match():
    """With dispatch on, the matches stay generated kernels (hashed as without the mark)
    and carry the library call; dispatch=false: no matches, the same kernels."""
    on = extract_tasks(MLP, host_target())
    off = extract_tasks(MLP, host_target(), {"dispatch": False})
    assert [t.name for t in on] == [t.name for t in off] == ["fused_matmul_add_relu", "fused_matmul_add"]
    assert [t.key for t in on] == [t.key for t in off]
    assert [t.dispatch["key"] for t in on] == KEYS and [t.dispatch for t in off] == [None, None]
    t = on[0]
    assert (t.dispatch["callee"], t.dispatch["library"], t.dispatch["m"]) == (CALLEE, "relax_blas", "n")
    assert [a["shape"] for a in t.dispatch["args"]] == [["n", 64], [64, 128], [128], ["n", 128]]
    assert t.sizes == SIZES and t.ms() == SIZES


def test_tune_records_decisions_and_the_cli_shows_them(tmp_path, capsys):
    db = str(tmp_path / "tune.db")
    lines = []
    results = tune(MLP, db, budget_s=60, max_trials=1, log=lines.append, min_time=0.002)
    assert [r.task.name for r in results] == ["fused_matmul_add_relu", "fused_matmul_add"]
    with Database(db) as d:
        decisions = d.decisions()
        assert len(d.records()) == 2
    assert [x.kernel for x in decisions] == KEYS
    for r, x in zip(results, decisions):
        assert r.decision == x
        assert (x.target, x.bucket, x.callee, x.sizes, x.ms) == (target_key(host_target(), num_threads()), "le512",
                                                                 CALLEE, SIZES, SIZES)
        assert x.generated_kernel == r.task.key
        assert x.generated_s == pytest.approx((r.best or r.default).times) and x.library_s == r.library
        assert x.winners == [LIBRARY if lib < gen else GENERATED for lib, gen in zip(x.library_s, x.generated_s)]
    assert sum(1 for ln in lines if f"library {CALLEE}: " in ln) == 2

    # the command prints them, one row per kernel and size
    from relax_mlir.tools.relax_mlir_cli import main
    src = tmp_path / "mlp.mlir"
    src.write_text(MLP)
    assert main(["tune", str(src), "--db", db, "--budget", "60s", "--trials", "1", "--min-time", "0.002"]) == 0
    out = capsys.readouterr().out.splitlines()
    i = out.index("dispatch decisions (relax-dispatch-library follows them with --tuning-db):")
    assert out[i + 1].split() == ["kernel", "bucket", "n", "M", "library", "ms", "generated", "ms", "winner"]
    rows = [ln.split() for ln in out[i + 2:]]
    assert len(rows) == 8
    assert rows[0][:4] == ["fused_matmul_add_relu", "le512", "1", "1"] and [r[0] for r in rows[1:4]] == ["16", "128", "512"]
    assert rows[4][:4] == ["fused_matmul_add", "le512", "1", "1"]
    with Database(db) as d:
        assert [r[-1] for r in rows] == [w for x in d.decisions() for w in x.winners]

    # and the compile follows what was recorded (whatever it is on this machine)
    exe, graph, _ = graph_ir(tmp_path, db)
    with Database(db) as d:
        lib = [set(x.winners) == {LIBRARY} for x in d.decisions()]
    expect = ([f"library {CALLEE}", "kernel relax_relu_f32_Dx128"] if lib[0] else ["kernel fused_matmul_add_relu"]) \
        + [f"library {CALLEE}" if lib[1] else "kernel fused_matmul_add"]
    assert calls(graph.split("func.func @main")[1].split("func.func")[0]) == expect
    check_numerics(exe, (1, 33, 512))


# -- the compile follows the database --------------------------------------------------------

@pytest.mark.parametrize("winners,expect", [
    ({0: "llll", 1: "gggg"}, [f"library {CALLEE}", "kernel relax_relu_f32_Dx128", "kernel fused_matmul_add"]),
    ({0: "gggg", 1: "llll"}, ["kernel fused_matmul_add_relu", f"library {CALLEE}"]),
])
def test_compile_follows_recorded_decisions(tmp_path, winners, expect):
    db = str(tmp_path / "tune.db")
    record(db, winners)
    exe, graph, codegen = graph_ir(tmp_path, db)
    assert calls(graph.split("func.func @main")[1].split("func.func")[0]) == expect
    assert "relax.dispatch_split" not in graph
    # the library is linked, and the generated kernel scheduled
    assert "_mlir_ciface_relax_blas_matmul_bias_22_f32" in codegen
    check_numerics(exe)


def test_alternating_winners_split_per_call(tmp_path):
    """Generated at n = 1, 16 and library at 128, 512 for layer 1 (generated for M <= 45);
    the reverse for layer 2: each kernel is split at run time, one executable for every n."""
    db = str(tmp_path / "tune.db")
    record(db, {0: "ggll", 1: "llgg"})
    exe, graph, codegen = graph_ir(tmp_path, db)
    assert calls(graph.split("func.func @main")[1].split("func.func")[0]) == [
        "kernel fused_matmul_add_relu", "kernel fused_matmul_add"]
    assert 'relax.dispatch_split = {bias_callee = "relax_blas_matmul_bias_22_f32", ' \
           'callee = "relax_blas_matmul_22_f32", generated_m = [[1, 45]]' in graph
    assert 'generated_m = [[46, 512]]' in graph
    # both kernels have a library variant calling the shim's bias entry
    assert codegen.count("__lib(") >= 2 and "_mlir_ciface_relax_blas_matmul_bias_22_f32" in codegen
    check_numerics(exe, (1, 7, 45, 46, 127, 200, 512))


def test_no_record_falls_back_to_the_policy(tmp_path):
    """A record for another bucket or another target does not apply: the min-flops policy
    (both matches dispatched), and the notes say so."""
    from mlir import ir
    from relax_mlir.transforms.pipeline import run_pipeline

    db = str(tmp_path / "tune.db")
    key = target_key(host_target(), num_threads())
    with Database(db) as d:
        d.record_decision(KEYS[0], key, "le600", CALLEE, SIZES, SIZES, [2e-3] * 4, [1e-3] * 4, "")
        d.record_decision(KEYS[1], key + "x", "le512", CALLEE, SIZES, SIZES, [2e-3] * 4, [1e-3] * 4, "")
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = relax_mlir.parse(MLP, ctx)
        run_pipeline(m, f"builtin.module(relax-infer-shapes, relax-dispatch-library{{tuning-db={db}}})")
        text = str(m)
    assert text.count('"relax.call_dps_library"') == 2
    assert text.count('relax.dispatch_note = "tuning db (le512): no decision for this match: the min-flops policy"') == 2


def test_decision_ranges():
    d = Decision("k", "t", "le512", CALLEE, SIZES, SIZES, [0.0] * 4, [0.0] * 4,
                 [GENERATED, LIBRARY, GENERATED, GENERATED], "", 0.0)
    assert d.generated_ranges() == [(1, 4), (46, (1 << 31) - 1)]
    assert d.generated_ranges(512) == [(1, 4), (46, 512)]
    assert d.generated_ranges(30) == [(1, 4)]
    d = Decision("k", "t", "le512", CALLEE, SIZES, [2, 32, 256, 1024], [0.0] * 4, [0.0] * 4,
                 [LIBRARY, GENERATED, GENERATED, LIBRARY], "", 0.0)
    assert d.generated_ranges(1024) == [(9, 512)]


def test_version_1_database_is_migrated(tmp_path):
    """A file written before the decisions table: opened, it gains the table and keeps its
    records."""
    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE records (kernel TEXT NOT NULL, target TEXT NOT NULL, bucket TEXT NOT NULL, "
                 "schedule TEXT NOT NULL, config TEXT NOT NULL, time_s REAL NOT NULL, default_s REAL NOT NULL, "
                 "sizes TEXT NOT NULL, trials INTEGER NOT NULL, timestamp REAL NOT NULL, "
                 "PRIMARY KEY (kernel, target, bucket))")
    conn.execute("INSERT INTO records VALUES ('k', 't', 'le512', 'matmul', '{\"rows\": 4}', 1.0, 2.0, '[1]', 3, 0.0)")
    conn.commit()
    conn.close()
    with Database(path) as d:
        assert d.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        [r] = d.records()
        assert (r.kernel, r.config, r.trials) == ("k", {"rows": 4}, 3)
        assert d.decisions() == [] and d.decision("k", "t", "le512") is None
        x = d.record_decision("k", "t", "le512", CALLEE, [1, 16], [1, 16], [1.0, 1.0], [2.0, None], "h")
        assert x.winners == [LIBRARY, LIBRARY] and d.decision("k", "t", "le512") == x
