"""The tuning database: SQLite, one row per (kernel, target, size bucket).

* kernel: :func:`relax_mlir.transforms.kernel_hash.structural_hash` of the kernel as
  relax-apply-schedules sees it (after relax-lower-host, before scheduling), so the
  same kernel in another model or under another name finds its record;
* target: :func:`target_key`, the SIMD target the tiles are sized for, the host's
  relevant CPU features and the thread count (a config tuned on one machine is not
  reused on another);
* size bucket: :func:`size_bucket` of the upper bound of the module's symbols (one
  compile serves every size up to it; the tuner measured at :func:`representative_sizes`
  of that bound).

A row holds the best config found (JSON), its measured time and the default schedule's
time at the same sizes (seconds, summed over the representative sizes), the schedule
name and a timestamp. :meth:`Database.record` keeps the faster of an existing row and
the new one.

Schema version 2 (``PRAGMA user_version``; a version-1 file gains the table when opened,
its records untouched, and older code ignores it) adds ``decisions``: per (dispatch key,
target, size bucket), whether BLAS or the generated kernel won at each representative size.
The dispatch key (:func:`relax_mlir.backends.cpu.dispatch_library.dispatch_key`) names the
matched graph-level chain (pattern and operand types, symbols renamed ``s0``, ``s1``...)
that relax-dispatch-library decides before any kernel exists; a row also holds the
library symbol, the M of the chain at each size, both times per size and the structural
hash of the generated kernel measured. :meth:`Database.record_decision` replaces the row
(the newest comparison wins); ``relax-dispatch-library{tuning-db=...}`` follows it.
"""

from __future__ import annotations

import json
import math
import platform
import sqlite3
import time
from dataclasses import dataclass
from typing import Optional

from mlir import ir

from ..target import Simd

#: CPU features that change which code is fast (SIMD width, FMA).
FEATURES = ("avx512f", "avx512vl", "avx512bw", "avx512_vnni", "avx2", "fma", "avx", "sse4_2", "asimd", "sve")

#: Sizes a symbol is measured at when tuning (capped by its upper bound).
BUCKET_SIZES = (1, 16, 128, 512)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kernel TEXT NOT NULL,
    target TEXT NOT NULL,
    bucket TEXT NOT NULL,
    schedule TEXT NOT NULL,
    config TEXT NOT NULL,
    time_s REAL NOT NULL,
    default_s REAL NOT NULL,
    sizes TEXT NOT NULL,
    trials INTEGER NOT NULL,
    timestamp REAL NOT NULL,
    PRIMARY KEY (kernel, target, bucket)
)
"""

#: Version 2: the ``decisions`` table (BLAS or generated code per size, see the docstring).
SCHEMA_VERSION = 2

_DECISIONS = """
CREATE TABLE IF NOT EXISTS decisions (
    kernel TEXT NOT NULL,
    target TEXT NOT NULL,
    bucket TEXT NOT NULL,
    callee TEXT NOT NULL,
    sizes TEXT NOT NULL,
    ms TEXT NOT NULL,
    library_s TEXT NOT NULL,
    generated_s TEXT NOT NULL,
    winners TEXT NOT NULL,
    generated_kernel TEXT NOT NULL,
    timestamp REAL NOT NULL,
    PRIMARY KEY (kernel, target, bucket)
)
"""

LIBRARY, GENERATED = "library", "generated"


def target_key(target: Simd, threads: int = 1, host: bool = True) -> str:
    """``x86_64/avx512/avx2+avx512f+...+fma/t1``: the schedule target, the host's relevant
    CPU features (``host``: the target is the detected host) and the thread count."""
    from ..runtime.cpu import cpu_flags

    feats = "+".join(sorted(set(FEATURES) & set(cpu_flags()))) if host else "-"
    return f"{platform.machine().lower() if host else 'cross'}/{target.isa}/{feats or '-'}/t{threads}"


def size_bucket(bound: Optional[int], symbolic: bool = True) -> str:
    """``static`` (no symbols), ``le<bound>`` (every symbol bounded), ``any`` (unbounded)."""
    if not symbolic:
        return "static"
    return "any" if bound is None else f"le{bound}"


def representative_sizes(bound: Optional[int]) -> list[int]:
    """Where a symbol of upper bound ``bound`` (None: none) is measured: :data:`BUCKET_SIZES`
    capped by the bound."""
    return sorted({min(s, bound) if bound is not None else s for s in BUCKET_SIZES})


def module_bound(module: ir.Operation) -> tuple[Optional[int], bool]:
    """(largest upper bound of the symbols of the module's graph functions, any symbols at
    all): the bound is None when some symbol has none. Read from the graph functions'
    ``relax.upper_bounds`` and their symbols (``relax.detail_symbols`` once lowered, the
    ``#relax.shape`` of the parameters before)."""
    from ..shapes import read_tensor_type

    bound, symbolic = 0, False
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if op.name != "func.func" or not ("relax.function" in op.attributes or "relax.lowered" in op.attributes):
            continue
        syms: set[str] = set()
        if "relax.detail_symbols" in op.attributes:
            syms |= {ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["relax.detail_symbols"])}
        else:
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            for t in ftype.inputs:
                if isinstance(t, ir.RankedTensorType):
                    syms |= set(read_tensor_type(t).shape.symbols)
        ubs = {}
        if "relax.upper_bounds" in op.attributes:
            d = ir.DictAttr(op.attributes["relax.upper_bounds"])
            ubs = {d[i].name: ir.IntegerAttr(d[i].attr).value for i in range(len(d))}
        for s in syms:
            symbolic = True
            if s not in ubs:
                return None, True
            bound = max(bound, ubs[s])
    return (bound if symbolic else None), symbolic


