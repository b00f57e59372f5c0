"""The relax op set, one module per family; importing this registers every op.

Each op is declared once (``registry.op``) with its signature, attributes and
shape rule; its legalization attaches to the same declaration.
"""

from . import binary, create, cross_level, elementwise, linalg, manipulate, memory, nn, quant, reduce, sort, state  # noqa: F401
from .registry import OPS, Attr, InferCall, OpDef, RelaxError, op

__all__ = ["OPS", "Attr", "InferCall", "OpDef", "RelaxError", "op"]
