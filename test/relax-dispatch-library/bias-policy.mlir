// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library)' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{min-flops=0 patterns=blas_matmul})' | FileCheck %s --check-prefix=ALL

// MLP layer: matmul + bias add is one library call (bias on either side); relu stays a relax op (a generated kernel later).

// CHECK-LABEL: func.func @mlp(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1, %arg2) {callee = "relax_blas_matmul_bias_22_f32"
// CHECK-SAME: -> tensor<?x256xf32, #relax.shape<["n", 256]>>
// CHECK-NEXT: %1 = "relax.relu"(%0)
// CHECK-NEXT: %2 = "relax.call_dps_library"(%1, %arg3, %arg4) {callee = "relax_blas_matmul_bias_22_f32"
// CHECK-NEXT: return %2
// ALL-LABEL: func.func @mlp(
// ALL-NEXT: "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32"
// ALL-NEXT: "relax.add"
func.func @mlp(%x: tensor<?x128xf32, #relax.shape<["n", 128]>>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>, %w2: tensor<256x64xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w1) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128x256xf32>) -> tensor<?x256xf32, #relax.shape<["n", 256]>>
  %1 = "relax.add"(%0, %b1) : (tensor<?x256xf32, #relax.shape<["n", 256]>>, tensor<256xf32>) -> tensor<?x256xf32, #relax.shape<["n", 256]>>
  %2 = "relax.relu"(%1) : (tensor<?x256xf32, #relax.shape<["n", 256]>>) -> tensor<?x256xf32, #relax.shape<["n", 256]>>
  %3 = "relax.matmul"(%2, %w2) : (tensor<?x256xf32, #relax.shape<["n", 256]>>, tensor<256x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.add"(%b2, %3) : (tensor<64xf32>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %4 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}

// -----

// Not a bias: a 2-D addend, or a matmul result used twice: the matmul alone is dispatched.

// CHECK-LABEL: func.func @not_bias(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: %1 = "relax.add"(%0, %arg2)
// CHECK-NEXT: %2 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: %3 = "relax.add"(%2, %arg3)
// CHECK-NEXT: %4 = "relax.multiply"(%3, %2)
func.func @not_bias(%x: tensor<?x128xf32, #relax.shape<["n", 128]>>, %w: tensor<128x128xf32>, %r: tensor<?x128xf32, #relax.shape<["n", 128]>>, %b: tensor<128xf32>) -> (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<?x128xf32, #relax.shape<["n", 128]>>) attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128x128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %1 = "relax.add"(%0, %r) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<?x128xf32, #relax.shape<["n", 128]>>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %2 = "relax.matmul"(%x, %w) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128x128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %3 = "relax.add"(%2, %b) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %4 = "relax.multiply"(%3, %2) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<?x128xf32, #relax.shape<["n", 128]>>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  return %1, %4 : tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<?x128xf32, #relax.shape<["n", 128]>>
}

// -----

// Policy (min-flops=4096): a static 8x8x8 matmul (512) and one whose upper bounds keep it
// small (n <= 4: at most 4*16*16 = 1024) stay relax ops; a big static one, and integer or
// 1-D operands never match. min-flops=0 dispatches every f32 match.

// CHECK-NOT: relax.libraries
// CHECK-LABEL: func.func @policy(
// CHECK-NEXT: %0 = "relax.matmul"(%arg0, %arg0)
// CHECK-NEXT: %1 = "relax.matmul"(%arg1, %arg2)
// CHECK-NEXT: %2 = "relax.matmul"(%arg3, %arg3)
// CHECK-NEXT: %3 = "relax.matmul"(%arg2, %arg4)
// ALL-LABEL: func.func @policy(
// ALL-NEXT: "relax.call_dps_library"(%arg0, %arg0) {callee = "relax_blas_matmul_22_f32"
// ALL-NEXT: "relax.call_dps_library"(%arg1, %arg2) {callee = "relax_blas_matmul_22_f32"
// ALL-NEXT: "relax.matmul"(%arg3, %arg3)
// ALL-NEXT: "relax.matmul"(%arg2, %arg4)
func.func @policy(%s: tensor<8x8xf32>, %x: tensor<?x16xf32, #relax.shape<["n", 16]>>, %w: tensor<16x16xf32>, %i: tensor<64x64xi32>, %v: tensor<16xf32>)
    -> (tensor<8x8xf32>, tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<64x64xi32>, tensor<16xf32>) attributes {relax.function, relax.upper_bounds = {n = 4 : i64}} {
  %0 = "relax.matmul"(%s, %s) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = "relax.matmul"(%x, %w) : (tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<16x16xf32>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %2 = "relax.matmul"(%i, %i) : (tensor<64x64xi32>, tensor<64x64xi32>) -> tensor<64x64xi32>
  %3 = "relax.matmul"(%w, %v) : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %0, %1, %2, %3 : tensor<8x8xf32>, tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<64x64xi32>, tensor<16xf32>
}
