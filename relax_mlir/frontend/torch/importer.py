"""Importing a ``torch.export`` ExportedProgram into a relax module.

The importer walks the FX graph of the program once, in order, and builds one relax op
(or a short composition of relax ops) per ATen node with the typed builders of
:mod:`relax_mlir.dialects.relax`. Converters live in :mod:`.aten`, one per ATen op or
op family, registered with :func:`converter`.

Symbolic sizes: torch names the dynamic dims ``s0, s17, ...`` and records their ranges
in ``ep.range_constraints``. Each becomes one of our symbols, named after the user's
``torch.export.Dim`` (recovered from ``dynamic_shapes`` when given, else
``<input>_<axis>``); a derived dim (``{2: 32*h}``: torch's size ``32*s39``) names its root
symbol ``h`` and the input's size is the expression ``32*h``. SymInt values inside the
graph are translated to :class:`Dim` expressions over those symbols. Upper bounds become ``relax.upper_bounds``; every range
(and every ``_assert_scalar`` torch emitted) becomes a ``relax.assert`` run-time check
unless the prover discharges it. After each node the importer compares the shape our
shape rules deduced with torch's own (``node.meta["val"]``): a provable match is
silent, an unproven one becomes a ``relax.match_cast`` (a run-time check), a provable
mismatch is an :class:`TorchImportError` (an importer bug must never yield a wrong result).
"""

from __future__ import annotations

import contextlib
import keyword
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import ml_dtypes
import numpy as np
from mlir import ir

from ...dialects import relax
from ...errors import CompileError
from ...shapes import (Dim, Shape, TensorSig, Truth, dim_max, dim_min, prove_equal, prove_le,
                       read_tensor_type, symbol, tensor_type)
from ..builder import graph_function

# torch is imported lazily (inside functions) so that `import relax_mlir.frontend.torch`
# stays cheap for tools that only need the error type.


class TorchImportError(CompileError):
    """An ExportedProgram the importer cannot translate faithfully: an unsupported ATen op
    (named, with the Python source line that produced it), an unsupported argument, or a
    shape that contradicts torch's."""


DTYPES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "ui8", "bool": "i1",
}
NP_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i64": np.int64,
             "i32": np.int32, "i16": np.int16, "i8": np.int8, "ui8": np.uint8, "i1": np.bool_}


def dtype_of(torch_dtype) -> str:
    name = str(torch_dtype).replace("torch.", "")
    if name not in DTYPES:
        raise TorchImportError(f"unsupported element type {torch_dtype}")
    return DTYPES[name]


#: ATen converters: ``"aten.add.Tensor"`` (one overload) or ``"aten.add"`` (every overload).
CONVERTERS: dict[str, Callable] = {}


def converter(*names: str):
    """Register ``fn(im, node, *args, **kwargs) -> value`` for the ATen ops ``names``."""

    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn

    return deco


def _torch_dir() -> str:
    import os

    import torch

    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def source_location(node) -> Optional[tuple[str, int, str]]:
    """(file, line, text) of the innermost user frame in ``node.meta['stack_trace']``: the
    last frame outside torch's own package (``F.layer_norm``'s body is not the user's line).

    ``torch.export`` records only the ``forward`` frames of a call stack (a ``torch.min``
    inside a helper method is reported at the helper's call); programs exported under
    :func:`full_stack_traces` (as :func:`relax_mlir.frontend.torch.compile` does) keep
    every user frame."""
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    if not trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)', trace)
    if not frames:
        return None
    inside = _torch_dir()
    user = [f for f in frames if not f[0].startswith(inside)] or frames
    f, line, text = user[-1]
    return f, int(line), text.strip()


@contextlib.contextmanager
def full_stack_traces():
    """Within this context, ``torch.export`` records every frame of the user's call stack
    in ``node.meta['stack_trace']`` (from the first ``forward`` on, torch's own files
    left out), not only the ``forward`` frames, so import errors name the line of the op
    itself (``torch.min(...)`` in a helper) rather than the call of the helper."""
    from torch.fx.proxy import TracerBase

    original = TracerBase._filter_traceback_frames

    def keep_user_frames(self, summary):
        had = "_record_forward_stack_traces_only" in self.__dict__
        saved = self.__dict__.get("_record_forward_stack_traces_only")
        self._record_forward_stack_traces_only = False
        try:
            return original(self, summary)
        finally:
            if had:
                self._record_forward_stack_traces_only = saved
            else:
                del self._record_forward_stack_traces_only

    TracerBase._filter_traceback_frames = keep_user_frames
    try:
        yield
    finally:
        TracerBase._filter_traceback_frames = original


