"""KernelBuilder builds kernels with the bindings' typed op builders: the IR it builds is
the IR its MLIR text spells (same structural hash as the parsed text); indexing maps,
op classes and typed op matching (ops/match.py); relax-legalize's per-op fast path still
puts every op's own index check."""

from __future__ import annotations

import math

import pytest
from mlir import ir
from mlir.dialects import arith, func, linalg, tensor

import relax_mlir
from relax_mlir.ops import OPS
from relax_mlir.ops.kernels import KernelBuilder, KType, affine_expr, op_class
from relax_mlir.ops.match import isa, kind_name
from relax_mlir.transforms.kernel_hash import structural_hash

# What the builder below must build, as the parser reads it.
EXPECTED = """
func.func private @NAME(%in0: tensor<?x3xui8>, %in1: tensor<3xui8>, %out0: tensor<?x3xui8>, %out1: tensor<?xf32>)
    -> (tensor<?x3xui8>, tensor<?xf32>) attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %in0, %c0 : tensor<?x3xui8>
  %cinf = arith.constant 0x7F800000 : f32
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%in0, %in1 : tensor<?x3xui8>, tensor<3xui8>) outs(%out0 : tensor<?x3xui8>) {
  ^bb0(%a: ui8, %b: ui8, %o: ui8):
    %x = builtin.unrealized_conversion_cast %a : ui8 to i8
    %y = builtin.unrealized_conversion_cast %b : ui8 to i8
    %z = builtin.unrealized_conversion_cast %o : ui8 to i8
    %s = arith.addi %x, %y : i8
    %r = builtin.unrealized_conversion_cast %s : i8 to ui8
    linalg.yield %r : ui8
  } -> tensor<?x3xui8>
  %e = tensor.empty(%d) : tensor<?x6xf32>
  %f = linalg.fill ins(%cinf : f32) outs(%e : tensor<?x6xf32>) -> tensor<?x6xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1 * 2 + 1)>,
                                        affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%in0, %f : tensor<?x3xui8>, tensor<?x6xf32>) outs(%out1 : tensor<?xf32>) {
  ^bb0(%u: ui8, %v: f32, %acc: f32):
    %u2 = builtin.unrealized_conversion_cast %u : ui8 to i8
    %n = arith.minimumf %v, %acc : f32
    linalg.yield %n : f32
  } -> tensor<?xf32>
  return %g, %m : tensor<?x3xui8>, tensor<?xf32>
}
"""


def _built() -> KernelBuilder:
    kb = KernelBuilder("k", [KType((None, 3), "ui8"), KType((3,), "ui8")],
                       [KType((None, 3), "ui8"), KType((None,), "f32")])
    (g,) = kb.generic([(kb.ins[0], ["d0", "d1"]), (kb.ins[1], ["d1"])], [(kb.outs[0], ["d0", "d1"])],
                      ["parallel"] * 2, lambda a, b, o: [kb.bin(arith.AddIOp, a, b)])
    e = kb.empty(KType((None, 6), "f32"), kb.ins[0])
    f = kb.fill(math.inf, e)
    (m,) = kb.generic([(kb.ins[0], ["d0", "d1"]), (f, ["d0", "d1 * 2 + 1"])], [(kb.outs[1], ["d0"])],
                      ["parallel", "reduction"], lambda u, v, acc: [kb.bin("arith.minimumf", v, acc)])
    return kb, kb.finish([g, m])


def test_built_kernel_is_the_parsed_text():
    with relax_mlir.make_context(), ir.Location.unknown():
        kb, k = _built()
        k.func.attributes["sym_name"] = ir.StringAttr.get("NAME")
        k.func.verify()
        parsed = ir.Module.parse(EXPECTED)
        assert structural_hash(k.func) == structural_hash(parsed.body.operations[0].operation)
        assert kb.types[k.func.regions[0].blocks[0].arguments[0]] == KType((None, 3), "ui8")


