// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s
// The matmul rule's tensor-core route (f16_gemm = 2, mma.py) on the cuda defaults: M, N >= 32
// take a launch of 2 x 2 warps (128 threads), A's 64 x 32 and B's 32 x 64 f16 blocks staged in
// two halves each of padded rows (2 x 64 x 40 and 2 x 32 x 72 elements): the first block
// before the K loop (128-bit vector loads where the chunk is inside, a barrier), then per K
// block the next block's loads, two 16-deep steps of ldmatrix x4 (A) / x4.trans (B) and
// 2 x 4 mma.sync, the stores into the other half and one barrier. bf16 (batched, 1 x 2 warps,
// K blocks of 16: 64 threads) builds nvvm.mma.sync on i32 words of two bf16.

// CHECK-LABEL: func.func private @mm_f16(
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SA:.*]] : memref<5120xf16, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<4608xf16, #gpu.address_space<workgroup>>)
// CHECK-COUNT-2: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x?xf16>, vector<8xf16>
// CHECK-COUNT-2: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<?x?xf16>, vector<8xf16>
// CHECK-COUNT-2: vector.store %{{.*}}, %[[SA]][%{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-2: vector.store %{{.*}}, %[[SB]][%{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK-COUNT-2: vector.load %arg0
// CHECK-COUNT-2: vector.load %arg1
// CHECK-COUNT-2: nvgpu.ldmatrix %[[SA]][%{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvgpu.ldmatrix %[[SB]][%{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-8: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-2: nvgpu.ldmatrix %[[SA]]
// CHECK-COUNT-2: nvgpu.ldmatrix %[[SB]]
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK-COUNT-2: vector.store %{{.*}}, %[[SA]]
// CHECK-COUNT-2: vector.store %{{.*}}, %[[SB]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK: } else {
// CHECK-NOT: nvgpu

// CHECK-LABEL: func.func private @mm_bf16(
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads({{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SA:.*]] : memref<1536xbf16, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<2304xbf16, #gpu.address_space<workgroup>>)
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x?xbf16>, vector<8xbf16>
// CHECK: scf.for
// CHECK-COUNT-2: nvgpu.ldmatrix %[[SA]][%{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<1536xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-2: nvgpu.ldmatrix %[[SB]][%{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK-COUNT-8: nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  B[%{{.*}}, %{{.*}}]  C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT: mma.sync
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x?xbf16>
// CHECK-NOT: nvgpu

func.func private @mm_f16(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.schedule_config = {f16_gemm = 2 : i64}} {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%c : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf16>, memref<?x?xf16>) outs(%c : memref<?x?xf32>)
  return
}

func.func private @mm_bf16(%a: memref<?x?x?xbf16>, %b: memref<?x?x?xbf16>, %c: memref<?x?x?xbf16>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable",
                relax.schedule_config = {f16_gemm = 2 : i64, tc_warps_m = 1 : i64, tc_tile_k = 16 : i64}} {
  linalg.batch_matmul ins(%a, %b : memref<?x?x?xbf16>, memref<?x?x?xbf16>) outs(%c : memref<?x?x?xbf16>)
  return
}
