"""The Executable: compile relax IR once, run it on numpy / DLPack arrays of any valid shape.

::

    exe = relax_mlir.compile(text)            # target="cpu"; libraries=[path.so, ...]
    y = exe(x, w)                             # runs @main; numpy out (tuple when several)
    z = exe["other"](x)                       # any graph function
    exe.compile_time_s, exe.metadata          # seconds; plain JSON-able dict
    exe.export("model.so")                    # ahead-of-time: one shared library
    exe = relax_mlir.load("model.so")         # in any process, without the compiler

Calling convention (see ``relax_mlir.transforms.lower_host``): each graph function is
lowered to ``@f(memref...) -> (i32 status, i64 x D details, memref results...)`` with
``llvm.emit_c_interface``; this module calls ``_mlir_ciface_f(result_struct*, desc*...)``
(``i32 _mlir_ciface_f(desc*...)`` when the status is the only result) directly with
ctypes. Where the symbol comes from is the only thing that differs between a compiled
and a loaded Executable: a *symbol resolver* gives its address, from the
ExecutionEngine (JIT, :func:`compile_module`) or from a ``ctypes.CDLL``
(:func:`relax_mlir.load`, see :mod:`relax_mlir.runtime.aot`). Everything else -- argument
checks, descriptors, results, failure messages -- is this one implementation, driven by
the JSON-able ``metadata`` only: the signature checks are compiled at compile time into
small Python expressions over the actual dims (``metadata["functions"][f]["plan"]``), so
calling never needs sympy, the shape library or the MLIR bindings. Arguments are C-contiguous arrays
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

Ahead of time (:mod:`relax_mlir.runtime.aot`): ``exe.export(path)`` translates the final
LLVM-dialect module (kept from the compile, not recompiled) to LLVM IR, compiles it with
``llc -O3 -relocation-model=pic`` and links it with ``cc -shared`` (plus the
``libraries=`` given to compile, with an rpath) into ONE file that also carries the
metadata (the exported symbol ``relax_mlir_metadata``, JSON) and an integrity trailer.
``relax_mlir.load(path)`` checks the file, ``dlopen``\\ s it and returns an Executable that
behaves exactly like the compiled one; loading and calling import neither the MLIR
bindings nor sympy. A file that is not a relax-mlir library, is truncated or corrupted,
or has another format version raises :class:`relax_mlir.LoadError`.
"""

from __future__ import annotations

import ctypes
import threading
import os
import re
import time
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import ShapeError

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

#: what the compiled check expressions may call (they come from the metadata, which a
#: loaded library carries: no other builtins)
_EVAL_GLOBALS = {"__builtins__": {"min": min, "max": max}}


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


# -- symbol resolvers: where the _mlir_ciface_<f> functions come from ---------------------

class SymbolResolver:
    """Gives the address of ``_mlir_ciface_<name>``; keeps whatever owns the code alive."""

    def address(self, name: str) -> int:
        raise NotImplementedError


class EngineResolver(SymbolResolver):
    """Symbols of an MLIR ExecutionEngine (JIT)."""

    def __init__(self, engine, context, module):
        self.engine, self.context, self.module = engine, context, module

    def address(self, name: str) -> int:
        # raw_lookup(x) looks up "_mlir_" + x (the packed-wrapper naming), so "ciface_f"
        # is the plain C-interface function "_mlir_ciface_f" itself.
        addr = self.engine.raw_lookup("ciface_" + name)
        if not addr:
            raise RuntimeError(f"no symbol _mlir_ciface_{name} in the compiled module")
        return addr


class LibraryResolver(SymbolResolver):
    """Symbols of a shared library opened with ctypes (an exported Executable)."""

    def __init__(self, lib: ctypes.CDLL, path: str):
        self.lib, self.path = lib, path

    def address(self, name: str) -> int:
        try:
            fn = getattr(self.lib, "_mlir_ciface_" + name)
        except AttributeError:
            raise RuntimeError(f"{self.path}: no symbol _mlir_ciface_{name}") from None
        return ctypes.cast(fn, ctypes.c_void_p).value


# -- symbolic expressions as Python code (compile time only) -----------------------------

