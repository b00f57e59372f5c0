// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// Rotary embedding: slices, neg, concat (injective) fuse into their elementwise consumers: one group.

// CHECK-LABEL: func.func @rotary(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @slice_lo, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0) {callee = @slice_hi, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1) {callee = @neg, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %3 = "relax.call_tir"(%2, %0) {callee = @concat, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %4 = "relax.call_tir"(%arg0, %arg1) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %5 = "relax.call_tir"(%3, %arg2) {callee = @mul, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %6 = "relax.call_tir"(%4, %5) {callee = @add, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: return %6 : tensor<?x64xf32, #relax.shape<["n", 64]>>

func.func @rotary(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %cos: tensor<?x64xf32, #relax.shape<["n", 64]>>, %sin: tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @slice_lo, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
  %1 = "relax.call_tir"(%x) {callee = @slice_hi, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
  %2 = "relax.call_tir"(%1) {callee = @neg, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x32xf32, #relax.shape<["n", 32]>>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
  %3 = "relax.call_tir"(%2, %0) {callee = @concat, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x32xf32, #relax.shape<["n", 32]>>, tensor<?x32xf32, #relax.shape<["n", 32]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.call_tir"(%x, %cos) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %5 = "relax.call_tir"(%3, %sin) {callee = @mul, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %6 = "relax.call_tir"(%4, %5) {callee = @add, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %6 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