def core_decomposition_hint(target) -> str:
    """A suggestion to import with ``decompositions="core"`` when torch's core ATen table
    decomposes ``target`` (an OpOverload) into other ops, else ''."""
    try:
        from torch._decomp import core_aten_decompositions

        table = core_aten_decompositions()
    except Exception:   # an older torch without the table
        return ""
    if target in table:
        return "; torch's core ATen table decomposes it: try decompositions=\"core\""
    return ""


def _where(node) -> str:
    loc = source_location(node)
    return f" at {loc[0]}:{loc[1]} ({loc[2]})" if loc else " (no source location recorded)"


@dataclass
class ImportedParam:
    """One trailing parameter of @main: what it is in the program and how it is passed."""

    name: str          # the FX placeholder
    target: str        # the module attribute (``layers.0.attn.q_proj.weight``) or constant name
    kind: str          # "parameter", "buffer" or "constant"
    transposed: bool   # passed as its transpose (a weight used only by linear)


class Importer:
    """One import of one ExportedProgram (see the module docstring)."""

    def __init__(self, ep, dim_names: Optional[dict] = None, transpose_linear_weights: bool = True,
                 guards: Optional[Sequence[str]] = None, decompositions: Any = "default"):
        self.ep = ep
        self.decompositions = decompositions   # the table the program went through (for hints)
        self.guards = list(guards if guards is not None else getattr(ep, "_guards_code", None) or [])
        self.unchecked_guards: list[str] = []
        self.dim_names: dict = dict(dim_names or {})   # torch sympy Symbol -> our name
        self.transpose_linear_weights = transpose_linear_weights
        self.env: dict[str, Any] = {}
        self.node = None
        self.bounds: dict[str, tuple[int, Optional[int]]] = {}
        # values a converter derives once and reuses across nodes (e.g. attention's mask
        # bias, shared by every layer), keyed by the converter
        self.memo: dict[Any, Any] = {}

    # -- errors and locations -------------------------------------------------------
    def error(self, message: str, node=None, hint: str = "") -> TorchImportError:
        """``<aten.op.overload>: <message> at <user file>:<line> (<source text>)<hint>``."""
        node = node if node is not None else self.node
        op = _target_name(node.target) if node is not None and node.op == "call_function" else "the program"
        return TorchImportError(f"{op}: {message}{_where(node) if node is not None else ''}{hint}")

    def location(self, node) -> ir.Location:
        loc = source_location(node)
        if loc is None:
            return ir.Location.name(node.name)
        return ir.Location.name(node.name, ir.Location.file(loc[0], loc[1], 0))

    # -- symbolic sizes -----------------------------------------------------------------
    def _name_symbols(self, user_inputs) -> None:
        """Give each of torch's size symbols a name: the user's Dim name when known, else
        ``<input>_<axis>`` of its first occurrence; the root symbol of a derived size
        (``32*s39``) likewise."""
        taken = set(str(v) for v in self.dim_names.values())
        for node in user_inputs:
            val = node.meta.get("val")
            for axis, s in enumerate(getattr(val, "shape", ())):
                e = _sym_expr(s)
                if e is None:
                    continue
                # a plain symbol, or the root of a derived size (torch's ``32*s39``)
                for sym in sorted(e.free_symbols, key=str):
                    if sym not in self.dim_names:
                        name = _identifier(f"{node.name}_{axis}", taken)
                        self.dim_names[sym] = name
                        taken.add(name)
        # Symbols that are no input's size (data-dependent ones) stay unnamed: using one is an error.
        for sym, vr in self.ep.range_constraints.items():
            if sym not in self.dim_names:
                continue
            self.bounds[self.dim_names[sym]] = (_finite(vr.lower) or 0, _finite(vr.upper))

    def dim(self, value) -> Dim:
        """A Python int, a SymInt, a sympy expression or a Dim as one of our Dims."""
        import sympy

        if isinstance(value, Dim):
            return value
        if isinstance(value, (bool, np.bool_)):
            raise self.error(f"expected a size, got the bool {value}")
        if isinstance(value, (int, np.integer)):
            return Dim.of(int(value))
        e = _sym_expr(value)
        if e is None:
            raise self.error(f"expected a size, got {value!r}")
        return self._from_sympy(e)

    def _from_sympy(self, e) -> Dim:
        import sympy

        if e.is_Integer:
            return Dim.of(int(e))
        if isinstance(e, sympy.Symbol):
            if e not in self.dim_names:
                raise self.error(f"size symbol {e} is data-dependent (unbacked); only sizes of the "
                                 "inputs can be symbolic")
            return Dim(symbol(self.dim_names[e]))
        args = [self._from_sympy(a) if not a.is_Rational or a.is_Integer else None for a in e.args]
        if any(a is None for a in args):
            raise self.error(f"size expression {e} has a non-integer coefficient")
        name = type(e).__name__
        if isinstance(e, sympy.Add):
            out = args[0]
            for a in args[1:]:
                out = out + a
            return out
        if isinstance(e, sympy.Mul):
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if isinstance(e, sympy.Pow) and e.args[1].is_Integer and int(e.args[1]) > 0:
            out = args[0]
            for _ in range(int(e.args[1]) - 1):
                out = out * args[0]
            return out
        if name == "FloorDiv":
            return args[0] // args[1]
        if name == "CeilDiv":
            return (args[0] + args[1] - 1) // args[1]
        if name in ("Mod", "PythonMod"):
            return args[0] % args[1]
        if name in ("Max",):
            return dim_max(*args)
        if name in ("Min",):
            return dim_min(*args)
        raise self.error(f"size expression {e} ({name}) has no relax equivalent")

    def shape_of_val(self, val) -> Shape:
        return Shape([self.dim(s) for s in val.shape])

    # -- values -------------------------------------------------------------------------
    def lookup(self, a):
        """FX argument -> importer value (recursively for lists and tuples)."""
        import torch.fx

        if isinstance(a, torch.fx.Node):
            if a.name not in self.env:
                raise self.error(f"value {a.name} was not imported")
            return self.env[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(self.lookup(x) for x in a)
        return a

    @staticmethod
    def sig(v: ir.Value) -> TensorSig:
        return read_tensor_type(v.type)

    def const(self, value, dtype: str) -> ir.Value:
        """A 0-d tensor holding the Python number ``value``."""
        if isinstance(value, float) and dtype.startswith(("i", "ui")):
            raise self.error(f"the float {value} cannot be an {dtype} constant")
        if isinstance(value, int) and abs(value) > 2 ** 53 and not dtype.startswith(("f", "bf")):
            raise self.error(f"the integer constant {value} is too large to represent exactly")
        if dtype == "i1":  # i1 fills are built as i8 and cast (see the report: i1 fill kernels)
            return relax.astype(relax.full(shape=[], value=float(bool(value)), dtype="i8"), dtype="i1")
        return relax.full(shape=[], value=float(value), dtype=dtype)

    def size_tensor(self, d: Dim, dtype: str = "i64") -> ir.Value:
        """A 0-d ``dtype`` tensor holding the run-time value of the size ``d``."""
        v = relax.reshape(relax.arange(start=d, end=d + 1, dtype="i64"), shape=[])
        return v if dtype == "i64" else relax.astype(v, dtype=dtype)

    def tensor(self, x, dtype: Optional[str] = None) -> ir.Value:
        """A tensor operand from a tensor, a size or a number, cast to ``dtype`` if given."""
        if isinstance(x, ir.Value):
            if dtype is not None and self.sig(x).dtype != dtype:
                return relax.astype(x, dtype=dtype)
            return x
        if isinstance(x, bool):
            return self.const(int(x), dtype or "i1")
        if isinstance(x, (int, float)):
            return self.const(x, dtype or ("i64" if isinstance(x, int) else "f32"))
        if isinstance(x, Dim) or _sym_expr(x) is not None:
            return self.size_tensor(self.dim(x), dtype or "i64")
        raise self.error(f"expected a tensor or a number, got {type(x).__name__}")

    # -- the program ----------------------------------------------------------------------
    def run(self) -> tuple[ir.Module, list[np.ndarray], list[ImportedParam]]:
        ep = self.ep
        from torch.export.graph_signature import InputKind, OutputKind

        specs = ep.graph_signature.input_specs
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        by_name = {n.name: n for n in placeholders}
        users = [by_name[s.arg.name] for s in specs if s.kind == InputKind.USER_INPUT]
        for s in specs:
            if s.kind == InputKind.USER_INPUT and not hasattr(by_name[s.arg.name].meta.get("val"), "shape"):
                raise self.error(f"user input '{s.arg.name}' is not a tensor (only tensor inputs are supported)")
        self._name_symbols(users)
        trailing: list[ImportedParam] = []
        arrays: list[np.ndarray] = []
        state = dict(ep.state_dict)
        state.update(getattr(ep, "constants", {}) or {})
        kinds = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer",
                 InputKind.CONSTANT_TENSOR: "constant"}
        for s in specs:
            if s.kind == InputKind.USER_INPUT:
                continue
            if s.kind not in kinds:
                raise self.error(f"input '{s.arg.name}' of kind {s.kind.name} is not supported")
            if s.target not in state:
                raise self.error(f"no value for {kinds[s.kind]} '{s.target}'")
            t = state[s.target]
            if hasattr(t, "detach"):
                t = t.detach()
            tr = self.transpose_linear_weights and _only_linear_weight(by_name[s.arg.name])
            a = to_numpy(t)
            if tr:
                a = np.ascontiguousarray(a.T)
            trailing.append(ImportedParam(s.arg.name, s.target, kinds[s.kind], tr))
            arrays.append(a)
        for o in ep.graph_signature.output_specs:
            if o.kind != OutputKind.USER_OUTPUT:
                raise self.error(f"output kind {o.kind.name} ({o.arg}) is not supported: the program "
                                 "mutates a buffer or an input")

        params = []
        for n in users:
            val = n.meta["val"]
            params.append((n.name, list(self.shape_of_val(val)), dtype_of(val.dtype)))
        for p, a in zip(trailing, arrays):
            params.append((p.name, list(a.shape), _np_to_dtype(a.dtype)))
        upper = {k: hi for k, (lo, hi) in self.bounds.items() if hi is not None}

        module = ir.Module.create()
        with graph_function(module, "main", params, upper_bounds=upper or None) as fn:
            names = [n.name for n in users] + [p.name for p in trailing]
            for name, v in zip(names, fn.params):
                self.env[name] = v
            self.transposed = {p.name for p in trailing if p.transposed}
            self._range_checks()
            self._guard_checks(users)
            outputs = None
            for node in ep.graph.nodes:
                self.node = node
                if node.op == "placeholder":
                    continue
                if node.op == "output":
                    outputs = node.args[0]
                    break
                if node.op != "call_function":
                    raise self.error(f"FX node kind '{node.op}' ({node.target}) is not supported", node)
                with self.location(node):
                    self.env[node.name] = self.convert(node)
            results = []
            for o in outputs:
                v = self.lookup(o)
                if not isinstance(v, ir.Value):
                    raise self.error(f"output {o} is not a tensor ({type(v).__name__})")
                results.append(v)
            fn.ret(*results)
        main = next(o.operation for o in module.body.operations
                    if "sym_name" in o.operation.attributes and ir.StringAttr(o.operation.attributes["sym_name"]).value == "main")
        # the leading parameters are the user's inputs, the rest its lifted weights: relax-lift-params
        # moves what depends only on the weights into main_transform_params (bind_params runs it once)
        main.attributes["relax.num_input"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(users))
        return module, arrays, trailing

    def _range_checks(self) -> None:
        """Torch's ranges of the size symbols as run-time checks (``lo <= s <= hi``). The
        upper bounds are also ``relax.upper_bounds``, but the compiler checks those only
        where its memory plan is sized by them; torch's program is valid in its range only."""
        for name in sorted(self.bounds):
            lo, hi = self.bounds[name]
            if lo > 0:
                relax.build("assert", dims=[lo, Dim(symbol(name))], predicate="le",
                            message=f"size {name} >= {lo}")
            if hi is not None:
                relax.build("assert", dims=[Dim(symbol(name)), hi], predicate="le",
                            message=f"size {name} <= {hi} (torch's range)")

    def _guard_checks(self, users) -> None:
        """Torch's input guards (``ep._guards_code``: ``1 + L['x'].size()[0] <= L['y'].size()[0]``)
        as run-time checks. A guard with no relax form (``!=``) is kept in ``unchecked_guards``."""
        sizes = {n.name: self.shape_of_val(n.meta["val"]) for n in users}
        for text in self.guards:
            try:
                rels = _guard_relations(text, sizes)
            except (ValueError, KeyError, SyntaxError, IndexError):
                self.unchecked_guards.append(text)
                continue
            for lhs, rhs, pred in rels:
                t = (prove_equal if pred == "eq" else prove_le)(lhs, rhs)
                if t is Truth.FALSE:
                    raise self.error(f"torch's guard {text} contradicts the input shapes")
                if t is Truth.UNKNOWN:
                    relax.build("assert", dims=[lhs, rhs], predicate=pred, message=f"torch guard: {text}")

    def convert(self, node):
        import operator

        target = node.target
        if target is operator.getitem:
            seq, i = self.lookup(node.args[0]), node.args[1]
            v = seq[i]
            if v is None:
                raise self.error(f"output #{i} of {node.args[0].name} is not supported", node)
            return v
        if target in _SYM_OPS:
            args = [self.dim(a) if not isinstance(a, Dim) else a for a in self.lookup(node.args)]
            return _SYM_OPS[target](*args)
        name = _target_name(target)
        conv = CONVERTERS.get(name) or CONVERTERS.get(name.rsplit(".", 1)[0])
        if conv is None:
            hint = core_decomposition_hint(target) if self.decompositions != "core" else ""
            raise self.error("unsupported ATen op (no relax conversion)", node, hint=hint)
        args = self.lookup(node.args)
        kwargs = {k: self.lookup(v) for k, v in node.kwargs.items()}
        try:
            out = conv(self, node, *args, **kwargs)
        except TorchImportError:
            raise
        except (relax.RelaxError, TypeError, ValueError) as e:
            raise self.error(f"cannot convert: {e}", node) from e
        except Exception as e:   # noqa: BLE001  a converter's own failure: still the op and the line
            raise self.error(f"cannot convert ({type(e).__name__}: {e})", node) from e
        try:
            return self._check_result(node, out)
        except TorchImportError:
            raise
        except (relax.RelaxError, TypeError, ValueError) as e:
            raise self.error(f"cannot state torch's result shape: {e}", node) from e

    def _check_result(self, node, out):
        """Compare the relax value with torch's metadata (see the module docstring)."""
        val = node.meta.get("val")
        if isinstance(out, ir.Value) and hasattr(val, "shape"):
            got = self.sig(out)
            want = self.shape_of_val(val)
            dt = dtype_of(val.dtype)
            if got.dtype != dt:
                raise self.error(f"importer bug: relax result has element type {got.dtype}, torch's {dt}", node)
            if got.shape.rank != want.rank:
                raise self.error(f"importer bug: relax result has rank {got.shape.rank}, torch's {want.rank}", node)
            if got.shape == want:
                return out
            for a, b in zip(got.shape, want):
                if prove_equal(a, b) is Truth.FALSE:
                    raise self.error(f"importer bug: relax shape {got.shape} differs from torch's {want}", node)
            # Torch knows more (its guards): state its shape, checked at run time. Its
            # symbols are all the inputs' (bound): the type is stated here because the
            # Python builder does not know the function's symbols (it would take them for
            # new ones to bind); relax-infer-shapes re-deduces it in the function's scope.
            return relax.build("match_cast", out, shape=want, result_types=[tensor_type(want, dt)])
        return out


