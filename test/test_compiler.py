"""The compile driver: targets, typed options (and the old dict form), stages with IR dumps,
custom pipelines and start_after, CompileError with the user's locations, Modules compiled in
their own context without a re-parse, the typed metadata contract, and the one interpreter of
dimension expressions (arith and Python agree)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import relax_mlir
from irtext import T
from relax_mlir import CompileError, CompileOptions
from relax_mlir.runtime.abi import VERSION, ExecutableMetadata, MetadataError

X = T("?x4", ["n", 4])
SRC = f"""func.func @main(%x: {X}, %y: {X}) -> {X} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({X}, {X}) -> {X}
  %1 = "relax.multiply"(%0, %y) : ({X}, {X}) -> {X}
  return %1 : {X}
}}
"""


def rnd(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def check(exe):
    for n in (1, 7, 130):
        x, y = rnd(n, 4), rnd(n, 4) + 1
        np.testing.assert_allclose(exe(x, y), (x + y) * y, rtol=1e-6)


def test_targets_registered():
    assert sorted(relax_mlir.TARGETS) == ["cpu", "cuda", "vulkan"]
    cpu = relax_mlir.TARGETS["cpu"]
    assert (cpu.name, cpu.pipeline_name, cpu.legalize_target, cpu.host_target) == ("cpu", "cpu", "cpu", "cpu")
    vk = relax_mlir.TARGETS["vulkan"]
    assert (vk.name, vk.pipeline_name, vk.legalize_target, vk.host_target) == ("vulkan", "vulkan", "cpu", "cpu")


def test_unknown_target():
    with pytest.raises(CompileError, match=r"^unknown target 'rocm' \(targets: cpu, cuda, vulkan\)$"):
        relax_mlir.compile(SRC, target="rocm")


def test_unknown_option_lists_the_options():
    with pytest.raises(CompileError, match=re.escape(
            "target 'cpu': pass 'cpu' has no option 'fuse' (options: fusion, plan-memory, dispatch, "
            "dispatch-min-flops, dispatch-policy, schedules, layout)")):
        relax_mlir.compile(SRC, options={"fuse": False})
    with pytest.raises(CompileError, match=r"^opt_level must be 0, 1, 2 or 3, got 7$"):
        relax_mlir.compile(SRC, options=CompileOptions(opt_level=7))
    with pytest.raises(CompileError, match=r"^start_after='codegen': stages of target 'cpu' that can be "
                                           r"skipped: graph, host$"):
        relax_mlir.compile(SRC, options=CompileOptions(start_after="codegen"))


def test_libraries_checked(tmp_path):
    with pytest.raises(CompileError, match=r"^libraries= takes a list of shared-library paths, got the single "
                                           r"str 'abc' \(write \['abc'\]\)$"):
        relax_mlir.compile(SRC, libraries="abc")
    missing = str(tmp_path / "nope.so")
    with pytest.raises(CompileError, match=r"^libraries=: cannot use .*nope\.so: No such file or directory$"):
        relax_mlir.compile(SRC, options=CompileOptions(libraries=[missing]))


def test_typed_options_and_dict_agree():
    a = relax_mlir.compile(SRC, options={"fusion": False, "dispatch": False})
    b = relax_mlir.compile(SRC, options=CompileOptions(pipeline_options={"fusion": False, "dispatch": False},
                                                      opt_level=2))
    assert CompileOptions.of({"fusion": False, "opt_level": 1}) == CompileOptions(
        pipeline_options={"fusion": False}, opt_level=1)
    assert b.compile_options.opt_level == 2 and a.compile_options.pipeline_options == {"fusion": False,
                                                                                          "dispatch": False}
    check(a)
    check(b)


def test_dump_ir_after_each_stage(tmp_path):
    exe = relax_mlir.compile(SRC, options=CompileOptions(dump_ir=str(tmp_path)))
    assert sorted(os.listdir(tmp_path)) == ["00-input.mlir", "01-graph.mlir", "02-host.mlir", "03-codegen.mlir"]
    graph = (tmp_path / "01-graph.mlir").read_text()
    host = (tmp_path / "02-host.mlir").read_text()
    codegen = (tmp_path / "03-codegen.mlir").read_text()
    assert '"relax.call_tir"' in graph and "relax.lowered" not in graph
    assert "relax.lowered" in host and '"relax.call_tir"' not in host
    assert "llvm.func @_mlir_ciface_main" in codegen and "func.func @main" not in codegen
    check(exe)


def test_start_after_host_compiles_a_lowered_module():
    from relax_mlir.pipelines.cpu import graph_stage

    ctx = relax_mlir.make_context()
    m = relax_mlir.parse(SRC, ctx)
    relax_mlir.run_pipeline(m, "builtin.module(" + ", ".join(graph_stage()) + ")")
    exe = relax_mlir.compile(m, options=CompileOptions(start_after="host"))
    check(exe)
    # a custom pipeline that forgets relax-lower-host: the driver says so before codegen
    with pytest.raises(CompileError, match=r"^no lowered graph function: the module needs relax-lower-host"):
        relax_mlir.compile(SRC, options=CompileOptions(pipeline="builtin.module(relax-infer-shapes)"))


def test_custom_pipeline():
    exe = relax_mlir.compile(SRC, options=CompileOptions(
        pipeline="builtin.module(relax-infer-shapes, relax-legalize, relax-lower-host)"))
    check(exe)


def test_module_in_its_own_context_with_file_locations(tmp_path):
    src = tmp_path / "model.mlir"
    src.write_text(f"""func.func @main(%x: {X}) -> {T("?x4", ["2*k", 4])} attributes {{relax.function}} {{
  %0 = "relax.exp"(%x) : ({X}) -> {X}
  %1 = "relax.match_cast"(%0) {{shape = #relax.shape<["2*k", 4]>}} : ({X}) -> {T("?x4", ["2*k", 4])}
  return %1 : {T("?x4", ["2*k", 4])}
}}
""")
    from mlir import ir

    ctx = relax_mlir.make_context()
    with ctx:
        module = ir.Module.parseFile(str(src))
    before = str(module)
    exe = relax_mlir.compile(module)
    assert str(module) == before          # the user's module is left as it was
    x = rnd(4, 4)
    np.testing.assert_allclose(exe(x), np.exp(x), rtol=1e-6)
    with pytest.raises(relax_mlir.ShapeError, match=re.escape(
            f"@main: relax.match_cast at {src}:3:8 of the result of relax.call_tir at {src}:2:8: "
            "expected shape (2*k, 4) with n = 3, got (3, 4)")):
        exe(rnd(3, 4))
    # a path compiles with the same locations
    exe2 = relax_mlir.compile(src)
    with pytest.raises(relax_mlir.ShapeError, match=re.escape(f"relax.match_cast at {src}:3:8")):
        exe2(rnd(3, 4))


def test_compile_error_carries_diagnostics(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text(f"""func.func @main(%x: {X}, %y: {T("?x5", ["n", 5])}) -> {X} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({X}, {T("?x5", ["n", 5])}) -> {X}
  return %0 : {X}
}}
""")
    with pytest.raises(CompileError) as info:
        relax_mlir.compile(src)
    assert isinstance(info.value, ValueError)
    locs = [loc for loc, _ in info.value.diagnostics]
    assert locs == [f"{src}:2:8"]
    assert str(info.value).startswith(f"stage 'graph' failed:\n{src}:2:8: error: ")
    with pytest.raises(CompileError) as info:
        relax_mlir.compile("func.func @f( {")
    assert info.value.diagnostics == [("-:1:14", "expected non-function type")]


def test_internal_error_is_not_a_user_error():
    from relax_mlir.transforms.registry import PASSES, register_pass

    @register_pass("test-raise", "raises (a stand-in for a bug in a pass)")
    def _raise(module, opts):
        raise AssertionError("boom")

    try:
        with pytest.raises(relax_mlir.InternalCompilerError,
                           match=r"internal error in pass 'test-raise': AssertionError: boom"):
            relax_mlir.compile(SRC, options=CompileOptions(pipeline="builtin.module(test-raise)"))
    finally:
        del PASSES["test-raise"]


def test_metadata_is_the_typed_contract():
    exe = relax_mlir.compile(SRC)
    meta = exe.metadata
    assert (meta["format"], meta["version"]) == ("relax-mlir-executable", VERSION)
    typed = ExecutableMetadata.from_json(json.loads(json.dumps(meta)))
    assert typed.to_json() == meta
    main = typed.functions["main"]
    assert [p.shape for p in main.params] == [("n", "4"), ("n", "4")]
    assert [c.kind for c in main.checks][:1] == ["param"]
    with pytest.raises(MetadataError, match=r"this relax_mlir reads 'relax-mlir-executable' versions 2, 3"):
        ExecutableMetadata.from_json(dict(meta, version=1))
    with pytest.raises(MetadataError, match=r"unknown check kind 'bogus'"):
        ExecutableMetadata.from_json(dict(meta, functions={"main": dict(meta["functions"]["main"],
                                                                        checks=[{"id": 1, "kind": "bogus",
                                                                                 "where": "x"}])}))
    assert repr(exe) == "<relax_mlir Executable (cpu): @main>"


# -- one interpreter of dimension expressions -----------------------------------------------

EXPRS = ["n + 3*m", "n // m", "(n - 2*m) % m", "min(n, m) * max(n - 1, 2)", "n*n*m // (m + 1)",
         "(n + m - 1) // m", "7 - n", "n % 3 + m // 4"]


@pytest.mark.parametrize("text", EXPRS)
def test_arith_and_python_emitters_agree(text):
    """The expression built with arith ops and folded by MLIR equals the Python one, at several values."""
    from mlir import ir
    from mlir.dialects import arith, func

    from relax_mlir.shapes import parse_dim
    from relax_mlir.shapes.emit import ArithEmitter, python_expr

    d = parse_dim(text)
    code = python_expr(d, {"n": "n", "m": "m"})
    for n, m in [(0, 1), (1, 1), (7, 3), (100, 9), (5, 7)]:
        ctx = relax_mlir.make_context()
        with ctx, ir.Location.unknown():
            module = ir.Module.create()
            idx = ir.IndexType.get()
            with ir.InsertionPoint(module.body):
                f = func.FuncOp("f", ir.FunctionType.get([], [idx]))
            block = f.add_entry_block()
            ip = ir.InsertionPoint(block)
            cache: dict = {}
            env = {s: arith.ConstantOp(idx, v, ip=ip).result for s, v in (("n", n), ("m", m))}
            checks = []
            em = ArithEmitter(lambda: ip, env.__getitem__, lambda: cache,
                              lambda ok, kind, e: checks.append(kind))
            func.ReturnOp([em.emit(d)], ip=ip)
            relax_mlir.run_pipeline(module, "builtin.module(canonicalize)")
            ret = list(block.operations)[-1]
            folded = ir.IntegerAttr(ret.operands[0].owner.attributes["value"]).value
        assert folded == eval(code, {"__builtins__": {"min": min, "max": max}}, {"n": n, "m": m}), (text, n, m)
        assert set(checks) <= {"division", "overflow"}


def test_compile_phases_and_pass_timing(capfd):
    """exe.compile_phases: seconds of each stage and of the JIT's two halves; timing=True
    adds MLIR's pass timing report of each stage (relax passes named) on stderr."""
    exe = relax_mlir.compile(SRC)
    assert list(exe.compile_phases) == ["prepare", "graph", "host", "codegen", "jit-optimize", "jit-codegen"]
    assert all(v >= 0 for v in exe.compile_phases.values())
    assert capfd.readouterr().err.count("Execution time report") == 0
    exe = relax_mlir.compile(SRC, options={"timing": True})
    err = capfd.readouterr().err
    assert err.count("Execution time report") == 3
    assert "relax-infer-shapes" in err and "relax-lower-host" in err and "relax-strip-attributes" in err
    x, y = rnd(3, 4), rnd(3, 4)
    np.testing.assert_allclose(exe(x, y), (x + y) * y, rtol=1e-6)


def test_invalid_ir_from_a_relax_pass_is_an_internal_error(monkeypatch):
    """compile() verifies after each relax pass (not after every upstream one): a pass that
    leaves invalid IR is reported as a bug in that pass, not passed on to the next one."""
    from mlir import ir

    from relax_mlir.compiler import InternalCompilerError
    from relax_mlir.transforms.registry import PASSES

    info = PASSES["relax-dce"]

    def breaks(module, opts):   # a func.return with the wrong operand count
        for f in module.regions[0].blocks[0].operations:
            ret = list(f.regions[0].blocks[0].operations)[-1]
            with ir.InsertionPoint(ret), ret.location:
                ir.Operation.create("func.return", operands=[])
            ret.erase()
            return

    monkeypatch.setattr(info, "run", breaks)
    with pytest.raises(InternalCompilerError, match="relax-dce"):
        relax_mlir.compile(SRC)
