// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// Softmax written out: max_rows stays alone; exp(x - max) joins sum_rows as its prologue and stays an output of that group (div_row uses it too); div_row cannot join a reduction's group.

// CHECK-LABEL: func.func @softmax_rows(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @max_rows, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0, %0) {callee = @sub_exp_row, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1) {callee = @sum_rows, {{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %3 = "relax.call_tir"(%1, %2) {callee = @div_row, operandSegmentSizes = {{[^}]*}}, resultSegmentSizes
// CHECK-NEXT: return %3 : tensor<?x64xf32, #relax.shape<["n", 64]>>

func.func @softmax_rows(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @max_rows, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %1 = "relax.call_tir"(%x, %0) {callee = @sub_exp_row, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.call_tir"(%1) {callee = @sum_rows, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %3 = "relax.call_tir"(%1, %2) {callee = @div_row, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %3 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
