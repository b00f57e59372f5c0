// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// Attention scores: q @ k^T takes scale and mask add; the transpose (injective) does not fuse into a contraction, softmax (a reduction) does not join an output-fusable group.

// CHECK-LABEL: func.func @attention_scores(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg1) {callee = @transpose, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0, %0) {callee = @mm_qk, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1) {callee = @scale, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %3 = "relax.call_tir"(%2, %arg2) {callee = @add_mask, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %4 = "relax.call_tir"(%3) {callee = @softmax, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: return %4 : tensor<?x?xf32, #relax.shape<["n", "m"]>>

func.func @attention_scores(%q: tensor<?x64xf32, #relax.shape<["n", 64]>>, %k: tensor<?x64xf32, #relax.shape<["m", 64]>>, %mask: tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%k) {callee = @transpose, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["m", 64]>>) -> tensor<64x?xf32, #relax.shape<[64, "m"]>>
  %1 = "relax.call_tir"(%q, %0) {callee = @mm_qk, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x?xf32, #relax.shape<[64, "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %2 = "relax.call_tir"(%1) {callee = @scale, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %3 = "relax.call_tir"(%2, %mask) {callee = @add_mask, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %4 = "relax.call_tir"(%3) {callee = @softmax, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  return %4 : tensor<?x?xf32, #relax.shape<["n", "m"]>>
}
