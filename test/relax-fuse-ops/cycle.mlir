// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// No cycles between groups: relu -> mm -> mul and relu -> mul; relu cannot join mul's group (mm sits between them), mm takes mul as its epilogue.

// CHECK-LABEL: func.func @no_cycle(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @relu, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: %1 = "relax.call_tir"(%0, %arg1) {callee = @mm, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%0, %1) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>

// %0 -> %2 alone would fuse, but once %1 (a contraction) and %2 form a group, %0 -> %1
// -> %2 is a path between them: %0 stays alone (no group may depend on itself).
func.func @no_cycle(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0, %w) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.call_tir"(%0, %1) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
