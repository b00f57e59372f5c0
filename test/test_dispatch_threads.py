"""The OpenMP wait policy set before our OpenMP runtime loads (bench/bench_contention.py)."""

from __future__ import annotations

import os

from relax_mlir.transforms import apply_schedules
from relax_mlir.transforms.apply_schedules import openmp_libraries, openmp_wait_policy


def test_blocktime_default_and_user_value(monkeypatch):
    monkeypatch.setenv("KMP_BLOCKTIME", "")   # records the original value for the teardown
    monkeypatch.delenv("KMP_BLOCKTIME")
    openmp_wait_policy()
    assert os.environ["KMP_BLOCKTIME"] == "1"
    monkeypatch.setenv("KMP_BLOCKTIME", "200")
    openmp_wait_policy()
    assert os.environ["KMP_BLOCKTIME"] == "200"


def test_set_only_when_openmp_is_linked(monkeypatch):
    monkeypatch.setenv("KMP_BLOCKTIME", "")   # records the original value for the teardown
    monkeypatch.delenv("KMP_BLOCKTIME")
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "1")
    assert openmp_libraries({"schedules": True}) == []
    assert "KMP_BLOCKTIME" not in os.environ
    monkeypatch.setenv("RELAX_MLIR_NUM_THREADS", "2")
    monkeypatch.setattr(apply_schedules, "openmp_library", lambda: "/x/libiomp5.so")
    assert openmp_libraries({"schedules": True}) == ["/x/libiomp5.so"]
    assert os.environ["KMP_BLOCKTIME"] == "1"
