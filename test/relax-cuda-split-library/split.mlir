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

// -----

// f16 (f32 accumulation): the truncation into the output folds into the call (cuBLAS writes
// f16: no f32 temporary, no conversion kernel); the generated variant keeps it.
// CHECK: func.func private @relax_cublas_matmul_22_f16(memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>) attributes {llvm.emit_c_interface}
// CHECK-NOT: relax_cublas_matmul_22_f16_f32
// CHECK-LABEL: func.func private @h__lib(
// CHECK-NOT: memref.alloc
// CHECK: %[[C:.*]] = memref.cast %arg2 : memref<?x32xf16> to memref<?x?xf16>
// CHECK: call @relax_cublas_matmul_22_f16(%{{.*}}, %{{.*}}, %[[C]])
// CHECK-NOT: linalg.
// CHECK: return
// CHECK-LABEL: func.func private @h__gen(
// CHECK: linalg.matmul
// CHECK: arith.truncf
// CHECK-LABEL: func.func private @h(
// CHECK: scf.if
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @h(%a: memref<?x64xf16>, %b: memref<64x32xf16>, %c: memref<?x32xf16>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_22_f16", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %m = memref.dim %c, %c0 : memref<?x32xf16>
    %t = memref.alloc(%m) : memref<?x32xf32>
    linalg.fill ins(%cst : f32) outs(%t : memref<?x32xf32>)
    linalg.matmul ins(%a, %b : memref<?x64xf16>, memref<64x32xf16>) outs(%t : memref<?x32xf32>)
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x32xf32>) outs(%c : memref<?x32xf16>) {
    ^bb0(%in: f32, %out: f16):
      %r = arith.truncf %in : f32 to f16
      linalg.yield %r : f16
    }
    memref.dealloc %t : memref<?x32xf32>
    return
  }
}

// -----

// bf16 with a fused epilogue (relu then the truncation): cuBLAS into the f32 temporary
// (bf16 in, f32 out), the epilogue a generated kernel after it.
// CHECK: func.func private @relax_cublas_matmul_22_bf16_f32(memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @g__lib(
// CHECK: %[[T:.*]] = memref.alloc
// CHECK: %[[TC:.*]] = memref.cast %[[T]] : memref<?x32xf32> to memref<?x?xf32>
// CHECK: call @relax_cublas_matmul_22_bf16_f32(%{{.*}}, %{{.*}}, %[[TC]])
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: arith.truncf
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @g(%a: memref<?x64xbf16>, %b: memref<64x32xbf16>, %c: memref<?x32xbf16>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_22_bf16", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %m = memref.dim %c, %c0 : memref<?x32xbf16>
    %t = memref.alloc(%m) : memref<?x32xf32>
    linalg.fill ins(%cst : f32) outs(%t : memref<?x32xf32>)
    linalg.matmul ins(%a, %b : memref<?x64xbf16>, memref<64x32xbf16>) outs(%t : memref<?x32xf32>)
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x32xf32>) outs(%c : memref<?x32xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %x = arith.maximumf %in, %cst : f32
      %r = arith.truncf %x : f32 to bf16
      linalg.yield %r : bf16
    }
    memref.dealloc %t : memref<?x32xf32>
    return
  }
}
