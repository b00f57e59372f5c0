// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda overrides=qgemm=1}, canonicalize, cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s --check-prefix=GEMM
// The quantized-GEMV rule on kernels that relax-fuse-ops{quant-epilogue=true} gave an
// elementwise epilogue (as bufferized from relax-legalize + relax-fuse-kernels: the fill and
// the generic write a local C, the epilogue reads it and writes the result): lane 0 applies
// the epilogue at the store (Q8_0: the residual add and a broadcast bias, each loaded at the
// output point), and C is gone. f16: the launch sits under the alignment guard; C's allocation
// moves into the else branch with the fallback (the fill, the generic and the epilogue), so
// the launch's branch allocates nothing.
// With the GEMM route (the default, qgemm=2) the tiles' launch, taken from qgemm_min_rows rows,
// applies the same epilogue at each of its stores; the GEMV above sits in the else branch.
// GEMM-LABEL: func.func private @q8_0_residual_bias(
// GEMM-NOT: memref.alloc
// GEMM: scf.if
// GEMM: gpu.launch {{.*}} workgroup(
// GEMM-NOT: gpu.shuffle
// GEMM: %[[R:.*]] = memref.load %arg2[
// GEMM-NEXT: %[[B:.*]] = memref.load %arg3[
// GEMM-NEXT: %[[S:.*]] = arith.addf %{{.*}}, %[[R]] : f32
// GEMM-NEXT: %[[T:.*]] = arith.addf %[[S]], %[[B]] : f32
// GEMM-NEXT: memref.store %[[T]], %arg4[
// GEMM: } else {
// GEMM: gpu.launch
// GEMM-COUNT-5: gpu.shuffle  xor

// CHECK-LABEL: func.func private @q8_0_residual_bias(
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: %[[R:.*]] = memref.load %arg2[%[[ROW:.*]], %[[N:.*]]] : memref<?x8xf32>
// CHECK-NEXT: %[[B:.*]] = memref.load %arg3[%[[N]]] : memref<8xf32>
// CHECK-NEXT: %[[S:.*]] = arith.addf %{{.*}}, %[[R]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[S]], %[[B]] : f32
// CHECK-NEXT: memref.store %[[T]], %arg4[%[[ROW]], %[[N]]] : memref<?x8xf32>
// CHECK: gpu.terminator
// CHECK-NOT: linalg.
// CHECK-NOT: memref.alloc
// CHECK: return

// CHECK-LABEL: func.func private @f16_residual(
// CHECK-NOT: memref.alloc
// CHECK: scf.if %{{.*}} {
// CHECK: gpu.launch
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: %[[R:.*]] = memref.load %arg2[%[[ROW:.*]], %[[N:.*]]] : memref<?x6xf32>
// CHECK-NEXT: %[[S:.*]] = arith.addf %{{.*}}, %[[R]] : f32
// CHECK-NEXT: memref.store %[[S]], %arg3[%[[ROW]], %[[N]]] : memref<?x6xf32>
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK-NEXT: %[[C:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x6xf32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[C]] : memref<?x6xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[C]] : memref<?x6xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[C]], %arg2 : memref<?x6xf32>, memref<?x6xf32>) outs(%arg3 : memref<?x6xf32>)
// CHECK: memref.dealloc %[[C]] : memref<?x6xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return

#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @q8_0_residual_bias(%arg0: memref<?x64xf32>, %arg1: memref<8x68xi8>, %arg2: memref<?x8xf32>, %arg3: memref<8xf32>, %arg4: memref<?x8xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul_add_add"} {
    %c8_i32 = arith.constant 8 : i32
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c34 = arith.constant 34 : index
    %c32 = arith.constant 32 : index
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x64xf32>
    %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x8xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<?x8xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x64xf32>) outs(%alloc : memref<?x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.divui %1, %c32 : index
      %3 = arith.muli %2, %c34 : index
      %4 = arith.remui %1, %c32 : index
      %5 = arith.addi %3, %c2 : index
      %6 = arith.addi %5, %4 : index
      %7 = memref.load %arg1[%0, %6] : memref<8x68xi8>
      %8 = arith.sitofp %7 : i8 to f32
      %9 = memref.load %arg1[%0, %3] : memref<8x68xi8>
      %10 = arith.extui %9 : i8 to i32
      %11 = arith.addi %3, %c1 : index
      %12 = memref.load %arg1[%0, %11] : memref<8x68xi8>
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
    linalg.generic {indexing_maps = [#map2, #map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%alloc, %arg2, %arg3 : memref<?x8xf32>, memref<?x8xf32>, memref<8xf32>) outs(%arg4 : memref<?x8xf32>) {
    ^bb0(%in: f32, %in_0: f32, %in_1: f32, %out: f32):
      %0 = arith.addf %in, %in_0 : f32
      %1 = arith.addf %0, %in_1 : f32
      linalg.yield %1 : f32
    }
    memref.dealloc %alloc : memref<?x8xf32>
    return
  }
  func.func private @f16_residual(%arg0: memref<?x64xf32>, %arg1: memref<6x128xi8>, %arg2: memref<?x6xf32>, %arg3: memref<?x6xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul_add"} {
    %c8_i32 = arith.constant 8 : i32
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x64xf32>
    %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x6xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<?x6xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x64xf32>) outs(%alloc : memref<?x6xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.muli %1, %c2 : index
      %3 = memref.load %arg1[%0, %2] : memref<6x128xi8>
      %4 = arith.extui %3 : i8 to i32
      %5 = arith.addi %2, %c1 : index
      %6 = memref.load %arg1[%0, %5] : memref<6x128xi8>
      %7 = arith.extui %6 : i8 to i32
      %8 = arith.shli %7, %c8_i32 : i32
      %9 = arith.ori %4, %8 : i32
      %10 = arith.trunci %9 : i32 to i16
      %11 = arith.bitcast %10 : i16 to f16
      %12 = arith.extf %11 : f16 to f32
      %13 = arith.mulf %in, %12 : f32
      %14 = arith.addf %out, %13 : f32
      linalg.yield %14 : f32
    }
    linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%alloc, %arg2 : memref<?x6xf32>, memref<?x6xf32>) outs(%arg3 : memref<?x6xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %0 = arith.addf %in, %in_0 : f32
      linalg.yield %0 : f32
    }
    memref.dealloc %alloc : memref<?x6xf32>
    return
  }
}
