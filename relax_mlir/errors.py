"""Exceptions raised to users: at compile time (:class:`CompileError`) and at run time."""


class ShapeError(ValueError):
    """A run-time shape check failed: wrong rank, dim, inconsistent symbols or a failed match_cast."""


class IndexOutOfRangeError(IndexError):
    """A run-time index check failed: an index of ``relax.take`` (embedding, index_select)
    outside ``[-d, d)``, as numpy's and PyTorch's IndexError."""


class LoadError(RuntimeError):
    """``relax_mlir.load`` cannot use a file: not a relax-mlir library, truncated, corrupted,
    written by another format version, or its libraries cannot be loaded."""


class CompileError(ValueError):
    """A compile-time failure in the user's program or options.

    ``diagnostics`` holds the MLIR diagnostics as ``(location, message)`` string pairs,
    locations as ``file:line:col`` (the user's file name when one was given).
    """

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)
