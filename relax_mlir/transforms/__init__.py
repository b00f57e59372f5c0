"""Relax passes, one per file, each registered under its pipeline name."""

from . import infer_shapes, legalize, lower_host, verify, widen_bool_memrefs  # noqa: F401  (registration)
from .registry import PASSES, PIPELINES, Option, emit_error, register_pass, register_pipeline

__all__ = ["PASSES", "PIPELINES", "Option", "emit_error", "register_pass", "register_pipeline"]
