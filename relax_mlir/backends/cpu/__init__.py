"""The cpu backend: LLVM through MLIR's ExecutionEngine (JIT) or ``export()`` (a shared library).

Stages ``graph`` -> ``host`` -> ``codegen`` (:mod:`relax_mlir.pipelines.cpu`); the Target
carries the dispatch policy as the cpu pipeline resolves it; the runtime JIT-compiles the
LLVM-dialect module and links relax_blas and OpenMP.
"""

from __future__ import annotations

import time

from .. import Backend, Stage, register_backend


def _stages(opts, backend: Backend) -> list[Stage]:
    from ...pipelines.cpu import stages
    return stages(opts.fusion, opts.plan_memory, opts.dispatch, opts.dispatch_min_flops,
                  backend.legalize_target, backend.host_hooks, opts.schedules, opts.dispatch_policy,
                  getattr(opts, "layout", None))


def _make_target(popts, options):
    """The cpu compile's Target: the dispatch policy as the cpu pipeline resolves it (its
    option, else the environment's, else measured with schedules and flops without)."""
    from ...pipelines.cpu import dispatch_policy
    from ...target import Target
    if isinstance(options.target, Target):
        return options.target
    return Target.from_options(options, dispatch_policy=dispatch_policy(popts.dispatch_policy, popts.schedules)
                               if popts.dispatch else "off")


def llvm_text(module) -> str:
    """Print a copy of the LLVM-dialect module without the ``relax.*`` attributes, which
    name the relax dialect (declared in Python, unknown to ``mlir-translate``)."""
    with module.context:
        clone = module.operation.clone()
        ops = [clone] + list(clone.regions[0].blocks[0].operations)
        for op in ops:
            for name in [a for a in op.attributes if isinstance(a, str) and a.startswith("relax.")]:
                del op.attributes[name]
        text = str(clone)
        clone.erase()
    return text


def _runtime(module, metadata: dict, libraries: list[str], options):
    """The LLVM-dialect module JIT-compiled by MLIR's ExecutionEngine."""
    from ...runtime.executable import Executable
    from ...runtime.jit import jit_module
    from ...runtime.libraries import share_blas_threads
    from .apply_schedules import openmp_libraries
    t0 = time.perf_counter()
    resolver = jit_module(module, options.opt_level, list(libraries) + openmp_libraries(options.pipeline_options))
    share_blas_threads()   # an OpenBLAS the engine loaded (relax_blas's) runs on our OpenMP team too
    t1 = time.perf_counter()
    # the engine's first symbol lookup (in Executable) makes the machine code of the whole module
    exe = Executable(resolver, metadata, 0.0, libraries, llvm_dialect=lambda: llvm_text(module))
    exe.compile_phases = {"jit-optimize": t1 - t0, "jit-codegen": time.perf_counter() - t1}
    return exe


from . import (apply_schedules, bf16_casts, conv_gemm, dispatch_library, epilogue_in_place,  # noqa: E402,F401
               hoist_scratch, library_variants, omp_threads, prefetch, specialize_ranges,
               widen_bf16_matmul)  # (registration of the cpu-only passes)

BACKEND = register_backend(Backend("cpu", "the host CPU: LLVM via the MLIR ExecutionEngine (JIT) or export()",
                                   "cpu", _stages, _runtime, legalize_target="cpu", host_hooks="cpu",
                                   make_target=_make_target))
