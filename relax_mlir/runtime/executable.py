"""The Executable: compile relax IR once, run it on numpy / DLPack arrays of any valid shape.

::

    exe = relax_mlir.compile(text)            # target="cpu"; libraries=[path.so, ...]
    y = exe(x, w)                             # runs @main; numpy out (tuple when several)
    z = exe["other"](x)                       # any graph function
    exe.compile_time_s, exe.metadata          # seconds; plain JSON-able dict

Calling convention (see ``relax_mlir.transforms.lower_host``): each graph function is
lowered to ``@f(memref...) -> (i32 status, i64 x D details, memref results...)`` with
``llvm.emit_c_interface``; this module calls ``_mlir_ciface_f(result_struct*, desc*...)``
through the ExecutionEngine's packed wrapper. Arguments are C-contiguous arrays
(others are copied; DLPack-capable objects go through ``np.from_dlpack``), passed as
identity-layout memref descriptors. Every result buffer is owned by the caller (the
buffer deallocation pipeline guarantees it): it is copied into a numpy array and its
allocation freed with libc ``free`` right away, also when a check failed.

Errors (the process never aborts; the next call works normally):

* ``TypeError``: wrong number of arguments, or an element type that differs from the
  signature (``@main: argument #0 has dtype float64, expected float32 (f32)``);
* :class:`relax_mlir.ShapeError` (a ``ValueError``), checked before the call against
  the recorded symbolic signature::

      @main: argument #1: expected rank 2 for shape (n, 4), got rank 1 (shape (3,))
      @main: argument #1: expected shape (n, 4) with n = 3, got (5, 4)
      @main: argument #0: expected shape (2*k, 4), got (7, 4) (argument #0 dim 0: 2*k divides ...)

  and inside the compiled code (status != 0)::

      @main: relax.match_cast at model.mlir:7:8 of the result of relax.call_tir at ...:
          expected shape (2*k, 4) with n = 7, got (7, 4)
      @main: relax.assert at model.mlir:9:3: <message> does not hold with k = 3, m = 5 (3 != 5)

  i.e. ``@<function>: <what>: expected shape <symbolic shape> with <symbol = value, ...
  bound so far>, got <actual shape>`` (the ``with`` part is left out when nothing is bound).
"""

from __future__ import annotations

import ctypes
import os
import re
import time
from typing import Any, Optional, Sequence

import numpy as np
import sympy
from mlir import ir

from ..errors import ShapeError
from ..shapes import Dim, Shape, Truth, parse_dim, prove_le, symbol
from ..shapes.match import match_shapes

DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "i1": np.bool_,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
}

_libc = ctypes.CDLL(None)
_free = _libc.free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None

_DESC_CACHE: dict[int, type] = {}


def descriptor_class(rank: int) -> type:
    """ctypes struct of a ranked memref descriptor: {allocated, aligned, offset, sizes, strides}."""
    if rank not in _DESC_CACHE:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
        if rank > 0:
            fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
        _DESC_CACHE[rank] = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})
    return _DESC_CACHE[rank]


def runtime_libraries() -> list[str]:
    """The MLIR runner-utils libraries the JIT may need (memrefCopy, printing)."""
    import mlir
    out = []
    for base in mlir.__path__:
        p = os.path.join(base, "lib", "libmlir_c_runner_utils.so")
        if os.path.exists(p):
            out.append(p)
            break
    return out


# -- symbolic expressions as Python code -------------------------------------------------

