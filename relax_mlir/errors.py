"""Exceptions raised to users at run time."""


class ShapeError(ValueError):
    """A run-time shape check failed: wrong rank, dim, inconsistent symbols or a failed match_cast."""
