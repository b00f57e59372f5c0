"""Marshalling between numpy arrays and the compiled code's C interface.

Memref descriptors (:func:`descriptor_class`), the ctypes prototypes of entry points, the
signature checks compiled from the metadata (:class:`_ParamChecker`), and the generated
argument and result stubs of the call path (see the comment "the call path" below and
:mod:`relax_mlir.runtime.executable`). Result buffers are owned by the caller's arrays
(:class:`_Allocation`, freed with libc ``free``). Nothing here knows sessions or executables.
"""

from __future__ import annotations

import ctypes
import re
from typing import Callable, Optional, Sequence

import ml_dtypes
import numpy as np

from ..errors import ShapeError
from . import abi
from .abi import FunctionSig

DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
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


def _from_dlpack(x) -> np.ndarray:
    try:
        return np.from_dlpack(x)
    except RuntimeError:
        # numpy's DLPack has no bfloat16: a torch bf16 tensor is read through its int16 view
        if str(getattr(x, "dtype", "")) != "torch.bfloat16":
            raise
        import torch
        return np.from_dlpack(x.view(torch.int16)).view(ml_dtypes.bfloat16)


def _as_array(x) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        if hasattr(x, "__dlpack__"):
            x = _from_dlpack(x)
        else:
            x = np.asarray(x)
    if not x.flags["C_CONTIGUOUS"] or not x.flags["ALIGNED"]:
        x = np.ascontiguousarray(x)
    return x
