"""The small things of issue 9 around compile(libraries=...) and export: libraries checked
before any work, a missing C compiler named, a failed export leaves nothing behind, export
never replaces anything but a regular file, the BLAS shim rebuilt when its source changes."""

from __future__ import annotations

import os
import shutil
import stat

import numpy as np
import pytest

import relax_mlir
from irtext import ADD_PROGRAM
from relax_mlir.errors import CompileError
from relax_mlir.runtime import aot, libraries

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="export links with cc")

ADD = ADD_PROGRAM


@pytest.fixture(scope="module")
def exe():
    return relax_mlir.compile(ADD)


def test_libraries_checked(tmp_path):
    missing = tmp_path / "libmissing.so"
    with pytest.raises(CompileError, match=rf"^libraries=: cannot use {missing}: No such file or directory$"):
        relax_mlir.compile(ADD, libraries=[str(missing)])
    with pytest.raises(CompileError, match=r"^libraries= takes a list of shared-library paths, got the single str "
                                           r"'abc' \(write \['abc'\]\)$"):
        relax_mlir.compile(ADD, libraries="abc")
    with pytest.raises(CompileError, match=rf"^libraries= takes a list of shared-library paths, got the single "
                                           rf"PosixPath '{missing}'"):
        relax_mlir.compile(ADD, libraries=missing)
    with pytest.raises(CompileError, match=rf"^libraries=: {tmp_path} is not a regular file"):
        relax_mlir.compile(ADD, libraries=[tmp_path])
    with pytest.raises(CompileError, match=r"^libraries=: 3 is not a path \(int\)$"):
        libraries.validate([3])
    lib = tmp_path / "libx.so"
    lib.write_bytes(b"")
    assert libraries.validate(None) == []
    assert libraries.validate((lib, str(lib))) == [str(lib)]   # absolute, once


def test_missing_c_compiler_is_named(exe, tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(CompileError, match=r"^CC='/nonexistent/cc': C compiler '/nonexistent/cc' not found"):
        exe.export(tmp_path / "m.so")
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(tmp_path))   # no cc, gcc or clang there
    with pytest.raises(CompileError, match=r"^no C compiler: relax-mlir builds its BLAS shim and links exported "
                                           r"libraries with `cc` \(not found on PATH, nor gcc or clang\)"):
        exe.export(tmp_path / "m.so")
    monkeypatch.setenv("RELAX_MLIR_CACHE", str(tmp_path / "cache"))   # nothing cached: the shim must be built
    with pytest.raises(libraries.LibraryError, match=r"^no C compiler"):
        libraries.build_blas_shim(libraries.blas_provider())
    assert sorted(os.listdir(tmp_path)) == []


def test_failed_export_leaves_nothing(exe, tmp_path, monkeypatch):
    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(aot.os, "replace", refuse)
    with pytest.raises(CompileError, match=rf"^export: cannot write {tmp_path}/m.so: Permission denied$"):
        exe.export(tmp_path / "m.so")
    monkeypatch.undo()
    monkeypatch.setattr(libraries, "c_compiler", lambda: ["false"])   # the link fails
    with pytest.raises(CompileError, match=r"^export: linking \(cc\) failed \(false\)"):
        exe.export(tmp_path / "m.so")
    assert os.listdir(tmp_path) == []


def test_export_replaces_only_regular_files(exe, tmp_path):
    fifo, d = tmp_path / "fifo.so", tmp_path / "dir.so"
    os.mkfifo(fifo)
    d.mkdir()
    targets = {fifo: "a FIFO", d: "a directory"}
    try:
        dev = tmp_path / "null.so"
        os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))   # as root: a device node
        targets[dev] = "a character device"
    except PermissionError:
        pass
    for p, kind in targets.items():
        with pytest.raises(CompileError, match=rf"^export: refusing to replace {p}: it is {kind}, not a regular file"):
            exe.export(p)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(d) == []
    regular = tmp_path / "m.so"
    regular.write_bytes(b"old")
    exe.export(regular)
    x = np.ones((2, 4), np.float32)
    assert relax_mlir.load(regular)(x).tolist() == (2 * x).tolist()
    assert sorted(os.listdir(tmp_path)) == sorted([p.name for p in targets] + ["m.so"])


@pytest.mark.parametrize("edited, addition, mark", [
    ("blas_adapter.c", "\nint relax_blas_edited(void) { return 1; }\n", b"relax_blas_edited"),
    # the shared header is not compiled itself: its bytes are in the key, and the sources read it
    ("blas_shim.h", '\n__attribute__((used)) static const char relax_blas_mark[] = "header-edited";\n',
     b"header-edited"),
], ids=["source", "header"])
def test_shim_rebuilt_when_its_source_changes(tmp_path, monkeypatch, edited, addition, mark):
    provider = libraries.blas_provider()
    copies = {}
    for f in list(libraries.BLAS_SHIM_SOURCES) + [libraries.BLAS_SHIM_HEADER]:
        copies[f.name] = tmp_path / f.name
        shutil.copyfile(f, copies[f.name])
    monkeypatch.setattr(libraries, "BLAS_SHIM_SOURCES", tuple(copies[f.name] for f in libraries.BLAS_SHIM_SOURCES))
    monkeypatch.setattr(libraries, "BLAS_SHIM_HEADER", copies["blas_shim.h"])
    monkeypatch.setenv("RELAX_MLIR_CACHE", str(tmp_path / "cache"))
    first = libraries.blas_shim_object(provider)
    src = copies[edited]
    src.write_text(src.read_text().replace("#endif /* RELAX_BLAS_SHIM_H */", addition + "#endif") if edited.endswith(".h")
                   else src.read_text() + addition)
    second = libraries.blas_shim_object(provider)
    assert first != second and sorted(os.listdir(tmp_path / "cache")) == sorted(
        [os.path.basename(first), os.path.basename(second)])
    assert mark in open(second, "rb").read() and mark not in open(first, "rb").read()
