"""Ahead-of-time: ``Executable.export(path)`` writes one shared library; ``load(path)`` runs it.

Export (needs the MLIR / LLVM tools of the pinned wheels and a C compiler ``cc``, or ``$CC``)::

    final LLVM-dialect module (kept from the compile; ``relax.*`` attributes dropped)
      -- mlir-translate --mlir-to-llvmir -->  LLVM IR  (+ the metadata globals below)
      -- opt -O3 -->  optimized LLVM IR (the JIT's -O3 pipeline)
      -- llc -O3 -filetype=obj -relocation-model=pic -->  model.o
      -- cc -shared model.o [runtime.o] [relax_blas shim .o + BLAS by soname] [libiomp5 by soname] -->  model.so
      + dependency record + trailer

Self-contained: the file holds no path of the build machine (its build cache, its venv).
The relax_blas shim is linked in as an object (its symbols private to the model); the BLAS
it calls is a dependency by soname only (``libmkl_rt.so.3`` of the PyPI ``mkl`` wheel or
``libscipy_openblas.so`` of ``scipy-openblas32``), which :func:`load` finds in the running
Python's installed wheel (else on the library path) and opens first (so is the OpenMP
runtime ``libiomp5.so`` of ``intel-openmp`` for a model with threaded kernels), or raises
:class:`relax_mlir.LoadError` naming the package to install. MLIR's ``memrefCopy`` runner
utility is compiled in (:data:`RUNTIME_C`). The ``libraries=`` given to compile are not
linked by path: :func:`load` opens each one first (``RTLD_GLOBAL``, as the JIT does) from
the model's directory (ship it beside the model), else from its path at export time. So a
model loads on another machine of the same architecture with numpy and the BLAS wheel.

Load needs only ctypes and numpy: no MLIR pass, no ExecutionEngine, no MLIR bindings.

File format (version :data:`FORMAT_VERSION`): an ordinary ELF shared library that exports

* ``_mlir_ciface_<f>`` for every graph function ``f`` (the calling convention of
  :mod:`relax_mlir.runtime.executable`), and ``_mlir_relax_packed_<f>`` for one with more
  C arguments than ctypes passes (relax-packed-entries); every other symbol is local, and internal
  calls bind inside the library (``-Bsymbolic``);
* ``_mlir_relax_num_threads`` (``i32``) in a model with OpenMP-threaded kernels: their
  thread count, read at every parallel region, which :func:`load` sets from
  ``RELAX_MLIR_NUM_THREADS`` (``exe.num_threads``; relax_mlir.backends.cpu.omp_threads);
* ``relax_mlir_metadata``: a NUL-terminated UTF-8 JSON object, and
  ``relax_mlir_metadata_size`` (``i64``, its length without the NUL)::

      {"format": "relax-mlir-aot", "format_version": 2, "relax_mlir_version": "0.1.0",
       "code_sha256": <sha256 of the LLVM IR text>, "libraries": [<user library paths>],
       "blas": <dependency below or null>, "openmp": <dependency below or null>,
       "metadata": <Executable.metadata>}

followed by the dependency record, UTF-8 JSON that :func:`load` reads before opening the
library (the ELF part cannot be opened before its dependencies are)::

      {"blas": {"provider": "mkl", "package": "mkl", "soname": "libmkl_rt.so.3"} | null,
       "openmp": {"package": "intel-openmp", "soname": "libiomp5.so"} | null,
       "libraries": [<absolute paths of the libraries= at export>]}

and a 96-byte trailer (ELF loaders ignore what follows the ELF part)::

    b"RELAX-MLIR-AOT\\0\\0" | u32 format_version | u32 length of the dependency record |
    u64 length of the ELF part | sha256 of the ELF part and the record (32 bytes) |
    code_sha256 (32 bytes)                                              (little endian)

:func:`load` reads only a regular file (no FIFO, device or directory), at most
:data:`MAX_LIBRARY_BYTES`, checks the trailer (magic, version, lengths, checksum) in memory
BEFORE anything is opened, so a truncated, corrupted or foreign file raises
:class:`relax_mlir.LoadError` and never reaches the dynamic loader (nor does an ELF part
whose headers or segments reach past its end, even under a recomputed trailer: mapped,
such a segment would fault on first touch), and then opens a
private, sealed in-memory copy of the checked bytes (``memfd``; a private temporary file
where there is none), never the file itself: overwriting the file later cannot change code
that is running, and loading it again loads what it holds then. One library image per
content: loading the same bytes again reuses it, so a loop of ``load()`` reaches a flat
memory use (every call's scratch memory belongs to its session, never to the image). The
code is compiled for the exporting CPU's x86-64 level (``x86-64-v4`` with AVX-512,
``x86-64-v3`` with AVX2 + FMA, else the baseline; ``CompileOptions.target_cpu`` /
``target_features`` override), recorded in the metadata and checked at load time: a CPU
that lacks a feature gets a ``LoadError`` naming it, never SIGILL. ``strip`` or any other rewrite of the file
removes or invalidates the trailer: re-export instead.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import re
import stat
import struct
import subprocess
import tempfile
import threading
from typing import Optional

from ..errors import CompileError, LoadError
from . import libraries
from .packing import WEIGHT_PACKER_SYMBOLS
from .abi import PACKED_PREFIX
from .cpu import export_requirement, llc_flags, missing_features
from .executable import Executable, LibraryResolver

FORMAT = "relax-mlir-aot"
FORMAT_VERSION = 2
MAGIC = b"RELAX-MLIR-AOT\0\0"
_TRAILER = struct.Struct("<16sIIQ32s32s")
METADATA_SYMBOL = "relax_mlir_metadata"
#: the largest file :func:`load` reads (code and metadata only: weights are arguments)
MAX_LIBRARY_BYTES = 1 << 30

# functions the lowered code may call from MLIR's runner utils (the JIT links it too)
_RUNNER_UTILS = re.compile(r"^declare .*@(memrefCopy|print\w*|_mlir_ciface_print\w*)\(", re.M)

#: MLIR's ``memrefCopy`` runner utility (what ``memref.copy`` of non-contiguous layouts
#: lowers to), compiled into a model that calls it instead of a dependency on the wheel's
#: libmlir_c_runner_utils: an odometer over the source's sizes, strides in elements.
RUNTIME_C = r"""
#include <stdint.h>
#include <string.h>
typedef struct { int64_t rank; void *descriptor; } unranked_t;
typedef struct { char *allocated, *aligned; int64_t offset, sizes_then_strides[]; } ranked_t;
void memrefCopy(int64_t esize, unranked_t *src, unranked_t *dst) {
  const int64_t rank = src->rank;
  const ranked_t *s = src->descriptor, *d = dst->descriptor;
  const int64_t *size = s->sizes_then_strides, *sstr = size + rank, *dstr = d->sizes_then_strides + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (size[i] <= 0) return;
  const char *from = s->aligned + s->offset * esize;
  char *to = d->aligned + d->offset * esize;
  int64_t index[rank > 0 ? rank : 1];
  memset(index, 0, sizeof index);
  for (;;) {
    memcpy(to, from, (size_t)esize);
    int64_t ax = rank - 1;
    for (; ax >= 0; --ax) {
      from += sstr[ax] * esize;
      to += dstr[ax] * esize;
      if (++index[ax] < size[ax]) break;
      from -= size[ax] * sstr[ax] * esize;
      to -= size[ax] * dstr[ax] * esize;
      index[ax] = 0;
    }
    if (ax < 0) return;
  }
}
"""


# -- export -------------------------------------------------------------------------------

def _tool(package: str, name: str) -> str:
    import importlib.util
    import shutil
    spec = importlib.util.find_spec(package)
    for base in (spec.submodule_search_locations or []) if spec else []:
        p = os.path.join(base, "bin", name)
        if os.path.exists(p):
            return p
    found = shutil.which(name)
    if not found:
        raise CompileError(f"export needs '{name}' (from the pinned {package} wheel); not found")
    return found


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(cmd, capture_output=True, **kw)
    except OSError as e:   # the tool vanished or cannot run: say which
        raise CompileError(f"export: {what}: cannot run {cmd[0]}: {e.strerror or e}") from None
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        raise CompileError(f"export: {what} failed ({' '.join(cmd[:1])}):\n{err[-4000:]}")
    return r


def _llvm_string(data: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}" for b in data)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _check_destination(path: str) -> None:
    """Only a regular file (or a new path) is replaced by an export: never a device node,
    FIFO, socket or directory (a symbolic link to a regular file is replaced itself)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise CompileError(f"export: cannot write {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CompileError(f"export: refusing to replace {path}: it is {_kind(st.st_mode)}, not a regular file "
                           "(export writes a new path or replaces a regular file)")


