// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// A group value used after the group (returned here) stays an output of the group: the fused call has two results.

// CHECK-LABEL: func.func @multi_output(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1) {callee = @bias_add, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %1 = "relax.call_tir"(%0) {callee = @relu, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1, %arg0) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: return %1, %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>

// %1 is used after the group (returned): it stays an output of the group.
func.func @multi_output(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %b: tensor<64xf32>) -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %b) {callee = @bias_add, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.call_tir"(%1, %x) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %1, %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>
}
