// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda overrides=qgemm=1}, canonicalize, cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s --check-prefix=GEMM
// The QuantMatmul rule on a Q4_K kernel (the generic dequantizer's body, K = 256, N = 5; cuda
// defaults). GEMV (qgemm=1): one launch of 128 threads (4 warps, one output column each); lane
// l takes steps l, l + 32, ... < 16 (K / 16: a step is 8 positions of sub-blocks 2c and 2c + 1,
// whose quants are the low and high nibbles of the same 8 bytes), k0 = 64 (r / 4) + 8 (r % 4);
// d and dmin (f16, 2-byte vector loads) and the 8 quant bytes (two 4-byte vector loads) once per
// step; per sub-block its 6-bit scale and minimum (three bytes at +4, selected on sub-block < 4),
// the sums of x * q and x, then d sc * sum(x q) - dmin mn * sum(x); five xor shuffles, lane 0
// stores.
// GEMM (defaults): under `scf.if (M >= 16)` the tiled launch with two workgroup blocks, the
// weight stager decoding a run of 16 k per thread with the same decoding (four 4-byte loads);
// the else branch the GEMV above.

// CHECK-LABEL: func.func private @q4_k(
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) {
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32 : index
// CHECK: %[[ACC:.*]] = scf.for %[[R:.*]] = %[[LANE]] to %c16 step %c32 iter_args(
// CHECK: %[[C:.*]] = arith.divui %[[R]], %c4 : index
// CHECK: arith.muli %[[C]], %c64 : index
// CHECK-COUNT-2: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 2 : i64} : memref<5x144xi8>, vector<2xi8>
// CHECK-COUNT-2: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<5x144xi8>, vector<4xi8>
// CHECK-COUNT-3: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<5x144xi8>
// CHECK: arith.cmpi ult, %{{.*}}, %c4 : index
// CHECK: %[[MIN0:.*]] = arith.negf
// CHECK-NOT: vector.load %arg1
// CHECK-COUNT-3: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<5x144xi8>
// CHECK: %[[MIN1:.*]] = arith.negf
// CHECK-NOT: memref.load %arg1
// CHECK: arith.mulf %[[MIN0]], %{{.*}} fastmath<contract> : f32
// CHECK-NOT: memref.load %arg1
// CHECK: arith.mulf %[[MIN1]], %{{.*}} fastmath<contract> : f32
// CHECK: scf.yield
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x5xf32>
// CHECK-NOT: gpu.launch

// GEMM-LABEL: func.func private @q4_k(
// GEMM: arith.cmpi uge, %{{.*}}, %c16 : index
// GEMM: gpu.launch {{.*}} workgroup(%{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>) {
// GEMM-COUNT-4: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<5x144xi8>, vector<4xi8>
// GEMM: arith.negf
// GEMM: gpu.barrier
// GEMM: } else {
// GEMM: gpu.launch
// GEMM-COUNT-5: gpu.shuffle  xor
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @q4_k(%arg0: memref<?x256xf32>, %arg1: memref<5x144xi8>, %arg2: memref<?x5xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction", relax.kernel_op = "quantized_matmul"} {
    %c3 = arith.constant 3 : index
    %cst = arith.constant 0.000000e+00 : f32
    %c256 = arith.constant 256 : index
    %c144 = arith.constant 144 : index
    %c32 = arith.constant 32 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c15_i32 = arith.constant 15 : i32
    %c63_i32 = arith.constant 63 : i32
    %c6_i32 = arith.constant 6 : i32
    %c3_i32 = arith.constant 3 : i32
    %c4_i32 = arith.constant 4 : i32
    %c1 = arith.constant 1 : index
    %c8_i32 = arith.constant 8 : i32
    linalg.fill ins(%cst : f32) outs(%arg2 : memref<?x5xf32>)
    linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : memref<?x256xf32>) outs(%arg2 : memref<?x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      %0 = linalg.index 1 : index
      %1 = linalg.index 2 : index
      %2 = arith.divui %1, %c256 : index
      %3 = arith.muli %2, %c144 : index
      %4 = arith.remui %1, %c256 : index
      %5 = arith.divui %4, %c32 : index
      %6 = arith.addi %3, %c16 : index
      %7 = arith.divui %4, %c64 : index
      %8 = arith.muli %7, %c32 : index
      %9 = arith.remui %4, %c32 : index
      %10 = arith.addi %8, %9 : index
      %11 = arith.addi %6, %10 : index
      %12 = memref.load %arg1[%0, %11] : memref<5x144xi8>
      %13 = arith.extui %12 : i8 to i32
      %14 = arith.remui %5, %c2 : index
      %15 = arith.muli %14, %c4 : index
      %16 = arith.index_cast %15 : index to i32
      %17 = arith.shrui %13, %16 : i32
      %18 = arith.andi %17, %c15_i32 : i32
      %19 = arith.addi %5, %c4 : index
      %20 = arith.remui %5, %c4 : index
      %21 = arith.addi %3, %c4 : index
      %22 = arith.addi %21, %5 : index
      %23 = memref.load %arg1[%0, %22] : memref<5x144xi8>
      %24 = arith.extui %23 : i8 to i32
      %25 = arith.addi %21, %19 : index
      %26 = memref.load %arg1[%0, %25] : memref<5x144xi8>
      %27 = arith.extui %26 : i8 to i32
      %28 = arith.addi %21, %20 : index
      %29 = memref.load %arg1[%0, %28] : memref<5x144xi8>
      %30 = arith.extui %29 : i8 to i32
      %31 = arith.cmpi ult, %5, %c4 : index
      %32 = arith.andi %24, %c63_i32 : i32
      %33 = arith.andi %27, %c15_i32 : i32
      %34 = arith.shrui %30, %c6_i32 : i32
      %35 = arith.andi %34, %c3_i32 : i32
      %36 = arith.shli %35, %c4_i32 : i32
      %37 = arith.ori %33, %36 : i32
      %38 = arith.select %31, %32, %37 : i32
      %39 = arith.andi %27, %c63_i32 : i32
      %40 = arith.shrui %27, %c4_i32 : i32
      %41 = arith.andi %40, %c15_i32 : i32
      %42 = arith.shrui %24, %c6_i32 : i32
      %43 = arith.andi %42, %c3_i32 : i32
      %44 = arith.shli %43, %c4_i32 : i32
      %45 = arith.ori %41, %44 : i32
      %46 = arith.select %31, %39, %45 : i32
      %47 = memref.load %arg1[%0, %3] : memref<5x144xi8>
      %48 = arith.extui %47 : i8 to i32
      %49 = arith.addi %3, %c1 : index
      %50 = memref.load %arg1[%0, %49] : memref<5x144xi8>
      %51 = arith.extui %50 : i8 to i32
      %52 = arith.shli %51, %c8_i32 : i32
      %53 = arith.ori %48, %52 : i32
      %54 = arith.trunci %53 : i32 to i16
      %55 = arith.bitcast %54 : i16 to f16
      %56 = arith.extf %55 : f16 to f32
      %57 = arith.sitofp %38 : i32 to f32
      %58 = arith.mulf %56, %57 : f32
      %59 = arith.sitofp %18 : i32 to f32
      %60 = arith.mulf %58, %59 : f32
      %61 = arith.addi %3, %c2 : index
      %62 = memref.load %arg1[%0, %61] : memref<5x144xi8>
      %63 = arith.extui %62 : i8 to i32
      %64 = arith.addi %3, %c3 : index
      %65 = memref.load %arg1[%0, %64] : memref<5x144xi8>
      %66 = arith.extui %65 : i8 to i32
      %67 = arith.shli %66, %c8_i32 : i32
      %68 = arith.ori %63, %67 : i32
      %69 = arith.trunci %68 : i32 to i16
      %70 = arith.bitcast %69 : i16 to f16
      %71 = arith.extf %70 : f16 to f32
      %72 = arith.sitofp %46 : i32 to f32
      %73 = arith.mulf %71, %72 : f32
      %74 = arith.subf %60, %73 : f32
      %75 = arith.mulf %in, %74 : f32
      %76 = arith.addf %out, %75 : f32
      linalg.yield %76 : f32
    }
    return
  }
}
