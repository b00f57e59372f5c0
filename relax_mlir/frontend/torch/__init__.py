"""PyTorch frontend: ``torch.export`` programs to relax modules.

::

    import torch
    from relax_mlir.frontend.torch import from_exported_program, compile

    b, s = torch.export.Dim("batch", max=32), torch.export.Dim("seq", max=512)
    ep = torch.export.export(model, (ids,), dynamic_shapes={"input_ids": {0: b, 1: s}})
    module, params = from_exported_program(ep, dynamic_shapes={"input_ids": {0: b, 1: s}})
    exe = relax_mlir.compile(module)
    out = exe(ids.numpy(), *params)          # any batch <= 32, any seq <= 512

    fn = compile(model, (ids,), dynamic_shapes={"input_ids": {0: b, 1: s}})  # the one-call form
    out = fn(ids)                            # torch in, torch out (numpy in, numpy out)

``@main`` takes the user inputs of the program in order, then its parameters, buffers and
lifted constants (``params``, numpy arrays; a weight used only by ``linear`` is passed
transposed so no transpose runs per call). Converters: :mod:`.aten`; the walk, symbols and
guards: :mod:`.importer`.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

import numpy as np

from .importer import (CONVERTERS, ImportedParam, Importer, TorchImportError, full_stack_traces,  # noqa: F401
                       to_numpy, to_torch)
from . import aten as _aten  # noqa: F401  (registers the converters)

__all__ = ["from_exported_program", "import_program", "compile", "TorchImportError", "ImportedProgram",
           "CompiledModule", "supported_ops", "full_stack_traces", "load"]


class ImportedProgram:
    """The result of an import: the module, the trailing parameter arrays and what they are."""

    def __init__(self, module, params: list[np.ndarray], param_info: list[ImportedParam], ep):
        self.module = module
        self.params = params
        self.param_info = param_info
        self.ep = ep


def supported_ops() -> list[str]:
    """The ATen ops (``aten.<op>.<overload>``) the importer converts."""
    return sorted(CONVERTERS)


def _dim_names(ep, dynamic_shapes) -> dict:
    """torch's size symbols -> the names of the user's ``torch.export.Dim`` objects."""
    import sympy
    from torch.export.graph_signature import InputKind

    if dynamic_shapes is None:
        return {}
    users = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    if isinstance(dynamic_shapes, dict):
        pairs = [(name, dynamic_shapes.get(name)) for name in users]
    else:
        pairs = list(zip(users, dynamic_shapes))
    out: dict = {}
    for name, spec in pairs:
        if spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        shape = nodes[name].meta["val"].shape
        for axis, d in items:
            dname = getattr(d, "__name__", None)
            if dname is None or axis >= len(shape):
                continue
            node = getattr(shape[axis], "node", None)
            e = getattr(node, "expr", None)
            root = getattr(getattr(d, "root", None), "__name__", None)
            if isinstance(e, sympy.Symbol):
                out.setdefault(e, root or dname)
            elif root is not None and e is not None and len(e.free_symbols) == 1:
                # a derived dim (``32*h``): torch's size is an expression of h's symbol
                out.setdefault(next(iter(e.free_symbols)), root)
    return out


def _oblivious_retrace(ep):
    """The context for re-tracing ``ep`` (run_decompositions): torch's
    ``backed_size_oblivious`` when a size symbol's range reaches 1, which only a program
    exported that way has (torch otherwise narrows dynamic sizes to >= 2). Without it the
    re-trace specializes an intermediate size whose example value is 1 to the constant 1,
    with no guard (vision fuzz seed 1000057: a conv output H of ``(h - 33) // 6 + 1`` became 1
    after a batch norm, so the executable refused every other h)."""
    import contextlib

    try:
        low = any(int(vr.lower) <= 1 for vr in ep.range_constraints.values())
    except (TypeError, ValueError, AttributeError):
        low = False
    if not low:
        return contextlib.nullcontext()
    import torch.fx.experimental._config as fx_config
    return fx_config.patch(backed_size_oblivious=True)


def import_program(ep, *, dynamic_shapes=None, decompositions="default", context=None,
                   transpose_linear_weights: bool = True) -> ImportedProgram:
    """Import ``ep`` (see :func:`from_exported_program`), keeping the parameter metadata."""
    from mlir import ir

    import relax_mlir

    guards = list(getattr(ep, "_guards_code", None) or [])
    try:
        with _oblivious_retrace(ep):
            if decompositions == "default":
                ep = ep.run_decompositions({})      # functional ATen, higher-order ops inlined
            elif decompositions == "core":
                ep = ep.run_decompositions()        # torch's core ATen decomposition table
            elif decompositions is not None:
                ep = ep.run_decompositions(decompositions)
    except Exception as e:   # noqa: BLE001  torch's own failure, reported as an import failure
        what = "a custom table" if isinstance(decompositions, dict) else repr(decompositions)
        raise TorchImportError(f"torch's run_decompositions ({what}) failed: {type(e).__name__}: {e}") from e
    names = _dim_names(ep, dynamic_shapes)
    ctx = context or relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        im = Importer(ep, names, transpose_linear_weights, guards=guards, decompositions=decompositions)
        module, params, info = im.run()
    if im.unchecked_guards:
        import warnings
        warnings.warn("torch.export guards without a relax run-time check: " + "; ".join(im.unchecked_guards))
    prog = ImportedProgram(module, params, info, ep)
    prog.unchecked_guards = im.unchecked_guards
    return prog


def from_exported_program(ep, *, dynamic_shapes=None, decompositions="default", context=None,
                          transpose_linear_weights: bool = True):
    """Import a ``torch.export`` ExportedProgram into a relax module.

    Returns ``(module, params)``: ``relax_mlir.compile(module)(*inputs, *params)`` returns the
    program's outputs (one array, or a tuple in order). ``dynamic_shapes`` (the value given
    to ``torch.export.export``) names the symbols after the user's ``Dim`` objects;
    without it a symbol is named ``<input>_<axis>``. ``decompositions``: ``"default"``
    (functional ATen, keeping linear/layer_norm/sdpa whole), ``"core"`` (torch's core ATen
    table), a decomposition table, or None (the program as given). Raises
    :class:`TorchImportError` (a ``relax_mlir.errors.CompileError``) for an op without a
    conversion, naming the ATen op and the Python line that produced it.
    """
    r = import_program(ep, dynamic_shapes=dynamic_shapes, decompositions=decompositions, context=context,
                       transpose_linear_weights=transpose_linear_weights)
    return r.module, r.params


class CompiledModule:
    """A compiled torch model: call it like the model (torch tensors or numpy arrays in, the
    same kind out, in the model's output structure). Compiled once for every shape the
    ``dynamic_shapes`` allow; ``exe`` is the underlying :class:`relax_mlir.Executable`."""

    def __init__(self, program: ImportedProgram, exe):
        self.program = program
        self.exe = exe
        self.params = program.params
        ep = program.ep
        self._in_spec = ep.call_spec.in_spec
        self._out_spec = ep.call_spec.out_spec
        self._bound = None   # @main with the parameters bound (first call), False: not supported

    def run(self, *arrays):
        """The compiled program on the user inputs as numpy arrays (flattened, in order):
        its flat outputs, an array or a tuple. The parameters are bound once (checked and
        turned into descriptors on the first call, :meth:`Function.bind_params`), not per call:
        for MiniLM's ~100 weights that is ~0.4 ms a call."""
        if self._bound is None:
            try:
                self._bound = self.exe["main"].bind_params(*self.params)
            except (NotImplementedError, AttributeError, KeyError):
                self._bound = False
        if self._bound:
            try:
                return self._bound(*arrays)
            except NotImplementedError:   # a target whose calls take no bound descriptors
                self._bound = False
        return self.exe(*arrays, *self.params)

    def __call__(self, *args, **kwargs):
        import torch
        from torch.utils import _pytree as pytree

        if kwargs and self._in_spec is not None:
            from torch.export._tree_utils import reorder_kwargs
            kwargs = reorder_kwargs(kwargs, self._in_spec)
        flat, _ = pytree.tree_flatten((args, kwargs))
        as_torch = any(isinstance(a, torch.Tensor) for a in flat)
        arrays = [to_numpy(a) if isinstance(a, torch.Tensor) else np.asarray(a)
                  for a in flat if isinstance(a, (torch.Tensor, np.ndarray))]
        outs = self.run(*arrays)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        if as_torch:
            outs = [to_torch(o) for o in outs]  # keeps 0-d
        if self._out_spec is not None:
            try:
                return pytree.tree_unflatten(outs, self._out_spec)
            except Exception:  # an output structure not registered with pytree
                pass
        return outs[0] if len(outs) == 1 else tuple(outs)


def compile(model, example_args: Sequence[Any] = (), example_kwargs: Optional[dict] = None, *,
            dynamic_shapes=None, target: str = "cpu", options: Optional[dict] = None,
            decompositions="default") -> CompiledModule:
    """Export ``model`` with ``torch.export`` and compile it once for every allowed shape.

    ``dynamic_shapes`` is passed to ``torch.export.export`` (``torch.export.Dim`` objects;
    their names become the symbols). Returns a :class:`CompiledModule`.
    """
    import torch

    import relax_mlir

    with full_stack_traces():   # import errors then name the line of the op itself
        ep = torch.export.export(model, tuple(example_args), example_kwargs or {}, dynamic_shapes=dynamic_shapes)
    prog = import_program(ep, dynamic_shapes=dynamic_shapes, decompositions=decompositions)
    exe = relax_mlir.compile(prog.module, target=target, options=options)
    return CompiledModule(prog, exe)


_PYTREE_TYPE = re.compile(r'\\*"type\\*"\s*:\s*\\*"([A-Za-z_][\w.]*)\\*"')


def load(path):
    """``torch.export.load(path)``, first importing the modules that define the pytree
    types of the program's inputs and outputs (``transformers.modeling_outputs.
    BaseModelOutput``: a class registers itself for (de)serialization when its module is
    imported, which a process that only loads the file has not done). Only modules of
    installed packages are imported; a type still unknown after that fails as in torch."""
    import importlib
    import importlib.util
    import zipfile

    import torch
    from torch.utils import _pytree as pytree

    names = set()
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.filename.endswith(".json") and info.file_size < 64 << 20:
                    names.update(_PYTREE_TYPE.findall(z.read(info).decode("utf-8", "replace")))
    except (OSError, zipfile.BadZipFile):
        pass   # not an archive: torch.export.load says what is wrong
    for name in sorted(names - set(pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE)):
        module = name.rpartition(".")[0]
        top = module.partition(".")[0]
        if not module or top in ("builtins", "collections", "torch") or importlib.util.find_spec(top) is None:
            continue
        try:
            importlib.import_module(module)
        except Exception:   # noqa: BLE001  torch.export.load reports the unknown type
            continue
    return torch.export.load(str(path))
