// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-library-variants)' | FileCheck %s

// The add that follows the product takes a scalar (a linalg.generic input need not be
// shaped): no bias row for the bias entry point, so the plain call fills the product's
// buffer and the add stays, where the pass used to raise "Cannot cast type to ShapedType".

#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>

// CHECK: func.func private @relax_blas_matmul_22_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @mm_scalar__lib(%arg0: memref<?x2048xf32>, %arg1: memref<2048x512xf32>, %arg2: f32, %arg3: memref<?x512xf32>) attributes {relax.kernel, relax.kernel_kind = "opaque"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[M:.*]] = memref.dim %arg0, %[[C0]] : memref<?x2048xf32>
// CHECK-NEXT: %[[T:.*]] = memref.alloc(%[[M]]) {alignment = 64 : i64} : memref<?x512xf32>
// CHECK-NEXT: %[[A:.*]] = memref.cast %arg0 : memref<?x2048xf32> to memref<?x?xf32>
// CHECK-NEXT: %[[B:.*]] = memref.cast %arg1 : memref<2048x512xf32> to memref<?x?xf32>
// CHECK-NEXT: %[[TC:.*]] = memref.cast %[[T]] : memref<?x512xf32> to memref<?x?xf32>
// CHECK-NEXT: call @relax_blas_matmul_22_f32(%[[A]], %[[B]], %[[TC]]) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
// CHECK-NEXT: linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%[[T]], %arg2 : memref<?x512xf32>, f32) outs(%arg3 : memref<?x512xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func private @mm_scalar__lib(%a: memref<?x2048xf32>, %b: memref<2048x512xf32>, %bias: f32, %out: memref<?x512xf32>)
    attributes {relax.kernel, relax.kernel_kind = "opaque",
                relax.library_variant = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = [[2, 3]], library = "relax_blas"}} {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %m = memref.dim %a, %c0 : memref<?x2048xf32>
  %t = memref.alloc(%m) {alignment = 64 : i64} : memref<?x512xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x512xf32>)
  linalg.matmul ins(%a, %b : memref<?x2048xf32>, memref<2048x512xf32>) outs(%t : memref<?x512xf32>)
  linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<?x512xf32>, f32) outs(%out : memref<?x512xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  return
}
// CHECK-NOT: func.func