def test_constants_and_dims_are_made_once_at_the_top():
    with relax_mlir.make_context(), ir.Location.unknown():
        kb = KernelBuilder("k", [KType((None,), "f32")], [KType((None,), "f32")])
        assert kb.dim(kb.ins[0], 0) == kb.dim(kb.ins[0], 0)
        assert kb.const(1.5, "f32") == kb.const(1.5, "f32")
        (r,) = kb.generic([(kb.ins[0], ["d0"])], [(kb.outs[0], ["d0"])], ["parallel"],
                          lambda x, o: [kb.bin(arith.MulFOp, x, kb.const(2.0, "f32"))])
        k = kb.finish([r])
        names = [o.operation.name for o in k.func.regions[0].blocks[0].operations]
        assert names == ["arith.constant", "tensor.dim", "arith.constant", "arith.constant", "linalg.generic",
                         "func.return"]


def test_affine_expressions():
    with relax_mlir.make_context():
        m = ir.AffineMap.get(3, 0, [affine_expr(s) for s in ["d0", "0", "d2 * 3 + d1 - 1", "d1 // 2", "d1 % 4"]])
        assert str(m) == "(d0, d1, d2) -> (d0, 0, d2 * 3 + d1 - 1, d1 floordiv 2, d1 mod 4)"
        assert str(affine_expr(7)) == "7"
        with pytest.raises(ValueError, match="not an affine map result"):
            affine_expr("s0 + d1")


def test_op_class_by_name_or_class():
    assert op_class("arith.addf") is arith.AddFOp
    assert op_class(tensor.ExtractSliceOp) is tensor.ExtractSliceOp
    assert op_class("arith.constant") is arith.ConstantOp     # the dialect's builder subclass
    with pytest.raises(ValueError, match="no typed builder for 'arith.addff'"):
        op_class("arith.addff")


def test_isa_matches_by_class_and_declaration():
    with relax_mlir.make_context(), ir.Location.unknown():
        m = relax_mlir.parse('''
        func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function} {
          %c = arith.constant 1.0 : f32
          %0 = "relax.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
          return %0 : tensor<4xf32>
        }''', ir.Context.current)
        f = m.body.operations[0]
        c, e, ret = list(f.regions[0].blocks[0].operations)
        assert isa(f, func.FuncOp) and isa(f.operation, func.FuncOp)
        assert isa(c, linalg.GenericOp, arith.ConstantOp) and not isa(c, linalg.GenericOp)
        assert isa(e, OPS["exp"]) and not isa(e, OPS["log"]) and not isa(e, func.FuncOp)
        assert isa(ret, func.ReturnOp)
        assert not isa(None, func.FuncOp)
        assert not isa(f.regions[0].blocks[0].arguments[0].owner, func.FuncOp)   # a Block
        assert kind_name(OPS["call_tir"]) == "relax.call_tir"
        with pytest.raises(TypeError):
            isa(c, "arith.constant")


def test_ops_sharing_a_legalization_each_get_their_index_check():
    t = 'tensor<?x4xf32, #relax.shape<["k", 4]>>'
    i = 'tensor<?xi64, #relax.shape<["n"]>>'
    o = 'tensor<?x4xf32, #relax.shape<["n", 4]>>'
    src = f'''
    func.func @f(%x: {t}, %i: {i}, %j: {i}) -> ({o}, {o}) attributes {{relax.function}} {{
      %0 = "relax.take"(%x, %i) {{axis = 0 : i64}} : ({t}, {i}) -> {o}
      %1 = "relax.take"(%x, %j) {{axis = 0 : i64}} : ({t}, {i}) -> {o}
      return %0, %1 : {o}, {o}
    }}'''
    m = relax_mlir.parse(src, relax_mlir.make_context())
    with m.context:
        relax_mlir.run_pipeline(m, "builtin.module(relax-infer-shapes, relax-legalize)")
    body = [o for o in m.body.operations[0].regions[0].blocks[0].operations]
    names = [o.operation.name for o in body]
    assert names == ["relax.check_indices", "relax.call_tir", "relax.check_indices", "relax.call_tir", "func.return"]
    args = m.body.operations[0].regions[0].blocks[0].arguments
    assert body[0].operands[0] == args[1] and body[2].operands[0] == args[2]
    assert str(m).count("func.func private @relax_take_axis0_f32_Dx4_r1(") == 1
