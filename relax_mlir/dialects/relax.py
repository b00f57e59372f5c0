"""The relax dialect, declared in Python.

The op table lives in :mod:`relax_mlir.ops` (one declaration per op); the machinery
in :mod:`relax_mlir.dialects._core` turns it into the IRDL module loaded into every
Context (:func:`irdl_text`, :func:`load_into`) and into one typed builder per op,
exposed here as module attributes::

    from relax_mlir.dialects import relax
    with ir.InsertionPoint(block):
        y = relax.add(x, b)                 # result type deduced by the shape rule
        z = relax.matmul(y, w)
        parts = relax.split(z, sections=2, axis=1)
        c = relax.const(np.ones(64, np.float32))   # a constant tensor (arith.constant)
        y = (x @ w + c) * 2.0                    # operators on values; scalars promoted
"""

from ._core import (BUILDERS, DIALECT, FUNCTION_ATTR, OPERAND_SLOTS, RESULT_SLOTS,  # noqa: F401
                    UPPER_BOUNDS_ATTR, RelaxError, Var, build, const, create, infer_result_sigs,
                    irdl_text, load_into, read_attrs, refresh_segments, segment_attrs)

__all__ = ["irdl_text", "load_into", "build", "create", "segment_attrs", "refresh_segments",
           "BUILDERS", "FUNCTION_ATTR", "UPPER_BOUNDS_ATTR", "RelaxError", "infer_result_sigs",
           "read_attrs", "const", "Var"] + sorted(BUILDERS)

# Builders are module attributes (`relax.add(a, b)`); some op names shadow builtins here.
globals().update(BUILDERS)
