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

The runtime a loaded library needs, split by job: this module (functions, the calling
convention, failure messages, the executable), :mod:`.marshal` (memref descriptors,
signature checks, the generated argument and result stubs) and :mod:`.session` (sessions,
their workspace and state, calls with bound parameters); the compiler lives in
:mod:`relax_mlir.compiler`.

Calling convention (see :mod:`relax_mlir.transforms.lower_host`): each graph function is
lowered to ``@f(workspace, states..., params...) -> (i32 status, i64 x D details, results...)``
with ``llvm.emit_c_interface``; this module calls ``_mlir_ciface_f(result_struct*, workspace*,
state*..., desc*...)`` (``i32 _mlir_ciface_f(workspace*, state*..., desc*...)`` when the
status is the only result) directly with ctypes. ``exe["f"].bind_params(*weights)``
converts trailing arguments once (:class:`PreparedCall`); for a function relax-lift-params
lifted (``relax.num_input``: torch imports) it also runs ``<f>_transform_params`` on the
weights once (:class:`LiftedFunction`, :class:`LiftedPreparedCall`). Where the symbol comes from is the only thing that differs
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
import struct
import threading
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import IndexOutOfRangeError, ShapeError
from . import abi
from .abi import PACKED_PREFIX, ExecutableMetadata, FunctionSig, find_check
# re-exported: the marshalling and session names other modules and tests import from here
from .marshal import (DTYPES, _EVAL_GLOBALS, _Allocation, _arg_lines, _arg_env, _arg_stub, _as_array,  # noqa: F401
                      _c_contiguous, _code, _ctypes_signature, _desc_format, _direct_signature, _fmt_bound,
                      _fmt_shape, _free, _ParamChecker, _result_env, _result_lines, _result_stub, _words,
                      descriptor_class)
from .session import _BoundFunction, _Frame, LiftedFunction, LiftedPreparedCall, PreparedCall, Session  # noqa: F401

#: this module's names, with those of :mod:`.marshal` and :mod:`.session` it re-exports
#: (``from relax_mlir.runtime.executable import descriptor_class`` keeps working)
__all__ = ["Executable", "Function", "Session", "PreparedCall", "LiftedFunction", "LiftedPreparedCall", "SymbolResolver", "LibraryResolver",
           "runtime_libraries", "descriptor_class", "DTYPES", "_Allocation", "_Frame", "_BoundFunction",
           "_as_array", "_c_contiguous"]

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
        return self._prepare(None, params)

    def _prepare(self, session: Optional["Session"], params) -> "PreparedCall":
        return PreparedCall(self, session, params)

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
        from .heap import keep_heap
        keep_heap()   # kernels' per-call scratch: served from the heap, not fresh mmaps
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
        pack once; :class:`relax_mlir.runtime.packing.WeightPacker`), or None."""
        if self._packer is None:
            from .packing import weight_packer

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
            fn = self._new_function(name)
            lifted = self._meta.extra.get("lifted", {}).get(name)
            if lifted is not None:   # relax-lift-params: f(*inputs, *weights) through its transform
                fn = LiftedFunction(self, name, fn, self[lifted["transform"]], lifted)
            self._functions[name] = fn
        return fn

    def _new_function(self, name: str) -> Function:
        """The compiled graph function ``name`` (a device executable: its staged kind)."""
        return Function(self, name, self._meta.functions[name])

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
