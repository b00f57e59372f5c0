// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library)' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library)' | mlir-opt --split-input-file --irdl-file=%irdl --verify-each > /dev/null

// 2-D matmul with symbolic M, N, K becomes a call of the BLAS shim; the module asks for
// the runtime library that defines it.

// CHECK: module attributes {relax.libraries = ["relax_blas"]}
// CHECK-LABEL: func.func @mm(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32", operandSegmentSizes = {{.*}}} : (tensor<?x?xf32, #relax.shape<["m", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
// CHECK-NEXT: return %0
func.func @mm(%a: tensor<?x?xf32, #relax.shape<["m", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["m", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
  return %0 : tensor<?x?xf32, #relax.shape<["m", "n"]>>
}

// -----

// Batched: equal batch (33), broadcast batch (33 with batch 1), 3-D x 2-D (32), 2-D x 3-D (23), f64.

// CHECK-LABEL: func.func @batched(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_33_f32"
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
// CHECK-NEXT: %1 = "relax.call_dps_library"(%arg0, %arg2) {callee = "relax_blas_matmul_33_f32"
// CHECK-SAME: -> tensor<?x?x64xf32, #relax.shape<["b", "m", 64]>>
// CHECK-NEXT: %2 = "relax.call_dps_library"(%arg0, %arg3) {callee = "relax_blas_matmul_32_f32"
// CHECK-SAME: -> tensor<?x?x32xf32, #relax.shape<["b", "m", 32]>>
// CHECK-NEXT: %3 = "relax.call_dps_library"(%arg4, %arg1) {callee = "relax_blas_matmul_23_f32"
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
// CHECK-NEXT: %4 = "relax.call_dps_library"(%arg5, %arg5) {callee = "relax_blas_matmul_22_f64"
// CHECK-NEXT: return
func.func @batched(%a: tensor<?x?x?xf32, #relax.shape<["b", "m", "k"]>>, %b: tensor<?x?x?xf32, #relax.shape<["b", "k", "n"]>>,
                   %w1: tensor<1x?x64xf32, #relax.shape<[1, "k", 64]>>, %w: tensor<?x32xf32, #relax.shape<["k", 32]>>,
                   %a2: tensor<?x?xf32, #relax.shape<["m", "k"]>>, %d: tensor<?x?xf64, #relax.shape<["n", "n"]>>)
    -> (tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>, tensor<?x?x64xf32, #relax.shape<["b", "m", 64]>>, tensor<?x?x32xf32, #relax.shape<["b", "m", 32]>>, tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>, tensor<?x?xf64, #relax.shape<["n", "n"]>>) attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?x?xf32, #relax.shape<["b", "m", "k"]>>, tensor<?x?x?xf32, #relax.shape<["b", "k", "n"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
  %1 = "relax.matmul"(%a, %w1) : (tensor<?x?x?xf32, #relax.shape<["b", "m", "k"]>>, tensor<1x?x64xf32, #relax.shape<[1, "k", 64]>>) -> tensor<?x?x64xf32, #relax.shape<["b", "m", 64]>>
  %2 = "relax.matmul"(%a, %w) : (tensor<?x?x?xf32, #relax.shape<["b", "m", "k"]>>, tensor<?x32xf32, #relax.shape<["k", 32]>>) -> tensor<?x?x32xf32, #relax.shape<["b", "m", 32]>>
  %3 = "relax.matmul"(%a2, %b) : (tensor<?x?xf32, #relax.shape<["m", "k"]>>, tensor<?x?x?xf32, #relax.shape<["b", "k", "n"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>
  %4 = "relax.matmul"(%d, %d) : (tensor<?x?xf64, #relax.shape<["n", "n"]>>, tensor<?x?xf64, #relax.shape<["n", "n"]>>) -> tensor<?x?xf64, #relax.shape<["n", "n"]>>
  return %0, %1, %2, %3, %4 : tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>, tensor<?x?x64xf32, #relax.shape<["b", "m", 64]>>, tensor<?x?x32xf32, #relax.shape<["b", "m", 32]>>, tensor<?x?x?xf32, #relax.shape<["b", "m", "n"]>>, tensor<?x?xf64, #relax.shape<["n", "n"]>>
}
