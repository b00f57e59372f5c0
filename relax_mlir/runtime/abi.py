"""The typed compiler-runtime contract, with a versioned JSON form.

The host lowering (:mod:`relax_mlir.transforms.lower_host`) promises the runtime, per
graph function: its symbolic signature, the run-time checks compiled into it (each with a
module-wide id, reported through the status result), the detail slots that report a
failure, the workspace it needs, and a *signature plan* (the parameter checks as small
Python expressions over the actual dims, so calling needs neither sympy nor MLIR).

These dataclasses ARE that promise; ``exe.metadata`` is ``ExecutableMetadata.to_json()``
(plain JSON: an exported library stores it verbatim), read back with
:meth:`ExecutableMetadata.from_json`, which refuses another ``format``/``version``.
Nothing here imports the MLIR bindings or sympy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Optional

FORMAT = "relax-mlir-executable"
#: 2: typed checks, signature plans and per-function workspaces (sessions)
#: 3: executable-owned state buffers (``states``; every function takes them after the workspace)
VERSION = 3
#: versions this runtime reads (a version-2 library has no state: it loads unchanged)
READS = (2, 3)

#: What a check guards: the user's argument shapes (``param``), ``relax.match_cast``,
#: ``relax.assert``, a symbolic ``//``/``%`` by zero (``division``), a dimension or size
#: beyond int64 (``overflow``), a negative allocation size (``size``), a failed
#: allocation (``alloc``: MemoryError, every other kind a ShapeError).
#: ``state``: a ``relax.state_read``/``state_write`` row range beyond the session's capacity.
#: the most arguments the runtime passes an entry point directly (ctypes' limit,
#: CTYPES_MAX_ARGCOUNT); a wider ``_mlir_ciface_<f>`` is called through
#: ``PACKED_PREFIX + f``, which takes ONE pointer to the array of those arguments
#: (relax-packed-entries adds it)
MAX_DIRECT_ARGS = 1024
PACKED_PREFIX = "_mlir_relax_packed_"

CHECK_KINDS = ("param", "match_cast", "assert", "division", "overflow", "size", "alloc", "state", "index")


class MetadataError(RuntimeError):
    """Metadata of another format or version, or malformed."""


@dataclass(frozen=True)
class TensorSpec:
    """A parameter or result: symbolic shape (dim texts, ``"?"`` unknown) and element type."""

    shape: tuple[str, ...]
    dtype: str

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_json(d: dict) -> "TensorSpec":
        return TensorSpec(tuple(str(x) for x in d["shape"]), str(d["dtype"]))


@dataclass(frozen=True)
class Check:
    """One run-time check; ``id`` is the status the compiled code returns when it fails.

    ``bound``: symbols bound before the check (their values are in the detail slots);
    ``rank``: dims of the checked value that follow them; ``expected``: the symbolic shape
    (param, match_cast, size, alloc); ``expr``: the dimension expression at fault
    (division, overflow, size) or the asserted sides ``lhs``/``rhs``.
    """

    id: int
    kind: str
    where: str
    bound: tuple[str, ...] = ()
    rank: int = 0
    expected: str = ""
    detail: str = ""
    message: str = ""
    lhs: str = ""
    rhs: str = ""
    predicate: str = "eq"
    expr: str = ""
    index: int = -1
    location: str = ""

    def __post_init__(self):
        if self.kind not in CHECK_KINDS:
            raise MetadataError(f"unknown check kind {self.kind!r} (kinds: {', '.join(CHECK_KINDS)})")

    def to_json(self) -> dict:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "where": self.where}
        for f in fields(self)[3:]:
            v = getattr(self, f.name)
            if v != f.default:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @staticmethod
    def from_json(d: dict) -> "Check":
        kw = {f.name: d[f.name] for f in fields(Check) if f.name in d}
        kw["bound"] = tuple(kw.get("bound", ()))
        return Check(**kw)


@dataclass(frozen=True)
class Binding:
    """A symbol's value as a Python expression over ``a[i][j]`` (argument i, dim j)."""

    symbol: str
    expr: str
    args: tuple[int, ...]


@dataclass(frozen=True)
class ArgCheck:
    """``lhs == rhs`` (or ``<=``) over the argument dims, reported at argument ``arg``;
    ``detail`` explains a derived condition (empty for a plain dim mismatch)."""

    arg: int
    lhs: str
    rhs: str
    predicate: str = "eq"
    detail: str = ""


