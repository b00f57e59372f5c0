// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/swiglu.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// SiLU-gated MLP: the gate matmul takes sigmoid, x * sigmoid(x) and * up as its epilogue; the up projection (another contraction) and the down projection stay alone.
// The graph function and the fused kernel(s); the input is ../relax-fuse-ops/swiglu.mlir.

// CHECK-LABEL: func.func @swiglu(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg2) {callee = @mm, 
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0, %arg1, %0) {callee = @fused_mm_sigmoid_mul_mul, 
// CHECK-NEXT: %2 = "relax.call_tir"(%1, %arg3) {callee = @mm, 
// CHECK-NEXT: return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>

// CHECK-LABEL: func.func private @fused_mm_sigmoid_mul_mul(
// CHECK-SAME: tensor<?x64xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "mm_sigmoid_mul_mul"} {
// CHECK-NEXT: %cst = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %cst_0 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
// CHECK-NEXT: %0 = tensor.empty(%dim) : tensor<?x64xf32>
// CHECK-NEXT: %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<?x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %3 = linalg.generic {indexing_maps = [{{#map[0-9]*}}, {{#map[0-9]*}}, {{#map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%arg3 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_1: f32, %out: f32):
// CHECK-NEXT: %4 = arith.negf %in : f32
// CHECK-NEXT: %5 = math.exp %4 : f32
// CHECK-NEXT: %6 = arith.addf %5, %cst : f32
// CHECK-NEXT: %7 = arith.divf %cst, %6 : f32
// CHECK-NEXT: %8 = arith.mulf %in, %7 : f32
// CHECK-NEXT: %9 = arith.mulf %8, %in_1 : f32
// CHECK-NEXT: linalg.yield %9 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: return %3 : tensor<?x64xf32>
// CHECK-NEXT: }
