"""Shared libraries of installed PyPI wheels (a BLAS, the OpenMP runtime), loaded by soname.

An exported model depends on its BLAS and OpenMP runtime by soname only; before it is
opened, :func:`_load_wheel_library` loads the file from the running Python's installed wheel
(else the library path), so the dynamic loader resolves the dependency to it.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import sys
from typing import Optional

from ..errors import LoadError


def _wheel_library(package: str, soname: str) -> Optional[str]:
    """The file ``soname`` of the installed distribution ``package`` in the running Python."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == soname:
            p = str(dist.locate_file(f))
            if os.path.exists(p):
                return os.path.realpath(p)
    return None


_wheel_handles: dict[str, ctypes.CDLL] = {}


def _load_wheel_library(package: str, soname: str, what: str, label: str) -> None:
    """Make ``soname`` of the PyPI ``package`` loaded in this process (the running Python's
    installed wheel first, then the library path), so that the dynamic loader resolves a
    model's dependency on that soname to it. Raises :class:`relax_mlir.LoadError` naming
    the package."""
    if soname in _wheel_handles:
        return
    path = _wheel_library(package, soname)
    errors = []
    for candidate in ([path] if path else []) + [soname]:
        try:
            _wheel_handles[soname] = ctypes.CDLL(candidate, mode=ctypes.RTLD_LOCAL)
            return
        except OSError as e:
            errors.append(str(e))
    raise LoadError(f"{what} needs {label} ({soname}), which is not installed in this Python "
                    f"({sys.executable}): pip install {package} (or put {soname} on LD_LIBRARY_PATH)"
                    + (f" [{'; '.join(errors)}]" if path else ""))
