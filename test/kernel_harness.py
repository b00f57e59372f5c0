"""Run one legalized relax op through its kernel with upstream MLIR passes and the
ExecutionEngine (no dependency on the host lowering): the kernel is bufferized at
its boundaries, its outputs must bufferize in place into the output arguments
(destination-passing style), and the outputs are compared with numpy by the tests.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
from mlir import ir, passmanager
from mlir.execution_engine import ExecutionEngine
from mlir.runtime import get_ranked_memref_descriptor

import relax_mlir
from relax_mlir.shapes import Shape, read_tensor_type, tensor_type

BUFFERIZE = ("builtin.module(one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map}, drop-equivalent-buffer-results, "
             "canonicalize, cse, canonicalize)")
LOWER = ("builtin.module(func.func(convert-linalg-to-loops), expand-strided-metadata, lower-affine, convert-scf-to-cf, "
         "convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, finalize-memref-to-llvm, "
         "convert-cf-to-llvm, convert-func-to-llvm, convert-index-to-llvm, reconcile-unrealized-casts)")

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32, "i64": np.int64,
          "i1": np.bool_, "i8": np.int8}


def _sym_type(shape, dtype):
    return str(tensor_type(Shape.of(shape), dtype))


def legalized(op: str, in_shapes, in_dtypes, attrs: str = "", n_results: int = 1, ctx=None):
    """A module with graph function @f applying relax.<op> to parameters of the given
    symbolic shapes, after relax-infer-shapes and relax-legalize."""
    m = graph_module(op, in_shapes, in_dtypes, attrs, ctx=ctx)
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize)")
    return m


def graph_module(op: str, in_shapes, in_dtypes, attrs: str = "", ctx=None, name: str = "main"):
    """A module with graph function @<name> applying relax.<op> (result types deduced by
    the op's shape rule) to parameters of the given symbolic shapes and dtypes."""
    ctx = ctx or relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        return _graph_module(ctx, op, in_shapes, in_dtypes, attrs, name)


def _graph_module(ctx, op, in_shapes, in_dtypes, attrs, name):
    params = ", ".join(f"%a{i}: {_sym_type(s, d)}" for i, (s, d) in enumerate(zip(in_shapes, in_dtypes)))
    from relax_mlir.dialects import _core
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(f"func.func @{name}({params}) attributes {{relax.function}} {{\n  return\n}}")
        f = m.body.operations[0]
        block = f.regions[0].blocks[0]
        ret = block.operations[0]
        attr_vals = {}
        if attrs:
            d = ir.DictAttr(ir.Attribute.parse("{" + attrs + "}"))
        opdef = _core.OPS[op]
        if attrs:
            from relax_mlir.ops.registry import attr_to_python
            attr_vals = {d[i].name: attr_to_python(opdef.attr(d[i].name).kind, d[i].attr) for i in range(len(d))}
        if any(o.variadic for o in opdef.operands):
            operands = [list(block.arguments)]
        elif opdef.operands:
            operands = list(block.arguments)
        else:  # creation ops: the parameters only bind the symbols
            operands = []
        res = _core.build(op, *operands, ip=ir.InsertionPoint(ret), **attr_vals)
        res = list(res) if isinstance(res, tuple) else [res]
        ir.Operation.create("func.return", operands=res, ip=ir.InsertionPoint(ret))
        ret.erase()
        from relax_mlir.transforms.graph import set_function_type
        set_function_type(f.operation, [a.type for a in block.arguments], [r.type for r in res])
    return m


def kernel_of(m: ir.Module):
    """(call_tir op, kernel func op) of the single legalized op in the graph function."""
    f = m.body.operations[0]
    calls = [o for o in f.regions[0].blocks[0].operations if o.operation.name == "relax.call_tir"]
    assert len(calls) == 1, str(m)
    call = calls[0].operation
    callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    for o in m.body.operations:
        if o.operation.name == "func.func" and ir.StringAttr(o.attributes["sym_name"]).value == callee:
            return call, o.operation
    raise AssertionError(f"no kernel @{callee}")


_ENGINES: dict[str, ExecutionEngine] = {}


def _runtime_libs() -> list[str]:
    import mlir
    lib = os.path.join(list(mlir.__path__)[0], "lib", "libmlir_c_runner_utils.so")
    return [lib] if os.path.exists(lib) else []


def compile_kernel(kernel: ir.Operation) -> tuple[ExecutionEngine, str]:
    text = str(kernel)
    name = ir.StringAttr(kernel.attributes["sym_name"]).value
    if text in _ENGINES:
        return _ENGINES[text], name
    with ir.Context() as ctx, ir.Location.unknown():
        mod = ir.Module.parse(text)
        fn = mod.body.operations[0]
        fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        del fn.attributes["relax.kernel"]
        passmanager.PassManager.parse(BUFFERIZE).run(mod.operation)
        fn = mod.body.operations[0]
        fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
        ftype = ir.FunctionType(ir.TypeAttr(mod.body.operations[0].attributes["function_type"]).value)
        # Destination-passing style: every result is the output argument, updated in place.
        assert not ftype.results, f"kernel results do not bufferize into its outputs:\n{mod}"
        passmanager.PassManager.parse(LOWER).run(mod.operation)
        eng = ExecutionEngine(mod, opt_level=2, shared_libs=_runtime_libs())
    _ENGINES[text] = eng
    return eng, name


def _arg(a: np.ndarray):
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
    return ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(a)))


def run_legalized(m: ir.Module, inputs, out_shapes, out_dtypes, syms=None):
    """Run the kernel of the single call_tir in @f on numpy inputs; returns the outputs."""
    call, kernel = kernel_of(m)
    with m.context:
        tir = []
        if "tir_vars" in call.attributes:
            tir = list(Shape.from_attr(call.attributes["tir_vars"]).evaluate(syms or {}))
        eng, name = compile_kernel(kernel)
    ins = [np.ascontiguousarray(x) for x in inputs]
    outs = [np.full(s, 0 if np.dtype(d).kind in "iub" else np.nan, dtype=d) for s, d in zip(out_shapes, out_dtypes)]
    args = [_arg(a) for a in ins + outs] + [ctypes.pointer(ctypes.c_int64(v)) for v in tir]
    eng.invoke(name, *args)
    return outs