def module_bucket(module: ir.Operation) -> str:
    bound, symbolic = module_bound(module)
    return size_bucket(bound, symbolic)


@dataclass(frozen=True)
class Record:
    kernel: str
    target: str
    bucket: str
    schedule: str
    config: dict
    time_s: float
    default_s: float
    sizes: list
    trials: int
    timestamp: float


@dataclass(frozen=True)
class Decision:
    """BLAS or generated code for one dispatch key, per representative size (see the module
    docstring): ``winners[i]`` (:data:`LIBRARY` or :data:`GENERATED`) at symbol size
    ``sizes[i]``, where the chain's row count was ``ms[i]``; times in seconds (a generated
    time None: its schedule failed)."""
    kernel: str
    target: str
    bucket: str
    callee: str
    sizes: list
    ms: list
    library_s: list
    generated_s: list
    winners: list
    generated_kernel: str
    timestamp: float

    def generated_ranges(self, upper: Optional[int] = None) -> list[tuple[int, int]]:
        """The M ranges (inclusive) where generated code runs: each measured M speaks for
        the Ms nearer to it than to its neighbours in log scale (the cut between ``a`` and
        ``b`` at ``isqrt(a * b)``), the first down to 1, the last up to ``upper`` (default
        2**31 - 1)."""
        pts = sorted(dict(zip(self.ms, self.winners)).items())
        top = upper if upper is not None else (1 << 31) - 1
        # point i owns [los[i], his[i]]
        his = [max(a, min(b - 1, math.isqrt(a * b))) for (a, _), (b, _) in zip(pts, pts[1:])] + [top]
        los = [1] + [h + 1 for h in his[:-1]]
        out: list[tuple[int, int]] = []
        for (_, w), lo, hi in zip(pts, los, his):
            hi = min(hi, top)
            if w != GENERATED or lo > hi:
                continue
            if out and out[-1][1] + 1 == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return out


def _decision(r) -> Decision:
    return Decision(r[0], r[1], r[2], r[3], *(json.loads(x) for x in r[4:9]), r[9], r[10])


class Database:
    """An SQLite file of tuning records (created on first use; see the module docstring for
    the schema and its version)."""

    def __init__(self, path: str):
        self.path = str(path)
        self.conn = sqlite3.connect(self.path)
        self.conn.execute(_SCHEMA)
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:   # 0 / 1 (before versions): add the decisions table
            self.conn.execute(_DECISIONS)
            self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record(self, kernel: str, target: str, bucket: str, schedule: str, config: dict, time_s: float,
               default_s: float, sizes: list, trials: int) -> bool:
        """Store a measured config unless the row there is faster; True when stored."""
        old = self.lookup(kernel, target, bucket, fallback=False)
        if old is not None and old.time_s <= time_s:
            return False
        self.conn.execute("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (kernel, target, bucket, schedule, json.dumps(config, sort_keys=True), float(time_s),
                           float(default_s), json.dumps(list(sizes)), int(trials), time.time()))
        self.conn.commit()
        return True

    def lookup(self, kernel: str, target: str, bucket: str, fallback: bool = True) -> Optional[Record]:
        """The record of ``kernel`` on ``target`` for ``bucket``; with ``fallback``, else the
        one tuned for any bucket (``any`` first, then the most recent)."""
        rows = self.conn.execute("SELECT * FROM records WHERE kernel = ? AND target = ? AND bucket = ?",
                                 (kernel, target, bucket)).fetchall()
        if not rows and fallback:
            rows = self.conn.execute("SELECT * FROM records WHERE kernel = ? AND target = ? "
                                     "ORDER BY bucket = 'any' DESC, timestamp DESC LIMIT 1",
                                     (kernel, target)).fetchall()
        if not rows:
            return None
        r = rows[0]
        return Record(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], json.loads(r[7]), r[8], r[9])

    def records(self) -> list[Record]:
        rows = self.conn.execute("SELECT * FROM records ORDER BY timestamp").fetchall()
        return [Record(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], json.loads(r[7]), r[8], r[9])
                for r in rows]

    def record_decision(self, kernel: str, target: str, bucket: str, callee: str, sizes: list, ms: list,
                        library_s: list, generated_s: list, generated_kernel: str) -> Decision:
        """Store the comparison of BLAS and generated code for ``kernel`` (a dispatch key),
        replacing any row there; the winner at each size is the faster (BLAS when the
        generated time is missing)."""
        winners = [LIBRARY if g is None or lib < g else GENERATED for lib, g in zip(library_s, generated_s)]
        row = (kernel, target, bucket, callee, json.dumps(list(sizes)), json.dumps(list(ms)),
               json.dumps([float(t) for t in library_s]),
               json.dumps([None if t is None else float(t) for t in generated_s]), json.dumps(winners),
               generated_kernel, time.time())
        self.conn.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        self.conn.commit()
        return _decision(row)

    def decision(self, kernel: str, target: str, bucket: str) -> Optional[Decision]:
        """The decision for dispatch key ``kernel`` on ``target`` in ``bucket`` (that bucket
        only: its sizes are what the winners speak for), or None."""
        r = self.conn.execute("SELECT * FROM decisions WHERE kernel = ? AND target = ? AND bucket = ?",
                              (kernel, target, bucket)).fetchone()
        return _decision(r) if r is not None else None

    def decisions(self) -> list[Decision]:
        rows = self.conn.execute("SELECT * FROM decisions ORDER BY timestamp").fetchall()
        return [_decision(r) for r in rows]
