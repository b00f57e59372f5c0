// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-cuda-split-library)' | FileCheck %s

// A marked, bufferized matmul kernel with a symbolic M: a dispatcher by M (<= 4: the kernel as it
// was; above: the cuBLAS call), the epilogue (relu) kept after the call in the library variant.
// CHECK: func.func private @relax_cublas_matmul_22_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @k__lib(
// CHECK-SAME: relax.kernel_kind = "opaque"
// CHECK: %[[T:.*]] = memref.alloc
// CHECK: call @relax_cublas_matmul_22_f32(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic
// CHECK-LABEL: func.func private @k__gen(
// CHECK-SAME: relax.kernel_kind = "output-fusable"
// CHECK-NOT: relax.dispatch_split
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK-LABEL: func.func private @k(
// CHECK-NOT: relax.dispatch_split
// CHECK: %[[M:.*]] = memref.dim %arg0, %{{.*}} : memref<?x64xf32>
// CHECK: %[[SMALL:.*]] = arith.cmpi ule, %[[M]], %{{.*}} : index
// CHECK: scf.if %[[SMALL]] {
// CHECK-NEXT: func.call @k__gen(%arg0, %arg1, %arg2)
// CHECK-NEXT: } else {
// CHECK-NEXT: func.call @k__lib(%arg0, %arg1, %arg2)
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @k(%a: memref<?x64xf32>, %b: memref<64x32xf32>, %c: memref<?x32xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_22_f32", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %m = memref.dim %a, %c0 : memref<?x64xf32>
    %t = memref.alloc(%m) : memref<?x32xf32>
    linalg.fill ins(%cst : f32) outs(%t : memref<?x32xf32>)
    linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x32xf32>) outs(%t : memref<?x32xf32>)
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x32xf32>) outs(%c : memref<?x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = arith.maximumf %in, %cst : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<?x32xf32>
    return
  }
}

// -----

// A static M: nothing to split; the mark goes, the kernel stays as it was.
// CHECK-LABEL: func.func private @static_m(
// CHECK-NOT: relax.dispatch_split
// CHECK: linalg.matmul
// CHECK-NOT: call
module {
  func.func private @static_m(%a: memref<8x64xf32>, %b: memref<64x32xf32>, %c: memref<8x32xf32>) attributes {relax.kernel, relax.dispatch_split = {callee = "relax_cublas_matmul_22_f32", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %cst = arith.constant 0.0 : f32
    linalg.fill ins(%cst : f32) outs(%c : memref<8x32xf32>)
    linalg.matmul ins(%a, %b : memref<8x64xf32>, memref<64x32xf32>) outs(%c : memref<8x32xf32>)
    return
  }
}
