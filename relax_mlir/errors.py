"""Exceptions raised to users at run time."""


class ShapeError(ValueError):
    """A run-time shape check failed: wrong rank, dim, inconsistent symbols or a failed match_cast."""


class LoadError(RuntimeError):
    """``relax_mlir.load`` cannot use a file: not a relax-mlir library, truncated, corrupted,
    written by another format version, or its libraries cannot be loaded."""
