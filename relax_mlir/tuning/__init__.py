"""Tuning, MetaSchedule's idea over the transform-dialect schedules.

* :mod:`.space`: each schedule family's knobs (tile sizes, vector width, thread split) as
  data, and the rule for valid combinations;
* :mod:`.tasks`: a program's scheduled kernels, with what it takes to run one alone;
* :mod:`.worker`: compile and time one kernel under one config in a subprocess (MLIR
  aborts on some transform combinations), checked against the unscheduled kernel;
* :mod:`.search`: random sampling, then greedy evolution, within a time budget;
* :mod:`.database`: SQLite records keyed by (structural kernel hash, target, size
  bucket), read by ``relax-apply-schedules{tuning-db=...}`` /
  ``relax_mlir.compile(..., tuning_db=...)``; and dispatch decisions (BLAS or the tuned
  kernel, per size, for each matmul (+ bias) match: :func:`.search.compare_library`),
  read by ``relax-dispatch-library{tuning-db=...}``.

* :mod:`.gpu`: the same search over the GPU rules' knobs (relax-gpu-schedule), each kernel
  compiled alone and timed on the vulkan or cuda device (``tune(..., target="vulkan")``).

``relax-mlir tune model.mlir --db tune.db --budget 60s [--target vulkan]`` runs it from the
command line.
"""

from typing import Callable, Optional

from . import search
from .database import Database, Record
from .search import KernelResult
from .space import Knob, Space, space_for


def tune(src, db_path: str, budget_s: float = 60.0, max_trials: int = 64, options: Optional[dict] = None,
         log: Callable[[str], None] = print, seed: int = 0, min_time: float = 0.05,
         target=None, min_speedup: Optional[float] = None, fixed: Optional[dict] = None) -> list[KernelResult]:
    """Tune every scheduled kernel of ``src`` within ``budget_s`` seconds in all and record the
    best configs in ``db_path``. ``target``: a :class:`Simd`, ``"cpu"`` or None (the cpu
    schedules, :func:`.search.tune`; default the host's), or ``"vulkan"`` / ``"cuda"`` / a GPU
    :class:`~relax_mlir.target.Target`: the GPU rules' knobs measured on that device
    (:func:`.gpu.tune_gpu`; ``min_speedup``: the margin a record needs, ``fixed``: symbols kept
    at one value)."""
    from ..target import Target
    from .gpu import GPU_KINDS, MIN_SPEEDUP, tune_gpu

    if target in GPU_KINDS or (isinstance(target, Target) and target.kind in GPU_KINDS):
        return tune_gpu(src, db_path, target, budget_s, max_trials, options, log, seed, min_time,
                        MIN_SPEEDUP if min_speedup is None else min_speedup, fixed)
    if isinstance(target, str) and target != "cpu":
        raise ValueError(f"tune: target must be cpu, vulkan or cuda, got '{target}'")
    if isinstance(target, (str, Target)):
        target = None
    return search.tune(src, db_path, budget_s, max_trials, options, log, seed, min_time, target)

__all__ = ["Database", "Record", "KernelResult", "tune", "Knob", "Space", "space_for"]
