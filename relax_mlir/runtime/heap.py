"""Keep freed kernel scratch in the process heap (glibc), so calls do not page-fault it back.

Generated kernels allocate their internal tensors with ``malloc`` at every call (a fused
conv epilogue's output and the padded copy that its im2col reads: 6-26 MB each at batch 8,
224x224) and ``free`` them before returning. glibc serves blocks above its mmap threshold
with a fresh ``mmap`` and gives the heap's free top back to the OS above its trim threshold,
so every call faults those pages in again: a third of ResNet-18's time at batch 8 was the
kernel's page-fault path (perf, docs/conv.md). Raising the mmap threshold to its maximum
(32 MiB on 64-bit) and the trim threshold to 1 GiB keeps freed blocks in the heap for the
next call, the remedy bench/bench_activations.py applies to its peers alike. Blocks above
32 MiB would still be mmapped (MobileNetV2's stride-2 depthwise phase split at batch 8 is
38.5 MB: 9,700 page faults per call, 8% of the net's time), so ``M_MMAP_MAX`` is 0: no
block is mmapped, every one comes from the heap.

It is process-wide (it serves every ``malloc`` of the process, other libraries' too) and
done once, when the first executable is created; ``RELAX_MLIR_KEEP_HEAP=0`` leaves malloc
as it was. A no-op where the C library has no ``mallopt`` (not glibc).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Optional

from .. import config

#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4
#: glibc's largest mmap threshold on 64-bit (HEAP_MAX_SIZE / 2): larger blocks are always mmapped
MMAP_THRESHOLD = 32 << 20
#: free heap top kept before glibc trims it back to the OS
TRIM_THRESHOLD = 1 << 30

_lock = threading.Lock()
_state: list[Optional[bool]] = [None]


def keep_heap() -> bool:
    """Set the thresholds once per process (see the module docstring); True when they are set."""
    with _lock:
        if _state[0] is None:
            _state[0] = config.keep_heap() and _mallopt()
        return _state[0]


def _mallopt() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallopt
    except (OSError, AttributeError):
        return False
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return (bool(fn(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(fn(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
            and bool(fn(M_MMAP_MAX, 0)))
