"""Kernel identity: a structural hash of a kernel function's IR, independent of its name.

Two kernels are the same kernel when their signatures, bodies and semantic attributes
are the same, whatever their symbols are called. The hash is the SHA-256 of the
generic printed form of a detached copy of the function with its name fixed and its
naming/bookkeeping attributes dropped; the printer numbers SSA values from scratch in
each function, so value names never matter, and locations are not printed.
"""

from __future__ import annotations

import hashlib

from mlir import ir

#: Function attributes that name or describe a kernel without changing what it computes.
NON_STRUCTURAL_ATTRS = ("sym_name", "sym_visibility", "relax.kernel_kind", "relax.kernel_op")


def structural_hash(fn: ir.Operation, ignore: tuple[str, ...] = ()) -> str:
    """A hex digest equal for two functions exactly when they compute the same thing the
    same way (same types, ops, attributes and nesting), names and locations aside.
    ``ignore``: further function attributes to leave out (a range variant's
    ``relax.range`` when looking up the kernel it was cloned from)."""
    with fn.context, ir.Location.unknown():
        copy = fn.clone(ip=False)
        try:
            for name in NON_STRUCTURAL_ATTRS + tuple(ignore):
                if name in copy.attributes:
                    del copy.attributes[name]
            text = copy.get_asm(print_generic_op_form=True, assume_verified=True)
        finally:
            copy.erase()
    return hashlib.sha256(text.encode()).hexdigest()
