"""Helpers for writing relax IR text in tests."""


def seg(n: int, slots: int = 16) -> str:
    """A segment-size attribute for one run of ``n`` equal-typed values (see dialects/_core.py)."""
    return "array<i32: " + ", ".join([str(n)] + ["0"] * (slots - 1)) + ">"


def T(shape: str, dims: list, dtype: str = "f32") -> str:
    """``T("?x4", ["n", 4])`` -> ``tensor<?x4xf32, #relax.shape<["n", 4]>>``."""
    enc = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in dims)
    return f"tensor<{shape}x{dtype}, #relax.shape<[{enc}]>>"
