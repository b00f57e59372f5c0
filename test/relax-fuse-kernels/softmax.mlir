// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/softmax.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// Softmax written out: max_rows stays alone; exp(x - max) joins sum_rows as its prologue and stays an output of that group (div_row uses it too); div_row cannot join a reduction's group.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/softmax.mlir.

// CHECK-LABEL: func.func @softmax_rows(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @max_rows, 
// CHECK-NEXT: %1:2 = "relax.call_tir"(%arg0, %0) {callee = @fused_sub_exp_row_sum_rows, 
// CHECK-NEXT: %2 = "relax.call_tir"(%1#0, %1#1) {callee = @div_row, 
// CHECK-NEXT: return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>

// CHECK-LABEL: func.func private @fused_sub_exp_row_sum_rows(
// CHECK-SAME: (tensor<?x64xf32>, tensor<?xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "sub_exp_row_sum_rows"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<?xf32>) outs(%arg2 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %3 = arith.subf %in, %in_0 : f32
// CHECK-NEXT: %4 = math.exp %3 : f32
// CHECK-NEXT: linalg.yield %4 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: %1 = linalg.fill ins(%cst : f32) outs(%arg3 : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT: %2 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<?x64xf32>) outs(%1 : tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: %3 = arith.addf %in, %out : f32
// CHECK-NEXT: linalg.yield %3 : f32
// CHECK-NEXT: } -> tensor<?xf32>
// CHECK-NEXT: return %0, %2 : tensor<?x64xf32>, tensor<?xf32>
// CHECK-NEXT: }
