"""Memory-planning benchmark: heap use of the transformer block (relax_mlir.frontend.models,
default config: d_model 256, 4 heads, d_ffn 512, s <= 2048) per call, compiled ONCE per mode:

* ``plan-arena``: relax-plan-memory with ``relax.upper_bounds`` (the default cpu pipeline):
  one static arena sized at s = 2048;
* ``plan-symbolic``: the same block with its upper bound removed: symbolic storages
  reused by liveness, sized at the actual s;
* ``no-plan``: ``options={"plan_memory": False}``: one allocation per intermediate.

    .venv/bin/python bench/bench_memory.py                 # s in 32, 256, 1024
    .venv/bin/python bench/bench_memory.py --seqs 16 2048

How allocations are counted (exact, no LD_PRELOAD, no sampling): the benchmark wraps
``mlir.execution_engine.ExecutionEngine`` so that, in the LLVM-dialect module about to be
JIT-compiled, the symbols ``malloc`` / ``aligned_alloc`` / ``free`` are renamed to
counting versions from a tiny C library built here with ``cc`` (they call libc and add
``malloc_usable_size`` to a running total). So every heap allocation made by the
generated code (memref.alloc of intermediates, arenas, storages, results) is counted;
allocations inside external libraries (BLAS workspace of relax-dispatch-library) and
by the Python runtime (the numpy result array) are not. Per call, the counters are reset,
then the call runs: ``allocs`` is the number of allocations, ``peak`` the largest number
of live bytes during the call (the result buffer included: the runtime frees it with libc
``free`` after copying it out, outside the count), ``total`` the bytes requested.
The static arena is not heap: it is the session workspace (allocated once per session,
see ``Executable.session``) reused by every call of that session, listed as ``static MiB``; its pages
never touched stay unmapped (zero pages), so it is address space reserved, an upper
bound on the memory actually touched.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import relax_mlir  # noqa: E402
from relax_mlir.frontend import models  # noqa: E402

C_SOURCE = r"""
#include <malloc.h>
#include <stdlib.h>
static long long cur, peak, total, count;
static void note(void *p) {
  if (!p) return;
  long long n = (long long)malloc_usable_size(p);
  cur += n; total += n; count += 1;
  if (cur > peak) peak = cur;
}
void *relax_bench_malloc(size_t n) { void *p = malloc(n); note(p); return p; }
void *relax_bench_aligned_alloc(size_t a, size_t n) { void *p = aligned_alloc(a, n); note(p); return p; }
void relax_bench_free(void *p) { if (p) cur -= (long long)malloc_usable_size(p); free(p); }
void relax_bench_reset(void) { cur = peak = total = count = 0; }
long long relax_bench_peak(void) { return peak; }
long long relax_bench_total(void) { return total; }
long long relax_bench_count(void) { return count; }
"""

RENAMED = {"malloc": "relax_bench_malloc", "aligned_alloc": "relax_bench_aligned_alloc",
           "free": "relax_bench_free"}


def build_counter(tmp: str) -> str:
    src, lib = os.path.join(tmp, "count.c"), os.path.join(tmp, "libcount.so")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.check_call(["cc", "-O2", "-shared", "-fPIC", src, "-o", lib])
    return lib


def install_counter(lib: str) -> ctypes.CDLL:
    """Route malloc/aligned_alloc/free of every JIT-compiled module through the counter."""
    import mlir.execution_engine as ee
    from mlir import ir

    real = ee.ExecutionEngine
    handle = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)

    def counting_engine(module, opt_level=2, shared_libs=None, **kw):
        with module.context:
            for op in module.body.operations:
                op = op.operation
                if op.name != "llvm.func":
                    continue
                name = ir.StringAttr(op.attributes["sym_name"]).value
                if name in RENAMED:
                    ir.SymbolTable.replace_all_symbol_uses(name, RENAMED[name], module.operation)
                    op.attributes["sym_name"] = ir.StringAttr.get(RENAMED[name])
        return real(module, opt_level=opt_level, shared_libs=list(shared_libs or []) + [lib], **kw)

    ee.ExecutionEngine = counting_engine
    for f in ("relax_bench_peak", "relax_bench_total", "relax_bench_count"):
        getattr(handle, f).restype = ctypes.c_longlong
    return handle


def block(cfg: models.BlockConfig, bounds: bool):
    ctx = relax_mlir.make_context()
    m = models.block_module(ctx, cfg)
    if not bounds:
        for op in m.body.operations:
            if "relax.upper_bounds" in op.attributes:
                del op.attributes["relax.upper_bounds"]
    return m


def arena_bytes(module, plan: bool) -> int:
    """Bytes of static arenas (the session workspace of @main) the cpu pipeline gives this module."""
    from relax_mlir.pipelines.cpu import graph_stage
    from relax_mlir.transforms.lower_host import host_metadata
    from relax_mlir.transforms.pipeline import run_pipeline

    run_pipeline(module, "builtin.module(" + ", ".join(graph_stage(plan_memory=plan)) + ")")
    return host_metadata(module).functions["main"].workspace_bytes


def mib(n: int) -> str:
    return f"{n / 2**20:9.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seqs", type=int, nargs="+", default=[32, 256, 1024])
    args = ap.parse_args()
    cfg = models.BlockConfig()
    with tempfile.TemporaryDirectory() as tmp:
        counter = install_counter(build_counter(tmp))
        rng = np.random.default_rng(0)
        params = models.block_params(cfg, rng)
        modes = [("plan-arena", True, True), ("plan-symbolic", True, False), ("no-plan", False, True)]
        exes = {name: relax_mlir.compile(block(cfg, bounds), options={"plan_memory": plan})
                for name, plan, bounds in modes}
        print(f"transformer block d_model={cfg.d_model} heads={cfg.heads} d_ffn={cfg.d_ffn} "
              f"s <= {cfg.max_seq}; heap of the generated code per call (see the docstring)")
        static = {name: arena_bytes(block(cfg, bounds), plan) for name, plan, bounds in modes}
        print(f"{'s':>6} {'mode':<14} {'allocs':>6} {'peak MiB':>9} {'total MiB':>9} {'static MiB':>10} {'max err':>9}")
        for s in args.seqs:
            x = rng.standard_normal((s, cfg.d_model)).astype(np.float32)
            ref = models.block_reference(x, *params, cfg=cfg)
            for name, _, _ in modes:
                exes[name](x, *params)   # warm up
                counter.relax_bench_reset()
                y = exes[name](x, *params)
                err = float(np.abs(y - ref).max())
                print(f"{s:>6} {name:<14} {counter.relax_bench_count():>6} {mib(counter.relax_bench_peak())} "
                      f"{mib(counter.relax_bench_total())} {mib(static[name]):>10} {err:9.2e}")
        # minimum possible: the result alone
        print(f"(the result alone is s*{cfg.d_model}*4 bytes, e.g. {mib(args.seqs[-1] * cfg.d_model * 4).strip()} MiB "
              f"at s = {args.seqs[-1]})")


if __name__ == "__main__":
    main()
