// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// RMSNorm written out: the square joins the row sum as its prologue; the sum ends its group (a reduction takes no epilogue); rsqrt(mean + eps), x * r and * weight form an elementwise/broadcast chain.

// CHECK-LABEL: func.func @rms_norm(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg0) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %1 = "relax.call_tir"(%0) {callee = @sum_rows, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1) {callee = @rsqrt_mean, {{[^}]*}}relax.fusion_group = 1 : i64,
// CHECK-NEXT: %3 = "relax.call_tir"(%arg0, %2) {callee = @mul_row, {{[^}]*}}relax.fusion_group = 1 : i64,
// CHECK-NEXT: %4 = "relax.call_tir"(%3, %arg1) {callee = @mul_col, {{[^}]*}}relax.fusion_group = 1 : i64,
// CHECK-NEXT: return %4 : tensor<?x64xf32, #relax.shape<["n", 64]>>

func.func @rms_norm(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %x) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0) {callee = @sum_rows, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %2 = "relax.call_tir"(%1) {callee = @rsqrt_mean, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %3 = "relax.call_tir"(%x, %2) {callee = @mul_row, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.call_tir"(%3, %w) {callee = @mul_col, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %4 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
