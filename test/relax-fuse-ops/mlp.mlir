// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// MLP layer: matmul + bias add + relu is one group (a contraction takes its elementwise epilogue).

// CHECK-LABEL: func.func @mlp(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1) {callee = @mm, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %1 = "relax.call_tir"(%0, %arg2) {callee = @bias_add, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1) {callee = @relu, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>

func.func @mlp(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %w) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0, %b) {callee = @bias_add, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.call_tir"(%1) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