def _py(e, names: dict[str, str]) -> str:
    import sympy
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


def signature_plan(params: list[dict], checks: list[dict]) -> dict:
    """Compile a function's parameter patterns and assert checks into Python expressions.

    The result is JSON-able and stored in the metadata (``plan``), so that the runtime
    (also a loaded library's) checks arguments without sympy or the shape library::

        {"shapes": ["(n, 4)", ...], "symbols": [["n"], ...],
         "bindings": [[symbol, expr over a[i][j], [arg indices]], ...],
         "checks": [[arg index, lhs expr, rhs expr, "eq" | "le", where], ...],
         "asserts": {check id: [lhs expr, rhs expr over v["symbol"]]}}
    """
    from ..shapes import Dim, Shape, Truth, parse_dim, prove_le, symbol
    from ..shapes.match import match_shapes

    shapes = [Shape([parse_dim(d) if d != "?" else "?" for d in p["shape"]]) for p in params]
    names: dict[str, str] = {}
    placeholders = []
    for i, s in enumerate(shapes):
        dims = []
        for j in range(s.rank):
            ph = f"?a{i}_{j}"
            names[ph] = f"a[{i}][{j}]"
            dims.append(Dim(symbol(ph)))
        placeholders.append(Shape(dims))
    syms = set().union(*(s.symbols for s in shapes)) if shapes else set()
    known = [i for i, s in enumerate(shapes) if not s.has_unknown]
    m = match_shapes([shapes[i] for i in known], [placeholders[i] for i in known], syms,
                     names=[f"argument #{i}" for i in known])
    bindings, out_checks = [], []
    for s, d in m.bindings.items():
        args = sorted({int(x[2:].split("_")[0]) for x in d.symbols})
        bindings.append([s, _py(d.expr, names), args])
        if prove_le(0, d) is not Truth.TRUE:
            out_checks.append([max(args), "0", _py(d.expr, names), "le", f"{s} >= 0"])
    for lhs, rhs, where in m.checks:
        mm = re.match(r"argument #(\d+)", where)
        i = int(mm.group(1)) if mm else 0
        readable = re.sub(r"\?a(\d+)_(\d+)", lambda x: f"argument #{x.group(1)} dim {x.group(2)}", where)
        out_checks.append([i, _py(lhs.expr, names), _py(rhs.expr, names), "eq", readable])
    out_checks.sort(key=lambda c: c[0])
    asserts = {}
    for c in checks:
        if c.get("kind") == "assert":
            try:
                lhs, rhs = parse_dim(c["lhs"]), parse_dim(c["rhs"])
                vn = {x: f"v[{x!r}]" for x in lhs.symbols | rhs.symbols}
                asserts[str(c["id"])] = [_py(lhs.expr, vn), _py(rhs.expr, vn)]
            except (KeyError, ValueError):
                pass
    return {"shapes": [str(s) for s in shapes], "symbols": [sorted(s.symbols) for s in shapes],
            "bindings": bindings, "checks": out_checks, "asserts": asserts}


def _fmt_shape(dims: Sequence[int]) -> str:
    return str(tuple(int(d) for d in dims))


def _fmt_bound(values: dict[str, int]) -> str:
    return (" with " + ", ".join(f"{k} = {v}" for k, v in values.items())) if values else ""


def _code(expr: str):
    return compile(expr, "<shape>", "eval")


