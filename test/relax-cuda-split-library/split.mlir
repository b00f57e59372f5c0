// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-cuda-split-library)' | FileCheck %s

// A marked, bufferized matmul kernel with a symbolic M: a dispatcher by M (<= 4: the kernel as it
// was; above: the cuBLAS call), an epilogue cuBLASLt has not (x * x) kept after the call in the
// library variant.
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
      %r = arith.mulf %in, %in : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<?x32xf32>
    return
  }
}

// -----

// Epilogues cuBLASLt applies itself: bias + relu (CUBLASLT_EPILOGUE_RELU_BIAS), a residual add
// (beta = 1, C the residual): one library call each, no temporary, no kernel after it.
// CHECK-DAG: func.func private @relax_cublas_matmul_22_f32_biasrelu(memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>, memref<?x?xf32>)
// CHECK-DAG: func.func private @relax_cublas_matmul_22_f32_add(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>)
// CHECK-LABEL: func.func private @br__lib(
// CHECK-NOT: memref.alloc
// CHECK: %[[B:.*]] = memref.cast %arg2 : memref<32xf32> to memref<?xf32>
// CHECK: %[[O:.*]] = memref.cast %arg3 : memref<?x32xf32> to memref<?x?xf32>
// CHECK: call @relax_cublas_matmul_22_f32_biasrelu(%{{.*}}, %{{.*}}, %[[B]], %[[O]])
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @res__lib(
// CHECK-NOT: memref.alloc
// CHECK: call @relax_cublas_matmul_22_f32_add(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @br(%a: memref<?x64xf32>, %b: memref<64x32xf32>, %bias: memref<32xf32>, %c: memref<?x32xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_22_f32", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %m = memref.dim %a, %c0 : memref<?x64xf32>
    %t = memref.alloc(%m) : memref<?x32xf32>
    linalg.fill ins(%cst : f32) outs(%t : memref<?x32xf32>)
    linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x32xf32>) outs(%t : memref<?x32xf32>)
    linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<?x32xf32>, memref<32xf32>) outs(%c : memref<?x32xf32>) {
    ^bb0(%in: f32, %bv: f32, %out: f32):
      %s = arith.addf %in, %bv : f32
      %r = arith.maximumf %s, %cst : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<?x32xf32>
    return
  }
  func.func private @res(%a: memref<?x64xf32>, %b: memref<64x32xf32>, %r: memref<?x32xf32>, %c: memref<?x32xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_22_f32", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %m = memref.dim %a, %c0 : memref<?x64xf32>
    %t = memref.alloc(%m) : memref<?x32xf32>
    linalg.fill ins(%cst : f32) outs(%t : memref<?x32xf32>)
    linalg.matmul ins(%a, %b : memref<?x64xf32>, memref<64x32xf32>) outs(%t : memref<?x32xf32>)
    linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%t, %r : memref<?x32xf32>, memref<?x32xf32>) outs(%c : memref<?x32xf32>) {
    ^bb0(%in: f32, %rv: f32, %out: f32):
      %s = arith.addf %in, %rv : f32
      linalg.yield %s : f32
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

// bf16 with a fused relu then the truncation: cuBLASLt's relu epilogue writing bf16; relu then
// an f32 bias (not of the output's type): cuBLAS into the f32 temporary (bf16 in, f32 out), the
// epilogue a generated kernel after it.
// CHECK-DAG: func.func private @relax_cublas_matmul_22_bf16_relu(memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>)
// CHECK-DAG: func.func private @relax_cublas_matmul_22_bf16_f32(memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @g__lib(
// CHECK-NOT: memref.alloc
// CHECK: call @relax_cublas_matmul_22_bf16_relu(
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @g2__lib(
// CHECK: %[[T:.*]] = memref.alloc
// CHECK: %[[TC:.*]] = memref.cast %[[T]] : memref<?x32xf32> to memref<?x?xf32>
// CHECK: call @relax_cublas_matmul_22_bf16_f32(%{{.*}}, %{{.*}}, %[[TC]])
// CHECK: linalg.generic
// CHECK: arith.addf
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
  func.func private @g2(%a: memref<?x64xbf16>, %b: memref<64x32xbf16>, %bias: memref<32xf32>, %c: memref<?x32xbf16>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_22_bf16", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.0 : f32
    %m = memref.dim %c, %c0 : memref<?x32xbf16>
    %t = memref.alloc(%m) : memref<?x32xf32>
    linalg.fill ins(%cst : f32) outs(%t : memref<?x32xf32>)
    linalg.matmul ins(%a, %b : memref<?x64xbf16>, memref<64x32xbf16>) outs(%t : memref<?x32xf32>)
    linalg.generic {indexing_maps = [#map, affine_map<(d0, d1) -> (d1)>, #map], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<?x32xf32>, memref<32xf32>) outs(%c : memref<?x32xbf16>) {
    ^bb0(%in: f32, %bv: f32, %out: bf16):
      %x = arith.addf %in, %bv : f32
      %r = arith.truncf %x : f32 to bf16
      linalg.yield %r : bf16
    }
    memref.dealloc %t : memref<?x32xf32>
    return
  }
}

// -----

// A quantized matmul (Q8_0 rows, f32 x): the library variant decodes the weight into a scratch
// buffer (a 2-D parallel generic: the reduction's decoder on indices n, k) and calls cuBLAS with
// it transposed (22t); the dispatcher compares M with the mark's 64 rows.
// CHECK: func.func private @relax_cublas_matmul_22t_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func private @q__lib(
// CHECK: %[[S:.*]] = memref.alloc() : memref<48x64xf32>
// CHECK: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel"]} outs(%[[S]] : memref<48x64xf32>)
// CHECK: %[[N:.*]] = linalg.index 0
// CHECK: %[[K:.*]] = linalg.index 1
// CHECK: arith.divui %[[K]], %{{.*}}
// CHECK: memref.load %arg1[%[[N]], %{{.*}}] : memref<48x68xi8>
// CHECK: %[[V:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[V]] : f32
// CHECK: %[[SC:.*]] = memref.cast %[[S]] : memref<48x64xf32> to memref<?x?xf32>
// CHECK: call @relax_cublas_matmul_22t_f32(%{{.*}}, %[[SC]], %{{.*}})
// CHECK-NEXT: memref.dealloc %[[S]]
// CHECK-NOT: linalg.
// CHECK-LABEL: func.func private @q__gen(
// CHECK: linalg.fill
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-LABEL: func.func private @q(
// CHECK: arith.cmpi ule, %{{.*}}, %c64
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @q(%arg0: memref<?x64xf32>, %arg1: memref<48x68xi8>, %arg2: memref<?x48xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul", relax.dispatch_split = {callee = "relax_cublas_matmul_22t_f32", generated_m = [[1, 64]], library = "relax_cublas"}} {
    %cst = arith.constant 0.000000e+00 : f32
    %c32 = arith.constant 32 : index
    %c34 = arith.constant 34 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c8_i32 = arith.constant 8 : i32
    linalg.fill ins(%cst : f32) outs(%arg2 : memref<?x48xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x64xf32>) outs(%arg2 : memref<?x48xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.divui %1, %c32 : index
      %3 = arith.muli %2, %c34 : index
      %4 = arith.remui %1, %c32 : index
      %5 = arith.addi %3, %c2 : index
      %6 = arith.addi %5, %4 : index
      %7 = memref.load %arg1[%0, %6] : memref<48x68xi8>
      %8 = arith.sitofp %7 : i8 to f32
      %9 = memref.load %arg1[%0, %3] : memref<48x68xi8>
      %10 = arith.extui %9 : i8 to i32
      %11 = arith.addi %3, %c1 : index
      %12 = memref.load %arg1[%0, %11] : memref<48x68xi8>
      %13 = arith.extui %12 : i8 to i32
      %14 = arith.shli %13, %c8_i32 : i32
      %15 = arith.ori %10, %14 : i32
      %16 = arith.trunci %15 : i32 to i16
      %17 = arith.bitcast %16 : i16 to f16
      %18 = arith.extf %17 : f16 to f32
      %19 = arith.mulf %8, %18 : f32
      %20 = arith.mulf %in, %19 : f32
      %21 = arith.addf %out, %20 : f32
      linalg.yield %21 : f32
    }
    return
  }
}

// -----

// f16 weights with f16 x: cuBLAS reads the stored rows (22w: the i8 (N, 2K) buffer), no scratch,
// no decoding kernel; the truncation to f16 folds into the call.
// CHECK: func.func private @relax_cublas_matmul_22w_f16(memref<?x?xf16>, memref<?x?xi8>, memref<?x?xf16>)
// CHECK-NOT: relax_cublas_matmul_22w_f16_f32
// CHECK-LABEL: func.func private @w__lib(
// CHECK-NOT: memref.alloc
// CHECK: %[[W:.*]] = memref.cast %arg1 : memref<48x128xi8> to memref<?x?xi8>
// CHECK: call @relax_cublas_matmul_22w_f16(%{{.*}}, %[[W]], %{{.*}})
// CHECK-NOT: linalg.
// CHECK: return
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @w(%arg0: memref<?x64xf16>, %arg1: memref<48x128xi8>, %arg2: memref<?x48xf16>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul", relax.dispatch_split = {callee = "relax_cublas_matmul_22w_f16", generated_m = [[1, 64]], library = "relax_cublas"}} {
    %c8_i32 = arith.constant 8 : i32
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg2, %c0 : memref<?x48xf16>
    %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x48xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<?x48xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x64xf16>) outs(%alloc : memref<?x48xf32>) {
    ^bb0(%in: f16, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.muli %1, %c2 : index
      %3 = memref.load %arg1[%0, %2] : memref<48x128xi8>
      %4 = arith.extui %3 : i8 to i32
      %5 = arith.addi %2, %c1 : index
      %6 = memref.load %arg1[%0, %5] : memref<48x128xi8>
      %7 = arith.extui %6 : i8 to i32
      %8 = arith.shli %7, %c8_i32 : i32
      %9 = arith.ori %4, %8 : i32
      %10 = arith.trunci %9 : i32 to i16
      %11 = arith.bitcast %10 : i16 to f16
      %12 = arith.extf %11 : f16 to f32
      %13 = arith.extf %in : f16 to f32
      %14 = arith.mulf %13, %12 : f32
      %15 = arith.addf %out, %14 : f32
      linalg.yield %15 : f32
    }
    linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%alloc : memref<?x48xf32>) outs(%arg2 : memref<?x48xf16>) {
    ^bb0(%in: f32, %out: f16):
      %0 = arith.truncf %in : f32 to f16
      linalg.yield %0 : f16
    }
    memref.dealloc %alloc : memref<?x48xf32>
    return
  }
}

// -----

// A batched matmul with a symbolic M (dim 1 of A): the library variant calls the strided-batched
// GEMM on 3-D memrefs; the dispatcher compares A's dim 1 with 4.
// CHECK: func.func private @relax_cublas_matmul_33_f32(memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>)
// CHECK-LABEL: func.func private @bm__lib(
// CHECK-NOT: linalg.
// CHECK: call @relax_cublas_matmul_33_f32(
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @bm(
// CHECK: %[[M:.*]] = memref.dim %arg0, %c1 : memref<?x?x64xf32>
// CHECK: arith.cmpi ule, %[[M]], %c4
module {
  func.func private @bm(%a: memref<?x?x64xf32>, %b: memref<?x64x32xf32>, %c: memref<?x?x32xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.dispatch_split = {callee = "relax_cublas_matmul_33_f32", generated_m = [[1, 4]], library = "relax_cublas"}} {
    %cst = arith.constant 0.0 : f32
    linalg.fill ins(%cst : f32) outs(%c : memref<?x?x32xf32>)
    linalg.batch_matmul ins(%a, %b : memref<?x?x64xf32>, memref<?x64x32xf32>) outs(%c : memref<?x?x32xf32>)
    return
  }
}
