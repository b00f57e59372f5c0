"""Session-wide pytest hooks."""

from __future__ import annotations

import os
import tempfile

# The compile cache (relax_mlir.compile_cache) of a test run is its own: a run neither
# reads entries an earlier run or a user left nor fills the user's cache. Set
# RELAX_MLIR_CACHE_DIR to share one between runs.
if "RELAX_MLIR_CACHE_DIR" not in os.environ:
    os.environ["RELAX_MLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="relax-mlir-test-cache-")

# The cuda target sends matmuls to cuBLAS where a library is installed (RELAX_MLIR_CUBLAS,
# default auto): the GPU tests test the generated kernels on every machine alike, so it is off
# unless a test asks for it (test_cuda_library.py: options={"cublas": ...}) or the environment
# says otherwise.
os.environ.setdefault("RELAX_MLIR_CUBLAS", "off")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line saying how many Vulkan tests ran (CI must run them, not skip them)."""
    counts, reason = {}, ""
    for outcome in ("passed", "failed", "error", "xfailed", "xpassed", "skipped"):
        reports = [r for r in terminalreporter.stats.get(outcome, [])
                   if "vulkan" in getattr(r, "nodeid", "") and getattr(r, "when", "call") in ("call", "setup")]
        if outcome != "skipped":
            reports = [r for r in reports if r.when == "call" or outcome == "error"]
        counts[outcome] = len(reports)
        if outcome == "skipped" and reports and isinstance(reports[0].longrepr, tuple):
            reason = reports[0].longrepr[2]
    if not any(counts.values()):
        return
    ran = sum(v for k, v in counts.items() if k != "skipped")
    line = f"Vulkan tests: {ran} ran ({counts['passed']} passed, {counts['failed'] + counts['error']} failed"
    line += f", {counts['xfailed']} xfailed), {counts['skipped']} skipped"
    terminalreporter.write_sep("-", line + (f": {reason}" if reason else ""))