def _py(e, names: dict[str, str]) -> str:
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return names[e.name]
    if isinstance(e, sympy.Add):
        return "(" + " + ".join(_py(a, names) for a in e.args) + ")"
    if isinstance(e, sympy.Mul):
        if any(a.is_Rational and not a.is_Integer for a in e.args):
            num, den = sympy.fraction(e)
            return f"(({_py(num, names)}) // ({_py(den, names)}))"
        return "(" + " * ".join(_py(a, names) for a in e.args) + ")"
    if isinstance(e, sympy.Pow) and e.exp.is_Integer:
        return f"({_py(e.base, names)} ** {int(e.exp)})"
    if isinstance(e, sympy.floor):
        num, den = sympy.fraction(sympy.together(e.args[0]))
        return f"(({_py(num, names)}) // ({_py(den, names)}))"
    if isinstance(e, sympy.Mod):
        return f"(({_py(e.args[0], names)}) % ({_py(e.args[1], names)}))"
    if isinstance(e, sympy.Min):
        return "min(" + ", ".join(_py(a, names) for a in e.args) + ")"
    if isinstance(e, sympy.Max):
        return "max(" + ", ".join(_py(a, names) for a in e.args) + ")"
    raise ValueError(f"cannot evaluate {e}")


def _fmt_shape(dims: Sequence[int]) -> str:
    return str(tuple(int(d) for d in dims))


def _fmt_bound(values: dict[str, int]) -> str:
    return (" with " + ", ".join(f"{k} = {v}" for k, v in values.items())) if values else ""


class _ParamChecker:
    """The parameter patterns of one function, compiled to Python over the actual dims."""

    def __init__(self, fname: str, params: list[dict]):
        self.fname = fname
        self.shapes = [Shape([parse_dim(d) if d != "?" else "?" for d in p["shape"]]) for p in params]
        self.dtypes = [p["dtype"] for p in params]
        self.np_dtypes = [DTYPES.get(d) for d in self.dtypes]
        names: dict[str, str] = {}
        placeholders = []
        for i, s in enumerate(self.shapes):
            dims = []
            for j in range(s.rank):
                ph = f"?a{i}_{j}"
                names[ph] = f"a[{i}][{j}]"
                dims.append(Dim(symbol(ph)))
            placeholders.append(Shape(dims))
        syms = set().union(*(s.symbols for s in self.shapes)) if self.shapes else set()
        known = [i for i, s in enumerate(self.shapes) if not s.has_unknown]
        m = match_shapes([self.shapes[i] for i in known], [placeholders[i] for i in known], syms,
                         names=[f"argument #{i}" for i in known])
        self.bindings = []   # (symbol, code, args it reads)
        self.checks = []     # (arg index, code lhs, code rhs, predicate, where)
        for s, d in m.bindings.items():
            code = compile(_py(d.expr, names), "<shape>", "eval")
            args = {int(x[2:].split("_")[0]) for x in d.symbols}
            self.bindings.append((s, code, args))
            if prove_le(0, d) is not Truth.TRUE:
                self.checks.append((max(args), compile("0", "<s>", "eval"), code, "le", f"{s} >= 0"))
        for lhs, rhs, where in m.checks:
            mm = re.match(r"argument #(\d+)", where)
            i = int(mm.group(1)) if mm else 0
            readable = re.sub(r"\?a(\d+)_(\d+)", lambda x: f"argument #{x.group(1)} dim {x.group(2)}", where)
            self.checks.append((i, compile(_py(lhs.expr, names), "<s>", "eval"),
                                compile(_py(rhs.expr, names), "<s>", "eval"), "eq", readable))
        self.checks.sort(key=lambda c: c[0])
        self.syms_of = [s.symbols for s in self.shapes]

    def check(self, arrays: list[np.ndarray]) -> None:
        for i, (a, s, dt, nd) in enumerate(zip(arrays, self.shapes, self.dtypes, self.np_dtypes)):
            if nd is None:
                raise TypeError(f"@{self.fname}: argument #{i} has element type {dt}, which numpy cannot hold")
            if a.dtype != nd:
                raise TypeError(f"@{self.fname}: argument #{i} has dtype {a.dtype}, expected {np.dtype(nd)} ({dt})")
            if a.ndim != s.rank:
                raise ShapeError(f"@{self.fname}: argument #{i}: expected rank {s.rank} for shape {s}, "
                                 f"got rank {a.ndim} (shape {_fmt_shape(a.shape)})")
        shp = [a.shape for a in arrays]
        env = {"a": shp}
        for i, lhs, rhs, pred, where in self.checks:
            lv, rv = eval(lhs, env), eval(rhs, env)
            if (lv != rv) if pred == "eq" else (lv > rv):
                bound = {}
                for s, code, args in self.bindings:
                    if s in self.syms_of[i] and all(j < i for j in args):
                        bound[s] = eval(code, env)
                detail = "" if re.fullmatch(r"argument #\d+ dim \d+", where) else f" ({where})"
                raise ShapeError(f"@{self.fname}: argument #{i}: expected shape {self.shapes[i]}"
                                 f"{_fmt_bound(bound)}, got {_fmt_shape(shp[i])}{detail}")