def _write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory, renamed over
    it; on any failure the temporary file is removed."""
    _check_destination(path)
    d, base = os.path.split(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=d)
    except OSError as e:
        raise CompileError(f"export: cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755)   # a shared library, as a linker writes it
        _check_destination(path)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise CompileError(f"export: cannot write {path}: {e.strerror or e}") from None
        raise


def export_library(exe: Executable, path) -> str:
    """Write ``exe`` as a shared library at ``path`` (see the module docstring); returns the path."""
    path = os.fspath(path)
    _check_destination(path)
    image = getattr(exe._resolver, "image", None)
    if image is not None:   # a loaded Executable: its (checked, private) bytes are the export
        _write_atomic(path, image.read())
        return path
    return export_lowered(exe.llvm_dialect_text(), exe.metadata, exe.libraries,
                          getattr(exe, "compile_options", None), path)


def export_lowered(llvm_dialect: str, metadata: dict, libs, opts, path) -> str:
    """Write a library from a compile's final LLVM-dialect module (text), its metadata, its
    libraries and CompileOptions ``opts``, without a JIT (the compile cache's path)."""
    from .. import __version__

    path = os.fspath(path)
    _check_destination(path)
    ll = _run([_tool("mlir", "mlir-translate"), "--mlir-to-llvmir"], "mlir-translate",
              input=llvm_dialect, text=True).stdout
    code_hash = hashlib.sha256(ll.encode()).digest()
    user_libs = [os.path.abspath(p) for p in libs if not libraries.is_shim(p)]
    provider = metadata.get("blas")
    blas = libraries.blas_requirement(provider) if provider else None
    cpu = export_requirement(getattr(opts, "target_cpu", None), getattr(opts, "target_features", None))
    # threaded kernels, or a shim on libiomp5 (its GOMP_* calls: MKL's, with MKL's Intel layer, or the
    # quantized kernels' of an OpenBLAS build, libraries.QUANT_OPENMP_FLAGS)
    openmp = dict(libraries.OPENMP_REQUIREMENT) if "__kmpc_" in ll or libraries.shim_openmp(provider) else None
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "relax_mlir_version": __version__, "cpu": cpu,
              "code_sha256": code_hash.hex(), "libraries": user_libs, "blas": blas, "openmp": openmp,
              "metadata": metadata}
    blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    deps = json.dumps({"blas": blas, "openmp": openmp, "libraries": user_libs}, sort_keys=True,
                      separators=(",", ":")).encode()
    ll += (f"\n@{METADATA_SYMBOL} = constant [{len(blob) + 1} x i8] c\"{_llvm_string(blob)}\\00\", align 1\n"
           f"@{METADATA_SYMBOL}_size = constant i64 {len(blob)}, align 8\n")
    utils = sorted(set(_RUNNER_UTILS.findall(ll)))
    if set(utils) - {"memrefCopy"}:
        raise CompileError(f"export: the module calls MLIR runner utilities ({', '.join(utils)}) that an exported "
                           "library does not carry (only memrefCopy is built in)")
    cc = libraries.c_compiler()
    with tempfile.TemporaryDirectory(prefix="relax-mlir-export-") as tmp:
        ll_path, bc, obj, so = (os.path.join(tmp, n) for n in ("model.ll", "model.bc", "model.o", "model.so"))
        with open(ll_path, "w") as f:
            f.write(ll)
        # LLVM's -O3 IR pipeline first, as the JIT runs it (ExecutionEngine opt_level=3): llc alone
        # leaves loop-invariant index arithmetic in the matmul's k loops (10-13 % at M = 128, 512)
        # the host's triple: translated MLIR carries none, and without one opt knows no C library
        # (every fill stays a byte loop instead of a memset call)
        triple = [f"-mtriple={os.uname().machine}-unknown-linux-gnu"] if os.uname().sysname == "Linux" else []
        _run([_tool("llvm", "opt"), "-O3"] + triple + llc_flags(cpu) + [ll_path, "-o", bc], "opt")
        _run([_tool("llvm", "llc"), "-O3", "-filetype=obj", "-relocation-model=pic"] + triple + llc_flags(cpu)
             + [bc, "-o", obj], "llc")
        objects = [obj]
        if utils:
            rt_c, rt_o = os.path.join(tmp, "runtime.c"), os.path.join(tmp, "runtime.o")
            with open(rt_c, "w") as f:
                f.write(RUNTIME_C)
            _run(cc + ["-O2", "-c", "-fPIC", "-std=c11", "-o", rt_o, rt_c], "compiling the runtime (cc)")
            objects.append(rt_o)
        link_blas = [libraries.blas_shim_object(provider)] + libraries.blas_link_args(provider) if provider else []
        pooled = False
        if openmp:
            try:
                link_blas += libraries.openmp_link_args()
            except LoadError as e:
                raise CompileError(f"export: {e}") from None
            # numpy's OpenBLAS jobs run on the model's OpenMP team once it is loaded (no compiler then)
            try:
                objects.append(libraries.blas_pool_object())
                pooled = True
            except libraries.LibraryError:   # the model works; a process loading it keeps OpenBLAS's workers
                pass
        # Export only the entry points and the metadata, and bind every internal call
        # (graph function -> @main, kernels, the shim) inside the library: a kernel named
        # like a symbol of the process (`main`!) or of another loaded model must not win.
        entries = "".join(f" _mlir_ciface_{f};" for f in metadata["functions"])
        entries += "".join(f" {PACKED_PREFIX}{f};" for f in metadata["functions"]   # wide functions'
                           if f"@{PACKED_PREFIX}{f}(" in ll)
        if libraries.THREADS_SYMBOL in ll:   # the run-time thread count, set by the loader (exe.num_threads)
            entries += f" {libraries.THREADS_SYMBOL};"
        if pooled:
            entries += "".join(f" {s};" for s in (libraries.BLAS_POOL_SYMBOL,) + libraries.BLAS_POOL_COUNTERS)
        if provider:   # the shim's registry of bound weights (packing.WeightPacker), this model's own
            entries += "".join(f" {s};" for s in WEIGHT_PACKER_SYMBOLS)
        script = os.path.join(tmp, "exports.map")
        with open(script, "w") as f:
            f.write(f"{{ global:{entries} {METADATA_SYMBOL}; {METADATA_SYMBOL}_size; local: *; }};\n")
        _run(cc + ["-shared", "-o", so] + objects + link_blas
             + [f"-Wl,--version-script={script}", "-Wl,-Bsymbolic", "-lm"], "linking (cc)")
        with open(so, "rb") as f:
            elf = f.read()
    body = elf + deps
    trailer = _TRAILER.pack(MAGIC, FORMAT_VERSION, len(deps), len(elf), hashlib.sha256(body).digest(), code_hash)
    _write_atomic(path, body + trailer)
    return path