class _ParamChecker:
    """The parameter patterns of one function (its ``plan``), run over the actual dims."""

    def __init__(self, fname: str, params: list[dict], plan: dict):
        self.fname = fname
        self.shapes = plan["shapes"]
        self.ranks = [len(p["shape"]) for p in params]
        self.dtypes = [p["dtype"] for p in params]
        self.np_dtypes = [DTYPES.get(d) for d in self.dtypes]
        self.bindings = [(s, _code(e), set(args)) for s, e, args in plan["bindings"]]
        self.checks = [(i, _code(l), _code(r), pred, where) for i, l, r, pred, where in plan["checks"]]
        self.syms_of = [set(s) for s in plan["symbols"]]

    def check(self, arrays: list[np.ndarray]) -> None:
        for i, (a, rank, dt, nd) in enumerate(zip(arrays, self.ranks, self.dtypes, self.np_dtypes)):
            if nd is None:
                raise TypeError(f"@{self.fname}: argument #{i} has element type {dt}, which numpy cannot hold")
            if a.dtype != nd:
                raise TypeError(f"@{self.fname}: argument #{i} has dtype {a.dtype}, expected {np.dtype(nd)} ({dt})")
            if a.ndim != rank:
                raise ShapeError(f"@{self.fname}: argument #{i}: expected rank {rank} for shape {self.shapes[i]}, "
                                 f"got rank {a.ndim} (shape {_fmt_shape(a.shape)})")
        shp = [a.shape for a in arrays]
        env = {"a": shp}
        for i, lhs, rhs, pred, where in self.checks:
            lv, rv = eval(lhs, _EVAL_GLOBALS, env), eval(rhs, _EVAL_GLOBALS, env)
            if (lv != rv) if pred == "eq" else (lv > rv):
                bound = {}
                for s, code, args in self.bindings:
                    if s in self.syms_of[i] and all(j < i for j in args):
                        bound[s] = eval(code, _EVAL_GLOBALS, env)
                detail = "" if re.fullmatch(r"argument #\d+ dim \d+", where) else f" ({where})"
                raise ShapeError(f"@{self.fname}: argument #{i}: expected shape {self.shapes[i]}"
                                 f"{_fmt_bound(bound)}, got {_fmt_shape(shp[i])}{detail}")


_SIGNATURES: dict[tuple, tuple[type, type]] = {}


def _ctypes_signature(D: int, result_ranks: tuple, param_ranks: tuple, single_scalar: bool) -> tuple[type, type]:
    """(result struct, CFUNCTYPE) of a C-interface entry point, created once per structure:
    ctypes caches POINTER() and CFUNCTYPE() types forever, so types made per function and
    per load() would leak."""
    key = (D, result_ranks, param_ranks, single_scalar)
    if key not in _SIGNATURES:
        fields = [("status", ctypes.c_int32)] + [(f"d{i}", ctypes.c_int64) for i in range(D)]
        fields += [(f"r{i}", descriptor_class(r)) for i, r in enumerate(result_ranks)]
        result_class = type("Results", (ctypes.Structure,), {"_fields_": fields})
        descs = [ctypes.POINTER(descriptor_class(r)) for r in param_ranks]
        if single_scalar:   # i32 _mlir_ciface_f(desc*...)
            proto = ctypes.CFUNCTYPE(ctypes.c_int32, *descs)
        else:               # void _mlir_ciface_f(results*, desc*...)
            proto = ctypes.CFUNCTYPE(None, ctypes.POINTER(result_class), *descs)
        _SIGNATURES[key] = (result_class, proto)
    return _SIGNATURES[key]


