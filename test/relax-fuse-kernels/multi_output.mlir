// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/multi_output.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// A group value used after the group (returned here) stays an output of the group: the fused call has two results.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/multi_output.mlir.

// CHECK-LABEL: func.func @multi_output(
// CHECK-NEXT: %0:2 = "relax.call_tir"(%arg0, %arg1) {callee = @fused_bias_add_relu_mul, 
// CHECK-NEXT: return %0#0, %0#1 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>

// CHECK-LABEL: func.func private @fused_bias_add_relu_mul(
// CHECK-SAME: (tensor<?x64xf32>, tensor<?x64xf32>) attributes {relax.kernel, relax.kernel_kind = "broadcast", relax.kernel_op = "bias_add_relu_mul"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<64xf32>) outs(%arg2 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %2 = arith.addf %in, %in_0 : f32
// CHECK-NEXT: %3 = arith.maximumf %2, %cst : f32
// CHECK-NEXT: linalg.yield %3 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: %1 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%0, %arg0 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%arg3 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %2 = arith.mulf %in, %in_0 : f32
// CHECK-NEXT: linalg.yield %2 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: return %0, %1 : tensor<?x64xf32>, tensor<?x64xf32>
// CHECK-NEXT: }
