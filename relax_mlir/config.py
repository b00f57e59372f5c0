"""Configuration from the environment: option defaults read from ``RELAX_*`` variables.

The plan (docs/architecture.md) is that this is the one module reading the environment;
the variables still read elsewhere move here with the Target/backends redesign.

=========================  =============================================================
``RELAX_MLIR_CACHE_DIR``   the compile cache's directory (:mod:`relax_mlir.compile_cache`);
                           unset or empty: ``$XDG_CACHE_HOME/relax-mlir`` (else
                           ``~/.cache/relax-mlir``); ``off``, ``0`` or ``none``: no cache
=========================  =============================================================
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

_OFF = ("off", "0", "none", "false", "no")


def cache_dir() -> Optional[Path]:
    """The compile cache's directory, or None when ``RELAX_MLIR_CACHE_DIR`` turns it off."""
    raw = os.environ.get("RELAX_MLIR_CACHE_DIR", "").strip()
    if raw.lower() in _OFF:
        return None
    if raw:
        return Path(raw).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "relax-mlir"


def compile_environment() -> dict[str, str]:
    """The ``RELAX_*`` variables in effect (they may change what a compile produces), less
    the cache's own location."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith("RELAX_") and k != "RELAX_MLIR_CACHE_DIR" and not k.startswith("RELAX_FUZZ")}
