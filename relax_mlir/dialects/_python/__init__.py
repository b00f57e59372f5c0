"""Python modules the MLIR bindings import for dialects of ours (see :mod:`.relax`)."""
