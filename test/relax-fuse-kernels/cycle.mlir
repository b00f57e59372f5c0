// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/cycle.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// No cycles between groups: relu -> mm -> mul and relu -> mul; relu cannot join mul's group (mm sits between them), mm takes mul as its epilogue.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/cycle.mlir.

// CHECK-LABEL: func.func @no_cycle(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @relu, 
// CHECK-NEXT: %1 = "relax.call_tir"(%0, %arg1) {callee = @fused_mm_mul, 
// CHECK-NEXT: return %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>

// CHECK-LABEL: func.func private @fused_mm_mul(
// CHECK-SAME: tensor<?x64xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "mm_mul"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
// CHECK-NEXT: %0 = tensor.empty(%dim) : tensor<?x64xf32>
// CHECK-NEXT: %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %3 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%arg2 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %4 = arith.mulf %in, %in_0 : f32
// CHECK-NEXT: linalg.yield %4 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: return %3 : tensor<?x64xf32>
// CHECK-NEXT: }
