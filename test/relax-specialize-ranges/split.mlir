// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=3})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=0})' | FileCheck %s --check-prefix=NOGEMV

// A kernel marked relax.dispatch_split (relax-dispatch-library, policy=measured): the M of
// its generated ranges ([4, 64] here) call the generated variants of their range; every
// other M calls the library variant @k__lib (kind opaque: no schedule; relax.library_variant:
// relax-library-variants makes its matmul the BLAS call once bufferized). M in [0, 3] has no
// generated range here (M = 0 joins its neighbour): the GEMV variant is not made.
// CHECK-LABEL: func.func private @mm__lib(%arg0: tensor<?x512xf32>, %arg1: tensor<512x2048xf32>, %arg2: tensor<?x2048xf32>) -> tensor<?x2048xf32>
// CHECK-SAME: relax.kernel_kind = "opaque"
// CHECK-SAME: relax.library_variant = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}4, 64]], library = "relax_blas"}
// CHECK-SAME: relax.range = {m_min = 0 : i64}
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @mm__m4_16(
// CHECK-SAME: relax.range = {m_max = 16 : i64, m_min = 4 : i64}
// CHECK-NOT: relax.dispatch_split
// CHECK-LABEL: func.func private @mm__m17_39(
// CHECK-SAME: relax.range = {m_max = 39 : i64, m_min = 17 : i64}
// CHECK-NOT: relax.dispatch_split
// CHECK-LABEL: func.func private @mm__m40(
// CHECK-SAME: relax.range = {m_min = 40 : i64}
// CHECK-NOT: relax.dispatch_split
// CHECK-NOT: func.func private @mm__m0_3
// CHECK-LABEL: func.func private @mm(
// CHECK-SAME: relax.range_dispatch
// CHECK-NOT: relax.dispatch_split
// CHECK: %[[M:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x512xf32>
// CHECK-NEXT: %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[FEW:.*]] = arith.cmpi ule, %[[M]], %[[C3]] : index
// CHECK-NEXT: scf.if %[[FEW]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: func.call @mm__lib(%arg0, %arg1, %arg2)
// CHECK: } else {
// CHECK-NEXT: %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[SMALL:.*]] = arith.cmpi ule, %[[M]], %[[C16]] : index
// CHECK-NEXT: scf.if %[[SMALL]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: func.call @mm__m4_16(%arg0, %arg1, %arg2)
// CHECK: } else {
// CHECK-NEXT: %[[C39:.*]] = arith.constant 39 : index
// CHECK-NEXT: %[[MID:.*]] = arith.cmpi ule, %[[M]], %[[C39]] : index
// CHECK-NEXT: scf.if %[[MID]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: func.call @mm__m17_39(%arg0, %arg1, %arg2)
// CHECK: } else {
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[BIG:.*]] = arith.cmpi ule, %[[M]], %[[C64]] : index
// CHECK-NEXT: scf.if %[[BIG]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: func.call @mm__m40(%arg0, %arg1, %arg2)
// CHECK: } else {
// CHECK-NEXT: func.call @mm__lib(%arg0, %arg1, %arg2)

// With gemv-max=0 (no schedule variants) the split still happens: one generated variant.
// NOGEMV-LABEL: func.func private @mm__lib(
// NOGEMV-LABEL: func.func private @mm__m0(
// NOGEMV-SAME: relax.range = {m_min = 0 : i64}
// NOGEMV-LABEL: func.func private @mm(
// NOGEMV: func.call @mm__lib
// NOGEMV: func.call @mm__m0
// NOGEMV: func.call @mm__lib
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = [[4, 64]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// An f64 kernel (no schedule fits it) with generated code for M in [1, 8]: one generated
// variant (the loop nest) for M <= 8, the library above.
// CHECK-LABEL: func.func private @mm64__lib(
// CHECK-SAME: relax.range = {m_min = 9 : i64}
// CHECK-LABEL: func.func private @mm64__m0(
// CHECK-LABEL: func.func private @mm64(
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT: arith.cmpi ule, %{{.*}}, %[[C8]] : index
// CHECK-NEXT: scf.if
// CHECK-NEXT: func.call @mm64__m0(
// CHECK: } else {
// CHECK-NEXT: func.call @mm64__lib(
func.func private @mm64(%a: tensor<?x512xf64>, %b: tensor<512x2048xf64>, %c: tensor<?x2048xf64>) -> tensor<?x2048xf64>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.dispatch_split = {callee = "relax_blas_matmul_22_f64", generated_m = [[1, 8]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f64
  %0 = linalg.fill ins(%cst : f64) outs(%c : tensor<?x2048xf64>) -> tensor<?x2048xf64>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf64>, tensor<512x2048xf64>) outs(%0 : tensor<?x2048xf64>) -> tensor<?x2048xf64>
  return %1 : tensor<?x2048xf64>
}

// A matmul that accumulates into its output (no zero fill): the library variant cannot
// serve it; the mark is dropped and the kernel specializes as any other (no schedule fits
// this one: it stays as it is).
// CHECK-NOT: @acc__lib
// CHECK-LABEL: func.func private @acc(
// CHECK-NOT: relax.dispatch_split
// CHECK: linalg.matmul
func.func private @acc(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = [[4, 64]], library = "relax_blas"}} {
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}
