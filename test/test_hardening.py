"""Inputs that used to crash, abort or trace back at compile time now give a CompileError
with a located diagnostic (issue 9). Every compile runs in a subprocess: an abort or a
signal there is a test failure, not a dead test run."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

N = 'tensor<?xf32, #relax.shape<["n"]>>'


def _fn(params: str, body: str = "", result: str = N, name: str = "main", ret: str = "%x") -> str:
    return (f"func.func @{name}({params}) -> {result} attributes {{relax.function}} {{\n{body}"
            f"  return {ret} : {result}\n}}\n")


def _shape(dim: str) -> str:
    return f'tensor<?xf32, #relax.shape<["{dim}"]>>'


CASES = {
    "memref_shape": ('func.func @f(%x: memref<?xf32, #relax.shape<["n"]>>) { return }',
                     '-:1:1', "@f parameter #0: #relax.shape is the encoding of a ranked tensor type"),
    # a syntax error right after a relax attribute aborted the process in the bindings
    # (long fuzz mutation seed 42000403): the bare syntax check reports it
    "junk_after_shape": ('func.func @f(%x: tensor<?xf32, #relax.shape<["n"]>@>) { return }',
                         '-:1:52', "@ identifier expected to start with letter or '_'"),
    "terms_5000": (_fn(f"%x: {_shape(' + '.join(f'n{i}' for i in range(5000)))}",
                       result=_shape(" + ".join(f"n{i}" for i in range(5000)))),
                   "-:1:1", "characters is too long (at most 1000)"),
    "symbols_3000": (_fn(f"%x: {_shape('*'.join(f's{i}' for i in range(3000)))}",
                         result=_shape("*".join(f"s{i}" for i in range(3000)))),
                     "-:1:1", "characters is too long (at most 1000)"),
    "unary_minus_50000": (_fn(f"%x: {N}", '  %0 = "relax.relu"(%x) : (' + N + ") -> " + _shape("-" * 50000 + "n") + "\n"),
                          "-:2:8", "dimension expression of 50001 characters is too long"),
    "nested_minus_900": (_fn(f"%x: {N}", '  %0 = "relax.relu"(%x) : (' + N + ") -> " + _shape("-" * 900 + "n") + "\n"),
                         "-:2:8", "is nested more than 64 deep"),
    "bodiless": (f"func.func private @main(%x: {N}) -> {N} attributes {{relax.function}}",
                 "-:1:1", "graph function @main has no body"),
    "malloc": (_fn(f"%x: {N}", name="malloc"), "-:1:1", "graph function @malloc: the name is reserved"),
    "metadata": (_fn(f"%x: {N}", name="relax_mlir_metadata"), "-:1:1",
                 "graph function @relax_mlir_metadata: the name is reserved"),
    "free": (_fn(f"%x: {N}", name="free"), "-:1:1", "graph function @free: the name is reserved"),
    "unknown_library_callee": (_fn(f"%x: {N}", f'  %0 = "relax.call_dps_library"(%x) {{callee = "no_such_fn"}} : ({N}) -> {N}\n',
                                   ret="%0"),
                               "-:2:8", "'relax.call_dps_library' callee \"no_such_fn\": no library defines "
                                        "_mlir_ciface_no_such_fn (libraries: none given)"),
    "false_assert": (_fn(f"%x: {N}", '  "relax.assert"() {dims = #relax.shape<["n", "n + 1"]>, message = "m"} : () -> ()\n'),
                     "-:2:3", "'relax.assert' always fails: n != n + 1 for every size"),
    "outside_graph_function": ("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                               '  %0 = "relax.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
                               "  return %0 : tensor<4xf32>\n}",
                               "-:2:8", "'relax.relu' is outside a graph function: mark @main with the relax.function attribute"),
}

SCRIPT = r"""
import json, sys
import relax_mlir
src = sys.stdin.read()
try:
    relax_mlir.compile(src)
    print(json.dumps({"compiled": True}))
except relax_mlir.CompileError as e:
    print(json.dumps({"type": type(e).__name__, "diagnostics": e.diagnostics}))
"""


@pytest.mark.parametrize("case", sorted(CASES))
def test_compile_refuses_with_a_located_diagnostic(case):
    src, where, text = CASES[case]
    p = subprocess.run([sys.executable, "-c", SCRIPT], input=src, capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0, f"compile died (rc {p.returncode}):\n{p.stderr[-3000:]}"
    assert "Traceback" not in p.stderr, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got.get("type") == "SourceError", got
    assert any(w == where and text in m for w, m in got["diagnostics"]), got["diagnostics"]
