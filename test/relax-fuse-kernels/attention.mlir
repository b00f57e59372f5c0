// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/attention.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// Attention scores: q @ k^T takes scale and mask add; the transpose (injective) does not fuse into a contraction, softmax (a reduction) does not join an output-fusable group.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/attention.mlir.

// CHECK-LABEL: func.func @attention_scores(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg1) {callee = @transpose, 
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0, %0, %arg2) {callee = @fused_mm_qk_scale_add_mask, 
// CHECK-NEXT: %2 = "relax.call_tir"(%1) {callee = @softmax, 
// CHECK-NEXT: return %2 : tensor<?x?xf32, #relax.shape<["n", "m"]>>

// CHECK-LABEL: func.func private @fused_mm_qk_scale_add_mask(
// CHECK-SAME: tensor<?x?xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "mm_qk_scale_add_mask"} {
// CHECK-NEXT: %cst = arith.constant 1.250000e-01 : f32
// CHECK-NEXT: %cst_0 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %c1 = arith.constant 1 : index
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
// CHECK-NEXT: %dim_1 = tensor.dim %arg1, %c1 : tensor<64x?xf32>
// CHECK-NEXT: %0 = tensor.empty(%dim, %dim_1) : tensor<?x?xf32>
// CHECK-NEXT: %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT: %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<64x?xf32>) outs(%1 : tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT: %3 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%arg3 : tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_2: f32, %out: f32):
// CHECK-NEXT: %4 = arith.mulf %in, %cst : f32
// CHECK-NEXT: %5 = arith.addf %4, %in_2 : f32
// CHECK-NEXT: linalg.yield %5 : f32
// CHECK-NEXT: } -> tensor<?x?xf32>
// CHECK-NEXT: return %3 : tensor<?x?xf32>
// CHECK-NEXT: }
