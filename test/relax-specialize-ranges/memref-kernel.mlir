// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=3})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=0})' | FileCheck %s

// Kernels on memrefs (bufferized already, or written so) are well-formed input: they pass
// through unchanged (no variants, no dispatcher; a relax.dispatch_split mark stays), where
// the pass used to raise "Cannot cast type to RankedTensorType" (mutation fuzz seeds
// 1000211, 1000222: lit inputs of the GPU and library-variant passes through the cpu pipeline).

// CHECK-LABEL: func.func private @mm(%arg0: memref<?x?xf32>, %arg1: memref<?x?xf32>, %arg2: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg2 : memref<?x?xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 : memref<?x?xf32>, memref<?x?xf32>) outs(%arg2 : memref<?x?xf32>)
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func private @mm(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// CHECK-LABEL: func.func private @mm_result(%arg0: memref<?x512xf32>, %arg1: memref<512x2048xf32>, %arg2: memref<?x2048xf32>) -> memref<?x2048xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 : memref<?x512xf32>, memref<512x2048xf32>) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: return %arg2 : memref<?x2048xf32>
// CHECK-NEXT: }
func.func private @mm_result(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>) -> memref<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return %c : memref<?x2048xf32>
}

// CHECK-LABEL: func.func private @mm_split(%arg0: memref<?x512xf32>, %arg1: memref<512x2048xf32>, %arg2: memref<?x2048xf32>) attributes {relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}4, 64]], library = "relax_blas"}, relax.kernel, relax.kernel_kind = "output-fusable"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 : memref<?x512xf32>, memref<512x2048xf32>) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func private @mm_split(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = [[4, 64]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return
}

// A tensor operand bufferized inside the kernel: its matmul is on memrefs, left alone too.
// CHECK-LABEL: func.func private @mm_mixed(%arg0: tensor<?x512xf32>, %arg1: memref<512x2048xf32>, %arg2: memref<?x2048xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[A:.*]] = bufferization.to_buffer %arg0 : tensor<?x512xf32> to memref<?x512xf32>
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: linalg.matmul ins(%[[A]], %arg1 : memref<?x512xf32>, memref<512x2048xf32>) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func private @mm_mixed(%a: tensor<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  %am = bufferization.to_buffer %a : tensor<?x512xf32> to memref<?x512xf32>
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%am, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return
}
// CHECK-NOT: func.func
