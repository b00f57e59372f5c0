// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-fold-tensor-copies)' | FileCheck %s
// Reshapes whose dims past the first are static become collapse/expand views; a copy into a
// fresh tensor.empty is dropped unless the kernel returns it; a reshape with a dynamic
// trailing dim and a copy into an output argument stay.

// CHECK-LABEL: func.func private @rope_split
// CHECK: %[[S:.*]] = tensor.extract_slice %arg0[0, 0] [%{{.*}}, 64] [1, 1]
// CHECK-NOT: linalg.copy
// CHECK: %[[E:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 4, 16] : tensor<?x64xf32> into tensor<?x4x16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[E]] : tensor<?x4x16xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<?x4x16xf32> into tensor<?x64xf32>
// CHECK: linalg.copy ins(%[[C]] : tensor<?x64xf32>) outs(%arg1 : tensor<?x64xf32>)
func.func private @rope_split(%arg0: tensor<?x128xf32>, %arg1: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x128xf32>
  %0 = tensor.empty(%dim) : tensor<?x64xf32>
  %s = tensor.extract_slice %arg0[0, 0] [%dim, 64] [1, 1] : tensor<?x128xf32> to tensor<?x64xf32>
  %1 = linalg.copy ins(%s : tensor<?x64xf32>) outs(%0 : tensor<?x64xf32>) -> tensor<?x64xf32>
  %shape = tensor.from_elements %dim, %c4, %c16 : tensor<3xindex>
  %r = tensor.reshape %1(%shape) : (tensor<?x64xf32>, tensor<3xindex>) -> tensor<?x4x16xf32>
  %2 = tensor.empty(%dim) : tensor<?x4x16xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<?x4x16xf32>) outs(%2 : tensor<?x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<?x4x16xf32>
  %shape2 = tensor.from_elements %dim, %c64 : tensor<2xindex>
  %r2 = tensor.reshape %3(%shape2) : (tensor<?x4x16xf32>, tensor<2xindex>) -> tensor<?x64xf32>
  %4 = linalg.copy ins(%r2 : tensor<?x64xf32>) outs(%arg1 : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %4 : tensor<?x64xf32>
}

// CHECK-LABEL: func.func private @kept
// CHECK: tensor.reshape
// CHECK: linalg.copy ins(%{{.*}}) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK-NEXT: return
func.func private @kept(%arg0: tensor<?x?xf32>, %n: index, %m: index) -> tensor<?x?xf32> attributes {relax.kernel} {
  %shape = tensor.from_elements %m, %n : tensor<2xindex>
  %r = tensor.reshape %arg0(%shape) : (tensor<?x?xf32>, tensor<2xindex>) -> tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %c = linalg.copy ins(%r : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}
