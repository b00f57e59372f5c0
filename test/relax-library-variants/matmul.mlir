// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-library-variants)' | FileCheck %s

// Bufferized library variants (relax-specialize-ranges' @k__lib of a relax.dispatch_split
// kernel): the zero fill + matmul becomes the library call on fully dynamic memrefs, with
// the declaration relax-lower-host makes for relax.call_dps_library (reused when present).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK: func.func private @relax_blas_matmul_bias_22_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK: func.func private @relax_blas_matmul_22_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private @relax_blas_matmul_22_f32
func.func private @relax_blas_matmul_22_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func private @mm__lib(%arg0: memref<?x512xf32>, %arg1: memref<512x2048xf32>, %arg2: memref<?x2048xf32>)
// CHECK-NOT: relax.library_variant
// CHECK: %[[A:.*]] = memref.cast %arg0 : memref<?x512xf32> to memref<?x?xf32>
// CHECK-NEXT: %[[B:.*]] = memref.cast %arg1 : memref<512x2048xf32> to memref<?x?xf32>
// CHECK-NEXT: %[[C:.*]] = memref.cast %arg2 : memref<?x2048xf32> to memref<?x?xf32>
// CHECK-NEXT: call @relax_blas_matmul_22_f32(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT: return
func.func private @mm__lib(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {callee = "relax_blas_matmul_22_f32", generated_m = [[4, 64]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return
}

// matmul + bias (a fused kernel): the product's buffer, the fill, the matmul and the bias add
// become one call of the bias entry point writing the output.
// CHECK-LABEL: func.func private @mm_bias__lib(%arg0: memref<?x2048xf32>, %arg1: memref<2048x512xf32>, %arg2: memref<512xf32>, %arg3: memref<?x512xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @relax_blas_matmul_bias_22_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>, memref<?x?xf32>) -> ()
// CHECK-NOT: linalg
// CHECK: return
func.func private @mm_bias__lib(%a: memref<?x2048xf32>, %b: memref<2048x512xf32>, %bias: memref<512xf32>, %out: memref<?x512xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = [[2, 3]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x2048xf32>
  %t = memref.alloc(%m) {alignment = 64 : i64} : memref<?x512xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x512xf32>)
  linalg.matmul ins(%a, %b : memref<?x2048xf32>, memref<2048x512xf32>) outs(%t : memref<?x512xf32>)
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<?x512xf32>, memref<512xf32>) outs(%out : memref<?x512xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}

// matmul + bias + relu: the plain call into the product's buffer; the epilogue stays.
// CHECK-LABEL: func.func private @mm_bias_relu__lib(
// CHECK: %[[T:.*]] = memref.alloc
// CHECK: %[[TC:.*]] = memref.cast %[[T]] : memref<?x512xf32> to memref<?x?xf32>
// CHECK-NEXT: call @relax_blas_matmul_22_f32(%{{.*}}, %{{.*}}, %[[TC]])
// CHECK-NEXT: linalg.generic
// CHECK: arith.maximumf
func.func private @mm_bias_relu__lib(%a: memref<?x2048xf32>, %b: memref<2048x512xf32>, %bias: memref<512xf32>, %out: memref<?x512xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = [[2, 3]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x2048xf32>
  %t = memref.alloc(%m) {alignment = 64 : i64} : memref<?x512xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x512xf32>)
  linalg.matmul ins(%a, %b : memref<?x2048xf32>, memref<2048x512xf32>) outs(%t : memref<?x512xf32>)
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<?x512xf32>, memref<512xf32>) outs(%out : memref<?x512xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  }
  return
}

// No zero fill right before the matmul (it accumulates): left as generated code.
// CHECK-LABEL: func.func private @acc__lib(
// CHECK-NOT: call
// CHECK: linalg.matmul
func.func private @acc__lib(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {callee = "relax_blas_matmul_22_f32", generated_m = [[4, 64]], library = "relax_blas"}} {
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return
}

// The in-place forms relax-epilogue-in-place gives (the product in the output argument):
// a bias add in place becomes the bias entry point on the output; any other epilogue stays,
// in place after the plain call into the output (no buffer of its own).
// CHECK-LABEL: func.func private @mm_bias_inplace__lib(%arg0: memref<?x2048xf32>, %arg1: memref<2048x512xf32>, %arg2: memref<512xf32>, %arg3: memref<?x512xf32>)
// CHECK: %[[O:.*]] = memref.cast %arg3 : memref<?x512xf32> to memref<?x?xf32>
// CHECK-NEXT: call @relax_blas_matmul_bias_22_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[O]]) : (memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>, memref<?x?xf32>) -> ()
// CHECK-NEXT: return %arg3
func.func private @mm_bias_inplace__lib(%a: memref<?x2048xf32>, %b: memref<2048x512xf32>, %bias: memref<512xf32>, %out: memref<?x512xf32>) -> memref<?x512xf32>
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = [[2, 3]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%out : memref<?x512xf32>)
  linalg.matmul ins(%a, %b : memref<?x2048xf32>, memref<2048x512xf32>) outs(%out : memref<?x512xf32>)
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<512xf32>) outs(%out : memref<?x512xf32>) {
  ^bb0(%y: f32, %o: f32):
    %s = arith.addf %o, %y : f32
    linalg.yield %s : f32
  }
  return %out : memref<?x512xf32>
}

// CHECK-LABEL: func.func private @mm_bias_relu_inplace__lib(
// CHECK-NOT: memref.alloc
// CHECK: %[[O:.*]] = memref.cast %arg3 : memref<?x512xf32> to memref<?x?xf32>
// CHECK-NEXT: call @relax_blas_matmul_22_f32(%{{.*}}, %{{.*}}, %[[O]])
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg2 : memref<512xf32>) outs(%arg3 : memref<?x512xf32>)
// CHECK: arith.maximumf
func.func private @mm_bias_relu_inplace__lib(%a: memref<?x2048xf32>, %b: memref<2048x512xf32>, %bias: memref<512xf32>, %out: memref<?x512xf32>) -> memref<?x512xf32>
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = [[2, 3]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%out : memref<?x512xf32>)
  linalg.matmul ins(%a, %b : memref<?x2048xf32>, memref<2048x512xf32>) outs(%out : memref<?x512xf32>)
  linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<512xf32>) outs(%out : memref<?x512xf32>) {
  ^bb0(%y: f32, %o: f32):
    %s = arith.addf %o, %y : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  }
  return %out : memref<?x512xf32>
}
