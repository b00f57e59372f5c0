"""Ahead-of-time: ``Executable.export(path)`` writes one shared library; ``load(path)`` runs it.

Export (needs the MLIR / LLVM tools of the pinned wheels and a C compiler ``cc``, or ``$CC``)::

    final LLVM-dialect module (kept from the compile; ``relax.*`` attributes dropped)
      -- mlir-translate --mlir-to-llvmir -->  LLVM IR  (+ the metadata globals below)
      -- llc -O3 -filetype=obj -relocation-model=pic -->  model.o
      -- cc -shared model.o <libraries> -Wl,-rpath,<their dirs> -->  model.so  (+ trailer)

Load needs only ctypes and numpy: no MLIR pass, no ExecutionEngine, no MLIR bindings.

File format (version :data:`FORMAT_VERSION`): an ordinary ELF shared library that exports

* ``_mlir_ciface_<f>`` for every graph function ``f`` (the calling convention of
  :mod:`relax_mlir.runtime.executable`); every other symbol is local, and internal
  calls bind inside the library (``-Bsymbolic``);
* ``relax_mlir_metadata``: a NUL-terminated UTF-8 JSON object, and
  ``relax_mlir_metadata_size`` (``i64``, its length without the NUL)::

      {"format": "relax-mlir-aot", "format_version": 1, "relax_mlir_version": "0.1.0",
       "code_sha256": <sha256 of the LLVM IR text>, "libraries": [<absolute paths>],
       "metadata": <Executable.metadata: functions, signatures, checks, plans>}

followed by a 96-byte trailer appended after linking (ELF loaders ignore it)::

    b"RELAX-MLIR-AOT\\0\\0" | u32 format_version | u32 0 | u64 length of the ELF part |
    sha256 of the ELF part (32 bytes) | code_sha256 (32 bytes)        (little endian)

:func:`load` checks the trailer (magic, version, length, checksum) BEFORE ``dlopen``, so
a truncated, corrupted or foreign file raises :class:`relax_mlir.LoadError` and never
reaches the dynamic loader; then it reads the metadata symbol and checks it against the
trailer. ``strip`` or any other rewrite of the file removes or invalidates the trailer:
re-export instead. As with any ``dlopen``, a path stays bound to the library first loaded
from it in a process: loading a different library under the same path in the same process
raises ``LoadError`` (load a copy under another name).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile

from ..errors import LoadError
from .executable import Executable, LibraryResolver

FORMAT = "relax-mlir-aot"
FORMAT_VERSION = 1
MAGIC = b"RELAX-MLIR-AOT\0\0"
_TRAILER = struct.Struct("<16sIIQ32s32s")
METADATA_SYMBOL = "relax_mlir_metadata"

# functions the lowered code may call from MLIR's runner utils (the JIT links it too)
_RUNNER_UTILS = re.compile(r"^declare .*@(memrefCopy|print\w*|_mlir_ciface_print\w*)\(", re.M)


# -- export -------------------------------------------------------------------------------

def _tool(package: str, name: str) -> str:
    import importlib.util
    spec = importlib.util.find_spec(package)
    for base in (spec.submodule_search_locations or []) if spec else []:
        p = os.path.join(base, "bin", name)
        if os.path.exists(p):
            return p
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"export needs '{name}' (from the pinned {package} wheel); not found")
    return found


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, **kw)
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        raise RuntimeError(f"export: {what} failed ({' '.join(cmd[:1])}):\n{err[-4000:]}")
    return r


def _llvm_string(data: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}" for b in data)


def export_library(exe: Executable, path) -> str:
    """Write ``exe`` as a shared library at ``path`` (see the module docstring); returns the path."""
    path = os.fspath(path)
    if exe._llvm_dialect is None and exe.source_path:   # a loaded Executable: its file is the export
        shutil.copyfile(exe.source_path, path)
        return path
    from .. import __version__

    ll = _run([_tool("mlir", "mlir-translate"), "--mlir-to-llvmir"], "mlir-translate",
              input=exe.llvm_dialect_text(), text=True).stdout
    code_hash = hashlib.sha256(ll.encode()).digest()
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "relax_mlir_version": __version__,
              "code_sha256": code_hash.hex(), "libraries": list(exe.libraries), "metadata": exe.metadata}
    blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    ll += (f"\n@{METADATA_SYMBOL} = constant [{len(blob) + 1} x i8] c\"{_llvm_string(blob)}\\00\", align 1\n"
           f"@{METADATA_SYMBOL}_size = constant i64 {len(blob)}, align 8\n")
    libs = [os.path.abspath(p) for p in exe.libraries]
    if _RUNNER_UTILS.search(ll):
        from .executable import runtime_libraries
        libs = runtime_libraries() + libs
    with tempfile.TemporaryDirectory(prefix="relax-mlir-export-") as tmp:
        ll_path, obj, so = (os.path.join(tmp, n) for n in ("model.ll", "model.o", "model.so"))
        with open(ll_path, "w") as f:
            f.write(ll)
        _run([_tool("llvm", "llc"), "-O3", "-filetype=obj", "-relocation-model=pic", ll_path, "-o", obj], "llc")
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if not cc:
            raise RuntimeError("export needs a C compiler to link (cc, gcc or clang, or $CC)")
        rpaths = sorted({os.path.dirname(p) for p in libs})
        # Export only the entry points and the metadata, and bind every internal call
        # (graph function -> @main, kernels) inside the library: a kernel named like a
        # symbol of the process (`main`!) or of another loaded model must not win.
        script = os.path.join(tmp, "exports.map")
        with open(script, "w") as f:
            f.write(f"{{ global: _mlir_ciface_*; {METADATA_SYMBOL}; {METADATA_SYMBOL}_size; local: *; }};\n")
        _run([cc, "-shared", "-o", so, obj, f"-Wl,--version-script={script}", "-Wl,-Bsymbolic"] + libs
             + [f"-Wl,-rpath,{d}" for d in rpaths] + ["-lm"], "linking")
        with open(so, "rb") as f:
            elf = f.read()
        trailer = _TRAILER.pack(MAGIC, FORMAT_VERSION, 0, len(elf), hashlib.sha256(elf).digest(), code_hash)
        tmp_out = path + ".tmp"
        with open(tmp_out, "wb") as f:
            f.write(elf + trailer)
        os.replace(tmp_out, path)
    return path


# -- load ---------------------------------------------------------------------------------

def _check_file(path: str) -> bytes:
    """Check the trailer of ``path``; returns the code hash it records."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LoadError(f"cannot read {path}: {e.strerror or e}") from None
    if len(data) < _TRAILER.size or data[-_TRAILER.size:][:len(MAGIC)] != MAGIC:
        kind = "a shared library" if data[:4] == b"\x7fELF" else "not a shared library"
        raise LoadError(f"{path} is not a relax-mlir library ({kind} without the relax-mlir trailer: "
                        f"not written by Executable.export, or truncated, stripped or modified since)")
    magic, version, _, length, digest, code_hash = _TRAILER.unpack(data[-_TRAILER.size:])
    if version != FORMAT_VERSION:
        raise LoadError(f"{path} has relax-mlir library format version {version}; this relax_mlir reads "
                        f"version {FORMAT_VERSION}: export it again with this version")
    if length != len(data) - _TRAILER.size:
        raise LoadError(f"{path} is truncated or extended ({len(data) - _TRAILER.size} bytes of code, "
                        f"{length} recorded)")
    if hashlib.sha256(data[:length]).digest() != digest:
        raise LoadError(f"{path} is corrupted (checksum mismatch)")
    return code_hash