# -- helpers ------------------------------------------------------------------------------

def _target_name(target) -> str:
    s = str(target)
    if s.startswith("<built-in function "):
        return s[len("<built-in function "):-1]
    return s


def _sym_expr(x):
    """The sympy expression of a SymInt (or a sympy expression itself), else None."""
    import sympy

    if isinstance(x, sympy.Basic):
        return x
    node = getattr(x, "node", None)
    if node is not None and hasattr(node, "expr"):
        return node.expr
    return None


def _identifier(name: str, taken: set) -> str:
    base = re.sub(r"\W", "_", name) or "s"
    if base[0].isdigit() or keyword.iskeyword(base):
        base = "s_" + base
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    return out


def _guard_relations(text: str, sizes: dict[str, Shape]) -> list[tuple[Dim, Dim, str]]:
    """``a <= b and c == d`` over ``L['x'].size()[0]`` terms -> [(lhs, rhs, "le" | "eq")];
    ValueError for a form relax.assert cannot state."""
    import ast

    def term(n) -> Dim:
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return Dim.of(n.value)
        if isinstance(n, ast.BinOp):
            a, b = term(n.left), term(n.right)
            ops = {ast.Add: a.__add__, ast.Sub: a.__sub__, ast.Mult: a.__mul__,
                   ast.FloorDiv: a.__floordiv__, ast.Mod: a.__mod__}
            if type(n.op) not in ops:
                raise ValueError(ast.dump(n.op))
            return ops[type(n.op)](b)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -term(n.operand)
        # L['x'].size()[i] (or L['kwargs']['x'].size()[i]): dim i of user input x
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Call) and \
                isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "size":
            base = n.value.func.value
            key = None
            while isinstance(base, ast.Subscript):
                if key is None and isinstance(base.slice, ast.Constant) and isinstance(base.slice.value, str):
                    key = base.slice.value
                base = base.value
            return sizes[key][int(ast.literal_eval(n.slice))]
        raise ValueError(ast.dump(n))

    def rel(n) -> list:
        if isinstance(n, ast.BoolOp) and isinstance(n.op, ast.And):
            return [r for v in n.values for r in rel(v)]
        if not isinstance(n, ast.Compare):
            raise ValueError(ast.dump(n))
        out = []
        items = [n.left] + list(n.comparators)
        for a, op, b in zip(items, n.ops, items[1:]):
            x, y = term(a), term(b)
            if isinstance(op, ast.Eq):
                out.append((x, y, "eq"))
            elif isinstance(op, ast.LtE):
                out.append((x, y, "le"))
            elif isinstance(op, ast.Lt):
                out.append((x + 1, y, "le"))
            elif isinstance(op, ast.GtE):
                out.append((y, x, "le"))
            elif isinstance(op, ast.Gt):
                out.append((y + 1, x, "le"))
            else:
                raise ValueError(ast.dump(op))
        return out

    return rel(ast.parse(text, mode="eval").body)


