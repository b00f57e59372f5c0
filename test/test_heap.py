"""relax_mlir.runtime.heap: freed kernel scratch stays in the heap (no page faults per call)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# malloc + touch + free five blocks (6-37 MiB) 20 times, as a kernel's scratch per call; print
# the minor page faults of the last 19 rounds (the first one faults the blocks in either way)
PROBE = r"""
import ctypes, ctypes.util, resource, sys
from relax_mlir.runtime.heap import keep_heap
print(keep_heap())
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
# a fused conv kernel's scratch at batch 8, and a depthwise phase split above glibc's largest
# mmap threshold (32 MiB: MobileNetV2's 8x96x112x112, 38.5 MB)
sizes = [6 << 20, 26 << 20, 7 << 20, 13 << 20, 37 << 20]
def once():
    ps = [libc.malloc(n) for n in sizes]
    for p, n in zip(ps, sizes):
        ctypes.memset(p, 1, n)
    for p in ps:
        libc.free(p)
once()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(19):
    once()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""


def _probe(keep: str) -> tuple[str, int]:
    env = dict(os.environ, PYTHONPATH=ROOT, RELAX_MLIR_KEEP_HEAP=keep)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    flag, faults = out.stdout.split()
    return flag, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_freed_scratch_is_reused_without_page_faults():
    flag, faults = _probe("1")
    assert flag == "True"
    assert faults < 1000         # 19 rounds of 22,500 pages each: served from the kept heap
    flag, faults = _probe("0")
    assert flag == "False"
    assert faults > 19 * 4096    # glibc's default: fresh mmaps (or a re-grown top) per round