class Function:
    """One compiled graph function: ``fn(*arrays) -> array | tuple of arrays``."""

    def __init__(self, exe: "Executable", name: str, meta: dict):
        self.exe = exe
        self.name = name
        self.meta = meta
        self.nparams = len(meta["params"])
        self.checker = _ParamChecker(name, meta["params"])
        D = exe.metadata["detail_slots"]
        self.D = D
        self.result_dtypes = [DTYPES.get(r["dtype"]) for r in meta["results"]]
        self.result_ranks = [len(r["shape"]) for r in meta["results"]]
        self.single_scalar = (D == 0 and not meta["results"])
        fields = [("status", ctypes.c_int32)] + [(f"d{i}", ctypes.c_int64) for i in range(D)]
        fields += [(f"r{i}", descriptor_class(r)) for i, r in enumerate(self.result_ranks)]
        self.result_class = type(f"Results_{name}", (ctypes.Structure,), {"_fields_": fields})
        self._fn = exe._engine.lookup(name)

    def __call__(self, *args):
        if len(args) != self.nparams:
            raise TypeError(f"@{self.name} takes {self.nparams} argument(s), got {len(args)}")
        arrays = [_as_array(a) for a in args]
        self.checker.check(arrays)
        descs = [_descriptor(a) for a in arrays]
        res = self.result_class()
        if self.single_scalar:
            status = ctypes.c_int32(0)
            ptrs = [ctypes.pointer(d) for d in descs]
            packed = (ctypes.c_void_p * (len(ptrs) + 1))(
                *[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in ptrs],
                ctypes.cast(ctypes.pointer(status), ctypes.c_void_p))
            self._fn(packed)
            res.status = status.value
        else:
            ptrs = [ctypes.pointer(res)] + [ctypes.pointer(d) for d in descs]
            packed = (ctypes.c_void_p * len(ptrs))(*[ctypes.cast(ctypes.pointer(p), ctypes.c_void_p) for p in ptrs])
            self._fn(packed)
        del arrays  # kept alive through the call
        outs = self._collect(res)
        if res.status != 0:
            raise self.exe._failure(res.status, [getattr(res, f"d{i}") for i in range(self.D)])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _collect(self, res) -> list[np.ndarray]:
        outs, freed = [], set()
        for i, (rank, dt) in enumerate(zip(self.result_ranks, self.result_dtypes)):
            d = getattr(res, f"r{i}")
            shape = tuple(d.sizes[:rank]) if rank else ()
            n = int(np.prod(shape)) if shape else 1
            dtype = np.dtype(dt)
            if n == 0 or not d.aligned:
                arr = np.empty(shape, dtype)
            else:
                buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(d.aligned + d.offset * dtype.itemsize)
                arr = np.frombuffer(buf, dtype).reshape(shape).copy()
            outs.append(arr)
            if d.allocated and d.allocated not in freed:
                freed.add(d.allocated)
                _free(d.allocated)
        return outs


def _as_array(x) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        if hasattr(x, "__dlpack__"):
            x = np.from_dlpack(x)
        else:
            x = np.asarray(x)
    if not x.flags["C_CONTIGUOUS"] or not x.flags["ALIGNED"]:
        x = np.ascontiguousarray(x)
    return x