def _finite(v) -> Optional[int]:
    """An integer bound of torch's value range, None for an infinite one."""
    try:
        i = int(v)
    except (OverflowError, TypeError, ValueError, AttributeError):
        return None
    return i if abs(i) < 2 ** 62 else None


def _only_linear_weight(node) -> bool:
    """Every use of the 2-D parameter ``node`` wants its transpose: the weight of ``linear``,
    or ``t`` / ``permute([1, 0])`` / ``transpose(0, 1)`` (linear after core decompositions).
    The importer then passes the transposed array and those uses read it directly."""
    users = list(node.users)
    return bool(users) and all(wants_transpose(u, node) for u in users)


def wants_transpose(user, node) -> bool:
    """``user`` uses ``node`` only as the transpose of a 2-D weight (see _only_linear_weight)."""
    import torch

    aten = torch.ops.aten
    val = node.meta.get("val")
    if getattr(val, "dim", lambda: 0)() != 2:
        return False
    t = user.target
    if t is aten.linear.default:
        return len(user.args) > 1 and user.args[1] is node and user.args[0] is not node and \
            (len(user.args) < 3 or user.args[2] is not node)
    if t in (aten.t.default, aten.numpy_T.default):
        return True
    if t is aten.permute.default:
        return [d % 2 for d in user.args[1]] == [1, 0]
    if t is aten.transpose.int:
        return sorted(d % 2 for d in user.args[1:3]) == [0, 1]
    return False


