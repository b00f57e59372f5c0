"""relax-opt as an MLIR tool: stage-by-stage piping, flags, source names, clean errors.

relax-opt runs in-process here (``main(argv)`` with stdin/stdout swapped), exactly as the
console script does, so the whole cpu pipeline can be piped stage by stage quickly.
"""

import io
import re
import sys
from pathlib import Path

import pytest

from relax_mlir.pipelines.cpu import graph_stage, llvm_stage
from relax_mlir.tools.relax_opt import main

ROOT = Path(__file__).resolve().parent
MLP = ROOT / "Inputs" / "stages_mlp.mlir"


def run_opt(argv, stdin: bytes = b"") -> tuple[int, str, str]:
    """``relax-opt argv < stdin`` in this process: (exit code, stdout, stderr)."""
    old = sys.stdin, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    try:
        try:
            rc = main(list(argv))
        except SystemExit as e:  # argparse errors
            rc = e.code
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    return rc, out.getvalue(), err.getvalue()


_LOC = re.compile(r" ?loc\((?:[^()]|\([^()]*\))*\)|^#loc.*\n", re.M)


def _pipe_stages(path: Path, stages: list[str]) -> list[str]:
    """``relax-opt path s0 | relax-opt - s1 | ...``; the text after each stage (with locations,
    so the next stage sees the same locations the one-shot run does)."""
    texts = []
    rc, cur, err = run_opt([str(path), f"-pass-pipeline=builtin.module({stages[0]})", "--mlir-print-debuginfo"])
    assert rc == 0, f"{stages[0]}: {err}"
    texts.append(cur)
    for s in stages[1:]:
        rc, cur, err = run_opt(["-", f"-pass-pipeline=builtin.module({s})", "--mlir-print-debuginfo"],
                               cur.encode())
        assert rc == 0, f"stage {s} rejects or fails on the previous stage's output:\n{err}"
        texts.append(cur)
    return texts


@pytest.mark.parametrize("bounds", [True, False], ids=["upper-bounds", "symbolic-storage"])
def test_every_cpu_stage_reparses_and_composes(tmp_path, bounds):
    """relax-opt A | relax-opt B == relax-opt A,B for every stage of the cpu pipeline (each
    stage's output re-parses, passes relax-verify and runs through the next stage)."""
    src = MLP.read_text()
    if not bounds:
        src = src.replace(", relax.upper_bounds = {n = 64 : i64}", "")
    path = tmp_path / "mlp.mlir"
    path.write_text(src)
    stages = graph_stage() + llvm_stage()
    texts = _pipe_stages(path, stages)
    planned = texts[stages.index("relax-plan-memory")]
    if not bounds:
        assert "dests = array<i64: 0>" in planned  # relax-verify must accept call_tir with dests
    for upto in (stages.index("relax-lower-host"), len(stages) - 1):
        rc, one_shot, err = run_opt([str(path), "--mlir-print-debuginfo",
                                     "-pass-pipeline=builtin.module(" + ", ".join(stages[:upto + 1]) + ")"])
        assert rc == 0, err
        if upto == len(stages) - 1:  # kernels re-parsed inside relax-fuse-kernels get text locations
            one_shot, texts[upto] = _LOC.sub("", one_shot), _LOC.sub("", texts[upto])
        assert texts[upto] == one_shot, f"piping differs from one shot after {stages[upto]}"


def test_pass_flags_equal_pipeline():
    rc1, flags, e1 = run_opt([str(MLP), "--relax-infer-shapes", "--relax-legalize", "-cse",
                              "--relax-fuse-ops", "--canonicalize"])
    rc2, pipe, e2 = run_opt([str(MLP), "--pass-pipeline=builtin.module(relax-infer-shapes, relax-legalize, "
                                       "cse, relax-fuse-ops, canonicalize)"])
    assert (rc1, rc2) == (0, 0), e1 + e2
    assert flags == pipe
    assert "relax.call_tir" in flags
    rc, out, err = run_opt([str(MLP), "--relax-dispatch-library=min-flops=1", "--relax-infer-shapes"])
    assert rc == 0, err
    assert "relax.call_dps_library" in out


def test_flags_and_pipeline_together_are_refused():
    rc, _, err = run_opt([str(MLP), "--cse", "--pass-pipeline=builtin.module(cse)"])
    assert rc == 2 and "cannot be used together" in err


def test_version_and_single_dash_options():
    rc, out, _ = run_opt(["--version"])
    assert rc == 0 and out.startswith("relax-opt (relax-mlir) 0.1.0\n")
    rc, out, _ = run_opt(["-version"])
    assert rc == 0 and out.startswith("relax-opt (relax-mlir)")
    rc, out, err = run_opt([str(MLP), "-pass-pipeline=builtin.module(relax-infer-shapes)", "-mlir-print-op-generic"])
    assert rc == 0, err
    assert '"func.func"() <{' in out


def test_nested_function_passes():
    rc, nested, err = run_opt([str(MLP), "--pass-pipeline=builtin.module(func.func(cse, relax-verify, canonicalize))"])
    assert rc == 0, err
    rc, flat, err = run_opt([str(MLP), "--pass-pipeline=builtin.module(func.func(cse), relax-verify, func.func(canonicalize))"])
    assert rc == 0, err
    assert nested == flat
    rc, _, err = run_opt([str(MLP), "--pass-pipeline=builtin.module(func.func(relax-legalize))"])
    assert rc == 1
    assert "relax pass 'relax-legalize' runs on the whole module; it cannot be nested under func.func" in err


def test_unknown_pass_reports_mlir_message():
    rc, _, err = run_opt([str(MLP), "--pass-pipeline=builtin.module(cse, no-such-pass)"])
    assert rc == 1
    assert "'no-such-pass' does not refer to a registered pass or pass pipeline" in err
    assert "cse,no-such-pass\n    ^" in err
    rc, _, err = run_opt([str(MLP), "--no-such-flag"])
    assert rc == 1 and "'no-such-flag' does not refer to a registered pass" in err


def test_diagnostics_name_the_file(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text('\nfunc.func @f(%x: tensor<?xf32, #relax.shape<["n"]>>) attributes {relax.function} {\n'
                 '  %0 = "relax.reshape"(%x) {shape = #relax.shape<["k"]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>\n'
                 '  return\n}\n')
    rc, _, err = run_opt([str(p)])
    assert rc == 1
    assert err.startswith(f"{p}:3:8: error: 'relax.reshape' attribute 'shape' uses unbound symbol(s) k")
    rc, _, err = run_opt(["-"], p.read_bytes())
    assert err.startswith("<stdin>:3:8: error:")


def test_bad_utf8_and_unwritable_output_are_one_line_errors(tmp_path):
    rc, _, err = run_opt(["-"], b"func.func @f() {\n  return // \xff\xfe\n}\n")
    assert rc == 1
    assert err == "<stdin>:2:13: error: the input is not valid UTF-8 (byte 0xff)\n"
    rc, _, err = run_opt([str(MLP), "-o", str(tmp_path / "no" / "such" / "dir.mlir")])
    assert rc == 1
    assert err == f"relax-opt: error: cannot write '{tmp_path / 'no' / 'such' / 'dir.mlir'}': No such file or directory\n"
    rc, _, err = run_opt([str(tmp_path)])
    assert rc == 1 and err == f"relax-opt: error: cannot read '{tmp_path}': Is a directory\n"


def test_list_ops():
    rc, out, _ = run_opt(["--list-ops"])
    assert rc == 0
    assert "relax.concat(*tensors) {axis: int = 0}" in out
    assert "relax.reshape(x) {shape: shape}" in out