class Function:
    """One compiled graph function: ``fn(*arrays) -> array | tuple of arrays``."""

    def __init__(self, exe: "Executable", name: str, meta: dict):
        self.exe = exe
        self.name = name
        self.meta = meta
        self.nparams = len(meta["params"])
        self.checker = _ParamChecker(name, meta["params"], meta["plan"])
        D = exe.metadata["detail_slots"]
        self.D = D
        self.result_dtypes = [DTYPES.get(r["dtype"]) for r in meta["results"]]
        self.result_ranks = [len(r["shape"]) for r in meta["results"]]
        self.single_scalar = (D == 0 and not meta["results"])
        self.result_class, proto = _ctypes_signature(D, tuple(self.result_ranks), tuple(self.checker.ranks),
                                                     self.single_scalar)
        self._fn = proto(exe._resolver.address(name))

    def __call__(self, *args):
        if len(args) != self.nparams:
            raise TypeError(f"@{self.name} takes {self.nparams} argument(s), got {len(args)}")
        arrays = [_as_array(a) for a in args]
        self.checker.check(arrays)
        descs = [ctypes.byref(_descriptor(a)) for a in arrays]
        res = self.result_class()
        with self.exe._lock:  # static arenas are module globals: one call at a time
            if self.single_scalar:
                res.status = self._fn(*descs)
            else:
                self._fn(ctypes.byref(res), *descs)
        del arrays  # kept alive through the call
        outs = self._collect(res)
        if res.status != 0:
            raise self.exe._failure(res.status, [getattr(res, f"d{i}") for i in range(self.D)])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _collect(self, res) -> list[np.ndarray]:
        """Results as numpy arrays that OWN the buffers the compiled code allocated (no copy):
        the buffer is freed when the last array viewing it is garbage collected."""
        outs, owners = [], {}
        for i, (rank, dt) in enumerate(zip(self.result_ranks, self.result_dtypes)):
            d = getattr(res, f"r{i}")
            shape = tuple(d.sizes[:rank]) if rank else ()
            n = int(np.prod(shape)) if shape else 1
            dtype = np.dtype(dt)
            owner = None
            if d.allocated:
                owner = owners.get(d.allocated)
                if owner is None:
                    owner = owners[d.allocated] = _Buffer(d.allocated)
            if n == 0 or not d.aligned:
                arr = np.empty(shape, dtype)
            elif not _c_contiguous(shape, [d.strides[k] for k in range(rank)]):
                buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(d.aligned + d.offset * dtype.itemsize)
                arr = np.frombuffer(buf, dtype).reshape(shape).copy()
            else:
                buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(d.aligned + d.offset * dtype.itemsize)
                buf.owner = owner  # keeps the allocation alive as long as an array views it
                arr = np.frombuffer(buf, dtype).reshape(shape)
            outs.append(arr)
        return outs


