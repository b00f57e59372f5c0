// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda overrides=qgemm=1}, canonicalize, cse)' | FileCheck %s --check-prefix=GEMV
// The quantized GEMM route of the QuantMatmul rule (cuda defaults): under `scf.if (M >= 16)`
// (qgemm_min_rows) tile_matmul's launch, ceil(M / 64) workgroups of 8 x 8 threads with two
// 1024-float blocks in workgroup memory; A's block staged from x with the prologue (g * u)
// per element, rows clamped; B's block decoded from the Q8_0 rows: per thread one run of 16
// k of one row n, the block's f16 scale loaded once (a vector<2xi8>), 16 quant bytes in
// 2-byte vector loads, each sitofp * scale stored transposed (k * 64 + n), rows past N as 0;
// two barriers around the register-blocked FMAs; one store per element of C under the bounds.
// The else branch is the quantized GEMV (shuffles), unchanged. bf16 at K = 33 (K blocks past
// K): the element's two bytes, k clamped to 32, elements past K staged as 0.
// With qgemm=1 the quantized GEMV serves every M (one launch, no workgroup memory).

// CHECK-LABEL: func.func private @q8_0_prologue(
// CHECK: %[[M:.*]] = memref.dim %arg3, %c0 : memref<?x5xf32>
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %[[M]], %c16 : index
// CHECK: scf.if %[[BIG]] {
// CHECK: %[[GY:.*]] = arith.divui %{{.*}}, %c64 : index
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %[[GY]], %{{.*}} = %c1) threads(%{{.*}}) in (%{{.*}} = %c8, %{{.*}} = %c8, %{{.*}} = %c1) workgroup(%[[SA:.*]] : memref<1024xf32, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<1024xf32, #gpu.address_space<workgroup>>) {
// CHECK: scf.for %[[K0:.*]] = %c0 to %c64 step %c16 iter_args(
// CHECK: %[[G:.*]] = memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x64xf32>
// CHECK: %[[U:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}] : memref<?x64xf32>
// CHECK: %[[X:.*]] = arith.mulf %[[G]], %[[U]] : f32
// CHECK: %[[XZ:.*]] = arith.select %{{.*}}, %[[X]], %cst : f32
// CHECK: memref.store %[[XZ]], %[[SA]][%{{.*}}] : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK: %[[N:.*]] = arith.minui %{{.*}}, %c4 : index
// CHECK: %[[D:.*]] = vector.load %arg2[%[[N]], %{{.*}}] {alignment = 2 : i64} : memref<5x68xi8>, vector<2xi8>
// CHECK: %[[S:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-COUNT-8: vector.load %arg2[%[[N]], %{{.*}}] {alignment = 2 : i64} : memref<5x68xi8>, vector<2xi8>
// CHECK: %[[Q:.*]] = arith.extsi %{{.*}} : i8 to i32
// CHECK: %[[QF:.*]] = arith.sitofp %[[Q]] : i32 to f32
// CHECK: %[[W:.*]] = arith.mulf %[[QF]], %[[S]] : f32
// CHECK: %[[WZ:.*]] = arith.select %{{.*}}, %[[W]], %cst : f32
// CHECK: memref.store %[[WZ]], %[[SB]][%{{.*}}] : memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args(
// CHECK-COUNT-8: memref.load %[[SA]]
// CHECK-COUNT-8: memref.load %[[SB]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}, %{{.*}}] : memref<?x5xf32>
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: workgroup(
// CHECK-COUNT-5: gpu.shuffle  xor

// CHECK-LABEL: func.func private @bf16_rows_odd_k(
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} workgroup(
// CHECK: %[[ROW:.*]] = arith.minui %{{.*}}, %c4 : index
// CHECK: %[[K:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[KC:.*]] = arith.minui %[[K]], %c32 : index
// CHECK: %[[K2:.*]] = arith.muli %[[KC]], %c2 : index
// CHECK: memref.load %arg1[%[[ROW]], %[[K2]]] : memref<5x66xi8>
// CHECK: arith.shli %{{.*}}, %c16_i32 : i32
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.cmpi ult, %[[K]], %c33 : index
// CHECK: gpu.barrier
// CHECK: } else {

// GEMV-LABEL: func.func private @q8_0_prologue(
// GEMV-NOT: workgroup(
// GEMV-NOT: gpu.barrier
// GEMV: gpu.launch
// GEMV-NOT: gpu.launch
// GEMV-COUNT-5: gpu.shuffle  xor
// GEMV-NOT: gpu.launch
// GEMV-LABEL: func.func private @bf16_rows_odd_k(

#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @q8_0_prologue(%arg0: memref<?x64xf32>, %arg1: memref<?x64xf32>, %arg2: memref<5x68xi8>, %arg3: memref<?x5xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c34 = arith.constant 34 : index
    %c8_i32 = arith.constant 8 : i32
    linalg.fill ins(%cst : f32) outs(%arg3 : memref<?x5xf32>)
    linalg.generic {indexing_maps = [#map, #map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : memref<?x64xf32>, memref<?x64xf32>) outs(%arg3 : memref<?x5xf32>) {
    ^bb0(%g: f32, %u: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.divui %1, %c32 : index
      %3 = arith.muli %2, %c34 : index
      %4 = arith.remui %1, %c32 : index
      %5 = arith.addi %3, %c2 : index
      %6 = arith.addi %5, %4 : index
      %7 = memref.load %arg2[%0, %6] : memref<5x68xi8>
      %8 = arith.sitofp %7 : i8 to f32
      %9 = memref.load %arg2[%0, %3] : memref<5x68xi8>
      %10 = arith.extui %9 : i8 to i32
      %11 = arith.addi %3, %c1 : index
      %12 = memref.load %arg2[%0, %11] : memref<5x68xi8>
      %13 = arith.extui %12 : i8 to i32
      %14 = arith.shli %13, %c8_i32 : i32
      %15 = arith.ori %10, %14 : i32
      %16 = arith.trunci %15 : i32 to i16
      %17 = arith.bitcast %16 : i16 to f16
      %18 = arith.extf %17 : f16 to f32
      %19 = arith.mulf %8, %18 : f32
      %20 = arith.mulf %g, %u : f32
      %21 = arith.mulf %20, %19 : f32
      %22 = arith.addf %out, %21 : f32
      linalg.yield %22 : f32
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
}