def load(path) -> Executable:
    """Load a library written by :meth:`Executable.export`; no compiler, no MLIR bindings.

    Raises :class:`relax_mlir.LoadError` when the file is missing, not a relax-mlir library,
    truncated, corrupted, of another format version, or its libraries cannot be loaded.
    """
    path = os.path.abspath(os.fspath(path))
    code_hash = _check_file(path)
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        raise LoadError(f"cannot load {path}: {e}") from None
    try:
        size = ctypes.c_int64.in_dll(lib, METADATA_SYMBOL + "_size").value
        raw = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, METADATA_SYMBOL)), size)
        header = json.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise LoadError(f"{path}: no readable relax-mlir metadata ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise LoadError(f"{path} is not a relax-mlir library (metadata format {header.get('format')!r})"
                        if isinstance(header, dict) else f"{path}: malformed relax-mlir metadata")
    if header.get("format_version") != FORMAT_VERSION:
        raise LoadError(f"{path} has relax-mlir library format version {header.get('format_version')}; "
                        f"this relax_mlir reads version {FORMAT_VERSION}: export it again with this version")
    if header.get("code_sha256") != code_hash.hex():
        raise LoadError(f"{path}: the library loaded from this path is not the file's (a different library "
                        f"was loaded from the same path earlier in this process: load a copy under another name)")
    meta = header["metadata"]
    try:
        return Executable(LibraryResolver(lib, path), meta, float(meta.get("compile_time_s", 0.0)),
                          header.get("libraries", []), source_path=path)
    except (KeyError, TypeError, RuntimeError, SyntaxError) as e:
        raise LoadError(f"{path}: inconsistent relax-mlir metadata ({type(e).__name__}: {e})") from None