class _Buffer:
    """One allocation returned by compiled code; freed with libc ``free`` when unreferenced."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __del__(self):
        _free(self.ptr)


def _c_contiguous(shape, strides) -> bool:
    expect = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expect:
            return False
        expect *= size
    return True


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
    """A compiled (or loaded) module: call graph functions on arrays; see the module docstring.

    ``resolver`` gives the code (:class:`EngineResolver` after :func:`compile_module`,
    :class:`LibraryResolver` after :func:`relax_mlir.load`); ``llvm_dialect`` returns the
    final LLVM-dialect module as text for :meth:`export` (``None`` for a loaded one, whose
    ``export`` copies its file).
    """

    def __init__(self, resolver: SymbolResolver, metadata: dict, compile_time_s: float = 0.0,
                 libraries=(), llvm_dialect: Optional[Callable[[], str]] = None,
                 source_path: Optional[str] = None):
        self._resolver = resolver
        self._lock = threading.Lock()
        self.metadata = metadata
        self.compile_time_s = compile_time_s
        self.libraries = list(libraries)
        self._llvm_dialect = llvm_dialect
        self._llvm_dialect_text: Optional[str] = None
        self.source_path = source_path
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

    def llvm_dialect_text(self) -> str:
        """The final LLVM-dialect module (printed once, on first use)."""
        if self._llvm_dialect_text is None:
            if self._llvm_dialect is None:
                raise RuntimeError("this Executable has no LLVM module (it was loaded from a library)")
            self._llvm_dialect_text = self._llvm_dialect()
        return self._llvm_dialect_text

    def export(self, path) -> str:
        """Write a self-contained shared library (code + metadata); see :mod:`relax_mlir.runtime.aot`."""
        from .aot import export_library
        return export_library(self, path)

    def _failure(self, status: int, details: list[int]) -> Exception:
        if status not in self._checks:
            return ShapeError(f"run-time check #{status} failed (no description recorded)")
        fname, c = self._checks[status]
        fm = self.metadata["functions"][fname]
        syms = fm["detail_symbols"]
        values = {s: details[i] for i, s in enumerate(syms) if s in c.get("bound", [])}
        actual = details[len(syms):len(syms) + int(c.get("rank", 0))]
        kind = c.get("kind")
        if kind == "assert":
            tail = ""
            code = fm["plan"]["asserts"].get(str(c["id"]))
            if code:
                try:
                    env = {"v": values}
                    lv, rv = (eval(_code(e), _EVAL_GLOBALS, env) for e in code)
                    op = "!=" if c.get("predicate", "eq") == "eq" else ">"
                    tail = f" ({lv} {op} {rv})"
                except Exception:  # a symbol not bound at the failure: leave the values out
                    tail = ""
            return ShapeError(f"@{fname}: {c['where']}: {c.get('message') or c['lhs'] + ' == ' + c['rhs']} "
                              f"does not hold{_fmt_bound(values)}{tail}")
        detail = c.get("detail", "")
        extra = "" if re.fullmatch(r"(value|argument #\d+) dim \d+", detail) else f" ({detail})"
        return ShapeError(f"@{fname}: {c['where']}: expected shape {c['expected']}{_fmt_bound(values)}, "
                          f"got {_fmt_shape(actual)}{extra}")


def _strip_relax_attributes(module) -> str:
    """Print a copy of the LLVM-dialect module without the ``relax.*`` attributes, which
    name the relax dialect (declared in Python, unknown to ``mlir-translate``)."""
    with module.context:
        clone = module.operation.clone()
        ops = [clone] + list(clone.regions[0].blocks[0].operations)
        for op in ops:
            for name in [a for a in op.attributes if isinstance(a, str) and a.startswith("relax.")]:
                del op.attributes[name]
        text = str(clone)
        clone.erase()
    return text


def _pipeline_options(options: Optional[dict]) -> dict:
    """``{"dispatch": False, "plan_memory": True}`` -> graph_stage keyword arguments (checked
    against the ``cpu`` pipeline's declared options)."""
    from ..transforms.registry import PIPELINES

    text = " ".join(f"{k.replace('_', '-')}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in (options or {}).items())
    return {k: v for k, v in vars(PIPELINES["cpu"].parse_options(text)).items()}


def compile_module(src, target: str = "cpu", libraries: Optional[Sequence[str]] = None,
                   options: Optional[dict] = None) -> Executable:
    """Compile relax IR (text or Module) for ``target``; see :func:`relax_mlir.compile`.

    ``options``: the target pipeline's options (``cpu{...}``), e.g. ``{"dispatch": False}``
    or ``{"fusion": False, "dispatch-min-flops": 0}``. Runtime libraries the module asks
    for (``relax.libraries``, set by relax-dispatch-library) are linked and kept in
    ``exe.libraries`` (so export() links them too)."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    from .. import make_context
    from ..transforms.lower_host import host_metadata
    from ..transforms.pipeline import run_pipeline

    if target != "cpu":
        raise ValueError(f"unknown target '{target}' (available: cpu)")
    from ..pipelines.cpu import graph_stage, llvm_stage
    from .libraries import library_metadata, library_paths, module_libraries, validate

    user_libraries = validate(libraries)   # before any work: a missing path is a CompileError
    t0 = time.perf_counter()
    text = src if isinstance(src, str) else str(src)
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        popts = _pipeline_options(options)
        schedules = popts.pop("schedules", None)
        run_pipeline(module, "builtin.module(" + ", ".join(graph_stage(**popts)) + ")")
        libraries = user_libraries + library_paths(module_libraries(module.operation))
        metadata = host_metadata(module.operation)
        metadata.update(library_metadata(module_libraries(module.operation)))
        for fm in metadata["functions"].values():
            fm["plan"] = signature_plan(fm["params"], fm["checks"])
        run_pipeline(module, "builtin.module(" + ", ".join(llvm_stage(schedules)) + ")")
        from ..transforms.apply_schedules import num_threads, openmp_library
        if schedules is not False and num_threads() > 1:
            libraries = libraries + [openmp_library()]
        libs = runtime_libraries() + [os.path.abspath(p) for p in (libraries or [])]
        engine = ExecutionEngine(module, opt_level=3, shared_libs=libs)
        engine.initialize()
    metadata["target"] = target
    exe = Executable(EngineResolver(engine, ctx, module), metadata, 0.0,
                     [os.path.abspath(p) for p in (libraries or [])],
                     llvm_dialect=lambda: _strip_relax_attributes(module))
    exe.compile_time_s = metadata["compile_time_s"] = time.perf_counter() - t0
    return exe
