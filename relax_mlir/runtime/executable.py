"""The Executable: run compiled relax functions on numpy / DLPack arrays of any valid shape.

::

    exe = relax_mlir.compile(text)            # see relax_mlir.compiler
    y = exe(x, w)                             # runs @main; numpy out (tuple when several)
    z = exe["other"](x)                       # any graph function; exe.functions lists them
    sess = exe.session()                      # explicit per-caller state (workspace, state buffers)
    y = sess["main"](x, w)                    # == sess(x, w)
    sess.state["k0"]                          # a state buffer (relax.state), updated in place
                                              # (GPU targets: read back from device memory)
    step = sess["decode"].bind_params(*ws)    # weights converted once; step(token) per call
    exe.compile_time_s, exe.metadata          # seconds; JSON (relax_mlir.runtime.abi)
    exe.export("model.so")                    # ahead-of-time: one shared library
    exe = relax_mlir.load("model.so")         # in any process, without the compiler

This module is only what a loaded library needs: argument marshalling, the calling
convention, sessions and failure messages; the compiler lives in :mod:`relax_mlir.compiler`.

Calling convention (see :mod:`relax_mlir.transforms.lower_host`): each graph function is
lowered to ``@f(workspace, states..., params...) -> (i32 status, i64 x D details, results...)``
with ``llvm.emit_c_interface``; this module calls ``_mlir_ciface_f(result_struct*, workspace*,
state*..., desc*...)`` (``i32 _mlir_ciface_f(workspace*, state*..., desc*...)`` when the
status is the only result) directly with ctypes. ``exe["f"].bind_params(*weights)``
converts trailing arguments once (:class:`PreparedCall`). Where the symbol comes from is the only thing that differs
between a compiled and a loaded Executable: a *symbol resolver* gives its address, from
the ExecutionEngine (JIT) or from a ``ctypes.CDLL`` (:func:`relax_mlir.load`, see
:mod:`relax_mlir.runtime.aot`). Everything else is this one implementation, driven by
the typed metadata only (:class:`relax_mlir.runtime.abi.ExecutableMetadata`): the
signature checks were compiled into small Python expressions over the actual dims, so
calling never needs sympy, the shape library or the MLIR bindings. Arguments are
C-contiguous arrays (others are copied; DLPack-capable objects go through
``np.from_dlpack``), passed as identity-layout memref descriptors. Every result buffer is
owned by the caller: the numpy array returned views it without a copy, its ``base`` an
:class:`_Allocation` (freed with libc ``free`` when the last array viewing it goes).

The call path costs a few microseconds of Python (see "the call path" below): per
function, one generated Python function does the whole call of plain arrays (dtype,
rank and every shape relation in one expression, the data addresses, one
``struct.pack_into`` of the descriptors into the session's call frame, the ctypes call
with addresses only, one ``unpack_from``, the result arrays); anything it does not take
(a copy to make, a DLPack object, an error to word) goes through the general path, which
raises exactly the errors below.

Sessions: the workspace a call writes (relax-plan-memory's static arenas) is a function
argument, owned by a :class:`Session`. ``exe(...)`` and ``exe["f"](...)`` use the calling
thread's default session, so threads call one executable concurrently with no shared
lock; ``exe.session()`` makes an explicit one (state that must survive calls, such as an
LLM's KV cache, lives in a session). One exported ``.so`` loaded twice gives two
executables with their own sessions: nothing is shared through module globals.

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
      @main: relax.call_tir at model.mlir:4:8: division by zero in the dimension n // m with n = 5, m = 0
      @main: result #0 of relax.call_tir at ...: negative size n - m = -2 in shape (n - m) with n = 1, m = 3
      @main: relax.call_tir at ...: the dimension n*n*n*n overflows int64 with n = 65536

* :class:`relax_mlir.IndexOutOfRangeError` (an ``IndexError``): an index of ``relax.take``
  out of range (``@main: relax.take axis 0 at model.mlir:3:8: index 7 is out of range for
  a dim of size 5 (indices must lie in [-5, 5)) with n = 5``);

  i.e. ``@<function>: <what>: expected shape <symbolic shape> with <symbol = value, ...
  bound so far>, got <actual shape>`` (the ``with`` part is left out when nothing is bound);
* ``MemoryError``: an allocation of the compiled code failed
  (``@main: result #0 of relax.call_tir at ...: cannot allocate 4000000000000000 bytes ...``).

Ahead of time (:mod:`relax_mlir.runtime.aot`): ``exe.export(path)`` writes ONE shared
library carrying the code and the metadata; ``relax_mlir.load(path)`` returns an
Executable that behaves exactly like the compiled one.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import threading
import weakref
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import IndexOutOfRangeError, ShapeError
from . import abi
from .abi import PACKED_PREFIX, ExecutableMetadata, FunctionSig, find_check

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

    def packed_address(self, name: str) -> int:
        """The address of ``_mlir_relax_packed_<name>`` (a wide function's one-argument entry)."""
        raise NotImplementedError


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

    def packed_address(self, name: str) -> int:
        try:
            fn = getattr(self.lib, PACKED_PREFIX + name)
        except AttributeError:
            raise RuntimeError(f"{self.path}: no symbol {PACKED_PREFIX}{name} (@{name} takes more than "
                               f"{abi.MAX_DIRECT_ARGS} C arguments: export it again with this relax_mlir)") from None
        return ctypes.cast(fn, ctypes.c_void_p).value


def _fmt_shape(dims: Sequence[int]) -> str:
    return str(tuple(int(d) for d in dims))


def _fmt_bound(values: dict[str, int]) -> str:
    return (" with " + ", ".join(f"{k} = {v}" for k, v in values.items())) if values else ""


def _code(expr: str):
    return compile(expr, "<shape>", "eval")


_ARG_REF = re.compile(r"a\[(\d+)\]")


class _ParamChecker:
    """The parameter patterns of one function (its :class:`~relax_mlir.runtime.abi.SignaturePlan`),
    run over the actual dims.

    The dim relations are compiled into ONE Python function (``a`` -> all hold?), so a call
    evaluates them without an ``eval`` per check; only a failure takes the slow path
    (:meth:`explain`), which finds the first failing check and words the error."""

    def __init__(self, fname: str, sig: FunctionSig):
        plan = sig.plan
        self.fname = fname
        self.shapes = plan.shapes
        self.ranks = [len(p.shape) for p in sig.params]
        self.dtypes = [p.dtype for p in sig.params]
        self.np_dtypes = [DTYPES.get(d) for d in self.dtypes]
        self.bindings = [(b.symbol, _code(b.expr), set(b.args)) for b in plan.bindings]
        self.plan_checks = plan.checks
        self.checks = [(c.arg, _code(c.lhs), _code(c.rhs), c.predicate, c.detail) for c in plan.checks]
        self.syms_of = [set(s) for s in plan.symbols]
        self._all = self._compile(plan.checks)

    @staticmethod
    def conditions(checks) -> str:
        """The checks as ONE Python condition over ``a`` (the argument shapes)."""
        return " and ".join(f"({c.lhs}) == ({c.rhs})" if c.predicate == "eq" else f"({c.lhs}) <= ({c.rhs})"
                            for c in checks)

    @classmethod
    def _compile(cls, checks) -> Callable[[list], bool]:
        """``f(a) -> bool``: every check holds (False also when one divides by zero)."""
        if not checks:
            return lambda a: True
        src = "def _holds(a):\n    try:\n        return " + cls.conditions(checks) + \
              "\n    except ZeroDivisionError:\n        return False\n"
        env = dict(_EVAL_GLOBALS, ZeroDivisionError=ZeroDivisionError)
        exec(compile(src, "<shape checks>", "exec"), env)
        return env["_holds"]

    def check_types(self, arrays: list[np.ndarray], start: int = 0) -> None:
        """dtype and rank of ``arrays``, which are the arguments from ``start`` on."""
        for i, a in enumerate(arrays, start):
            nd = self.np_dtypes[i]
            if a.dtype != nd:
                dt = self.dtypes[i]
                if nd is None:
                    raise TypeError(f"@{self.fname}: argument #{i} has element type {dt}, which numpy cannot hold")
                raise TypeError(f"@{self.fname}: argument #{i} has dtype {a.dtype}, expected {np.dtype(nd)} ({dt})")
            if a.ndim != self.ranks[i]:
                raise ShapeError(f"@{self.fname}: argument #{i}: expected rank {self.ranks[i]} for shape "
                                 f"{self.shapes[i]}, got rank {a.ndim} (shape {_fmt_shape(a.shape)})")

    def check(self, arrays: list[np.ndarray]) -> None:
        self.check_types(arrays)
        shp = [a.shape for a in arrays]
        if not self._all(shp):
            self.explain(shp)

    def partial(self, nlead: int, bound: list) -> list:
        """The checks left once the arguments from ``nlead`` on have the shapes ``bound``:
        those among bound arguments only are run now (a ShapeError here), the others
        (which involve a leading argument) are returned."""
        shp = [None] * nlead + list(bound)
        own = [c for c in self.plan_checks
               if all(int(k) >= nlead for k in _ARG_REF.findall(c.lhs + " " + c.rhs))]
        rest = [c for c in self.plan_checks if c not in own]
        if not self._compile(own)(shp):
            self.explain(shp)
        return rest

    def explain(self, shp: list) -> None:
        """Raise the ShapeError of the first failing check (the slow path)."""
        env = {"a": shp}
        for i, lhs, rhs, pred, detail in self.checks:
            try:
                lv, rv = eval(lhs, _EVAL_GLOBALS, env), eval(rhs, _EVAL_GLOBALS, env)
            except ZeroDivisionError:
                lv, rv, detail = None, None, (detail + "; " if detail else "") + "a divisor is 0"
            except TypeError:   # a check over leading arguments not given yet (partial)
                continue
            if lv is None or ((lv != rv) if pred == "eq" else (lv > rv)):
                bound = {}
                for s, code, args in self.bindings:
                    if s in self.syms_of[i] and all(j < i for j in args):
                        try:
                            bound[s] = eval(code, _EVAL_GLOBALS, env)
                        except (ZeroDivisionError, TypeError):
                            pass
                extra = f" ({detail})" if detail else ""
                raise ShapeError(f"@{self.fname}: argument #{i}: expected shape {self.shapes[i]}"
                                 f"{_fmt_bound(bound)}, got {_fmt_shape(shp[i])}{extra}")
        raise ShapeError(f"@{self.fname}: the argument shapes do not satisfy the signature")


_SIGNATURES: dict[tuple, tuple[type, type]] = {}
_DIRECT: dict[tuple, type] = {}


def _ctypes_signature(D: int, result_ranks: tuple, param_ranks: tuple, single_scalar: bool,
                      n_states: int = 0) -> tuple[type, type]:
    """(result struct, CFUNCTYPE) of a C-interface entry point, created once per structure:
    ctypes caches POINTER() and CFUNCTYPE() types forever, so types made per function and
    per load() would leak. The workspace and the ``n_states`` state buffers (1-D byte
    memrefs) come before the parameters. No prototype (None) beyond ctypes' argument limit."""
    key = (D, result_ranks, param_ranks, single_scalar, n_states)
    if key not in _SIGNATURES:
        fields = [("status", ctypes.c_int32)] + [(f"d{i}", ctypes.c_int64) for i in range(D)]
        fields += [(f"r{i}", descriptor_class(r)) for i, r in enumerate(result_ranks)]
        result_class = type("Results", (ctypes.Structure,), {"_fields_": fields})
        descs = [ctypes.POINTER(descriptor_class(1))] * (1 + n_states)
        descs += [ctypes.POINTER(descriptor_class(r)) for r in param_ranks]
        if len(descs) + (not single_scalar) > abi.MAX_DIRECT_ARGS:   # a wide function: no ctypes prototype
            proto = None
        elif single_scalar:   # i32 _mlir_ciface_f(workspace*, desc*...)
            proto = ctypes.CFUNCTYPE(ctypes.c_int32, *descs)
        else:               # void _mlir_ciface_f(results*, workspace*, desc*...)
            proto = ctypes.CFUNCTYPE(None, ctypes.POINTER(result_class), *descs)
        _SIGNATURES[key] = (result_class, proto)
    return _SIGNATURES[key]


def _direct_signature(nargs: int, single_scalar: bool) -> type:
    """The CFUNCTYPE the call path uses: every argument an address (``c_void_p`` from a
    Python int, the cheapest conversion ctypes has), one type per arity."""
    key = (nargs, single_scalar)
    if key not in _DIRECT:
        _DIRECT[key] = ctypes.CFUNCTYPE(ctypes.c_int32 if single_scalar else None, *[ctypes.c_void_p] * nargs)
    return _DIRECT[key]


# -- the call path -------------------------------------------------------------------------
#
# A call costs a few microseconds of Python; what it spends them on (all three in ONE
# generated function per Function, :func:`_call_entry`; a PreparedCall runs its own
# argument stub, then :meth:`Function._run`):
#   1. the *argument lines* read each argument's dtype, shape and data address and
#      evaluate every shape check in one expression (anything else: the general path,
#      :meth:`Function._call`, converts or raises the exact error);
#   2. under the session's lock, one ``struct.pack_into`` writes the descriptor words into
#      the session's *call frame* of the function (:class:`_Frame`: ctypes memory made once
#      per session and function, whose addresses form the argument tuple passed as is),
#      ctypes calls the entry point, one ``unpack_from`` reads status, details and results;
#   3. the *result lines* wrap each result buffer in an ndarray without copying, owned by
#      an :class:`_Allocation` (libc ``free`` when the last array viewing it goes).
# Before: ~18 us per call (a ctypes struct and byref per argument, ``ndarray.ctypes``,
# ctypes field reads, an array type per result size); now ~4-5 us (bench/bench_kernels.py).

def _row_major(dims: Sequence[str]) -> list[str]:
    """Strides (in elements) of an identity-layout memref of sizes ``dims`` (Python texts)."""
    return ["*".join(dims[k + 1:]) or "1" for k in range(len(dims))]


def _desc_format(ranks: Sequence[int]) -> str:
    """``struct`` format of consecutive memref descriptors of these ranks."""
    return "@" + "".join("PPq" + "q" * (2 * r) for r in ranks)


def _arg_lines(ranks: Sequence[int], dtypes: Sequence, checks: Sequence, fail: str) -> tuple[list[str], list[str]]:
    """The argument half of a generated call: lines (in a function of ``args``, ``bound``)
    that bind each argument's data address ``p<i>`` and shape ``s<i>``, or run ``fail``
    when the fast path does not apply; and the descriptor words as expressions."""
    n = len(ranks)
    src: list[str] = []
    if n:
        src.append(f"    {''.join(f'a{i}, ' for i in range(n))}= args")
        src += [f"    if _type(a{i}) is not _ndarray or a{i}.dtype is not _DT{i}:\n        {fail}" for i in range(n)]
        src += [f"    s{i} = a{i}.shape" for i in range(n)]
        src.append("    if " + " or ".join(f"_len(s{i}) != {r}" for i, r in enumerate(ranks)) + f":\n        {fail}")
    if checks:
        src += [f"    a = ({''.join(f's{i}, ' for i in range(n))}) + bound", "    try:",
                f"        if not ({_ParamChecker.conditions(checks)}):", f"            {fail}",
                "    except ZeroDivisionError:", f"        {fail}"]
    if n:
        src.append("    try:")
        src += [f"        p{i} = _addressof(_from_buffer(a{i}))" for i in range(n)]
        src.append(f"    except (TypeError, ValueError, BufferError):\n        {fail}")
        align = [f"p{i} % {dt.alignment}" for i, dt in enumerate(dtypes) if dt is not None and dt.alignment > 1]
        if align:
            src.append(f"    if {' or '.join(align)}:\n        {fail}")
    words: list[str] = []
    for i, r in enumerate(ranks):
        dims = [f"s{i}[{k}]" for k in range(r)]
        words += [f"p{i}", f"p{i}", "0"] + dims + _row_major(dims)
    return src, words


def _arg_env(dtypes: Sequence) -> dict:
    env = dict(_EVAL_GLOBALS, _ndarray=np.ndarray, _type=type, _len=len, _addressof=ctypes.addressof,
               _from_buffer=ctypes.c_char.from_buffer, TypeError=TypeError, ValueError=ValueError,
               BufferError=BufferError, ZeroDivisionError=ZeroDivisionError)
    env.update({f"_DT{i}": dt for i, dt in enumerate(dtypes)})
    return env


def _arg_stub(ranks: Sequence[int], dtypes: Sequence, checks: Sequence) -> Callable[[tuple, tuple], Optional[tuple]]:
    """Generated ``f(args, bound) -> words | None``: the memref descriptor words of ``args``
    (the first ``len(ranks)`` parameters; ``bound``: the shapes of the others, those a
    :class:`PreparedCall` holds), when every argument is a plain ndarray of exactly its
    parameter's dtype and rank, writable, C-contiguous and aligned, and the shapes satisfy
    ``checks``; otherwise None, and the caller takes the general path (conversion, or the
    error of :class:`_ParamChecker`). The data address comes from ``ctypes.c_char.from_buffer``
    (which refuses a read-only, non-contiguous or empty array: the general path has those),
    a few times cheaper than ``ndarray.ctypes``."""
    lines, words = _arg_lines(ranks, dtypes, checks, "return None")
    src = ["def _stub(args, bound):"] + lines + [f"    return ({''.join(w + ', ' for w in words)})"]
    env = _arg_env(dtypes)
    exec(compile("\n".join(src) + "\n", "<argument stub>", "exec"), env)
    return env["_stub"]


def _words(arrays: Sequence[np.ndarray]) -> list[int]:
    """The general path's descriptor words (any array the stub refused, once converted)."""
    out: list[int] = []
    for a in arrays:
        p = a.ctypes.data
        out += (p, p, 0)
        out += a.shape
        stride = 1
        strides = []
        for d in reversed(a.shape):
            strides.append(stride)
            stride *= d
        out += reversed(strides)
    return out


def _result_lines(bases: Sequence[int], ranks: Sequence[int], dtypes: Sequence[np.dtype]) -> list[str]:
    """The result half of a generated call: lines (in a function holding the unpacked
    result struct ``v``; result i's descriptor at ``v[bases[i]]``) that return the results
    as ndarrays over the compiled code's buffers, no copy. The common case (an owned,
    non-empty, row-major buffer) makes an ndarray on an :class:`_Allocation` directly;
    anything else (empty, strided, no owner, a buffer two results share) goes through
    :func:`_result`."""
    nres = len(ranks)
    if nres == 0:
        return ["    return ()"]
    src = ["    owners = {}"] if nres > 1 else []
    names = []
    for i, (k, r, dt) in enumerate(zip(bases, ranks, dtypes)):
        sz = [f"v[{k + 3 + j}]" for j in range(r)]
        st = [f"v[{k + 3 + r + j}]" for j in range(r)]
        cond = [f"v[{k}]", f"v[{k + 1}]"] + sz
        cond += [f"({sz[j]} == 1 or {st[j]} == {e})" for j, e in enumerate(_row_major(sz))]
        owners = "owners" if nres > 1 else "{}"
        if nres > 1:
            cond.append(f"v[{k}] not in owners")
        shape = f"v[{k + 3}:{k + 3 + r}]" if r else "()"
        src.append(f"    if {' and '.join(cond)}:")
        own = f"_Allocation.from_address(v[{k}])"
        if nres > 1:
            src.append(f"        o = owners[v[{k}]] = {own}")
            own = "o"
        src.append(f"        r{i} = _ndarray({shape}, _RT{i}, {own}, v[{k + 1}] - v[{k}] + v[{k + 2}] * {dt.itemsize})")
        src.append(f"    else:\n        r{i} = _result(v, {k}, {r}, _RT{i}, {owners})")
        names.append(f"r{i}")
    src.append(f"    return {names[0] if nres == 1 else '(' + ''.join(n + ', ' for n in names) + ')'}")
    return src


def _result_env(dtypes: Sequence[np.dtype]) -> dict:
    env = {"_ndarray": np.ndarray, "_Allocation": _Allocation, "_result": _result}
    env.update({f"_RT{i}": dt for i, dt in enumerate(dtypes)})
    return env


def _result_stub(bases: Sequence[int], ranks: Sequence[int], dtypes: Sequence[np.dtype]) -> Callable[[tuple], object]:
    """Generated ``f(v) -> array | tuple``: the results of the unpacked result struct ``v``
    (:func:`_result_lines`)."""
    env = dict(_result_env(dtypes), __builtins__={})
    exec(compile("\n".join(["def _stub(v):"] + _result_lines(bases, ranks, dtypes)) + "\n", "<result stub>", "exec"),
         env)
    return env["_stub"]


def _call_entry(fn: "Function", dtypes: Sequence, result_dtypes: Sequence[np.dtype]) -> Callable:
    """Generated ``f(session, args)``: the whole call of ``fn`` in one Python frame, the
    argument stub's lines (anything they refuse: :meth:`Function._call`, the general
    path), the session's lock, one ``pack_into`` of the words into the session's frame,
    the ctypes call, one ``unpack_from``, then the result stub's lines."""
    ranks = fn.checker.ranks
    lines, words = _arg_lines(ranks, dtypes, fn.checker.plan_checks, "return _general(session, args)")
    src = ["def _entry(session, args):", f"    if _len(args) != {len(ranks)}:", "        return _general(session, args)",
           "    bound = ()"] + lines + [
        "    busy = session._busy",
        "    if not busy.acquire(False):",
        "        raise _busy_error()",
        "    try:",
        "        frame = session._frames.get(_fn)",
        "        if frame is None:",
        "            frame = session._frames[_fn] = _Frame(_fn, session)",
        f"        _pack(frame.descs, 0, {', '.join(words)})"]
    if fn.single_scalar:
        src.append("        v = (_direct(*frame.args),)")
    else:
        src += ["        _direct(*frame.args)", "        v = _unpack(frame.res)"]
    src += ["    finally:", "        busy.release()", "    if v[0]:", "        raise _failure(v)"]
    src += _result_lines(fn._bases, fn.result_ranks, result_dtypes)
    env = dict(_arg_env(dtypes), **_result_env(result_dtypes))
    env.update(_fn=fn, _general=fn._call, _busy_error=fn._busy_error, _Frame=_Frame, _pack=fn._pack,
               _direct=fn._direct, _unpack=getattr(fn, "_unpack", None), _failure=fn._failure)
    exec(compile("\n".join(src) + "\n", f"<call of @{fn.name}>", "exec"), env)
    return env["_entry"]


def _result(v: tuple, k: int, rank: int, dtype: np.dtype, owners: dict) -> np.ndarray:
    """One result of the unpacked result struct ``v`` (its descriptor at ``v[k]``), any case:
    empty or null (a fresh empty array), strided (copied out), without an owner (a view), or
    in a buffer an earlier result already owns."""
    al, ap, off = v[k], v[k + 1], v[k + 2]
    shape = v[k + 3:k + 3 + rank]
    strides = v[k + 3 + rank:k + 3 + 2 * rank]
    owner = None
    if al:
        owner = owners.get(al)
        if owner is None:
            owner = owners[al] = _Allocation.from_address(al)
    n = 1
    for d in shape:
        n *= d
    if n == 0 or not ap:
        return np.empty(shape, dtype)
    base, at = (owner, ap - al + off * dtype.itemsize) if owner is not None else (_Memory.from_address(ap), off * dtype.itemsize)
    if _c_contiguous(shape, strides):
        return np.ndarray(shape, dtype, base, at)
    return np.ndarray(shape, dtype, base, at, tuple(s * dtype.itemsize for s in strides)).copy()


class _Frame:
    """A function's call memory in one session: the result struct and the parameter
    descriptors, and the argument tuple (their addresses and the session's buffers) passed
    to the entry point as is. Only the call holding the session's lock writes it."""

    __slots__ = ("res", "descs", "base", "args", "full", "argv")

    def __init__(self, fn: "Function", session: "Session"):
        self.res = None if fn.single_scalar else fn.result_class()
        words = sum(3 + 2 * r for r in fn.checker.ranks)
        self.descs = (ctypes.c_int64 * max(words, 1))()
        self.base = ctypes.addressof(self.descs)
        addrs, at = [], self.base
        for r in fn.checker.ranks:
            addrs.append(at)
            at += 8 * (3 + 2 * r)
        head = () if self.res is None else (ctypes.addressof(self.res),)
        #: the entry point's arguments; ``args``: what the call passes (a wide function: the
        #: address of ``argv``, the array of them, see relax-packed-entries)
        self.full = head + session._addrs + tuple(addrs)
        self.argv, self.args = fn._entry_args(self.full)


class Function:
    """One compiled graph function: ``fn(*arrays) -> array | tuple of arrays``.

    Called directly it runs in the calling thread's default session of its executable;
    ``sess[name]`` gives the same function bound to an explicit :class:`Session`.
    """

    def __init__(self, exe: "Executable", name: str, sig: FunctionSig):
        self.exe = exe
        self.name = name
        self.sig = sig
        self.nparams = len(sig.params)
        self.checker = _ParamChecker(name, sig)
        D = exe._meta.detail_slots
        self.D = D
        self.result_dtypes = [DTYPES.get(r.dtype) for r in sig.results]
        self.result_ranks = [len(r.shape) for r in sig.results]
        self.single_scalar = (D == 0 and not sig.results)
        n_states = len(exe._meta.states)
        nargs = (0 if self.single_scalar else 1) + 1 + n_states + self.nparams
        #: more arguments than ctypes passes: called through the packed entry (one argv pointer)
        self.packed = nargs > abi.MAX_DIRECT_ARGS
        self.result_class, proto = _ctypes_signature(D, tuple(self.result_ranks), tuple(self.checker.ranks),
                                                     self.single_scalar, n_states)
        address = exe._resolver.address(name)
        #: the typed prototype (None for a wide function, which only the packed entry calls)
        self._fn = proto(address) if proto is not None else None
        if self.packed:
            address = exe._resolver.packed_address(name)
        # the call path (see above): stubs, formats and the entry point taking addresses
        exact = [np.dtype(d) if d is not None else None for d in self.checker.np_dtypes]
        self._args = _arg_stub(self.checker.ranks, exact, self.checker.plan_checks)
        self._pack = struct.Struct(_desc_format(self.checker.ranks)).pack_into
        self._direct = _direct_signature(1 if self.packed else nargs, self.single_scalar)(address)
        self._bases: list[int] = []
        if not self.single_scalar:
            layout = struct.Struct("@i" + "q" * D + _desc_format(self.result_ranks)[1:])
            if layout.size != ctypes.sizeof(self.result_class):   # struct's native alignment is C's
                raise RuntimeError(f"@{name}: result struct of {ctypes.sizeof(self.result_class)} bytes, "
                                   f"unpacked as {layout.size}")
            self._unpack = layout.unpack_from
            k = 1 + D
            for r in self.result_ranks:
                self._bases.append(k)
                k += 3 + 2 * r
        dts = [np.dtype(dt) for dt in self.result_dtypes]
        self._results = _result_stub(self._bases, self.result_ranks, dts)
        #: what a call runs: the generated whole call (a target overriding _call, e.g.
        #: vulkan's staging into device memory, keeps its own)
        self._entry = _call_entry(self, exact, dts) if type(self)._call is Function._call else self._call

    def _entry_args(self, full: tuple) -> tuple[Optional[ctypes.Array], tuple]:
        """(array kept alive, arguments of ``_direct``) for the entry point's arguments ``full``:
        ``full`` itself, or for a wide function the address of an array holding them."""
        if not self.packed:
            return None, full
        argv = (ctypes.c_void_p * len(full))(*full)
        return argv, (ctypes.addressof(argv),)

    def __repr__(self) -> str:
        params = ", ".join(f"({', '.join(p.shape)}) {p.dtype}" for p in self.sig.params)
        results = ", ".join(f"({', '.join(r.shape)}) {r.dtype}" for r in self.sig.results)
        return f"<relax_mlir function @{self.name}({params}) -> ({results})>"

    def __call__(self, *args):
        return self._entry(self.exe._default_session(), args)

    def bind_params(self, *params) -> "PreparedCall":
        """Bind the trailing ``params`` (a model's weights) once: checked and turned into
        memref descriptors now, reused by every call of the returned
        :class:`PreparedCall`, which takes only the leading arguments (in the calling
        thread's default session; ``sess[name].bind_params`` for a session's)."""
        return PreparedCall(self, None, params)

    def _on_device(self, a) -> bool:
        """Whether argument ``a`` already lives where the code reads it (a device target's
        DeviceArray): passed as it is, never converted."""
        return False

    def _bind(self, arrays: list) -> Optional[tuple]:
        """Arguments bound by a :class:`PreparedCall`, moved where the code reads them (a
        device target: its memory, once), or None: host memory, passed by descriptor."""
        return None

    def _call(self, session: "Session", args):
        """The general path (and the whole call of a target without a generated one):
        arguments the stub refuses are converted (copy, DLPack) or raise their error."""
        if len(args) != self.nparams:
            raise TypeError(f"@{self.name} takes {self.nparams} argument(s), got {len(args)}")
        words = self._args(args, ())
        if words is None:
            args = [_as_array(a) for a in args]
            self.checker.check(args)
            words = _words(args)
        return self._run(session, self._pack, words, None)   # ``args`` keeps the data alive

    def _run(self, session: "Session", pack, words, prepared: Optional["PreparedCall"]):
        """Write the descriptor ``words`` into the session's frame and call (under the
        session's lock, which makes the frame this call's); wrap the results after."""
        busy = session._busy
        if not busy.acquire(False):
            raise self._busy_error()
        try:  # no lock shared between sessions: calls in different sessions run at the same time
            frame = session._frames.get(self)
            if frame is None:
                frame = session._frames[self] = _Frame(self, session)
            pack(frame.descs, 0, *words)
            args = frame.args if prepared is None else prepared._frame_args(frame)
            if self.single_scalar:
                v = (self._direct(*args),)
            else:
                self._direct(*args)
                v = self._unpack(frame.res)
        finally:
            busy.release()
        if v[0]:
            raise self._failure(v)
        return self._results(v)

    def _busy_error(self) -> RuntimeError:
        return RuntimeError(f"@{self.name}: this session is running another call (one call at a time "
                            "per session: use one session per thread)")

    def _failure(self, v: tuple) -> Exception:
        """The error of a failed call (status ``v[0]``, details ``v[1:1+D]``). Its results
        are placeholders, or the output buffers allocated before the failing check (sizes
        that may be huge, pointers that may be null): freed here, never wrapped in arrays."""
        for ptr in {v[k] for k in self._bases} - {0}:
            _free(ptr)
        return self.exe._failure(v[0], list(v[1:1 + self.D]))


class _BoundFunction:
    """A function of a session: ``sess["f"](*arrays)``."""

    __slots__ = ("fn", "session")

    def __init__(self, fn: Function, session: "Session"):
        self.fn, self.session = fn, session

    def __call__(self, *args):
        return self.fn._entry(self.session, args)

    def bind_params(self, *params) -> "PreparedCall":
        """As :meth:`Function.bind_params`, calling in this session."""
        return PreparedCall(self.fn, self.session, params)

    def __repr__(self) -> str:
        return repr(self.fn)


class PreparedCall:
    """A function with its trailing parameters bound once (:meth:`Function.bind_params`):
    ``call(*leading)``. The bound arrays are checked (dtype, rank, the shape relations
    among themselves) and turned into memref descriptors once and kept alive here; each
    call converts and checks only the leading arguments (and the relations that involve
    them, compiled into this call's own argument stub). For a model, ~135 weight arguments
    cost nothing per call.

    The bound arrays are constant while the PreparedCall lives: an f32 matmul dispatched to
    the BLAS shim whose B operand is one of them (a weight) packs it once, on its first use,
    and reuses the packed copy (MKL builds on AVX-512 CPUs; see ``blas_shim.c``); the copies
    are shared by every live PreparedCall over the same arrays and freed with the last one.
    After changing a bound array in place, call :meth:`weights_changed`."""

    def __init__(self, fn: Function, session: Optional["Session"], params: Sequence):
        n = len(params)
        if n > fn.nparams:
            raise TypeError(f"@{fn.name} takes {fn.nparams} argument(s), {n} bound")
        self.fn, self.session = fn, session
        self.nlead = nlead = fn.nparams - n
        # kept alive: the descriptors point into them (a device target's own arrays pass as they are)
        self._arrays = [a if fn._on_device(a) else _as_array(a) for a in params]
        fn.checker.check_types(self._arrays, nlead)
        self._shapes = tuple(a.shape for a in self._arrays)
        rest = fn.checker.partial(nlead, self._shapes)
        self._run_checks = fn.checker._compile(rest)
        ranks = fn.checker.ranks
        exact = [np.dtype(d) if d is not None else None for d in fn.checker.np_dtypes[:nlead]]
        self._args = _arg_stub(ranks[:nlead], exact, rest)
        self._pack = struct.Struct(_desc_format(ranks[:nlead])).pack_into
        self._last: tuple = (None, (), None)   # (frame, its argument tuple, argv): one atomic read
        self._held = []
        #: a target whose code takes its arguments in device memory: the bound arrays there,
        #: moved once (Function._bind); the call passes them after the leading arguments
        self._device = fn._bind(self._arrays)
        if self._device is not None:
            return
        bound = _words(self._arrays)
        self._bound = (ctypes.c_int64 * max(len(bound), 1))(*bound)
        at, addrs = ctypes.addressof(self._bound), []
        for r in ranks[nlead:]:
            addrs.append(at)
            at += 8 * (3 + 2 * r)
        self._bound_addrs = tuple(addrs)
        # Bound f32 weights are constant from here on: the BLAS shim packs a matmul's B operand
        # lying in them once, on first use (libraries.WeightPacker), and frees the packed
        # copies when this object goes (the finalizer keeps the arrays alive until then).
        packer = fn.exe._weight_packer()
        self._held = packer.hold(self._arrays) if packer is not None else []
        if self._held:
            # (not at exit: the process's memory goes with it, and no ctypes call during shutdown)
            weakref.finalize(self, packer.release, self._held, list(self._arrays)).atexit = False

    def weights_changed(self) -> None:
        """Call after writing a bound array in place: the bound weights are taken as constant
        (library matmuls use a packed copy made on first use), and this drops those copies so
        that the next call repacks the new values (on a device target: copies them to the device again)."""
        if self._device is not None:
            self._device = self.fn._bind(self._arrays)
        if self._held:
            self.fn.exe._weight_packer().invalidate(self._held)

    def _frame_args(self, frame: _Frame) -> tuple:
        """The entry point's arguments in ``frame``: its leading descriptors, then the bound ones."""
        last = self._last
        if last[0] is frame:
            return last[1]
        full = frame.full[:len(frame.full) - len(self._bound_addrs)] + self._bound_addrs
        argv, args = self.fn._entry_args(full)
        self._last = (frame, args, argv)
        return args

    def __call__(self, *args):
        fn = self.fn
        if len(args) != self.nlead:
            raise TypeError(f"@{fn.name} takes {self.nlead} argument(s) besides the {len(self._arrays)} "
                            f"bound, got {len(args)}")
        session = self.session or fn.exe._default_session()
        if self._device is not None:
            return fn._call(session, tuple(args) + self._device)
        words = self._args(args, self._shapes)
        if words is None:   # the general path
            args = [_as_array(a) for a in args]
            fn.checker.check_types(args, 0)
            shapes = [a.shape for a in args] + list(self._shapes)
            if not self._run_checks(shapes):
                fn.checker.explain(shapes)
            words = _words(args)
        return fn._run(session, self._pack, words, self)

    def __repr__(self) -> str:
        return f"<relax_mlir prepared call of @{self.fn.name}: {self.nlead} argument(s), {len(self._arrays)} bound>"


class Session:
    """Per-caller state of an executable: what a running call may write besides its results.

    The *workspace*: the static arenas of relax-plan-memory (and those of
    the functions a function calls), one 64-byte aligned buffer of
    ``exe.workspace_bytes`` allocated once per session, so its pages stay mapped across
    calls. Each thread calling ``exe(...)`` gets its own default session; several threads
    call one executable at the same time, with no lock shared between them. One session
    runs one call at a time (a second concurrent call on it raises ``RuntimeError``).

    **State** (an LLM's KV cache): the module declares named state buffers
    (``relax.state``, see :mod:`relax_mlir.ops.state`); the session allocates each once
    (64-byte aligned, zero-filled) and keeps it in ``sess.state`` (name -> numpy array of
    shape ``(rows, *row shape)``, the state's dtype). Every call passes every state buffer
    to the compiled code after the workspace; ``relax.state_read`` views its rows in place
    and ``relax.state_write`` writes rows in place, so ``sess["prefill"](...)`` then
    ``sess["decode"](...)`` share a cache, and two sessions of one executable are two
    independent conversations. The arrays are the buffers (writing them from Python
    changes what the next call reads; the array objects never change). ``rows``:
    capacity per state (name -> rows, or an ``int`` for every state of a symbolic
    capacity), at most the declared upper bound, which is the default. :meth:`reset_state` zero-fills them.
    A device executable's session (vulkan, cuda: :class:`~relax_mlir.runtime.gpu_shared.DeviceSession`)
    keeps them in device memory instead: ``sess.state[name]`` reads one back as a numpy copy
    and ``sess.state[name] = a`` writes it.
    """

    def __init__(self, exe: "Executable", rows=None):
        self.exe = exe
        n = exe._meta.total_workspace()
        self._buffer = np.empty(n + _WS_ALIGN, np.uint8)
        desc = _byte_descriptor(_aligned(self._buffer), n)
        self._desc = desc
        self._ws = ctypes.byref(desc)
        self._busy = threading.Lock()
        self.state = self._state_mapping()
        self._state_descs = []
        #: name -> (rows, *row shape) of each state buffer
        self.state_shapes: dict[str, tuple] = {}
        for spec in exe._meta.states:
            shape = self.state_shapes[spec.name] = (_rows(spec, rows),) + spec.row_shape
            dtype = np.dtype(DTYPES[spec.dtype])
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            self._state_descs.append(_byte_descriptor(self._new_state(spec.name, shape, dtype, nbytes), nbytes))
        #: what every call passes before its parameters: the workspace, then the state buffers
        self._buffers = (self._ws,) + tuple(ctypes.byref(d) for d in self._state_descs)
        self._addrs = tuple(ctypes.addressof(d) for d in [desc] + self._state_descs)
        #: Function -> its call memory in this session (:class:`_Frame`), made on the first call
        self._frames: dict = {}

    def _state_mapping(self):
        """What ``sess.state`` is: name -> the buffer itself (host memory: numpy arrays)."""
        return {}

    def _new_state(self, name: str, shape: tuple, dtype: np.dtype, nbytes: int) -> int:
        """Allocate state ``name`` (zero-filled, 64-byte aligned), enter it in ``self.state``;
        returns its address (a device session allocates device memory instead)."""
        raw = np.zeros(nbytes + _WS_ALIGN, np.uint8)
        ptr = _aligned(raw)
        off = ptr - raw.ctypes.data
        self.state[name] = raw[off:off + nbytes].view(dtype).reshape(shape)
        return ptr

    @property
    def workspace_bytes(self) -> int:
        return int(self._desc.sizes[0])

    @property
    def state_bytes(self) -> int:
        return sum(int(d.sizes[0]) for d in self._state_descs)

    def reset_state(self) -> None:
        """Zero every state buffer (in place: ``sess.state``'s arrays stay the same objects)."""
        for a in self.state.values():
            a.fill(0)

    def __getitem__(self, name: str) -> _BoundFunction:
        return _BoundFunction(self.exe[name], self)

    def __call__(self, *args):
        return self.exe["main"]._entry(self, args)

    def __repr__(self) -> str:
        st = f", state {', '.join(f'{k} {v}' for k, v in self.state_shapes.items())}" if self.state_shapes else ""
        return f"<relax_mlir Session: {self.workspace_bytes} workspace bytes{st}, functions {self.exe.functions}>"


def _aligned(buf: np.ndarray) -> int:
    ptr = buf.ctypes.data
    return (ptr + _WS_ALIGN - 1) // _WS_ALIGN * _WS_ALIGN


def _byte_descriptor(ptr: int, nbytes: int):
    desc = descriptor_class(1)()
    desc.allocated = desc.aligned = ptr
    desc.offset = 0
    desc.sizes[0] = nbytes
    desc.strides[0] = 1
    return desc


def _rows(spec, rows) -> int:
    """The capacity a session gives state ``spec``: ``rows`` (a dict by name; an int applies to
    every state whose capacity is symbolic), else its bound."""
    if isinstance(rows, dict):
        r = rows.get(spec.name, spec.max_rows)
    else:
        r = spec.max_rows if rows is None or spec.shape[0].isdigit() else rows
    r = int(r)
    if not 0 <= r <= spec.max_rows:
        raise ValueError(f"state '{spec.name}': {r} rows requested, its capacity is at most {spec.max_rows} "
                         f"(shape {', '.join(spec.shape)})")
    return r


_WS_ALIGN = 64


#: the length of the ctypes array type that stands for any buffer a result views: one
#: type for every size (a ctypes array type per size would be a class made per distinct
#: result size); an array views only its own bytes of it
_ANY_SIZE = 1 << 62


class _Memory(ctypes.c_char * _ANY_SIZE):
    """Memory an array views and nobody frees (a result buffer without an owner)."""


class _Allocation(_Memory):
    """One allocation returned by compiled code, the ``base`` of the arrays viewing it;
    freed with libc ``free`` when the last of them is gone."""

    def __del__(self):
        _free(ctypes.addressof(self))


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


class Executable:
    """A compiled (or loaded) module: call graph functions on arrays; see the module docstring.

    ``resolver`` gives the code (an ExecutionEngine after :func:`relax_mlir.compile`,
    :class:`LibraryResolver` after :func:`relax_mlir.load`); ``metadata`` is the JSON form
    of :class:`relax_mlir.runtime.abi.ExecutableMetadata`; ``llvm_dialect`` returns the
    final LLVM-dialect module as text for :meth:`export` (``None`` for a loaded one, whose
    ``export`` copies its file).
    """

    #: the class of its sessions (a device executable's keep their state in device memory)
    session_class: type = Session

    def __init__(self, resolver: SymbolResolver, metadata: dict, compile_time_s: float = 0.0,
                 libraries=(), llvm_dialect: Optional[Callable[[], str]] = None,
                 source_path: Optional[str] = None):
        self._resolver = resolver
        self._meta = ExecutableMetadata.from_json(metadata)
        self.metadata = metadata
        self.compile_time_s = compile_time_s
        self.libraries = list(libraries)
        self._llvm_dialect = llvm_dialect
        self._llvm_dialect_text: Optional[str] = None
        self.source_path = source_path
        self.compile_options = None   # the CompileOptions of a compiled one (relax_mlir.compiler)
        self.cache_hit: Optional[bool] = None   # compiled with CompileOptions.cache: found in the cache?
        self.compile_phases: dict = {}   # seconds per compile stage (relax_mlir.compiler: CompileOptions.timing)
        self._local = threading.local()
        from .libraries import ThreadCount
        self._threads = ThreadCount(resolver)
        self._packer = None   # the shim's registry of bound weights (_weight_packer), on first bind
        self._functions: dict[str, Function] = {}
        for fname in self._meta.functions:  # prepare signature checks now, not on the first call
            self[fname]

    @property
    def functions(self) -> list[str]:
        return list(self._meta.functions)

    @property
    def num_threads(self) -> int:
        """OpenMP threads of this executable's parallel kernels, read by the code at every call:
        ``RELAX_MLIR_NUM_THREADS`` when the executable was created (compile() or load();
        default every core of the process's affinity), or what was set here since (None:
        the variable as set now; 0: every core). Regions below a work threshold run on one
        thread whatever the count (relax-omp-threads). 1 without parallel kernels."""
        return self._threads.get()

    @num_threads.setter
    def num_threads(self, n: Optional[int]) -> None:
        self._threads.set(n)

    @property
    def workspace_bytes(self) -> int:
        """Bytes of workspace each session holds (the static arenas)."""
        return self._meta.total_workspace()

    def session(self, rows=None) -> Session:
        """A new :class:`Session`: its own workspace and state buffers (``rows``: their
        capacity, an int for all or name -> rows; default the declared upper bounds)."""
        if isinstance(rows, dict):
            unknown = sorted(set(rows) - {s.name for s in self._meta.states})
            if unknown:
                raise KeyError(f"no state {', '.join(unknown)} (states: {', '.join(self.states) or 'none'})")
        return self.session_class(self, rows)

    @property
    def states(self) -> list[str]:
        """Names of the module's state buffers (``relax.state``), in argument order."""
        return [s.name for s in self._meta.states]

    def _weight_packer(self):
        """The relax_blas shim's registry of constant regions (bound weights that its products
        pack once; :class:`relax_mlir.runtime.libraries.WeightPacker`), or None."""
        if self._packer is None:
            from .libraries import weight_packer

            self._packer = weight_packer(self.libraries, getattr(self._resolver, "lib", None)) or False
        return self._packer or None

    def _default_session(self) -> Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = self.session_class(self)
        return s

    def __getitem__(self, name: str) -> Function:
        fn = self._functions.get(name)
        if fn is None:
            if name not in self._meta.functions:
                raise KeyError(f"no graph function @{name} (functions: {', '.join(self.functions)})")
            fn = self._functions[name] = Function(self, name, self._meta.functions[name])
        return fn

    def __call__(self, *args):
        return self["main"]._entry(self._default_session(), args)

    def __repr__(self) -> str:
        return f"<relax_mlir Executable ({self._meta.target}): {', '.join('@' + f for f in self.functions)}>"

    def llvm_dialect_text(self) -> str:
        """The final LLVM-dialect module (printed once, on first use)."""
        if self._llvm_dialect_text is None:
            if self._llvm_dialect is None:
                raise RuntimeError("this Executable has no LLVM module (it was loaded from a library)")
            self._llvm_dialect_text = self._llvm_dialect()
        return self._llvm_dialect_text

    #: writes an Executable as a shared library: :func:`relax_mlir.runtime.aot.export_library`,
    #: set by what made it (relax_mlir.compile, relax_mlir.load); this module does not import
    #: the exporter, which imports it
    exporter: Optional[Callable[["Executable", str], str]] = None

    def export(self, path) -> str:
        """Write a self-contained shared library (code + metadata); see :mod:`relax_mlir.runtime.aot`."""
        if self.exporter is None:
            raise RuntimeError("this Executable cannot be exported: it was made neither by relax_mlir.compile "
                               "nor by relax_mlir.load")
        return self.exporter(self, path)

    def _failure(self, status: int, details: list[int]) -> Exception:
        found = find_check(self._meta, status)
        if found is None:
            return ShapeError(f"run-time check #{status} failed (no description recorded)")
        fname, c = found
        fs = self._meta.functions[fname]
        syms = fs.detail_symbols
        values = {s: details[i] for i, s in enumerate(syms) if s in c.bound}
        actual = details[len(syms):len(syms) + c.rank]
        shown = []
        code = fs.plan.failure_values.get(c.id)
        if code:
            try:
                shown = [eval(_code(e), _EVAL_GLOBALS, {"v": values}) for e in code]
            except (KeyError, ZeroDivisionError):  # a symbol not bound at the failure
                shown = []
        head = f"@{fname}: {c.where}:"
        if c.kind == "assert":
            op = "!=" if c.predicate == "eq" else ">"
            tail = f" ({shown[0]} {op} {shown[1]})" if len(shown) == 2 else ""
            return ShapeError(f"{head} {c.message or c.lhs + ' == ' + c.rhs} does not hold{_fmt_bound(values)}{tail}")
        if c.kind == "division":
            return ShapeError(f"{head} division by zero in the dimension {c.expr}{_fmt_bound(values)}")
        if c.kind == "overflow":
            return ShapeError(f"{head} the dimension {c.expr} overflows int64{_fmt_bound(values)}")
        if c.kind == "size":
            val = f" = {shown[0]}" if shown else ""
            return ShapeError(f"{head} negative size {c.expr}{val} in shape {c.expected}{_fmt_bound(values)}")
        if c.kind == "state":
            rng = f" = [{actual[0]}, {actual[1]})" if len(actual) == 3 else ""
            cap = f" of {actual[2]} rows" if len(actual) == 3 else ""
            return ShapeError(f"{head} rows {c.expr}{rng} of state '{c.detail}' exceed its capacity{cap}"
                              f"{_fmt_bound(values)}")
        if c.kind == "index":
            index = actual[0] if actual else None
            if index is not None and c.detail == "ui64" and index < 0:
                index += 2 ** 64
            size = actual[1] if len(actual) == 2 else c.expr
            lo = 0 if c.detail.startswith("ui") or size == 0 else f"-{size}"
            return IndexOutOfRangeError(f"{head} index {index} is out of range for a dim of size {size} "
                                        f"(indices must lie in [{lo}, {size})){_fmt_bound(values)}")
        if c.kind == "alloc":
            size = f"{shown[0]} bytes" if shown else f"{c.expr} bytes"
            return MemoryError(f"{head} cannot allocate {size} for shape {c.expected} of {c.detail}"
                               f"{_fmt_bound(values)}")
        extra = f" ({c.detail})" if c.detail else ""
        return ShapeError(f"{head} expected shape {c.expected}{_fmt_bound(values)}, "
                          f"got {_fmt_shape(actual)}{extra}")
