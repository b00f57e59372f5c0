"""Backends, one folder each: what a target adds on top of the target-independent passes.

A :class:`Backend` is one registration (:func:`register_backend`): the backend's stages
(its pipeline, built from the parsed pipeline options and the compile's
:class:`~relax_mlir.target.Target`), its legalization and host-lowering hooks, the runtime
libraries it links, its runtime factory (lowered module -> Executable) and how its Target
is made from the options. ``cpu/``, ``cuda/`` and ``vulkan/`` each register one on import;
``gpu/`` holds the kernel schedule rules the two GPU targets share. Adding a target is one
folder with one ``register_backend`` call, plus its line below. The pass pipelines
themselves are named, mlir-opt-style, in :mod:`relax_mlir.pipelines`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from ..target import Target

Stage = tuple[str, list[str]]


@dataclass
class Backend:
    """A registered backend: its stages, legalization and host-lowering hooks, libraries,
    runtime, and how its :class:`~relax_mlir.target.Target` is made from the options."""

    name: str
    summary: str
    #: registered pipeline whose options ``pipeline_options`` are (``cpu``)
    pipeline_name: str
    #: (parsed pipeline options, backend) -> named stages ending with ``codegen``
    stages: Callable[[Any, "Backend"], list[Stage]]
    #: (lowered module in the LLVM dialect, metadata JSON, libraries, options) -> Executable
    runtime: Callable[..., Any]
    #: runtime libraries every module of this backend links
    libraries: Callable[[], list[str]] = list
    #: ``relax-legalize{target=...}``: the legalization table
    legalize_target: Optional[str] = None
    #: ``relax-lower-host{target=...}``: the host-lowering hooks (lower_host.HOST_HOOKS)
    host_hooks: str = "cpu"
    #: (parsed pipeline options, CompileOptions) -> the compile's Target (default:
    #: ``Target.from_options(options)``)
    make_target: Optional[Callable[[Any, Any], "Target"]] = None

    @property
    def host_target(self) -> str:
        """The former name of :attr:`host_hooks`."""
        return self.host_hooks


#: The registered backends by name (the ``target=`` of :func:`relax_mlir.compile`).
BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend, replace: bool = False) -> Backend:
    """Register ``backend`` under its name."""
    if backend.name in BACKENDS and not replace:
        raise ValueError(f"target '{backend.name}' registered twice")
    BACKENDS[backend.name] = backend
    return backend


from . import cpu, vulkan, cuda  # noqa: E402,F401  (registration, in this order)