def _descriptor(a: np.ndarray):
    d = descriptor_class(a.ndim)()
    ptr = a.ctypes.data
    d.allocated = ptr
    d.aligned = ptr
    d.offset = 0
    if a.ndim:
        strides = [s // a.itemsize for s in a.strides] if a.size else [0] * a.ndim
        for i in range(a.ndim):
            d.sizes[i] = a.shape[i]
            d.strides[i] = strides[i]
    return d


class Executable:
    """A compiled module: call graph functions on arrays; see the module docstring."""

    def __init__(self, engine, context, metadata: dict, compile_time_s: float, libraries=()):
        self._engine = engine
        self._context = context
        self.metadata = metadata
        self.compile_time_s = compile_time_s
        self.libraries = list(libraries)
        self._functions: dict[str, Function] = {}
        self._checks: dict[int, tuple[str, dict]] = {}
        for fname, fm in metadata["functions"].items():
            for c in fm["checks"]:
                self._checks[int(c["id"])] = (fname, c)
        for fname in metadata["functions"]:  # prepare signature checks now, not on the first call
            self[fname]

    @property
    def functions(self) -> list[str]:
        return list(self.metadata["functions"])

    def __getitem__(self, name: str) -> Function:
        if name not in self.metadata["functions"]:
            raise KeyError(f"no graph function @{name} (functions: {', '.join(self.functions)})")
        if name not in self._functions:
            self._functions[name] = Function(self, name, self.metadata["functions"][name])
        return self._functions[name]

    def __call__(self, *args):
        return self["main"](*args)

    def _failure(self, status: int, details: list[int]) -> Exception:
        if status not in self._checks:
            return ShapeError(f"run-time check #{status} failed (no description recorded)")
        fname, c = self._checks[status]
        syms = self.metadata["functions"][fname]["detail_symbols"]
        values = {s: details[i] for i, s in enumerate(syms) if s in c.get("bound", [])}
        actual = details[len(syms):len(syms) + int(c.get("rank", 0))]
        kind = c.get("kind")
        if kind == "assert":
            try:
                lv = parse_dim(c["lhs"]).evaluate(values)
                rv = parse_dim(c["rhs"]).evaluate(values)
                op = "!=" if c.get("predicate", "eq") == "eq" else ">"
                tail = f" ({lv} {op} {rv})"
            except (KeyError, ValueError):
                tail = ""
            return ShapeError(f"@{fname}: {c['where']}: {c.get('message') or c['lhs'] + ' == ' + c['rhs']} "
                              f"does not hold{_fmt_bound(values)}{tail}")
        detail = c.get("detail", "")
        extra = "" if re.fullmatch(r"(value|argument #\d+) dim \d+", detail) else f" ({detail})"
        return ShapeError(f"@{fname}: {c['where']}: expected shape {c['expected']}{_fmt_bound(values)}, "
                          f"got {_fmt_shape(actual)}{extra}")


def compile_module(src, target: str = "cpu", libraries: Optional[Sequence[str]] = None) -> Executable:
    """Compile relax IR (text or Module) for ``target``; see :func:`relax_mlir.compile`."""
    from mlir.execution_engine import ExecutionEngine

    from .. import make_context
    from ..transforms.lower_host import host_metadata
    from ..transforms.pipeline import run_pipeline

    if target != "cpu":
        raise ValueError(f"unknown target '{target}' (available: cpu)")
    from ..pipelines.cpu import graph_stage, llvm_stage

    t0 = time.perf_counter()
    text = src if isinstance(src, str) else str(src)
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        run_pipeline(module, "builtin.module(" + ", ".join(graph_stage()) + ")")
        metadata = host_metadata(module.operation)
        run_pipeline(module, "builtin.module(" + ", ".join(llvm_stage()) + ")")
        libs = runtime_libraries() + [os.path.abspath(p) for p in (libraries or [])]
        engine = ExecutionEngine(module, opt_level=3, shared_libs=libs)
        engine.initialize()
    metadata["target"] = target
    exe = Executable(engine, ctx, metadata, 0.0, libraries or [])
    exe.compile_time_s = metadata["compile_time_s"] = time.perf_counter() - t0
    return exe