# -- load ---------------------------------------------------------------------------------

def _read_regular(path: str) -> bytes:
    """The bytes of the regular file ``path``, at most :data:`MAX_LIBRARY_BYTES`: a FIFO is
    not waited on, a device not read, a directory not opened as a library."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise LoadError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(f"{path} is {_kind(st.st_mode)}: only a regular file is loaded")
        if st.st_size > MAX_LIBRARY_BYTES:
            raise LoadError(f"{path} is too large for a relax-mlir library ({st.st_size} bytes, at most "
                            f"{MAX_LIBRARY_BYTES})")
        chunks, left = [], st.st_size + 1   # one more byte: a file growing while read is noticed
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise LoadError(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > st.st_size:
        raise LoadError(f"{path} changed while it was read (it grew past {st.st_size} bytes)")
    return data


def _check_trailer(path: str, data: bytes) -> tuple[bytes, bytes, dict, bytes]:
    """Check the trailer of ``data``; returns (ELF part, its checksum, dependency record, code hash)."""
    if len(data) < _TRAILER.size or data[-_TRAILER.size:][:len(MAGIC)] != MAGIC:
        kind = "a shared library" if data[:4] == b"\x7fELF" else "not a shared library"
        raise LoadError(f"{path} is not a relax-mlir library ({kind} without the relax-mlir trailer: "
                        f"not written by Executable.export, or truncated, stripped or modified since)")
    magic, version, deps_len, length, digest, code_hash = _TRAILER.unpack(data[-_TRAILER.size:])
    if version != FORMAT_VERSION:
        raise LoadError(f"{path} has relax-mlir library format version {version}; this relax_mlir reads "
                        f"version {FORMAT_VERSION}: export it again with this version")
    if length + deps_len != len(data) - _TRAILER.size:
        raise LoadError(f"{path} is truncated or extended ({len(data) - _TRAILER.size} bytes before the trailer, "
                        f"{length + deps_len} recorded)")
    if hashlib.sha256(data[:length + deps_len]).digest() != digest:
        raise LoadError(f"{path} is corrupted (checksum mismatch)")
    try:
        deps = json.loads(data[length:length + deps_len].decode())
        if not isinstance(deps, dict) or not isinstance(deps.get("libraries"), list):
            raise ValueError("not an object with 'libraries'")
    except (ValueError, UnicodeDecodeError) as e:
        raise LoadError(f"{path}: malformed relax-mlir dependency record ({e})") from None
    return data[:length], digest, deps, code_hash


_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")


def _check_elf(path: str, elf: bytes) -> None:
    """The ELF part is a 64-bit little-endian shared object whose headers and segments lie
    inside it: the dynamic loader maps segments by offset, and one reaching past the end
    of the file faults (SIGBUS) on first touch, so a truncated image never reaches it."""
    if len(elf) < _EHDR.size or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise LoadError(f"{path}: the library part is not a 64-bit little-endian ELF file")
    (_, e_type, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = _EHDR.unpack_from(elf)
    if e_type != 3:   # ET_DYN
        raise LoadError(f"{path}: the library part is not a shared object (ELF type {e_type})")
    if phentsize != _PHDR.size or phoff + phnum * phentsize > len(elf) or \
            (shnum and shoff + shnum * shentsize > len(elf)):
        raise LoadError(f"{path}: truncated ELF image (its header tables lie past its {len(elf)} bytes)")
    for k in range(phnum):
        p_type, _, off, _, _, filesz, _, _ = _PHDR.unpack_from(elf, phoff + k * phentsize)
        if p_type in (1, 2) and off + filesz > len(elf):   # PT_LOAD, PT_DYNAMIC
            raise LoadError(f"{path}: truncated ELF image (segment {k} ends at byte {off + filesz}, the image "
                            f"has {len(elf)})")


class _Image:
    """One opened library image: a private copy of checked bytes, never the user's file."""

    def __init__(self, lib: ctypes.CDLL, where: str, fd: Optional[int], data: Optional[bytes],
                 user_libraries: list[str]):
        self.lib, self.where, self.fd, self._data = lib, where, fd, data
        self.libraries = user_libraries

    def read(self) -> bytes:
        """The file's bytes, as checked at load time."""
        if self._data is not None:
            return self._data
        size = os.fstat(self.fd).st_size
        return os.pread(self.fd, size, 0)


