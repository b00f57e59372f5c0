"""relax-legalize: per-target legalization overrides (register_legalize,
relax-legalize{target=...}), where the target's kernel replaces the op table's default for that
target only; and kernels shared by structure."""

from __future__ import annotations

import re
from typing import Optional

import numpy as np
import pytest

import relax_mlir
from irtext import callees
from relax_mlir.ops.kernels import Kernel, LegalizeCall, elementwise
from relax_mlir.transforms import legalize
from relax_mlir.transforms.legalize import register_legalize

T = 'tensor<?x4x{dt}, #relax.shape<["n", 4]>>'
SRC = """
func.func @main(%x: {T}, %y: {T}) -> {T} attributes {{relax.function}} {{
  %0 = "relax.add"(%x, %y) : ({T}, {T}) -> {T}
  %1 = "relax.multiply"(%0, %y) : ({T}, {T}) -> {T}
  return %1 : {T}
}}
"""


def src(dt: str) -> str:
    return SRC.format(T=T.format(dt=dt))


def _add_by_subtracting(call: LegalizeCall) -> Optional[Kernel]:
    """x + y as x - (-y), for f32 only (other dtypes: back to the default)."""
    if call.in_types[0].dtype != "f32":
        return None
    kb = call.builder(tag="testgpu")
    r = elementwise(kb, kb.ins, lambda a, b: kb.bin("arith.subf", a, kb.un("arith.negf", b)))
    return kb.finish([r])


@pytest.fixture
def testgpu(monkeypatch):
    """The override registered for target 'testgpu' for this test only."""
    monkeypatch.setattr(legalize, "LEGALIZE_OVERRIDES", {})
    register_legalize("relax.add", target="testgpu")(_add_by_subtracting)
    return legalize.LEGALIZE_OVERRIDES


def legalized(text: str, target: Optional[str]) -> str:
    opt = f"{{target={target}}}" if target else ""
    with relax_mlir.make_context() as ctx:
        m = relax_mlir.parse(text, ctx)
        relax_mlir.run_pipeline(m, f"builtin.module(relax-infer-shapes, relax-legalize{opt})")
        return str(m)


def kernel_body(text: str, name: str) -> str:
    return text[text.index(f"func.func private @{name}("):].split("\n  }\n")[0]


def test_override_is_used_for_its_target(testgpu):
    text = legalized(src("f32"), "testgpu")
    assert callees(text) == ["relax_add_testgpu_f32_Dx4_Dx4", "relax_multiply_f32_Dx4_Dx4"]
    add = kernel_body(text, "relax_add_testgpu_f32_Dx4_Dx4")
    assert re.findall(r"arith\.\w+", add) == ["arith.negf", "arith.subf"]
    assert 'relax.kernel_op = "add"' in add
    # the op without an override keeps the default kernel
    assert re.findall(r"arith\.\w+", kernel_body(text, "relax_multiply_f32_Dx4_Dx4")) == ["arith.mulf"]


@pytest.mark.parametrize("target", [None, "cpu", "other"])
def test_other_targets_keep_the_default(testgpu, target):
    text = legalized(src("f32"), target)
    assert callees(text) == ["relax_add_f32_Dx4_Dx4", "relax_multiply_f32_Dx4_Dx4"]
    assert re.findall(r"arith\.\w+", kernel_body(text, "relax_add_f32_Dx4_Dx4")) == ["arith.addf"]


def test_override_returning_none_falls_back_to_the_default(testgpu):
    text = legalized(src("f64"), "testgpu")
    assert callees(text) == ["relax_add_f64_Dx4_Dx4", "relax_multiply_f64_Dx4_Dx4"]
    assert re.findall(r"arith\.\w+", kernel_body(text, "relax_add_f64_Dx4_Dx4")) == ["arith.addf"]


def test_overridden_kernel_computes_the_op(testgpu):
    """The override's kernel, compiled end to end, gives numpy's answer (n = 1, 7, 300)."""
    exe = relax_mlir.compile(legalized(src("f32"), "testgpu"))
    rng = np.random.default_rng(3)
    for n in (1, 7, 300):
        x, y = (rng.standard_normal((n, 4)).astype(np.float32) for _ in range(2))
        np.testing.assert_allclose(exe(x, y), (x + y) * y, rtol=1e-6)


def test_registration_errors(testgpu):
    with pytest.raises(ValueError, match=r"relax.add already has a legalization for target 'testgpu'"):
        register_legalize("add", target="testgpu")(_add_by_subtracting)
    register_legalize("add", target="testgpu", replace=True)(_add_by_subtracting)
    assert testgpu == {"testgpu": {"add": _add_by_subtracting}}
    with pytest.raises(ValueError, match=r"unknown op 'relax.addd'"):
        register_legalize("relax.addd", target="testgpu")


EXP = """
func.func @{name}(%x: tensor<?x4xf32, #relax.shape<["{d}", 4]>>) -> tensor<?x4xf32, #relax.shape<["{d}", 4]>> attributes {{relax.function}} {{
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["{d}", 4]>>) -> tensor<?x4xf32, #relax.shape<["{d}", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["{d}", 4]>>
}}
"""


def test_kernels_of_an_earlier_run_are_shared():
    """Kernel identity is structural: a second relax-legalize run (a pipeline split in two)
    calls the kernel the first run made instead of adding relax_exp_f32_Dx4_1."""
    first = legalized(EXP.format(name="f", d="n"), None)
    end = first.rindex("}")   # add @g to the module the first run printed
    text = legalized(first[:end] + EXP.format(name="g", d="m") + first[end:], None)
    assert callees(text) == ["relax_exp_f32_Dx4", "relax_exp_f32_Dx4"]
    assert re.findall(r"func.func private @(\w+)", text) == ["relax_exp_f32_Dx4"]
