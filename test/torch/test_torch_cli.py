"""The relax-mlir console script: compile (.mlir, saved torch.export programs) and run."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from relax_mlir.tools import relax_mlir_cli
from relax_mlir.tools.relax_mlir_cli import SUBCOMMANDS, main, params_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = """
func.func @main(%x: tensor<?x8xf32, #relax.shape<["n", 8]>>, %w: tensor<8x4xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.relu"(%0) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %1 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
"""


def test_help_lists_the_subcommands():
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "relax_mlir.tools.relax_mlir_cli", "--help"], env=env,
                       capture_output=True, text=True, check=True)
    assert "compile" in r.stdout and "run" in r.stdout and "relax-mlir <command> --help" in r.stdout
    r = subprocess.run([sys.executable, "-m", "relax_mlir.tools.relax_mlir_cli", "compile", "--help"], env=env,
                       capture_output=True, text=True, check=True)
    assert "a saved torch.export program (.pt2, torch.export.save)" in " ".join(r.stdout.split())
    assert list(SUBCOMMANDS)[:2] == ["compile", "run"]


def test_compile_mlir_then_run_library(tmp_path, capsys):
    src = tmp_path / "prog.mlir"
    src.write_text(PROGRAM)
    so = tmp_path / "prog.so"
    assert main(["compile", str(src), "-o", str(so)]) == 0
    assert so.exists()
    assert f"wrote {so}" in capsys.readouterr().out
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    np.save(tmp_path / "w.npy", w)
    for n in (1, 5, 37):                      # one library, every n
        x = rng.standard_normal((n, 8)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        out = tmp_path / "y.npy"
        assert main(["run", str(so), "--input", str(tmp_path / "x.npy"), "--input", str(tmp_path / "w.npy"),
                     "-o", str(out)]) == 0
        printed = capsys.readouterr().out
        assert f"result #0: shape ({n}, 4) dtype float32" in printed
        np.testing.assert_allclose(np.load(out), np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def test_run_reports_a_shape_error(tmp_path, capsys):
    src = tmp_path / "prog.mlir"
    src.write_text(PROGRAM)
    np.save(tmp_path / "x.npy", np.zeros((3, 7), np.float32))
    np.save(tmp_path / "w.npy", np.zeros((8, 4), np.float32))
    rc = main(["run", str(src), "-i", str(tmp_path / "x.npy"), "-i", str(tmp_path / "w.npy")])
    assert rc == 1
    err = capsys.readouterr().err
    assert err.startswith("relax-mlir run: error: @main: argument #0: expected shape (n, 8)")


def test_compile_missing_file_is_an_error(tmp_path, capsys):
    assert main(["compile", str(tmp_path / "nope.mlir")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_compile_saved_torch_export_program_then_run(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.SiLU(), torch.nn.Linear(16, 2)).eval()
    n = torch.export.Dim("n", max=128)
    ep = torch.export.export(model, (torch.randn(4, 6),), dynamic_shapes=({0: n},))
    pt2 = tmp_path / "mlp.pt2"
    torch.export.save(ep, str(pt2))
    so = tmp_path / "mlp.so"
    assert main(["compile", str(pt2), "-o", str(so)]) == 0
    assert "4 parameter arrays in" in capsys.readouterr().out
    assert params_path(so) == tmp_path / "mlp.params.npz" and params_path(so).exists()
    for rows in (1, 9):
        x = torch.randn(rows, 6)
        np.save(tmp_path / "x.npy", x.numpy())
        assert main(["run", str(so), "-i", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy"), "--quiet"]) == 0
        with torch.no_grad():
            np.testing.assert_allclose(np.load(tmp_path / "y.npy"), model(x).numpy(), atol=1e-5)


def test_plugin_subcommands(tmp_path, monkeypatch, capsys):
    """A module listed in PLUGINS adds a subcommand (add_arguments + run); a plugin that fails
    to import is listed as unavailable and reports why, without breaking the others."""
    (tmp_path / "cli_plugin_ok.py").write_text(
        "def add_arguments(p):\n    p.add_argument('--times', type=int, default=1)\n"
        "def run(args):\n    print('hello ' * args.times)\n    return 0\n")
    (tmp_path / "cli_plugin_broken.py").write_text("raise ImportError('missing piece')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(relax_mlir_cli, "PLUGINS", {"hello": ("cli_plugin_ok", "say hello"),
                                                    "broken": ("cli_plugin_broken", "never works"),
                                                    "absent": ("no_such_module_xyz", "not installed")})
    monkeypatch.setattr(relax_mlir_cli, "SUBCOMMANDS", dict(SUBCOMMANDS))
    assert main(["hello", "--times", "2"]) == 0
    assert capsys.readouterr().out == "hello hello \n"
    assert main(["broken", "--anything"]) == 1
    assert capsys.readouterr().err == ("relax-mlir broken: error: unavailable: importing cli_plugin_broken failed: "
                                       "ImportError: missing piece\n")
    assert "absent" not in relax_mlir_cli.SUBCOMMANDS
    assert main(["compile", str(tmp_path / "missing.mlir")]) == 1   # the others still work
