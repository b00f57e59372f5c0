// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s
// relax-conv-gemm's im2col (C, KH, KW, N, OH, OW): one (channel, kh) plane per forall iteration.
// CHECK-LABEL: func.func private @im2col
// CHECK-SAME: relax.schedule = "im2col"
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (4, 3)
// CHECK: linalg.generic
#x = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 * 2 + d1, d5 * 2 + d2)>
#id = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
func.func private @im2col(%x: tensor<?x4x?x?xf32>, %o: tensor<36x?x?x?xf32>) -> tensor<36x?x?x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "injective", relax.kernel_op = "im2col"} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = tensor.dim %o, %c1 : tensor<36x?x?x?xf32>
  %h = tensor.dim %o, %c2 : tensor<36x?x?x?xf32>
  %w = tensor.dim %o, %c3 : tensor<36x?x?x?xf32>
  %e = tensor.expand_shape %o [[0, 1, 2], [3], [4], [5]] output_shape [4, 3, 3, %n, %h, %w] : tensor<36x?x?x?xf32> into tensor<4x3x3x?x?x?xf32>
  %g = linalg.generic {indexing_maps = [#x, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<?x4x?x?xf32>) outs(%e : tensor<4x3x3x?x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x3x3x?x?x?xf32>
  %r = tensor.collapse_shape %g [[0, 1, 2], [3], [4], [5]] : tensor<4x3x3x?x?x?xf32> into tensor<36x?x?x?xf32>
  return %r : tensor<36x?x?x?xf32>
}