class _LoadedResolver(LibraryResolver):
    """A :class:`LibraryResolver` over an :class:`_Image` (kept alive with the Executable)."""

    def __init__(self, image: _Image, path: str):
        super().__init__(image.lib, path)
        self.image = image


_IMAGES: dict[bytes, _Image] = {}
_images_lock = threading.Lock()
_SEALS = ("F_SEAL_SEAL", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")


def _memfd(data: bytes, name: str) -> Optional[int]:
    """A sealed (immutable) in-memory file holding ``data``; None where memfd is unavailable."""
    try:
        fd = os.memfd_create(f"relax-mlir:{name}"[:200], os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        seals = 0
        for s in _SEALS:
            seals |= getattr(fcntl, s, 0)
        if hasattr(fcntl, "F_ADD_SEALS"):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
        return fd
    except OSError:
        os.close(fd)
        return None


def _user_library(path: str, recorded: str) -> str:
    """Open a library the model was linked with (``libraries=``): beside the model first
    (shipped with it), else where it was at export time; RTLD_GLOBAL, as the JIT does."""
    beside = os.path.join(os.path.dirname(path), os.path.basename(recorded))
    errors = []
    for candidate in dict.fromkeys([beside, recorded]):
        if not os.path.isfile(candidate):
            continue
        try:
            ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
            return candidate
        except OSError as e:
            errors.append(str(e))
    raise LoadError(f"{path} needs the library {os.path.basename(recorded)} (libraries= at export: {recorded}); "
                    f"put it beside the model" + (f" [{'; '.join(errors)}]" if errors else ": not found"))


def _open_image(path: str, data: bytes, deps: dict) -> _Image:
    """Open the dependencies, then a private copy of ``data`` (never ``path`` itself)."""
    if deps.get("blas"):
        libraries.load_blas(deps["blas"], path)
    if deps.get("openmp"):
        libraries.load_openmp(path)
    libs = [_user_library(path, str(p)) for p in deps["libraries"]]
    name = os.path.basename(path)
    fd = _memfd(data, name)
    tmpdir = None
    if fd is not None and not os.path.exists(f"/proc/self/fd/{fd}"):   # no /proc to open it by
        os.close(fd)
        fd = None
    if fd is not None:
        where = f"/proc/self/fd/{fd}"
    else:   # no memfd here: a private file, removed once opened (the mapping stays valid)
        tmpdir = tempfile.mkdtemp(prefix="relax-mlir-load-")
        where = os.path.join(tmpdir, name)
        with open(where, "wb") as f:
            f.write(data)
    try:
        lib = ctypes.CDLL(where, mode=ctypes.RTLD_LOCAL)
    except OSError as e:
        if fd is not None:
            os.close(fd)
        raise LoadError(f"cannot load {path}: {str(e).replace(where, path)}") from None
    finally:
        if tmpdir is not None:
            os.unlink(where)
            os.rmdir(tmpdir)
    return _Image(lib, where, fd, data if fd is None else None, libs)


def load(path) -> Executable:
    """Load a library written by :meth:`Executable.export`; no compiler, no MLIR bindings.

    Raises :class:`relax_mlir.LoadError` when the file is missing, not a regular file, not a
    relax-mlir library, truncated, corrupted, of another format version, or its libraries
    (its BLAS: install the PyPI package the message names) cannot be loaded.
    """
    path = os.path.abspath(os.fspath(path))
    data = _read_regular(path)
    elf, digest, deps, code_hash = _check_trailer(path, data)
    _check_elf(path, elf)
    with _images_lock:
        image = _IMAGES.get(digest)
        if image is None:
            image = _IMAGES[digest] = _open_image(path, data, deps)
            if deps.get("openmp"):   # images are never closed: the pool's code stays mapped
                libraries.adopt_blas_pool(image.lib)
    lib = image.lib
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
        raise LoadError(f"{path}: inconsistent relax-mlir library (the code hash of its metadata differs "
                        "from its trailer's)")
    missing = missing_features(header.get("cpu"))
    if missing:
        raise LoadError(f"{path} was compiled for {header['cpu'].get('mcpu')}; this CPU lacks "
                        f"{', '.join(missing)}: export it again on (or for) this machine "
                        "(CompileOptions(target_cpu=...))")
    meta = header["metadata"]
    try:
        exe = Executable(_LoadedResolver(image, path), meta, float(meta.get("compile_time_s", 0.0)),
                         image.libraries, source_path=path)
    except (KeyError, TypeError, RuntimeError, SyntaxError) as e:
        raise LoadError(f"{path}: inconsistent relax-mlir metadata ({type(e).__name__}: {e})") from None
    exe.exporter = export_library
    return exe
