"""Relax passes, one per file, each registered under its pipeline name."""

from . import (annotate_kernel_kinds, convert_layout, cse, dce,  # noqa: F401
               fold_batch_norm, fuse_kernels, lift_params, fuse_ops, infer_shapes, expand_math, host_optnone,
               internalize, kernel_fastmath, kernel_noalias, legalize, lower_host,
               packed_entries, plan_memory, strip_attributes, verify,
               widen_bool_memrefs)  # noqa: F401  (registration)
from .registry import PASSES, PIPELINES, Option, emit_error, register_pass, register_pipeline
from .. import pipelines  # noqa: F401,E402  (registers the named pipelines: cpu; `import relax_mlir` is lazy)

__all__ = ["PASSES", "PIPELINES", "Option", "emit_error", "register_pass", "register_pipeline"]
