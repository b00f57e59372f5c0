"""Sessions: per-caller memory of an executable, and calls with bound parameters.

A :class:`Session` owns the workspace (relax-plan-memory's arenas) and the state buffers
(``relax.state``, an LLM's KV cache) a call writes, and each function's call memory in it
(:class:`_Frame`); ``sess["f"]`` is a :class:`_BoundFunction`. A :class:`PreparedCall`
binds a function's trailing parameters (a model's weights) once. The call itself is
:class:`relax_mlir.runtime.executable.Function`'s. A function whose weight-only work
relax-lift-params moved into ``<f>_transform_params`` is a :class:`LiftedFunction`: it keeps
``f``'s signature (inputs, then weights); :class:`LiftedPreparedCall` runs the transform once.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import weakref
from typing import Optional, Sequence

import numpy as np

from .marshal import DTYPES, _arg_stub, _as_array, _desc_format, _words, descriptor_class

class _Frame:
    """A function's call memory in one session: the result struct and the parameter
    descriptors, and the argument tuple (their addresses and the session's buffers) passed
    to the entry point as is. Only the call holding the session's lock writes it."""

    __slots__ = ("res", "descs", "base", "args", "full", "argv")

    def __init__(self, fn, session: "Session"):
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



class _BoundFunction:
    """A function of a session: ``sess["f"](*arrays)``."""

    __slots__ = ("fn", "session")

    def __init__(self, fn, session: "Session"):
        self.fn, self.session = fn, session

    def __call__(self, *args):
        return self.fn._entry(self.session, args)

    def bind_params(self, *params):
        """As :meth:`Function.bind_params`, calling in this session."""
        return self.fn._prepare(self.session, params)

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
    and reuses the packed copy (MKL builds on AVX-512 CPUs; see ``blas_gemm_avx512.c``); the copies
    are shared by every live PreparedCall over the same arrays and freed with the last one.
    After changing a bound array in place, call :meth:`weights_changed`."""

    def __init__(self, fn, session: Optional["Session"], params: Sequence):
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
        # lying in them once, on first use (packing.WeightPacker), and frees the packed
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


class LiftedFunction:
    """``f`` after relax-lift-params, with its original signature ``f(*inputs, *weights)``.

    The compiled ``f`` (``inner``) takes the inputs, the weights it still reads itself
    (``kept``) and the results of ``@f_transform_params(*weights)`` (``transform``). A plain
    call runs both, every time: the transform's work (weight packing, BatchNorm folded into
    the weights) costs what it cost inside ``f`` before the lift, plus one more call
    (~10 us of Python) and its results' allocation. ``bind_params(*weights)`` runs the
    transform ONCE (:class:`LiftedPreparedCall`); each call is then ``inner`` alone.
    """

    def __init__(self, exe, name: str, inner, transform, record: dict):
        self.exe, self.name = exe, name
        self.inner, self.transform = inner, transform
        self.num_input = int(record["num_input"])
        self.num_weights = int(record["num_weights"])
        self.kept = tuple(int(i) for i in record["kept"])
        self.nparams = self.num_input + self.num_weights
        from .abi import FunctionSig
        #: the signature callers see (inputs from ``inner``, weights from ``transform``)
        self.sig = FunctionSig(inner.sig.params[:self.num_input] + transform.sig.params, inner.sig.results)

    def __repr__(self) -> str:
        return (f"<relax_mlir function @{self.name}: {self.num_input} input(s), {self.num_weights} weight(s) "
                f"through @{self.transform.name}>")

    def __call__(self, *args):
        return self._entry(self.exe._default_session(), args)

    def bind_params(self, *params):
        """Bind the trailing ``params``; all the weights (``len(params) == num_weights``): the
        transform runs once, here (see :class:`LiftedPreparedCall`)."""
        return self._prepare(None, params)

    def _prepare(self, session, params):
        return LiftedPreparedCall(self, session, params)

    def _entry(self, session, args):
        if len(args) != self.nparams:
            raise TypeError(f"@{self.name} takes {self.nparams} argument(s), got {len(args)}")
        k = self.num_input
        weights = tuple(args[k:])
        t = self._transformed(session, weights)
        try:
            return self.inner._entry(session, tuple(args[:k]) + tuple(weights[i] for i in self.kept) + t)
        except (TypeError, ValueError, IndexError) as e:
            raise self._renamed(e, self.inner.name, {k + j: k + i for j, i in enumerate(self.kept)}) from None

    def _transformed(self, session, weights) -> tuple:
        """The transform's results on ``weights`` (a tuple; errors name ``f``'s arguments)."""
        try:
            out = self.transform._entry(session, tuple(weights))
        except (TypeError, ValueError, IndexError) as e:
            raise self._renamed(e, self.transform.name, {i: self.num_input + i for i in range(self.num_weights)}) \
                from None
        return out if isinstance(out, tuple) else (out,)

    def _renamed(self, e: Exception, fname: str, index: dict) -> Exception:
        """``e`` with ``@fname: argument #i`` read as ``@f: argument #index[i]``."""
        import re

        def arg(m):
            i = int(m.group(1))
            return f"argument #{index.get(i, i)}"

        msg = str(e.args[0]) if e.args else str(e)
        if msg.startswith(f"@{fname}: ") or msg.startswith(f"@{fname} "):
            msg = re.sub(r"argument #(\d+)", arg, msg)
            if fname != self.name:
                msg = f"@{self.name} (its weights' transform @{fname})" + msg[len(fname) + 1:]
        try:
            out = type(e)(msg)
        except Exception:   # noqa: BLE001  an exception type with another constructor: as it is
            return e
        return out


