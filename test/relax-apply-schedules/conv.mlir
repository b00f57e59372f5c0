// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// Depthwise 3x3 conv + bias + relu, fused (relax-fuse-ops): one output row per scf.forall
// iteration (n, channel, row), the conv and its zero fill fused into the row with a row-sized
// accumulator; 16 columns per vector tile, the accumulator carried in a register across the
// window loops (kh, kw); the last < 16 columns masked; the epilogue reads the row.
// CHECK-LABEL: func.func private @fused_conv2d_add_relu
// CHECK-SAME: relax.schedule = "conv"
// CHECK: linalg.copy
// CHECK: scf.forall (%[[N:.+]], %[[C:.+]], %[[R:.+]]) in (%{{.+}}, 32, %{{.+}}) shared_outs
// CHECK: tensor.empty(%{{.+}}) : tensor<1x1x1x?xf32>
// CHECK: linalg.fill
// CHECK: scf.for %{{.+}} step %c16
// CHECK: %[[ACC:.+]] = vector.transfer_read {{.+}} : tensor<16xf32>, vector<16xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[ACC]]) -> (vector<16xf32>)
// CHECK: scf.for {{.+}} -> (vector<16xf32>)
// CHECK: vector.transfer_read {{.+}} : tensor<16xf32>, vector<16xf32>
// CHECK: vector.broadcast {{.+}} : f32 to vector<16xf32>
// CHECK: arith.mulf {{.+}} : vector<16xf32>
// CHECK: arith.addf {{.+}} : vector<16xf32>
// CHECK: vector.transfer_write
// CHECK: vector.create_mask %{{.+}} : vector<16xi1>
// CHECK: arith.maximumf
// CHECK: tensor.parallel_insert_slice
#map = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d4 + d5)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, 0, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func private @fused_conv2d_add_relu(%arg0: tensor<?x32x?x?xf32>, %arg1: tensor<32x1x3x3xf32>, %arg2: tensor<32x1x1xf32>, %arg3: tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "conv2d_add_relu"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x32x?x?xf32>
  %dim_0 = tensor.dim %arg0, %c2 : tensor<?x32x?x?xf32>
  %dim_1 = tensor.dim %arg0, %c3 : tensor<?x32x?x?xf32>
  %0 = tensor.empty(%dim, %dim_0, %dim_1) : tensor<?x32x?x?xf32>
  %1 = arith.addi %dim_0, %c2 : index
  %2 = arith.addi %dim_1, %c2 : index
  %3 = tensor.empty(%dim, %1, %2) : tensor<?x32x?x?xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32>
  %extracted_slice = tensor.extract_slice %4[0, 0, 1, 1] [%dim, 32, %dim_0, %dim_1] [1, 1, 1, 1] : tensor<?x32x?x?xf32> to tensor<?x32x?x?xf32>
  %5 = linalg.copy ins(%arg0 : tensor<?x32x?x?xf32>) outs(%extracted_slice : tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32>
  %inserted_slice = tensor.insert_slice %5 into %4[0, 0, 1, 1] [%dim, 32, %dim_0, %dim_1] [1, 1, 1, 1] : tensor<?x32x?x?xf32> into tensor<?x32x?x?xf32>
  %6 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32>
  %7 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%inserted_slice, %arg1 : tensor<?x32x?x?xf32>, tensor<32x1x3x3xf32>) outs(%6 : tensor<?x32x?x?xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %9 = arith.mulf %in, %in_2 : f32
    %10 = arith.addf %out, %9 : f32
    linalg.yield %10 : f32
  } -> tensor<?x32x?x?xf32>
  %8 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %arg2 : tensor<?x32x?x?xf32>, tensor<32x1x1xf32>) outs(%arg3 : tensor<?x32x?x?xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %9 = arith.addf %in, %in_2 : f32
    %10 = arith.maximumf %9, %cst : f32
    linalg.yield %10 : f32
  } -> tensor<?x32x?x?xf32>
  return %8 : tensor<?x32x?x?xf32>
}

// -----

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
