"""Bound weights: the relax_blas shim's registry of constant regions (packed copies of B).

An f32 product whose B operand lies in a registered region (a :class:`PreparedCall`'s bound
weights) packs B once and reuses the copy; :class:`WeightPacker` registers, releases and
invalidates regions of one loaded shim.
"""

from __future__ import annotations

import ctypes
from typing import Iterable, Optional

from .libraries import _lock, is_shim

# -- bound weights: the shim's packed copies -----------------------------------------------

#: The shim's registry functions a :class:`WeightPacker` calls, and its statistics (tests): an
#: exported model exports them.
WEIGHT_PACKER_SYMBOLS = ("relax_blas_pack_register", "relax_blas_pack_release", "relax_blas_pack_invalidate",
                         "relax_blas_pack_stats")


class WeightPacker:
    """The registry of constant regions of one loaded shim (``relax_blas_pack_*`` in
    ``blas_gemm_avx512.c``): an f32 product whose B operand lies in a registered region packs B
    once and reuses the packed copy (MKL builds on AVX-512 CPUs; elsewhere registering is a
    no-op). :meth:`hold` is called by ``bind_params`` for the arrays it binds."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        lib.relax_blas_pack_register.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        lib.relax_blas_pack_register.restype = ctypes.c_int
        for name in ("relax_blas_pack_release", "relax_blas_pack_invalidate"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_int64]
            getattr(lib, name).restype = None

    def hold(self, arrays) -> list[tuple[int, int]]:
        """Register every f32 array of rank >= 2 in ``arrays`` (C-contiguous numpy arrays that
        the caller keeps alive and unchanged until :meth:`release`): the (address, bytes)
        registered, empty where this shim never packs."""
        held = []
        for a in arrays:
            if a.dtype == "float32" and a.ndim >= 2 and a.nbytes > 0:
                region = (a.ctypes.data, a.nbytes)
                if not self.lib.relax_blas_pack_register(*region):
                    return held     # this build or CPU does not pack: nothing more to record
                held.append(region)
        return held

    def release(self, held: list[tuple[int, int]], _arrays=None) -> None:
        """Let go of regions from :meth:`hold` (the last holder frees the packed copies).
        ``_arrays``: the arrays themselves, kept alive by a finalizer until this runs."""
        for region in held:
            self.lib.relax_blas_pack_release(*region)

    def invalidate(self, held: list[tuple[int, int]]) -> None:
        """The held arrays changed in place: drop their packed copies (rebuilt on next use)."""
        for region in held:
            self.lib.relax_blas_pack_invalidate(*region)


_packers: dict[str, WeightPacker] = {}


def weight_packer(paths: Iterable[str], lib: Optional[ctypes.CDLL] = None) -> Optional[WeightPacker]:
    """The :class:`WeightPacker` of an executable: the JIT's shim among its library ``paths``,
    else ``lib`` (an exported model, whose copy of the shim exports the registry); None when
    it links no shim."""
    for p in paths:
        if is_shim(p):
            with _lock:
                if p not in _packers:
                    _packers[p] = WeightPacker(ctypes.CDLL(p))   # the copy the JIT loaded
                return _packers[p]
    if lib is not None and hasattr(lib, "relax_blas_pack_register"):
        return WeightPacker(lib)
    return None
