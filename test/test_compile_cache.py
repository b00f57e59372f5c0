"""The compile cache (relax_mlir.compile_cache): a second compile of the same module loads
the library the first exported; a bad entry is rebuilt; every input of the compile is in
the key; RELAX_MLIR_CACHE_DIR=off turns it off."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import relax_mlir
from relax_mlir import compile_cache
from relax_mlir.frontend.models import MLPConfig, mlp_module, mlp_params, mlp_reference

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="cache entries are exported (cc links them)")

CFG = MLPConfig(d_in=8, d_hidden=16, d_out=4, max_batch=64)
PARAMS = mlp_params(CFG, np.random.default_rng(0))
SIZES = (1, 7, 64)


def _compile(options=None):
    return relax_mlir.compile(mlp_module(relax_mlir.make_context(), CFG), options={"cache": True, **(options or {})})


def _check(exe):
    rng = np.random.default_rng(1)
    for n in SIZES:    # several sizes through one executable
        x = rng.standard_normal((n, CFG.d_in)).astype(np.float32)
        np.testing.assert_allclose(exe(x, *PARAMS), mlp_reference(x, *PARAMS), rtol=1e-5, atol=1e-5)


def _entries(d):
    return sorted(p for p in d.rglob("*.so") if len(p.stem) == 64)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAX_MLIR_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_second_compile_loads_the_entry(cache):
    first = _compile()
    assert first.cache_hit is False and first.source_path is not None
    assert len(_entries(cache)) == 1
    second = _compile()
    assert second.cache_hit is True
    assert second.source_path == first.source_path
    assert list(second.compile_phases) == ["cache"]
    _check(first)
    _check(second)


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_bad_entry_is_rebuilt(cache, damage):
    _compile()
    (path,) = _entries(cache)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:
        path.write_bytes(b"")
    with pytest.warns(RuntimeWarning, match="rebuilding a bad entry"):
        exe = _compile()
    assert exe.cache_hit is False
    assert path.read_bytes() == data      # rebuilt: the same bytes as the first export
    _check(exe)
    assert _compile().cache_hit is True


def test_key_covers_options_environment_and_compiler(cache, monkeypatch):
    _compile()
    assert _compile({"fusion": False}).cache_hit is False      # pipeline options
    assert _compile({"opt_level": 2}).cache_hit is False       # CompileOptions
    monkeypatch.setenv("RELAX_MLIR_DISPATCH_POLICY", "flops")   # the RELAX_* environment
    assert _compile().cache_hit is False
    monkeypatch.delenv("RELAX_MLIR_DISPATCH_POLICY")
    assert _compile().cache_hit is True
    monkeypatch.setattr(compile_cache, "_FINGERPRINT", "another compiler")
    assert _compile().cache_hit is False
    assert len(_entries(cache)) == 5
    from relax_mlir.pipelines import cpu as cpu_pipeline
    monkeypatch.setattr(cpu_pipeline, "CONV_GEMM_DEFAULT", "blas")   # a module default (the passes run)
    assert _compile().cache_hit is False
    monkeypatch.setattr(cpu_pipeline, "CONV_GEMM_DEFAULT", "generated")
    assert _compile().cache_hit is True


def test_locations_are_part_of_the_module(cache):
    """Run-time errors name source locations: a module that differs only in them is another entry."""
    text = str(mlp_module(relax_mlir.make_context(), CFG))
    a = relax_mlir.compile(relax_mlir.parse(text, source_name="a.mlir"), options={"cache": True})
    b = relax_mlir.compile(relax_mlir.parse(text, source_name="b.mlir"), options={"cache": True})
    assert (a.cache_hit, b.cache_hit) == (False, False)


@pytest.mark.parametrize("value", ["off", "0"])
def test_off(monkeypatch, value):
    monkeypatch.setenv("RELAX_MLIR_CACHE_DIR", value)
    assert relax_mlir.config.cache_dir() is None and compile_cache.entry("0" * 64) is None
    exe = _compile()
    assert exe.cache_hit is None and exe.source_path is None     # the JIT
    _check(exe)


def test_default_directory(tmp_path, monkeypatch):
    """Under the artifacts' base directory (RELAX_MLIR_CACHE, else the user's cache dir)."""
    monkeypatch.delenv("RELAX_MLIR_CACHE_DIR")
    monkeypatch.delenv("RELAX_MLIR_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert relax_mlir.config.cache_dir() == tmp_path / "xdg" / "relax-mlir" / "compiled"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert relax_mlir.config.cache_dir() == tmp_path / ".cache" / "relax-mlir" / "compiled"
    monkeypatch.setenv("RELAX_MLIR_CACHE", str(tmp_path / "base"))
    assert relax_mlir.config.cache_dir() == tmp_path / "base" / "compiled"


def test_unwritable_directory_falls_back_to_the_jit(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RELAX_MLIR_CACHE_DIR", str(blocker))
    with pytest.warns(RuntimeWarning, match="cannot write"):
        exe = _compile()
    assert exe.cache_hit is None
    _check(exe)
