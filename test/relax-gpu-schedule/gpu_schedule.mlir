// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s
// The matmul rule on the cuda defaults (warps of 32, 1024 threads, 48 KiB): each matmul
// becomes a chain of routes, `if (M, N >= min_size) GEMM tiles else if (M <= gemv_rows, N a
// multiple of the lane's vector, B aligned for it) GEMV else a thread per element`, the fill
// and the epilogue folded into each. f16 data is widened to f32 where it is loaded (tiles
// staged in f32 workgroup memory; the GEMV's 128-bit vector<8xf16> loads extended: 8 columns
// per lane on cuda), summed in f32 and truncated to f16 before the epilogue. A kernel's
// relax.schedule_config overrides knobs (the tuning hook): @tuned has 2 lanes along N (16
// along K: shuffles at 2, 4, 8, 16), one subgroup per workgroup (no workgroup memory, no
// barrier) and the GEMV for M <= 1. Integer matmuls keep the fallback.

// CHECK-LABEL: func.func private @f16_linear(
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0 : memref<?x?xf16>
// CHECK: %[[N:.*]] = memref.dim %arg1, %c1 : memref<?x?xf16>
// CHECK: scf.if %{{.*}} {
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %c4{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SA:.*]] : memref<16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[A:.*]] = memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x?xf16>
// CHECK: arith.extf %[[A]] : f16 to f32
// CHECK: gpu.barrier
// CHECK: %[[T:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[BIAS:.*]] = memref.load %arg2[%{{.*}}] : memref<?xf16>
// CHECK: %[[Y:.*]] = arith.addf %[[T]], %[[BIAS]] : f16
// CHECK: memref.store %[[Y]], %arg3[%{{.*}}, %{{.*}}] : memref<?x?xf16>
// CHECK: } else {
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[M]], %c4 : index
// CHECK: %[[N8:.*]] = arith.remui %[[N]], %c8 : index
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %arg1 : memref<?x?xf16> -> index
// CHECK: arith.remui %[[PTR]], %c16 : index
// CHECK: scf.if %{{.*}} {
// CHECK: gpu.launch blocks(%{{.*}}, %[[ROW:.*]], %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %[[M]], %{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c128{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SH:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: %[[BV:.*]] = vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf16>, vector<8xf16>
// CHECK: arith.extf %[[BV]] : vector<8xf16> to vector<8xf32>
// CHECK-COUNT-8: arith.addf %{{.*}} fastmath<contract> : f32
// CHECK: scf.yield
// CHECK-COUNT-8: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK-COUNT-8: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK-COUNT-8: memref.store %{{.*}}, %[[SH]]
// CHECK: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %{{.*}}, %arg3[%[[ROW]], %{{.*}}] : memref<?x?xf16>
// CHECK: } else {
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) {
// CHECK-NOT: linalg.

// CHECK-LABEL: func.func private @tuned(
// CHECK: arith.cmpi ule, %{{.*}}, %c1 : index
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c32{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) {
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK-COUNT-4: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK-NOT: gpu.barrier
// CHECK: memref.store
// CHECK: gpu.terminator

// CHECK-LABEL: func.func private @int_matmul(
// CHECK-NEXT: linalg.matmul


#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @f16_linear(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %bias: memref<?xf16>, %out: memref<?x?xf16>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.schedule_config = {threads = 4 : i64, per_thread = 1 : i64, tile_k = 4 : i64}} {
  %cst = arith.constant 0.000000e+00 : f16
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf16>
  %n = memref.dim %b, %c1 : memref<?x?xf16>
  %t = memref.alloc(%m, %n) : memref<?x?xf16>
  linalg.fill ins(%cst : f16) outs(%t : memref<?x?xf16>)
  linalg.matmul ins(%a, %b : memref<?x?xf16>, memref<?x?xf16>) outs(%t : memref<?x?xf16>)
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<?x?xf16>, memref<?xf16>) outs(%out : memref<?x?xf16>) {
  ^bb0(%x: f16, %y: f16, %o: f16):
    %s = arith.addf %x, %y : f16
    linalg.yield %s : f16
  }
  memref.dealloc %t : memref<?x?xf16>
  return
}
func.func private @tuned(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %out: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.schedule_config = {gemv_lanes = 2 : i64, gemv_k_subgroups = 1 : i64, gemv_rows = 1 : i64, threads = 4 : i64, per_thread = 1 : i64, tile_k = 4 : i64}} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%out : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>)
  return
}
func.func private @int_matmul(%a: memref<?x?xi32>, %b: memref<?x?xi32>, %out: memref<?x?xi32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  linalg.matmul ins(%a, %b : memref<?x?xi32>, memref<?x?xi32>) outs(%out : memref<?x?xi32>)
  return
}
