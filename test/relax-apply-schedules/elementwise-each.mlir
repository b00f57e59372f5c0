// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// relax-lift-params' weight transform of a conv with a folded BatchNorm: the shift
// b - m * s (a result of its own), the scale applied to the (32, 16, 3, 3) weight and the
// weight packed into (2, 144, 16) channel-block panels, in one kernel of two results. Each
// generic is scheduled on its own (no fused loop of several results): the shift in 16-lane
// vectors; the weight scaling, only read by the packing, is computed in the packing's tiles
// (the scaled weight is never written): its (C, KH, KW) merged into 144, the weight viewed
// as (O/16, 16, 144) and the scale as (O/16, 16); (1, 16, 16) tiles multiplied, transposed in
// registers (shuffles) and stored, the k loop exact (144 = 9 x 16).
// CHECK-LABEL: func.func private @bn_fold_pack
// CHECK-SAME: relax.schedule = "elementwise_each"
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: arith.mulf {{.*}} : vector<16xf32>
// CHECK: arith.subf {{.*}} : vector<16xf32>
// CHECK-DAG: tensor.collapse_shape %arg3 {{\[\[}}0], [1, 2, 3]] : tensor<32x16x3x3xf32> into tensor<32x144xf32>
// CHECK-DAG: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 16, 144] : tensor<32x144xf32> into tensor<2x16x144xf32>
// CHECK-DAG: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: scf.for %{{.*}} = %c0 to %c144 step %c16
// CHECK: vector.transfer_read {{.*}} : tensor<1x16x16xf32>, vector<1x16x16xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x16xf32>, vector<1x16xf32>
// CHECK: arith.mulf {{.*}} : vector<1x16x16xf32>
// CHECK: vector.shuffle
// CHECK: vector.transfer_write {{.*}} : vector<1x16x16xf32>, tensor<1x16x16xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func private @bn_fold_pack(%s: tensor<32xf32>, %m: tensor<32xf32>, %b: tensor<32xf32>, %w: tensor<32x16x3x3xf32>,
                                %o1: tensor<32xf32>, %o2: tensor<2x144x16xf32>) -> (tensor<32xf32>, tensor<2x144x16xf32>)
    attributes {relax.kernel, relax.kernel_kind = "injective"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%s, %m, %b : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) outs(%o1 : tensor<32xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %out: f32):
    %1 = arith.mulf %x, %y : f32
    %2 = arith.subf %z, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<32xf32>
  %cst = arith.constant dense<[32, 1, 1, 1]> : tensor<4xindex>
  %s4 = tensor.reshape %s(%cst) : (tensor<32xf32>, tensor<4xindex>) -> tensor<32x1x1x1xf32>
  %e = tensor.empty() : tensor<32x16x3x3xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %s4 : tensor<32x16x3x3xf32>, tensor<32x1x1x1xf32>) outs(%e : tensor<32x16x3x3xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %4 = arith.mulf %x, %y : f32
    linalg.yield %4 : f32
  } -> tensor<32x16x3x3xf32>
  %c = tensor.collapse_shape %3 [[0], [1, 2, 3]] : tensor<32x16x3x3xf32> into tensor<32x144xf32>
  %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0 * 16 + d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2, d1)>],
                       iterator_types = ["parallel", "parallel", "parallel"]} ins(%c : tensor<32x144xf32>) outs(%o2 : tensor<2x144x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  } -> tensor<2x144x16xf32>
  return %0, %5 : tensor<32xf32>, tensor<2x144x16xf32>
}
