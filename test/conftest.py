"""Session-wide pytest hooks."""

from __future__ import annotations


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