@dataclass(frozen=True)
class SignaturePlan:
    """The parameter checks of one function as Python expressions (no sympy at call time);
    ``failure_values``: per check id, Python expressions over ``v["sym"]`` whose values a
    failure message shows (an assert's two sides, the faulty size)."""

    shapes: tuple[str, ...] = ()
    symbols: tuple[tuple[str, ...], ...] = ()
    bindings: tuple[Binding, ...] = ()
    checks: tuple[ArgCheck, ...] = ()
    failure_values: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"shapes": list(self.shapes), "symbols": [list(s) for s in self.symbols],
                "bindings": [[b.symbol, b.expr, list(b.args)] for b in self.bindings],
                "checks": [[c.arg, c.lhs, c.rhs, c.predicate, c.detail] for c in self.checks],
                "failure_values": {str(k): list(v) for k, v in self.failure_values.items()}}

    @staticmethod
    def from_json(d: dict) -> "SignaturePlan":
        return SignaturePlan(tuple(d["shapes"]), tuple(tuple(s) for s in d["symbols"]),
                             tuple(Binding(s, e, tuple(a)) for s, e, a in d["bindings"]),
                             tuple(ArgCheck(int(i), l, r, p, w) for i, l, r, p, w in d["checks"]),
                             {int(k): tuple(v) for k, v in d.get("failure_values", {}).items()})


@dataclass(frozen=True)
class FunctionSig:
    """A lowered graph function: ``@f(workspace, params...) -> (i32 status, i64 x D, results...)``.

    ``workspace_bytes``: the size of the ``memref<?xi8>`` workspace (its static arenas and
    those of the functions it calls), which the caller's session provides.
    """

    params: tuple[TensorSpec, ...]
    results: tuple[TensorSpec, ...]
    detail_symbols: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    plan: SignaturePlan = field(default_factory=SignaturePlan)
    workspace_bytes: int = 0

    def to_json(self) -> dict:
        return {"params": [p.to_json() for p in self.params], "results": [r.to_json() for r in self.results],
                "detail_symbols": list(self.detail_symbols), "checks": [c.to_json() for c in self.checks],
                "plan": self.plan.to_json(), "workspace_bytes": self.workspace_bytes}

    @staticmethod
    def from_json(d: dict) -> "FunctionSig":
        return FunctionSig(tuple(TensorSpec.from_json(p) for p in d["params"]),
                           tuple(TensorSpec.from_json(r) for r in d["results"]),
                           tuple(d.get("detail_symbols", ())),
                           tuple(Check.from_json(c) for c in d.get("checks", ())),
                           SignaturePlan.from_json(d["plan"]) if "plan" in d else SignaturePlan(),
                           int(d.get("workspace_bytes", 0)))


@dataclass(frozen=True)
class StateSpec:
    """A state buffer of the module (``relax.state``): ``shape[0]`` is its capacity in rows
    (static, or a symbol whose upper bound is ``max_rows``), the other dims are static."""

    name: str
    shape: tuple[str, ...]
    dtype: str
    max_rows: int

    @property
    def row_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.shape[1:])

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "max_rows": self.max_rows}

    @staticmethod
    def from_json(d: dict) -> "StateSpec":
        return StateSpec(str(d["name"]), tuple(str(x) for x in d["shape"]), str(d["dtype"]), int(d["max_rows"]))


@dataclass
class ExecutableMetadata:
    """Everything the runtime needs about a compiled module; ``extra`` holds further JSON
    entries recorded by other parts (e.g. ``blas``: the BLAS provider) verbatim."""

    detail_slots: int
    functions: dict[str, FunctionSig]
    target: str = "cpu"
    compile_time_s: float = 0.0
    extra: dict = field(default_factory=dict)
    #: state buffers, in the order every lowered function takes them (after the workspace)
    states: tuple[StateSpec, ...] = ()

    _OWN = ("format", "version", "detail_slots", "functions", "target", "compile_time_s", "states")

    def to_json(self) -> dict:
        out = {"format": FORMAT, "version": VERSION, "detail_slots": self.detail_slots,
               "functions": {n: f.to_json() for n, f in self.functions.items()},
               "target": self.target, "compile_time_s": self.compile_time_s,
               "states": [s.to_json() for s in self.states]}
        out.update({k: v for k, v in self.extra.items() if k not in self._OWN})
        return out

    @staticmethod
    def from_json(d: Any) -> "ExecutableMetadata":
        if not isinstance(d, dict):
            raise MetadataError("malformed metadata (not a JSON object)")
        if d.get("format") != FORMAT or d.get("version") not in READS:
            raise MetadataError(f"metadata format {d.get('format')!r} version {d.get('version')!r}; "
                                f"this relax_mlir reads {FORMAT!r} versions {', '.join(map(str, READS))}")
        try:
            return ExecutableMetadata(int(d["detail_slots"]),
                                      {str(n): FunctionSig.from_json(f) for n, f in d["functions"].items()},
                                      str(d.get("target", "cpu")), float(d.get("compile_time_s", 0.0)),
                                      {k: v for k, v in d.items() if k not in ExecutableMetadata._OWN},
                                      tuple(StateSpec.from_json(s) for s in d.get("states", ())))
        except (KeyError, TypeError, ValueError) as e:
            raise MetadataError(f"malformed metadata ({type(e).__name__}: {e})") from None

    def total_workspace(self) -> int:
        return max((f.workspace_bytes for f in self.functions.values()), default=0)


def find_check(meta: ExecutableMetadata, status: int) -> Optional[tuple[str, Check]]:
    """The function and check of a failure status (ids are unique in the module)."""
    for name, f in meta.functions.items():
        for c in f.checks:
            if c.id == status:
                return name, c
    return None
