// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/rmsnorm.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// RMSNorm written out: the square joins the row sum as its prologue; the sum ends its group (a reduction takes no epilogue); rsqrt(mean + eps), x * r and * weight form an elementwise/broadcast chain.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/rmsnorm.mlir.

// CHECK-LABEL: func.func @rms_norm(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @fused_mul_sum_rows, 
// CHECK-NEXT: %1 = "relax.call_tir"(%0, %arg0, %arg1) {callee = @fused_rsqrt_mean_mul_row_mul_col, 
// CHECK-NEXT: return %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>

// CHECK-LABEL: func.func private @fused_mul_sum_rows(
// CHECK-SAME: tensor<?xf32> attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "mul_sum_rows"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0 = linalg.fill ins(%cst : f32) outs(%arg1 : tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT: %1 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>) outs(%0 : tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: %2 = arith.mulf %in, %in : f32
// CHECK-NEXT: %3 = arith.addf %2, %out : f32
// CHECK-NEXT: linalg.yield %3 : f32
// CHECK-NEXT: } -> tensor<?xf32>
// CHECK-NEXT: return %1 : tensor<?xf32>
// CHECK-NEXT: }

// CHECK-LABEL: func.func private @fused_rsqrt_mean_mul_row_mul_col(
// CHECK-SAME: tensor<?x64xf32> attributes {relax.kernel, relax.kernel_kind = "broadcast", relax.kernel_op = "rsqrt_mean_mul_row_mul_col"} {
// CHECK-NEXT: %cst = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT: %cst_0 = arith.constant 1.562500e-02 : f32
// CHECK-NEXT: %0 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%arg1, %arg0, %arg2 : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>) outs(%arg3 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_1: f32, %in_2: f32, %out: f32):
// CHECK-NEXT: %1 = arith.mulf %in_1, %cst_0 : f32
// CHECK-NEXT: %2 = arith.addf %1, %cst : f32
// CHECK-NEXT: %3 = math.rsqrt %2 : f32
// CHECK-NEXT: %4 = arith.mulf %in, %3 : f32
// CHECK-NEXT: %5 = arith.mulf %4, %in_2 : f32
// CHECK-NEXT: linalg.yield %5 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: return %0 : tensor<?x64xf32>
// CHECK-NEXT: }