def to_numpy(t) -> np.ndarray:
    """A tensor (or array-like) as a numpy array (torch.bfloat16 as ml_dtypes.bfloat16, no copy)."""
    import torch

    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:   # numpy's bfloat16 is ml_dtypes' (torch has no numpy view of it)
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(t)


def to_torch(a: np.ndarray):
    """A torch tensor sharing ``a``'s memory (ml_dtypes' bfloat16 as torch.bfloat16; 0-d kept)."""
    import torch

    a = np.require(a, requirements="C")
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _np_to_dtype(d) -> str:
    for k, v in NP_DTYPES.items():
        if np.dtype(v) == d:
            return k
    raise TorchImportError(f"unsupported parameter element type {d}")


def _sym_pow(a: Dim, b: Dim) -> Dim:
    """``a ** b`` on sizes (torch.export emits Python's ``pow`` for ``s0 * s0`` in a view of
    ``(s0, 2*s0)`` flattened, importer fuzz seed 1000118): a product for a constant b >= 0;
    anything else is not a size expression."""
    if not b.is_static or b.value < 0:
        raise TorchImportError(f"size expression {a} ** {b}: only constant exponents >= 0 are supported")
    out = Dim.of(1)
    for _ in range(b.value):
        out = out * a
    return out


def _sym_ops():
    import operator

    return {operator.add: lambda a, b: a + b, operator.sub: lambda a, b: a - b,
            operator.mul: lambda a, b: a * b, operator.floordiv: lambda a, b: a // b,
            operator.mod: lambda a, b: a % b, operator.neg: lambda a: -a, operator.pow: _sym_pow}


_SYM_OPS = _sym_ops()
