"""The search: random sampling, then greedy evolution over one kernel's knob space.

For each tunable kernel (:func:`~relax_mlir.tuning.tasks.extract_tasks`) the default
schedule is measured first (the baseline; a kernel whose default fails is skipped),
then candidates: a few random valid configs, then mutations (one knob one step, see
:meth:`Space.neighbors`) of the best configs so far, never one already tried. Each
candidate is compiled and run in the measuring subprocess (:class:`~.worker.Worker`),
checked against the unscheduled kernel at every representative size; a candidate that
crashes, hangs or computes a wrong result is a failed trial and can never be the best.
A candidate's score is the geometric mean over the sizes of its time over the
default's (each size counts the same, from GEMV to large M). The best config (the
default's own when nothing beat it) goes to the database with its times.

A kernel holding a match that relax-dispatch-library could send to BLAS
(:attr:`~relax_mlir.tuning.tasks.Task.dispatch`) is then compared with the library: the
library call is timed at the same sizes, in the same measuring process (best of two
requests, as the confirmed config), and the faster of
it and the best generated config at each size goes to the database's ``decisions``
(:meth:`~relax_mlir.tuning.database.Database.record_decision`), which
``relax-dispatch-library{tuning-db=...}`` follows. Those kernels are tuned first: their
outcome decides where BLAS runs.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..target import Simd, host_simd
from .database import Database, Decision, target_key
from .space import Config, elementwise_default, family, matmul_default, rows_default, space_for
from .tasks import Task, extract_tasks
from .worker import Worker


@dataclass
class Trial:
    config: Optional[Config]  # None: the default schedule
    ok: bool
    times: list = field(default_factory=list)
    error: str = ""
    score: float = math.inf  # geometric mean of time / default time


@dataclass
class KernelResult:
    task: Task
    default: Trial
    best: Optional[Trial]
    trials: list
    recorded: bool = False
    #: BLAS or generated per size (a kernel with a dispatch match), else None.
    decision: Optional[Decision] = None
    library: Optional[list] = None  # the library's times per size

    @property
    def speedup(self) -> float:
        """The search's objective: the geometric mean over the sizes of default time over
        best time."""
        if self.best is None or not self.best.ok:
            return 1.0
        return 1.0 / _score(self.best.times, self.default.times)


def default_config(task: Task, target: Simd) -> Optional[Config]:
    """The knob values the untuned schedule uses for this kernel (None when they are not a
    point of the space, e.g. a row vectorized whole)."""
    fam = family(task.schedule)
    if fam == "matmul":
        return matmul_default(target)
    inner = _inner_extent(task, merged=fam == "elementwise")
    if fam == "elementwise":
        return elementwise_default(target, inner)
    return rows_default(target, inner)


def _inner_extent(task: Task, merged: bool = False) -> Optional[int]:
    """The static innermost extent of the task's kernel (None: symbolic); ``merged``: after the
    elementwise schedule merged its small inner dims (what its width applies to)."""
    from mlir import ir

    from ..backends.cpu.schedules import payload_ops
    from ..backends.cpu.schedules.elementwise import collapse_group, collapsed_shape
    with task.fn.context:
        ops = payload_ops(task.fn)
        shape = list(ir.RankedTensorType(ops[-1].results[0].type).shape)
        if merged:
            shape = collapsed_shape(shape, collapse_group([o for o in ops if o.name == "linalg.generic"]))
        d = shape[-1]
        return None if ir.ShapedType.is_dynamic_size(d) else d


_UNSET = object()


def _score(times: list, base: list) -> float:
    return math.exp(sum(math.log(max(t, 1e-9) / max(b, 1e-9)) for t, b in zip(times, base)) / len(base))


def tune_task(task: Task, worker: Worker, target: Simd, budget_s: float, max_trials: int,
              rng: random.Random, log: Callable[[str], None] = print, min_time: float = 0.05,
              prefix: str = "", space=None, base_cfg=_UNSET) -> Optional[KernelResult]:
    """Search ``task``'s knob space for ``budget_s`` seconds or ``max_trials`` candidates
    (the default's measurement not counted); None when the default schedule fails.
    ``space`` / ``base_cfg``: the knob space and the default's knob values when they are not
    the cpu schedules' (the GPU rules', :mod:`.gpu`)."""
    t_start = time.monotonic()
    space = space if space is not None else space_for(task.schedule, target)
    res = worker.request(task.request(None, min_time), timeout_s=300)
    if not res["ok"]:
        log(f"{prefix} skipped: the default schedule failed ({res['error']})")
        return None
    default = Trial(None, True, res["times"], score=1.0)
    per_trial_timeout = max(30.0, 10 * (time.monotonic() - t_start))
    log(f"{prefix} default: {_fmt(default.times)} at sizes {task.sizes}")
    base_cfg = default_config(task, target) if base_cfg is _UNSET else base_cfg
    seen: set = set()
    trials: list[Trial] = []
    if base_cfg is not None:
        seen.add(_freeze(base_cfg))
        trials.append(Trial(base_cfg, True, default.times, score=1.0))

    def accept(cfg: Config) -> bool:
        return _freeze(cfg) not in seen and task.accepts(cfg, target)

    n_random = max(1, min(max_trials // 3, 8)) if base_cfg is not None else max_trials
    count = 0
    while count < max_trials and time.monotonic() - t_start < budget_s:
        cfg = None
        good = sorted((t for t in trials if t.ok), key=lambda t: t.score)
        if count >= n_random and good:
            parent = rng.choice(good[:3])
            nbrs = [c for c in space.neighbors(parent.config) if accept(c)]
            cfg = rng.choice(nbrs) if nbrs else None
        if cfg is None:
            for _ in range(50):
                c = space.sample(rng)
                if c is not None and accept(c):
                    cfg = c
                    break
        if cfg is None:
            log(f"{prefix} space exhausted after {count} trials")
            break
        seen.add(_freeze(cfg))
        count += 1
        r = worker.request(task.request(cfg, min_time, [3 * t for t in default.times]), timeout_s=per_trial_timeout)
        if r["ok"]:
            t = Trial(cfg, True, r["times"], score=_score(r["times"], default.times))
        else:
            t = Trial(cfg, False, error=r["error"])
        trials.append(t)
        best = min((x for x in trials if x.ok), key=lambda x: x.score, default=None)
        status = f"{_fmt(t.times)} ({t.score:.2f}x default)" if t.ok else f"FAILED: {t.error[:120]}"
        log(f"{prefix} trial {count}/{max_trials} {_cfg(cfg)}: {status}; best {best.score:.2f}x" if best
            else f"{prefix} trial {count}/{max_trials} {_cfg(cfg)}: {status}")
    best = min((x for x in trials if x.ok and x.config is not None), key=lambda x: x.score, default=None)
    if best is not None and best.config != base_cfg:
        # Confirm against noise (a loaded machine): both measured again, best of the two runs each.
        d2 = worker.request(task.request(None, min_time), timeout_s=per_trial_timeout)
        b2 = worker.request(task.request(best.config, min_time), timeout_s=per_trial_timeout)
        if d2["ok"] and b2["ok"]:
            default.times = [min(a, b) for a, b in zip(default.times, d2["times"])]
            best.times = [min(a, b) for a, b in zip(best.times, b2["times"])]
            best.score = _score(best.times, default.times)
            log(f"{prefix} confirmed: {_cfg(best.config)} {_fmt(best.times)} vs default {_fmt(default.times)} "
                f"({best.score:.2f}x)")
        if not b2["ok"] or best.score >= 1.0:
            best = next((x for x in trials if x.config == base_cfg), None)
            if best is not None:
                best.times, best.score = default.times, 1.0
    if best is not None and base_cfg is None and best.score >= 1.0:
        best = None  # the default (not a point of the space) stays
    return KernelResult(task, default, best, trials)


def each_task(tasks: list, budget_s: float, t0: float, log: Callable[[str], None]):
    """(task, log prefix, seconds) for each task in turn, the budget left shared evenly among
    the tasks not yet tuned; stops (and says so) once ``budget_s`` since ``t0`` is spent."""
    for i, task in enumerate(tasks):
        left = budget_s - (time.monotonic() - t0)
        if left <= 0:
            log(f"budget spent: {len(tasks) - i} kernel(s) not tuned")
            return
        yield task, f"[kernel {i + 1}/{len(tasks)} {task.name} ({task.schedule})]", left / (len(tasks) - i)


def record_best(db: Database, key: str, r: KernelResult, log: Callable[[str], None], prefix: str) -> None:
    """``r.best`` recorded for ``r.task`` under the target ``key`` (kept where the database
    has a faster record)."""
    task = r.task
    r.recorded = db.record(task.key, key, task.bucket, task.schedule, r.best.config,
                           sum(r.best.times), sum(r.default.times), task.sizes, len(r.trials))
    log(f"{prefix} best {_cfg(r.best.config)}: {_fmt(r.best.times)} vs default {_fmt(r.default.times)} "
        f"({r.speedup:.2f}x){'' if r.recorded else ' (the database has a faster record)'}")


def tune(src, db_path: str, budget_s: float = 60.0, max_trials: int = 64, options: Optional[dict] = None,
         log: Callable[[str], None] = print, seed: int = 0, min_time: float = 0.05,
         target: Optional[Simd] = None) -> list[KernelResult]:
    """Tune every scheduled cpu kernel of ``src`` within ``budget_s`` seconds in all (shared
    evenly among the kernels not yet tuned) and record the best configs in ``db_path``.
    ``target``: the cpu schedules' :class:`Simd` (default the host's); GPU targets:
    :func:`relax_mlir.tuning.tune`."""
    from ..backends.cpu.apply_schedules import num_threads

    t0 = time.monotonic()
    target = target or host_simd()
    opts = dict(options or {})
    tasks = extract_tasks(src, target, opts)
    # where BLAS runs decides the rest: the dispatch candidates first (stable order)
    tasks.sort(key=lambda t: t.dispatch is None)
    key = target_key(target, num_threads())
    log(f"tuning {len(tasks)} kernel(s) on {key}, budget {budget_s:.0f} s, at most {max_trials} trials each")
    rng = random.Random(seed)
    results = []
    with Worker(blas_threads=num_threads()) as worker, Database(db_path) as db:
        for task, prefix, share in each_task(tasks, budget_s, t0, log):
            r = tune_task(task, worker, target, share, max_trials, rng, log, min_time, prefix)
            if r is None:
                continue
            if r.best is not None:
                record_best(db, key, r, log, prefix)
            if task.dispatch is not None:
                compare_library(r, worker, db, key, min_time, log, prefix)
            results.append(r)
    log(f"done in {time.monotonic() - t0:.0f} s; database {db_path}")
    return results


def compare_library(r: KernelResult, worker: Worker, db: Database, target: str, min_time: float,
                    log: Callable[[str], None] = print, prefix: str = "") -> Optional[Decision]:
    """Time the library call of ``r.task``'s dispatch match and record, per size, whether it
    or the best generated config (the default when none beat it) is faster."""
    task = r.task
    lib = worker.request(task.library_request(min_time), timeout_s=120)
    if not lib["ok"]:
        log(f"{prefix} library {task.dispatch['callee']} failed ({lib['error']}): no dispatch decision")
        return None
    again = worker.request(task.library_request(min_time), timeout_s=120)   # best of two, as the confirmed config
    if again["ok"]:
        lib["times"] = [min(a, b) for a, b in zip(lib["times"], again["times"])]
    gen = (r.best or r.default).times
    r.library = lib["times"]
    r.decision = db.record_decision(task.dispatch["key"], target, task.bucket, task.dispatch["callee"], task.sizes,
                                    task.ms(), lib["times"], gen, task.key)
    log(f"{prefix} library {task.dispatch['callee']}: {_fmt(lib['times'])} vs generated {_fmt(gen)}: "
        + ", ".join(f"n={s} {w}" for s, w in zip(task.sizes, r.decision.winners)))
    return r.decision


def _freeze(cfg: Config) -> tuple:
    return tuple(sorted(cfg.items()))


def _cfg(cfg: Optional[Config]) -> str:
    return "default" if cfg is None else " ".join(f"{k}={v}" for k, v in cfg.items())


def _fmt(times: list) -> str:
    return "[" + ", ".join(f"{1e3 * t:.3f}" for t in times) + "] ms"
