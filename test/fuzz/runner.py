"""Runs fuzz cases in worker subprocesses, so that a case that kills its process (a
signal: SIGFPE, SIGSEGV, SIGBUS, an abort in the bindings) or hangs is a reported
failure and not a dead test run. When the worker dies, the case is re-run alone in a
fresh worker to confirm it (a state-dependent death is reported as such)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


@dataclass
class Outcome:
    case: dict
    result: Optional[dict]            # the worker's answer, None when it died or hung
    death: Optional[str] = None       # "signal SIGFPE", "exit 1", "hang after 120 s"
    last_input: str = ""              # on a death: the input the worker was processing

    @property
    def failed(self) -> bool:
        return self.death is not None or bool(self.result and self.result.get("error"))

    def describe(self) -> str:
        what = self.death or (self.result or {}).get("error", "")
        if self.death and self.last_input:
            what += "\n--- input ---\n" + self.last_input
        return f"{json.dumps(self.case)}: {what}"


class Worker:
    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        env["RELAX_DEBUG"] = "1"          # relax-opt: let internal exceptions escape (a bug)
        fd, self.last_input = tempfile.mkstemp(prefix="relax-fuzz-", suffix=".mlir")
        os.close(fd)
        env["RELAX_FUZZ_LAST"] = self.last_input   # the worker writes each input here first
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py")], cwd=REPO, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1)

    def run(self, case: dict, timeout: float) -> Outcome:
        import selectors
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout)
        sel.close()
        if not ready:
            last = self.last()
            self.kill()
            return Outcome(case, None, f"hang: no answer after {timeout:.0f} s", last)
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            death = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}"
            return Outcome(case, None, death, self.last())
        return Outcome(case, json.loads(line))

    def last(self) -> str:
        """The input the worker was on when it died (mutant or program text)."""
        try:
            with open(self.last_input, encoding="utf-8", errors="replace") as f:
                return f.read()[:4000]
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.cleanup()

    def cleanup(self) -> None:
        try:
            os.unlink(self.last_input)
        except OSError:
            pass

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.cleanup()
        except Exception:
            self.kill()


def run_cases(cases: Iterable[dict], timeout: float = 180.0, deadline: Optional[float] = None) -> list[Outcome]:
    """Run ``cases`` in order in one worker (restarted after each death) until
    ``deadline`` (time.monotonic()), if given."""
    out: list[Outcome] = []
    w: Optional[Worker] = None
    try:
        for case in cases:
            if deadline is not None and time.monotonic() > deadline:
                break
            w = w or Worker()
            o = w.run(case, timeout)
            if o.result is None:                    # died or hung: confirm alone
                w.kill()
                w = None
                alone = Worker()
                o2 = alone.run(case, timeout)
                alone.kill()
                if o2.result is not None and not o2.failed:
                    o.death = f"{o.death} (not alone: depends on earlier cases in the worker)"
                elif o2.result is None:
                    o.death = f"{o2.death} (reproduced alone)"
                    o.last_input = o2.last_input or o.last_input
                else:
                    o = o2
            out.append(o)
    finally:
        if w is not None:
            w.close()
    return out