class LiftedPreparedCall:
    """:meth:`LiftedFunction.bind_params`: with every weight bound, ``@f_transform_params``
    runs once here and its results (with the weights ``f`` still reads) are bound to the
    compiled ``f`` as a :class:`PreparedCall`, so a call runs none of the weight-only work.
    Binding fewer trailing arguments than the weights (or more) gives a call that runs the
    transform on every call, like a plain call."""

    def __init__(self, fn: LiftedFunction, session: Optional["Session"], params: Sequence):
        if len(params) > fn.nparams:
            raise TypeError(f"@{fn.name} takes {fn.nparams} argument(s), {len(params)} bound")
        self.fn, self.session = fn, session
        self.nlead = fn.nparams - len(params)
        self._params = [a if fn.inner._on_device(a) else _as_array(a) for a in params]
        self._call: Optional[PreparedCall] = None
        #: the transform's results, bound (kept alive by the PreparedCall too)
        self.transformed: tuple = ()
        if len(params) == fn.num_weights:
            self._bind()

    def _bind(self) -> None:
        fn = self.fn
        self.transformed = fn._transformed(self.session or fn.exe._default_session(), self._params)
        bound = [self._params[i] for i in fn.kept] + list(self.transformed)
        self._call = PreparedCall(fn.inner, self.session, bound)

    def weights_changed(self) -> None:
        """After writing a bound weight in place: the transform runs again (and a library
        matmul's packed copies are dropped with the previous binding)."""
        if self._call is not None:
            self._bind()

    def __call__(self, *args):
        if len(args) != self.nlead:
            raise TypeError(f"@{self.fn.name} takes {self.nlead} argument(s) besides the {len(self._params)} "
                            f"bound, got {len(args)}")
        if self._call is not None:
            try:
                return self._call(*args)
            except (TypeError, ValueError, IndexError) as e:
                raise self.fn._renamed(e, self.fn.inner.name, {}) from None
        return self.fn._entry(self.session or self.fn.exe._default_session(), tuple(args) + tuple(self._params))

    def __repr__(self) -> str:
        done = "transformed once" if self._call is not None else "transformed per call"
        return (f"<relax_mlir prepared call of @{self.fn.name}: {self.nlead} argument(s), {len(self._params)} "
                f"bound, {done}>")


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

    def __init__(self, exe, rows=None):
        self.exe = exe
        n = exe._meta.total_workspace()
        desc = _byte_descriptor(self._new_workspace(n), n)
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

    def _new_workspace(self, nbytes: int) -> int:
        """The address of this session's workspace of ``nbytes`` (host memory, aligned)."""
        self._buffer = np.empty(nbytes + _WS_ALIGN, np.uint8)
        return _aligned(self._buffer)

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
