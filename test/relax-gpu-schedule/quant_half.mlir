// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda overrides=qgemm=1}, canonicalize, cse)' | FileCheck %s
// The quantized-GEMV rule on f16 / bf16 weights (relax.quantized_matmul kernels as
// relax-legalize writes them: i8 rows of 2 bytes per element) on the cuda defaults (warps of
// 32, 4 per workgroup, a column each): under `scf.if` (the weight's pointer, and x's for its
// vector loads, aligned) the i8 buffer viewed as words and one launch: a lane loads 8 f16
// (K = 64: one vector<4xi32>) and 8 floats of x (two vector<4xf32>), converts the words'
// halves (trunci / bitcast / extf), FMAs, 5 xor shuffles, lane 0 stores; the fill and the
// generic in the else branch. bf16 at odd K: 16-bit words (i16 loads), the bits shifted into
// an f32's high half, x scalar. (qgemm=1: the GEMV alone; the GEMM route for many rows of x
// is quant_gemm.mlir's.)

// CHECK-LABEL: func.func private @f16_rows(
// CHECK: %[[WP:.*]] = memref.extract_aligned_pointer_as_index %arg1 : memref<6x128xi8> -> index
// CHECK: arith.remui %[[WP]], %c16 : index
// CHECK: %[[XP:.*]] = memref.extract_aligned_pointer_as_index %arg0 : memref<?x64xf32> -> index
// CHECK: arith.remui %[[XP]], %c16 : index
// CHECK: scf.if %{{.*}} {
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [768], strides: [1]
// CHECK: %[[WORDS:.*]] = memref.view %[[FLAT]][%c0][] : memref<768xi8, strided<[1]>> to memref<192xi32>
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %c2, %{{.*}} = %{{.*}}, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1) {
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8 step %c32 iter_args
// CHECK-COUNT-2: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
// CHECK: vector.load %[[WORDS]][%{{.*}}] {alignment = 16 : i64} : memref<192xi32>, vector<4xi32>
// CHECK: %[[LO:.*]] = arith.trunci %{{.*}} : i32 to i16
// CHECK: %[[HI:.*]] = arith.shrui %{{.*}}, %c16_i32 : i32
// CHECK: arith.bitcast %[[LO]] : i16 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x6xf32>
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic

// CHECK-LABEL: func.func private @bf16_rows_odd_k(
// CHECK: %[[WP:.*]] = memref.extract_aligned_pointer_as_index %arg1 : memref<5x66xi8> -> index
// CHECK: arith.remui %[[WP]], %c2 : index
// CHECK-NOT: memref<?x33xf32> -> index
// CHECK: scf.if %{{.*}} {
// CHECK: %[[WORDS:.*]] = memref.view %{{.*}}[%c0][] : memref<330xi8, strided<[1]>> to memref<165xi16>
// CHECK: gpu.launch
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x33xf32>
// CHECK: %[[H:.*]] = memref.load %[[WORDS]][%{{.*}}] : memref<165xi16>
// CHECK: %[[W:.*]] = arith.extui %[[H]] : i16 to i32
// CHECK: %[[B:.*]] = arith.shli %[[W]], %c16_i32 : i32
// CHECK: arith.bitcast %[[B]] : i32 to f32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: } else {
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic

// An f16 x (the result f16: relax-legalize's f32 sum rounded by an elementwise generic): x's
// alignment guard is for vector<4xf16> (8 bytes), x comes in two such loads per lane and is
// widened in the cloned body (extf), the rounding to f16 is the epilogue at lane 0's store.
// CHECK-LABEL: func.func private @f16_rows_f16_x(
// CHECK: %[[XP:.*]] = memref.extract_aligned_pointer_as_index %arg0 : memref<?x64xf16> -> index
// CHECK: arith.remui %[[XP]], %c8 : index
// CHECK: scf.if %{{.*}} {
// CHECK: gpu.launch
// CHECK-COUNT-2: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x64xf16>, vector<4xf16>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: %[[T:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %[[T]], %arg2[%{{.*}}, %{{.*}}] : memref<?x6xf16>
// CHECK: } else {
// CHECK: memref.alloc
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: linalg.generic

#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @f16_rows(%arg0: memref<?x64xf32>, %arg1: memref<6x128xi8>, %arg2: memref<?x6xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c8_i32 = arith.constant 8 : i32
    linalg.fill ins(%cst : f32) outs(%arg2 : memref<?x6xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x64xf32>) outs(%arg2 : memref<?x6xf32>) {
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
    return
  }
  func.func private @bf16_rows_odd_k(%arg0: memref<?x33xf32>, %arg1: memref<5x66xi8>, %arg2: memref<?x5xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c8_i32 = arith.constant 8 : i32
    %c16_i32 = arith.constant 16 : i32
    linalg.fill ins(%cst : f32) outs(%arg2 : memref<?x5xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x33xf32>) outs(%arg2 : memref<?x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.muli %1, %c2 : index
      %3 = memref.load %arg1[%0, %2] : memref<5x66xi8>
      %4 = arith.extui %3 : i8 to i32
      %5 = arith.addi %2, %c1 : index
      %6 = memref.load %arg1[%0, %5] : memref<5x66xi8>
      %7 = arith.extui %6 : i8 to i32
      %8 = arith.shli %7, %c8_i32 : i32
      %9 = arith.ori %4, %8 : i32
      %10 = arith.shli %9, %c16_i32 : i32
      %11 = arith.bitcast %10 : i32 to f32
      %12 = arith.mulf %in, %11 : f32
      %13 = arith.addf %out, %12 : f32
      linalg.yield %13 : f32
    }
    return
  }
  func.func private @f16_rows_f16_x(%arg0: memref<?x64xf16>, %arg1: memref<6x128xi8>, %arg2: memref<?x6xf16>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c8_i32 = arith.constant 8 : i32
    %m = memref.dim %arg0, %c0 : memref<?x64xf16>
    %acc = memref.alloc(%m) : memref<?x6xf32>
    linalg.fill ins(%cst : f32) outs(%acc : memref<?x6xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x64xf16>) outs(%acc : memref<?x6xf32>) {
    ^bb0(%in: f16, %out: f32):
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
      %x = arith.extf %in : f16 to f32
      %13 = arith.mulf %x, %12 : f32
      %14 = arith.addf %out, %13 : f32
      linalg.yield %14 : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<?x6xf32>) outs(%arg2 : memref<?x6xf16>) {
    ^bb0(%in: f32, %out: f16):
      %t = arith.truncf %in : f32 to f16
      linalg.yield %t : f16
    }
    memref.dealloc %acc : memref<?x6xf32>
    return
  }
}
