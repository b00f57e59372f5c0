"""The GPU tuner (relax_mlir.tuning.gpu): its tasks keyed as relax-gpu-schedule looks them up,
a bounded search on lavapipe (a matmul and a row kernel, 3 candidates each) whose records a
compile with ``tuning_db`` applies (the scheduled IR is the recorded knobs', the numerics
numpy's at sizes 1, odd and large through one executable), a record the rule rejects, the
``relax-mlir tune --target vulkan`` command, and the cuda host path on the fake driver
(candidates launched, nothing recorded). Configs picked on lavapipe say nothing about GPUs."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from mlir import ir

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.backends.gpu import rules  # noqa: E402
from relax_mlir.backends.gpu.launch_builder import kernels  # noqa: E402
from relax_mlir.backends.gpu.rules import CONFIG_ATTR  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402
from relax_mlir.target import GPU_DEFAULTS, Target  # noqa: E402
from relax_mlir.transforms.kernel_hash import structural_hash  # noqa: E402
from relax_mlir.tuning import gpu, tune  # noqa: E402
from relax_mlir.tuning.database import Database  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OK, DEVICE = vkrt.available()
needs_vulkan = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

#: softmax(x @ w), n <= 512: a matmul kernel and a row kernel
MODULE = """
func.func @main(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64x128xf32>)
    -> tensor<?x128xf32, #relax.shape<["n", 128]>> attributes {relax.function, relax.upper_bounds = {n = 512 : i64}} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %1 = "relax.softmax"(%0) {axis = -1 : i64} : (tensor<?x128xf32, #relax.shape<["n", 128]>>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  return %1 : tensor<?x128xf32, #relax.shape<["n", 128]>>
}
"""

#: a lavapipe-like target (no device needed to extract tasks)
LAVAPIPE = replace(Target(kind="vulkan", dispatch_policy="off", **GPU_DEFAULTS["vulkan"]), subgroup_size=8,
                   max_threads_per_block=1024, shared_memory_bytes=32768)


def reference(x, w):
    y = x.astype(np.float64) @ w.astype(np.float64)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scheduled(target: Target, db=None, config=None) -> dict:
    """kernel name -> its IR right after relax-gpu-schedule (``db``: with the tuning database;
    ``config``: kernel name -> relax.schedule_config set before)."""
    stages = gpu._stages(target, None)
    codegen = stages["codegen"]
    i = len(gpu._before_schedule(codegen))
    sched = codegen[i][:-1] + (f" tuning-db={db}}}" if db else "}")
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = relax_mlir.parse(MODULE, ctx)
        target.record(m.operation)
        relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(stages["graph"] + stages["host"] + codegen[:i]) + ")")
        out = {}
        for fn in kernels(m.operation):
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            if config and name in config:
                fn.attributes[CONFIG_ATTR] = ir.DictAttr.get(
                    {k: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for k, v in config[name].items()})
        relax_mlir.run_pipeline(m, f"builtin.module({sched})")
        for fn in kernels(m.operation):
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            if CONFIG_ATTR in fn.attributes:
                del fn.attributes[CONFIG_ATTR]
            out[name] = str(fn)
    return out


def test_tasks_are_keyed_as_relax_gpu_schedule_looks_them_up():
    """One task per kernel a rule takes, with the rule's space and default; the key is the
    kernel's structural hash at relax-gpu-schedule in the whole module, and the module the
    tuner compiles (the kernel alone) reaches that point with the same hash."""
    tasks = gpu.extract_gpu_tasks(MODULE, LAVAPIPE)
    assert [t.schedule for t in tasks] == ["gpu_matmul", "gpu_rows"]
    rows = tasks[1]
    assert rows.default == rules.Rows().default(LAVAPIPE, "f32") and rows.space.family == "gpu_rows"
    assert (rows.bucket, rows.sizes, rows.bindings[-1]) == ("le512", [1, 16, 128, 512], {"n": 512})
    assert rows.args == [{"kind": "tensor", "shape": ["n", 128], "dtype": "f32"}]
    assert rows.accepts({"threads": 64, "workgroup_rows": 256}, LAVAPIPE)
    assert not rows.accepts({"threads": 48}, LAVAPIPE)           # not a power of two
    assert not rows.accepts({"threads": 2048}, LAVAPIPE)         # above the target's 1024
    stages = gpu._stages(LAVAPIPE, None)
    for t in tasks:
        ctx = relax_mlir.make_context()
        with ctx, ir.Location.unknown():
            m = relax_mlir.parse(t.kernel_text, ctx)
            relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(
                stages["host"] + gpu._before_schedule(stages["codegen"])) + ")")
            [fn] = kernels(m.operation)
            assert structural_hash(fn, ignore=(CONFIG_ATTR,)) == t.key, t.name


def _seed_drawing(task, target, want) -> int:
    """A seed whose first random candidate for ``task`` has the knob values ``want`` (the
    search's first draw does not depend on any time)."""
    from relax_mlir.tuning.search import _freeze
    for seed in range(200):
        rng = gpu.task_rng(seed, task)
        for _ in range(50):
            c = task.space.sample(rng)
            if c is not None and _freeze(c) != _freeze(task.default) and task.accepts(c, target):
                break
        if all(c[k] == v for k, v in want.items()):
            return seed
    raise AssertionError("no seed draws it")


@needs_vulkan
def test_vulkan_tune_records_and_compile_applies_them(tmp_path):
    """3 candidates per kernel on lavapipe. The seed makes the row kernel's first candidate a
    thread per row from 256 rows (instead of a workgroup per row up to 1024: ~10x faster at
    512 rows of 128 there), which beats the default by far: it is recorded under the vulkan
    target key; a compile with the database schedules the row kernel exactly as that config
    does (and not as the default), with numpy's numerics at sizes 1, odd and large."""
    dev = gpu.gpu_target("vulkan")
    tasks = gpu.extract_gpu_tasks(MODULE, dev)
    seed = _seed_drawing(tasks[1], dev, {"workgroup_rows": 256})
    db = str(tmp_path / "gpu.db")
    lines = []
    results = tune(MODULE, db, target="vulkan", budget_s=60, max_trials=3, log=lines.append, seed=seed,
                   min_time=0.005)
    assert [r.task.schedule for r in results] == ["gpu_matmul", "gpu_rows"]
    assert all(len(r.trials) == 4 for r in results)   # the default's point + 3 candidates
    with Database(db) as d:
        recs = {r.kernel: r for r in d.records()}
    for r in results:   # recorded exactly when a candidate beat the default by the margin
        assert (r.task.key in recs) == r.recorded == (r.best is not None and r.best.config != r.task.default
                                                       and r.speedup >= gpu.MIN_SPEEDUP), r
    rec = recs[results[1].task.key]
    assert rec.target == rules.target_key(dev) and rec.target.startswith("gpu/vulkan/")
    assert rec.bucket == "le512" and rec.schedule == "gpu_rows" and rec.config["workgroup_rows"] <= 512
    assert rec.time_s < rec.default_s

    row = results[1].task.name
    tuned, default = scheduled(dev, db=db), scheduled(dev)
    assert tuned[row] == scheduled(dev, config={row: rec.config})[row]
    assert tuned[row] != default[row]

    exe = relax_mlir.compile(MODULE, target="vulkan", tuning_db=db)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 128)).astype(np.float32)
    for n in (1, 7, 300, 512):
        x = rng.standard_normal((n, 64)).astype(np.float32)
        np.testing.assert_allclose(exe(x, w), reference(x, w), rtol=1e-4, atol=1e-6)


