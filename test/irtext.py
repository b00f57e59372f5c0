"""Helpers for writing relax IR text in tests."""

import re


def seg(n: int, slots: int = 16) -> str:
    """A segment-size attribute for one run of ``n`` equal-typed values (see dialects/_core.py)."""
    return "array<i32: " + ", ".join([str(n)] + ["0"] * (slots - 1)) + ">"


def T(shape: str, dims: list, dtype: str = "f32") -> str:
    """``T("?x4", ["n", 4])`` -> ``tensor<?x4xf32, #relax.shape<["n", 4]>>``."""
    enc = ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in dims)
    return f"tensor<{shape}x{dtype}, #relax.shape<[{enc}]>>"


#: @main(x: (n, 4)) = x + x through one call_tir of a linalg kernel: the smallest compiled
#: program (export, load and hardening tests)
ADD_PROGRAM = f"""
func.func @add_kernel(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {{relax.kernel}} {{
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}}
func.func @main(%x: {T("?x4", ["n", 4])}) -> {T("?x4", ["n", 4])} attributes {{relax.function}} {{
  %0 = "relax.call_tir"(%x, %x) {{callee = @add_kernel, operandSegmentSizes = {seg(2)}, resultSegmentSizes = {seg(1, 8)}}} : ({T("?x4", ["n", 4])}, {T("?x4", ["n", 4])}) -> {T("?x4", ["n", 4])}
  return %0 : {T("?x4", ["n", 4])}
}}
"""


def callees(text: str) -> list[str]:
    """The kernels called by ``relax.call_tir`` in printed IR, in order."""
    return re.findall(r'"relax.call_tir".*?callee = @(\w+)', text)
