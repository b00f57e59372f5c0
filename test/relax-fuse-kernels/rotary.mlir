// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/rotary.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// Rotary embedding: slices, neg, concat (injective) fuse into their elementwise consumers: one group.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/rotary.mlir.

// CHECK-LABEL: func.func @rotary(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1, %arg2) {callee = @fused_slice_lo_slice_hi_neg_concat_mul_mul_add, 
// CHECK-NEXT: return %0 : tensor<?x64xf32, #relax.shape<["n", 64]>>

// CHECK-LABEL: func.func private @fused_slice_lo_slice_hi_neg_concat_mul_mul_add(
// CHECK-SAME: tensor<?x64xf32> attributes {relax.kernel, relax.kernel_kind = "injective", relax.kernel_op = "slice_lo_slice_hi_neg_concat_mul_mul_add"} {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
// CHECK-NEXT: %0 = tensor.empty(%dim) : tensor<?x32xf32>
// CHECK-NEXT: %extracted_slice = tensor.extract_slice %arg0[0, 0] [%dim, 32] [1, 1] : tensor<?x64xf32> to tensor<?x32xf32>
// CHECK-NEXT: %1 = linalg.copy ins(%extracted_slice : tensor<?x32xf32>) outs(%0 : tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: %extracted_slice_0 = tensor.extract_slice %arg0[0, 32] [%dim, 32] [1, 1] : tensor<?x64xf32> to tensor<?x32xf32>
// CHECK-NEXT: %2 = linalg.copy ins(%extracted_slice_0 : tensor<?x32xf32>) outs(%0 : tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK-NEXT: %3 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<?x32xf32>) outs(%0 : tensor<?x32xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: %6 = arith.negf %in : f32
// CHECK-NEXT: linalg.yield %6 : f32
// CHECK-NEXT: } -> tensor<?x32xf32>
// CHECK-NEXT: %4 = tensor.empty(%dim) : tensor<?x64xf32>
// CHECK-NEXT: %inserted_slice = tensor.insert_slice %3 into %4[0, 0] [%dim, 32] [1, 1] : tensor<?x32xf32> into tensor<?x64xf32>
// CHECK-NEXT: %inserted_slice_1 = tensor.insert_slice %1 into %inserted_slice[0, 32] [%dim, 32] [1, 1] : tensor<?x32xf32> into tensor<?x64xf32>
// CHECK-NEXT: %5 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1, %inserted_slice_1, %arg2 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs(%arg3 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_2: f32, %in_3: f32, %in_4: f32, %out: f32):
// CHECK-NEXT: %6 = arith.mulf %in_3, %in_4 : f32
// CHECK-NEXT: %7 = arith.mulf %in, %in_2 : f32
// CHECK-NEXT: %8 = arith.addf %7, %6 : f32
// CHECK-NEXT: linalg.yield %8 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: return %5 : tensor<?x64xf32>
// CHECK-NEXT: }
