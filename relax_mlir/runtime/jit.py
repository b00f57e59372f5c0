"""The one JIT factory: a lowered LLVM-dialect module -> MLIR's ExecutionEngine, for every
target's runtime (cpu in relax_mlir.backends.cpu, cuda, vulkan: :func:`jit_module`), and the
resolver an Executable looks its ``_mlir_ciface_<f>`` entry points up in."""

from __future__ import annotations

import contextlib
import ctypes
from typing import Optional, Sequence

from ..errors import CompileError


class EngineResolver:
    """Symbols of an MLIR ExecutionEngine (JIT); keeps the engine and its module alive."""

    def __init__(self, engine, context, module):
        self.engine, self.context, self.module = engine, context, module

    def address(self, name: str) -> int:
        # raw_lookup(x) looks up "_mlir_" + x (the packed-wrapper naming), so "ciface_f"
        # is the plain C-interface function "_mlir_ciface_f" itself.
        addr = self.engine.raw_lookup("ciface_" + name)
        if not addr:
            raise RuntimeError(f"no symbol _mlir_ciface_{name} in the compiled module")
        return addr

    def packed_address(self, name: str) -> int:
        """``_mlir_relax_packed_<f>``: the entry of a function too wide for a direct call."""
        from .abi import PACKED_PREFIX

        addr = self.engine.raw_lookup(PACKED_PREFIX[len("_mlir_"):] + name)
        if not addr:
            raise RuntimeError(f"no symbol {PACKED_PREFIX}{name} in the compiled module")
        return addr


def build_engine(module, opt_level: int, shared_libs: list[str], callbacks: Optional[dict] = None,
                 initialize_in=None):
    """JIT ``module`` (translate + optimize now; machine code on the first lookup) against
    ``shared_libs``, with ``callbacks`` (name -> ctypes function) as extra symbols, and run
    its global constructors (inside the context manager ``initialize_in``, e.g. a device's
    current context). A module LLVM rejects is a :class:`CompileError`."""
    from mlir.execution_engine import ExecutionEngine

    try:
        engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=list(shared_libs))
    except RuntimeError as e:
        raise CompileError(f"the JIT could not build the module: {e}") from None
    for name, cb in (callbacks or {}).items():
        engine.raw_register_runtime(name, ctypes.cast(cb, ctypes.c_void_p))
    with initialize_in if initialize_in is not None else contextlib.nullcontext():
        try:
            engine.initialize()
        except RuntimeError as e:
            raise CompileError(f"the JIT could not build the module: {e}") from None
    return engine


def jit_module(module, opt_level: int, libraries: Sequence[str], *, extra: Sequence[str] = (),
               callbacks: Optional[dict] = None, initialize_in=None) -> EngineResolver:
    """A target's JIT: ``module`` built by :func:`build_engine` against MLIR's runner utils
    (:func:`~relax_mlir.runtime.executable.runtime_libraries`), the target's own ``extra``
    libraries and the module's ``libraries``, with ``callbacks`` as symbols; returns the
    resolver its Executable is made from (``resolver.engine``: the engine)."""
    from .executable import runtime_libraries

    engine = build_engine(module, opt_level, runtime_libraries() + list(extra) + list(libraries), callbacks,
                          initialize_in=initialize_in)
    return EngineResolver(engine, module.context, module)
