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

from .database import Database, Record
from .search import KernelResult, tune
from .space import Knob, Space, space_for

__all__ = ["Database", "Record", "KernelResult", "tune", "Knob", "Space", "space_for"]