def test_a_record_the_rule_rejects_is_ignored(tmp_path):
    """A record for the row kernel with 48 threads (not a power of two): the compile keeps the
    defaults (the same IR as without a database)."""
    [_, rows] = gpu.extract_gpu_tasks(MODULE, LAVAPIPE)
    db = str(tmp_path / "bad.db")
    with Database(db) as d:
        d.record(rows.key, rules.target_key(LAVAPIPE), rows.bucket, rows.schedule,
                 {"threads": 48, "workgroup_rows": 256}, 1e-6, 1.0, rows.sizes, 1)
    assert scheduled(LAVAPIPE, db=db)[rows.name] == scheduled(LAVAPIPE)[rows.name]
    good = str(tmp_path / "good.db")   # the same record with 64 threads is applied
    with Database(good) as d:
        d.record(rows.key, rules.target_key(LAVAPIPE), rows.bucket, rows.schedule,
                 {"threads": 64, "workgroup_rows": 256}, 1e-6, 1.0, rows.sizes, 1)
    assert scheduled(LAVAPIPE, db=good)[rows.name] != scheduled(LAVAPIPE)[rows.name]


@needs_vulkan
def test_cli_tune_target_vulkan(tmp_path):
    """``relax-mlir tune --target vulkan`` with ``--fix n=3``; ``--fix`` on the cpu is an error."""
    src = tmp_path / "m.mlir"
    src.write_text(MODULE)
    r = subprocess.run([sys.executable, "-m", "relax_mlir.tools.relax_mlir_cli", "tune", str(src), "--target", "vulkan",
                        "--db", str(tmp_path / "t.db"), "--trials", "1", "--budget", "30s", "--min-time", "0.002",
                        "--fix", "n=3"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tuning 2 GPU kernel(s) on gpu/vulkan/" in r.stdout
    assert r.stdout.count("ms at sizes [1]") == 2   # n = 3 at every size: each kernel measured once
    table = r.stdout[r.stdout.index("kernel "):]
    assert "gpu_matmul" in table and "gpu_rows" in table
    r = subprocess.run([sys.executable, "-m", "relax_mlir.tools.relax_mlir_cli", "tune", str(src), "--db",
                        str(tmp_path / "c.db"), "--fix", "n=3"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert r.returncode != 0 and "--fix applies to the GPU targets" in r.stderr


FAKE_TUNE = r'''
import json, os, sys, ctypes
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
from relax_mlir.tuning import tune
from relax_mlir.tuning.database import Database
fake = ctypes.CDLL("libcuda.so.1")
lines = []
res = tune(open(sys.argv[2]).read(), sys.argv[3], target="cuda", budget_s=60, max_trials=1, log=lines.append,
           min_time=0.001)
with Database(sys.argv[3]) as d:
    n = len(d.records())
print("FAKE-RUN " + json.dumps({"kernels": [r.task.schedule for r in res], "records": n,
                                "launches": ctypes.c_long.in_dll(fake, "fake_launches").value,
                                "trials": [[t.ok for t in r.trials] for r in res],
                                "refused": sum("computes nothing" in ln for ln in lines), "log": lines[:1]}))
'''


def test_cuda_fake_driver_launches_candidates_but_records_nothing(tmp_path):
    """The cuda host path on the fake driver (it computes nothing): each candidate compiled
    (PTX loaded) and launched, no numerics compared, and no record written."""
    import test_cuda
    src = tmp_path / "m.mlir"
    src.write_text(MODULE)
    got = test_cuda.run_fake(tmp_path, FAKE_TUNE, str(src), str(tmp_path / "cuda.db"))
    assert got["kernels"] == ["gpu_matmul", "gpu_rows"], got
    assert got["records"] == 0 and got["refused"] == 2 and got["launches"] > 0, got
    assert got["log"][0].startswith("tuning 2 GPU kernel(s) on gpu/cuda/"), got
    assert all(all(t) for t in got["trials"]), got


def test_fixed_symbols_bind_every_size_once():
    """``fixed`` keeps a symbol at one value (a decode step's one new token): a kernel with no
    other symbol is measured once; ``also_free`` adds the free sizes (duplicates dropped)."""
    [mm, rows] = gpu.extract_gpu_tasks(MODULE, LAVAPIPE, fixed={"n": 1})
    assert (rows.bindings, rows.sizes) == ([{"n": 1}], [1])
    assert mm.key == gpu.extract_gpu_tasks(MODULE, LAVAPIPE)[0].key   # the same kernel, the same record
    both = gpu.extract_gpu_tasks(MODULE, LAVAPIPE, fixed={"n": 7}, also_free=True)[1]
    assert both.bindings == [{"n": 1}, {"n": 16}, {"n": 128}, {"n": 512}, {"n": 7}]
    assert both.sizes == [1, 16, 128, 512, "1:n=7"]


@needs_vulkan
def test_a_candidate_computing_another_result_is_a_failed_trial():
    """Every candidate's outputs are compared with the default's: against a reference that is
    not the default's outputs a valid config fails with "wrong result"."""
    dev = gpu.gpu_target("vulkan")
    rows = gpu.extract_gpu_tasks(MODULE, dev, fixed={"n": 7})[1]
    m = gpu.DeviceMeasurer(rows, dev)
    assert m.request(rows.request(None, 0.001))["ok"]
    good = m.request(rows.request({"threads": 64, "workgroup_rows": 256}, 0.001))
    assert good["ok"] and len(good["times"]) == 1
    m.reference = [[2 * r for r in ref] for ref in m.reference]
    bad = m.request(rows.request({"threads": 64, "workgroup_rows": 256}, 0.001))
    assert not bad["ok"] and bad["error"] == "wrong result at n=7"
    refused = m.request(rows.request({"threads": 48, "workgroup_rows": 256}, 0.001))
    assert not refused["ok"] and "threads" in refused["error"]   # the rule refuses it at the kernel


def test_tuning_without_the_device_is_an_error(tmp_path, monkeypatch):
    from relax_mlir.runtime import cuda
    monkeypatch.setattr(cuda, "available", lambda: (False, "no NVIDIA driver here"))
    with pytest.raises(gpu.NoDevice, match="no cuda device to time kernels on: no NVIDIA driver here"):
        tune(MODULE, str(tmp_path / "t.db"), target="cuda", budget_s=5)
    assert not (tmp_path / "t.db").exists()
