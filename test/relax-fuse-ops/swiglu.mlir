// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// SiLU-gated MLP: the gate matmul takes sigmoid, x * sigmoid(x) and * up as its epilogue; the up projection (another contraction) and the down projection stay alone.

// CHECK-LABEL: func.func @swiglu(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1) {callee = @mm, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0, %arg2) {callee = @mm, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: %2 = "relax.call_tir"(%0) {callee = @sigmoid, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %3 = "relax.call_tir"(%0, %2) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %4 = "relax.call_tir"(%3, %1) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %5 = "relax.call_tir"(%4, %arg3) {callee = @mm, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: return %5 : tensor<?x64xf32, #relax.shape<["n", 64]>>

func.func @swiglu(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %wg: tensor<64x64xf32>, %wu: tensor<64x64xf32>, %wd: tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %wg) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%x, %wu) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.call_tir"(%0) {callee = @sigmoid, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %3 = "relax.call_tir"(%0, %2) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.call_tir"(%3, %1) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %5 = "relax.call_tir"(%4, %wd) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %5 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
