"""Tuning (relax_mlir.tuning): the knob spaces, the database, a bounded search on a small
matmul whose best config a compile with ``tuning_db`` then applies (exact knob values),
candidates that crash or compute wrong results, and the ``relax-mlir tune`` command.
Numerics of tuned kernels are compared with numpy at sizes 1, odd and large through one
compiled executable."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

import relax_mlir
from relax_mlir.backends.cpu.schedules.target import TARGETS, host_target
from relax_mlir.tuning import space as sp
from relax_mlir.tuning.database import (FEATURES, Database, module_bucket, representative_sizes, size_bucket,
                                        target_key)
from relax_mlir.tuning.search import tune, tune_task
from relax_mlir.tuning.tasks import extract_tasks
from relax_mlir.tuning.worker import Worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: x: (n, 64) @ w: (64, 128) + relu, n <= 600: one fused matmul+elementwise kernel.
SMALL = """
func.func @main(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64x128xf32>)
    -> tensor<?x128xf32, #relax.shape<["n", 128]>> attributes {relax.function, relax.upper_bounds = {n = 600 : i64}} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %1 = "relax.relu"(%0) : (tensor<?x128xf32, #relax.shape<["n", 128]>>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  return %1 : tensor<?x128xf32, #relax.shape<["n", 128]>>
}
"""
OPTIONS = {"dispatch": False}
#: A config no default uses (rows 4, narrower tiles, a 32-deep K block, 2-row small-M tiles).
CONFIG = {"rows": 4, "cols": 32, "gemv_cols": 128, "panel_n": 64, "block_k": 32, "pack_block_k": 256, "small_rows": 2,
          "prefetch": 8}


def reference(x, w):
    return np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0)


# -- knob spaces ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TARGETS))
def test_default_configs_are_points_of_their_spaces(name):
    t = TARGETS[name]
    for fam, default in (("matmul", sp.matmul_default(t)), ("elementwise", sp.elementwise_default(t, None)),
                         ("rows", sp.rows_default(t, None))):
        space = sp.SPACES[fam](t)
        space.check(default)
        for k in space.knobs:
            assert default[k.name] in k.values
        cfg = space.sample(random.Random(1))
        space.check(cfg)
        for n in space.neighbors(default):
            space.check(n)
            assert sum(n[k] != default[k] for k in n) == 1


def test_space_sizes_and_rules():
    t = TARGETS["avx512"]
    m = sp.matmul_space(t)
    assert [k.name for k in m.knobs] == ["rows", "cols", "gemv_cols", "panel_n", "block_k", "pack_block_k",
                                        "small_rows", "prefetch"]
    assert m.size() == 7 * 3 * 3 * 7 * 5 * 4 * 6 * 5
    assert sp.matmul_default(t) == {"rows": 6, "cols": 64, "gemv_cols": 256, "panel_n": 256, "block_k": 128,
                                    "pack_block_k": 512, "small_rows": 4, "prefetch": 4}
    assert sp.matmul_default(TARGETS["avx2"]) == {"rows": 6, "cols": 16, "gemv_cols": 32, "panel_n": 256,
                                                   "block_k": 128, "pack_block_k": 512, "small_rows": 4, "prefetch": 4}
    with pytest.raises(ValueError, match="8 x 4 accumulators \\+ 4 B vectors \\+ 1 broadcast exceed 32 registers"):
        m.check(dict(sp.matmul_default(t), rows=8))
    with pytest.raises(ValueError, match="8 x 4 accumulators of the small-M tile"):
        m.check(dict(sp.matmul_default(t), small_rows=8))
    with pytest.raises(ValueError, match="panel_n must be a multiple of cols"):
        m.check(dict(sp.matmul_default(t), panel_n=384))
    with pytest.raises(ValueError, match="exactly the knobs"):
        m.check({"rows": 6})
    e = sp.elementwise_space(t)
    assert [k.values for k in e.knobs] == [(16, 32, 64, 128, 256)]
    assert e.valid({"width": 128}, inner=None) and not e.valid({"width": 128}, inner=100)
    r = sp.rows_space(t)
    assert r.valid({"chunk": 32}, row=1024) and not r.valid({"chunk": 64}, row=80)
    assert sp.rows_default(t, 100) is None and sp.rows_default(t, 80) == {"chunk": 16}
    assert sp.family("batch_matmul+elementwise") == "matmul"


def test_select_rejects_an_invalid_config_before_applying():
    tasks = extract_tasks(SMALL, TARGETS["avx512"], OPTIONS)
    assert [(t.name, t.schedule, t.sizes, t.bucket) for t in tasks] == [
        ("fused_matmul_relu", "matmul+elementwise", [1, 16, 128, 512], "le600")]
    from relax_mlir.backends.cpu import schedules
    with pytest.raises(ValueError, match="exceed 32 registers"):
        schedules.select(tasks[0].fn, TARGETS["avx512"], dict(CONFIG, rows=8, cols=64))
    assert tasks[0].accepts(CONFIG, TARGETS["avx512"]) is True
    assert tasks[0].accepts(dict(CONFIG, panel_n=384, gemv_cols=256), TARGETS["avx512"]) is False
    # a record tuned before the prefetch knob existed keeps its other knobs (the default distance)
    old_record = {k: v for k, v in CONFIG.items() if k != "prefetch"}
    assert schedules.select(tasks[0].fn, TARGETS["avx512"], old_record).prefetch == 4
    assert schedules.select(tasks[0].fn, TARGETS["avx512"], CONFIG).prefetch == 8


# -- database --------------------------------------------------------------------------------

def test_database_round_trip(tmp_path):
    path = str(tmp_path / "t.db")
    with Database(path) as db:
        assert db.lookup("k1", "tgt", "le600") is None
        assert db.record("k1", "tgt", "le600", "matmul", CONFIG, 2.0e-3, 3.0e-3, [1, 16], 5) is True
        assert db.record("k1", "tgt", "le600", "matmul", dict(CONFIG, rows=5), 2.5e-3, 3.0e-3, [1, 16], 3) is False
        assert db.record("k1", "tgt", "any", "matmul", dict(CONFIG, rows=3), 1.0e-3, 3.0e-3, [1, 16], 3) is True
    with Database(path) as db:  # persisted
        r = db.lookup("k1", "tgt", "le600")
        assert (r.config, r.time_s, r.default_s, r.sizes, r.trials, r.schedule) == (CONFIG, 2.0e-3, 3.0e-3,
                                                                                     [1, 16], 5, "matmul")
        assert db.lookup("k1", "tgt", "le64").config == dict(CONFIG, rows=3)  # fallback: the 'any' bucket
        assert db.lookup("k1", "tgt", "le64", fallback=False) is None
        assert db.lookup("k1", "other", "le600") is None
        assert db.lookup("k2", "tgt", "le600") is None
        assert len(db.records()) == 2


def test_buckets_and_target_key():
    assert size_bucket(4096) == "le4096" and size_bucket(None) == "any" and size_bucket(None, False) == "static"
    assert representative_sizes(4096) == [1, 16, 128, 512]
    assert representative_sizes(100) == [1, 16, 100]
    assert representative_sizes(None) == [1, 16, 128, 512]
    from relax_mlir.frontend import models
    ctx = relax_mlir.make_context()
    assert module_bucket(models.mlp_module(ctx).operation) == "le4096"
    assert module_bucket(models.block_module(ctx).operation) == "le2048"
    assert target_key(TARGETS["avx2"], 2, host=False) == "cross/avx2/-/t2"
    machine, isa, feats, threads = target_key(host_target(), 1).split("/")
    assert (isa, threads) == (host_target().isa, "t1")
    assert set(feats.split("+")) <= set(FEATURES) | {"-"}


# -- search, database, compile -----------------------------------------------------------------

def _applied_configs(monkeypatch) -> list:
    """Spy on relax-apply-schedules: the config each kernel is scheduled with."""
    from relax_mlir.backends.cpu import apply_schedules
    seen = []
    real = apply_schedules.schedule_kernel

    def spy(fn, target=None, config=None, threaded=None):
        name = real(fn, target, config, threaded)
        seen.append((name, config))
        return name

    monkeypatch.setattr(apply_schedules, "schedule_kernel", spy)
    return seen


def _check_numerics(exe):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 128)).astype(np.float32)
    for n in (1, 7, 599):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_allclose(exe(x, w), reference(x, w), rtol=1e-4, atol=1e-4)


def test_bounded_search_records_and_compile_uses_it(tmp_path, monkeypatch):
    db = str(tmp_path / "tune.db")
    lines = []
    results = tune(SMALL, db, budget_s=60, max_trials=2, options=OPTIONS, log=lines.append, min_time=0.005)
    assert len(results) == 1
    r = results[0]
    assert r.task.name == "fused_matmul_relu" and len(r.trials) == 3  # the default's point + 2 candidates
    assert sum(1 for ln in lines if " trial " in ln) == 2
    assert r.best is not None and r.best.ok and r.recorded
    with Database(db) as d:
        [rec] = d.records()
    assert (rec.kernel, rec.bucket, rec.config, rec.sizes) == (r.task.key, "le600", r.best.config, [1, 16, 128, 512])
    assert rec.time_s == pytest.approx(sum(r.best.times))

    seen = _applied_configs(monkeypatch)
    exe = relax_mlir.compile(SMALL, options=OPTIONS, tuning_db=db)
    # relax-specialize-ranges split the kernel into its GEMV (M <= 1, M = 2-3), small-M
    # (M <= 16), tiled and packed (M >= 40) variants, all looked up as the kernel the tuner
    # measured; the dispatcher is not scheduled.
    assert seen == [("gemv+elementwise", rec.config), ("gemv+elementwise", rec.config),
                    ("matmul+elementwise", rec.config), ("matmul+elementwise", rec.config),
                    ("matmul+elementwise", rec.config), (None, None)]
    _check_numerics(exe)

    # A hand-written record: the compile applies exactly these knob values.
    with Database(db) as d:
        d.conn.execute("DELETE FROM records")
        d.record(rec.kernel, rec.target, rec.bucket, rec.schedule, CONFIG, 1e-3, 1e-3, rec.sizes, 1)
    seen.clear()
    exe = relax_mlir.compile(SMALL, options=relax_mlir.CompileOptions(pipeline_options=OPTIONS, tuning_db=db))
    assert seen == [("gemv+elementwise", CONFIG), ("gemv+elementwise", CONFIG), ("matmul+elementwise", CONFIG),
                    ("matmul+elementwise", CONFIG), ("matmul+elementwise", CONFIG), (None, None)]
    _check_numerics(exe)


def test_tuned_config_recorded_on_the_kernel(tmp_path):
    """relax-apply-schedules{tuning-db=...} records the knob values it used."""
    from mlir import ir

    from relax_mlir.pipelines.cpu import graph_stage
    from relax_mlir.transforms.pipeline import run_pipeline
    [task] = extract_tasks(SMALL, host_target(), OPTIONS)
    db = str(tmp_path / "t.db")
    from relax_mlir.backends.cpu.apply_schedules import num_threads
    with Database(db) as d:
        d.record(task.key, target_key(host_target(), num_threads()), "le600", task.schedule, CONFIG, 1, 1, [1], 1)
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = relax_mlir.parse(SMALL, ctx)
        run_pipeline(m, "builtin.module(" + ", ".join(graph_stage(dispatch=False)) + f", relax-apply-schedules{{tuning-db={db}}})")
        [k] = [f.operation for f in m.body.operations if "relax.kernel" in f.operation.attributes]
        assert str(k.attributes["relax.schedule"]) == '"matmul+elementwise"'
        assert str(k.attributes["relax.schedule_config"]) == (
            "{block_k = 32 : i64, cols = 32 : i64, gemv_cols = 128 : i64, pack_block_k = 256 : i64, panel_n = 64 : i64, "
            "prefetch = 8 : i64, rows = 4 : i64, small_rows = 2 : i64}")
        # without the database: the defaults, nothing recorded
        m2 = relax_mlir.parse(SMALL, ctx)
        run_pipeline(m2, "builtin.module(" + ", ".join(graph_stage(dispatch=False)) + ", relax-apply-schedules)")
        [k2] = [f.operation for f in m2.body.operations if "relax.kernel" in f.operation.attributes]
        assert "relax.schedule_config" not in k2.attributes


#: relu(x + y) over (n, m), softmax over (n, 96): an elementwise and a row kernel.
ROWS = """
func.func @main(%x: tensor<?x?xf32, #relax.shape<["n", "m"]>>, %y: tensor<?x?xf32, #relax.shape<["n", "m"]>>,
                %z: tensor<?x96xf32, #relax.shape<["n", 96]>>)
    -> (tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?x96xf32, #relax.shape<["n", 96]>>)
    attributes {relax.function, relax.upper_bounds = {n = 1024 : i64, m = 512 : i64}} {
  %0 = "relax.add"(%x, %y) : (tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %1 = "relax.relu"(%0) : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %2 = "relax.softmax"(%z) {axis = -1 : i64} : (tensor<?x96xf32, #relax.shape<["n", 96]>>) -> tensor<?x96xf32, #relax.shape<["n", 96]>>
  return %1, %2 : tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?x96xf32, #relax.shape<["n", 96]>>
}
"""


def test_tuned_elementwise_and_rows_numerics(tmp_path, monkeypatch):
    """Hand-recorded configs (width 128 with a peeled remainder, chunks of 32 on rows of 96)
    are applied, and the one executable matches numpy at sizes 1, odd and large."""
    from relax_mlir.backends.cpu.apply_schedules import num_threads
    tasks = extract_tasks(ROWS, host_target(), OPTIONS)
    assert sorted((t.schedule, t.bucket, t.sizes) for t in tasks) == [
        ("elementwise", "le1024", [1, 16, 128, 512]), ("rows", "le1024", [1, 16, 128, 512])]
    configs = {"elementwise": {"width": 128}, "rows": {"chunk": 32}}
    db = str(tmp_path / "t.db")
    with Database(db) as d:
        for t in tasks:
            assert t.accepts(configs[t.schedule], host_target()) is True
            d.record(t.key, target_key(host_target(), num_threads()), t.bucket, t.schedule, configs[t.schedule],
                     1, 1, t.sizes, 1)
    seen = _applied_configs(monkeypatch)
    exe = relax_mlir.compile(ROWS, options=OPTIONS, tuning_db=db)
    assert sorted(seen, key=lambda s: s[0]) == [("elementwise", {"width": 128}), ("rows", {"chunk": 32})]
    rng = np.random.default_rng(7)
    for n, m in ((1, 1), (7, 130), (1024, 509)):
        x, y = rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal((n, m)).astype(np.float32)
        z = rng.standard_normal((n, 96)).astype(np.float32)
        r, s = exe(x, y, z)
        np.testing.assert_array_equal(r, np.maximum(x + y, 0))
        e = np.exp(z.astype(np.float64) - z.max(-1, keepdims=True))
        np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)


# -- failing candidates ------------------------------------------------------------------------------

def test_crashing_candidate_is_a_failed_trial():
    [task] = extract_tasks(SMALL, host_target(), OPTIONS)

    class CrashFirst(Worker):
        """The first candidate aborts the measuring process (as MLIR's assertions do)."""
        crashed = False

        def request(self, req, timeout_s=None):
            if req["config"] is not None and not self.crashed:
                self.crashed = True
                return super().request({"op": "crash"}, timeout_s)
            return super().request(req, timeout_s)

    with CrashFirst() as w:
        r = tune_task(task, w, host_target(), budget_s=60, max_trials=2, rng=random.Random(0), log=lambda s: None,
                      min_time=0.002)
        assert w.restarts == 1
    failed = [t for t in r.trials if not t.ok]
    assert len(failed) == 1 and failed[0].error.startswith("the measuring process died")
    assert r.best.ok and r.best.config != failed[0].config


def test_wrong_result_is_rejected(monkeypatch):
    """A candidate whose output differs from the unscheduled kernel's is discarded."""
    from relax_mlir.tuning import worker
    [task] = extract_tasks(SMALL, host_target(), OPTIONS)

    class Corrupt(worker._Compiled):
        def __init__(self, text, name, config, n_args):
            super().__init__(text, name, config, n_args)
            self.corrupt = config != "loops"

        def bind(self, arrays):
            call = super().bind(arrays)

            def wrong():
                call()
                if self.corrupt:
                    arrays[-1][0, 0] += 1.0

            return wrong

    monkeypatch.setattr(worker, "_Compiled", Corrupt)
    req = task.request(CONFIG, min_time=0.001)
    req["bindings"] = req["bindings"][:2]
    res = worker.measure(req)
    assert res["ok"] is False and res["error"] == "wrong result at {'n': 1} (max abs error 1)"


def test_worker_reports_a_compile_failure():
    [task] = extract_tasks(SMALL, host_target(), OPTIONS)
    req = task.request(CONFIG)
    req["kernel"] = "func.func @broken("
    with Worker() as w:
        res = w.request(req)
        assert res["ok"] is False and res["error"].startswith("compile: ")
        assert w.request(task.request(CONFIG, min_time=0.001))["ok"] is True  # the same process goes on
        assert w.restarts == 0


# -- the command line ---------------------------------------------------------------------------------

def test_cli_tune_then_run(tmp_path):
    src = tmp_path / "small.mlir"
    src.write_text(SMALL)
    db = tmp_path / "tune.db"
    env = dict(os.environ, PYTHONPATH=ROOT)
    cli = [sys.executable, "-m", "relax_mlir.tools.relax_mlir_cli"]
    p = subprocess.run(cli + ["tune", str(src), "--db", str(db), "--budget", "60s", "--trials", "2",
                              "--option", "dispatch=false", "--min-time", "0.005"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out[0].startswith("tuning 1 kernel(s) on ") and out[0].endswith(", budget 60 s, at most 2 trials each")
    assert sum(1 for ln in out if ln.startswith("[kernel 1/1 fused_matmul_relu (matmul+elementwise)] trial ")) == 2
    assert out[-1].startswith("fused_matmul_relu                matmul+elementwise ")
    with Database(str(db)) as d:
        assert len(d.records()) == 1
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((13, 64)).astype(np.float32), rng.standard_normal((64, 128)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    p = subprocess.run(cli + ["run", str(src), "--tuning-db", str(db), "--option", "dispatch=false",
                              "-i", str(tmp_path / "x.npy"), "-i", str(tmp_path / "w.npy"),
                              "-o", str(tmp_path / "r.npy"), "--quiet"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(np.load(tmp_path / "r.npy"), reference(x, w), rtol=1e-4, atol=1e-4)
    p = subprocess.run(cli + ["tune", str(src), "--db", str(db), "--budget", "soon"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 1
    assert p.stderr.strip() == "relax-mlir tune: error: --budget expects seconds such as 60s, 2m or 90, got 'soon'"
