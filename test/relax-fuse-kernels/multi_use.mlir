// RUN: cat %S/../Inputs/multi_use_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels{multi-use=true})' | FileCheck %s
// RUN: cat %S/../Inputs/multi_use_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s --check-prefix=OFF

// multi-use=true (the GPU pipelines): a consumer merges into a producer whose result is used
// elsewhere too: ONE generic writes both results (the GPU's naive route: one launch, not two).
// Without it upstream elementwise fusion keeps both loop nests (the producer has two uses).

// CHECK-LABEL: func.func private @fused_rot_to_f16(
// CHECK-NEXT: %c32 = arith.constant 32 : index
// CHECK-NEXT: %c64 = arith.constant 64 : index
// CHECK-NEXT: %0:2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<?x64xf32>) outs(%arg1, %arg2 : tensor<?x64xf32>, tensor<?x64xf16>) {
// CHECK-NEXT: ^bb0(%in: f32, %out: f32, %out_0: f16):
// CHECK-NEXT: %1 = linalg.index 0 : index
// CHECK-NEXT: %2 = linalg.index 1 : index
// CHECK-NEXT: %3 = arith.addi %2, %c32 : index
// CHECK-NEXT: %4 = arith.remui %3, %c64 : index
// CHECK-NEXT: %extracted = tensor.extract %arg0[%1, %4] : tensor<?x64xf32>
// CHECK-NEXT: %5 = arith.addf %in, %extracted : f32
// CHECK-NEXT: %6 = arith.truncf %5 : f32 to f16
// CHECK-NEXT: linalg.yield %5, %6 : f32, f16
// CHECK-NEXT: } -> (tensor<?x64xf32>, tensor<?x64xf16>)
// CHECK-NEXT: return %0#0, %0#1 : tensor<?x64xf32>, tensor<?x64xf16>

// A copy producer counts as its generic (identity maps, yield in).
// CHECK-LABEL: func.func private @fused_copy_to_f16(
// CHECK-NEXT: %0:2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<?x64xf32>) outs(%arg1, %arg2 : tensor<?x64xf32>, tensor<?x64xf16>) {
// CHECK-NEXT: ^bb0(%in: f32, %out: f32, %out_0: f16):
// CHECK-NEXT: %1 = arith.truncf %in : f32 to f16
// CHECK-NEXT: linalg.yield %in, %1 : f32, f16
// CHECK-NEXT: } -> (tensor<?x64xf32>, tensor<?x64xf16>)
// CHECK-NEXT: return %0#0, %0#1 : tensor<?x64xf32>, tensor<?x64xf16>

// The rotation's gather reads the copy at other points: not merged.
// CHECK-LABEL: func.func private @fused_copy_rot(
// CHECK: %0 = linalg.copy ins(%arg0 : tensor<?x64xf32>) outs(%arg1 : tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %1 = linalg.generic {{.*}} ins(%0 : tensor<?x64xf32>) outs(%arg2 : tensor<?x64xf32>) {
// CHECK: tensor.extract %0[
// CHECK: return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>

// OFF-LABEL: func.func private @fused_rot_to_f16(
// OFF: %0 = linalg.generic {{.*}} outs(%arg1 : tensor<?x64xf32>) {
// OFF: %1 = linalg.generic {{.*}} ins(%0 : tensor<?x64xf32>) outs(%arg2 : tensor<?x64xf16>) {
// OFF: return %0, %1 : tensor<?x64xf32>, tensor<?x64xf16>
// OFF-LABEL: func.func private @fused_copy_to_f16(
// OFF: %0 = linalg.copy ins(%arg0 : tensor<?x64xf32>) outs(%arg1 : tensor<?x64xf32>) -> tensor<?x64xf32>
// OFF-NEXT: %1 = linalg.generic {{.*}} ins(%0 : tensor<?x64xf32>) outs(%arg2 : tensor<?x64xf16>) {
// OFF: return %0, %1 : tensor<?x64xf32>, tensor<?x64xf16>

// The new keys: rotated, returned in f32 (for the attention) and converted to f16 (for the cache).
func.func @rope_cast(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>) -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf16, #relax.shape<["n", 64]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @rot, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0) {callee = @to_f16, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf16, #relax.shape<["n", 64]>>
  return %0, %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf16, #relax.shape<["n", 64]>>
}

// The new values: copied (a head split's reshape), returned in f32 and in f16.
func.func @copy_cast(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>) -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf16, #relax.shape<["n", 64]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @copy, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0) {callee = @to_f16, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf16, #relax.shape<["n", 64]>>
  return %0, %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf16, #relax.shape<["n", 64]>>
}

// The rotation reads the copy at other points too (its gather): not merged.
func.func @copy_rot(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>) -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @copy, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0) {callee = @rot, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %0, %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>
}
