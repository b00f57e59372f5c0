// Hand-written kernels for test/relax-fuse-kernels/multi_use.mlir (a rotation with a gather, a
// copy, a conversion to f16), as relax-legalize writes rope, a head split and an astype.
#id = affine_map<(d0, d1) -> (d0, d1)>

// A rotation of each row by half (rope's rotate_half): a gather of its input.
func.func private @rot(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %j1 = arith.addi %j, %c32 : index
    %j2 = arith.remui %j1, %c64 : index
    %b = tensor.extract %x[%i, %j2] : tensor<?x64xf32>
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

func.func private @copy(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.copy ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

func.func private @to_f16(%x: tensor<?x64xf32>, %out: tensor<?x64xf16>) -> tensor<?x64xf16> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf16>) {
  ^bb0(%a: f32, %o: f16):
    %t = arith.truncf %a : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x64xf16>
  return %r : tensor<?x64xf16>
}

func.func private @scale(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %c = arith.constant 0.125 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

