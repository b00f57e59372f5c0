// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-emulate-mma)' | FileCheck %s

// mma.sync m16n8k16 (f16 x f16 -> f32), 2 warps: a 384-float slice per warp (A 16 x 16, B
// 16 x 8); each lane stores its 8 A and 4 B elements (PTX layout: A rows g, g + 8, columns
// 2t, 2t + 1, + 8; B K-major, column g), barrier, sums its 4 accumulators over K = 16 (rows
// g, g + 8 of A; columns 2t, 2t + 1 of B), barrier. The fragment vectors become scalars.

// CHECK-LABEL: gpu.func @mma
// CHECK-SAME:  workgroup(%[[S:.*]] : memref<768xf32, #gpu.address_space<workgroup>>)
// CHECK-DAG:   %[[C384:.*]] = arith.constant 384 : index
// CHECK-DAG:   %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:   %[[C32:.*]] = arith.constant 32 : index
// CHECK:       %[[TID:.*]] = gpu.thread_id x
// CHECK:       %[[LANE:.*]] = arith.remui %[[TID]], %[[C32]]
// CHECK:       %[[WARP:.*]] = arith.divui %[[TID]], %[[C32]]
// CHECK:       %[[BASE:.*]] = arith.muli %[[WARP]], %[[C384]]
// CHECK:       %[[G:.*]] = arith.divui %[[LANE]], %[[C4]]
// CHECK:       %[[T:.*]] = arith.remui %[[LANE]], %[[C4]]
// A: base + 16 g + 2 t, then + 1, + 128 (row g + 8), + 129, + 8 (column + 8), + 9, + 136, + 137
// CHECK:       %[[G16:.*]] = arith.muli %[[G]], %c16
// CHECK:       %[[A0:.*]] = arith.addi %[[BASE]], %[[G16]]
// CHECK:       %[[T2:.*]] = arith.muli %[[T]], %c2
// CHECK:       %[[A:.*]] = arith.addi %[[A0]], %[[T2]]
// CHECK:       %[[X0:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK:       memref.store %[[X0]], %[[S]][%[[A]]]
// CHECK:       arith.addi %[[A]], %c1
// CHECK:       arith.addi %[[A]], %c128
// CHECK:       arith.addi %[[A]], %c129
// CHECK:       arith.addi %[[A]], %c8
// CHECK:       arith.addi %[[A]], %c9
// CHECK:       arith.addi %[[A]], %c136
// CHECK:       arith.addi %[[A]], %c137
// B (k = 2t + e (+ 8), n = g) at 256 + 8 k + n: base + 16 t + g, then + 256, + 264, + 320, + 328
// CHECK:       %[[T16:.*]] = arith.muli %[[T]], %c16
// CHECK:       %[[B0:.*]] = arith.addi %[[BASE]], %[[T16]]
// CHECK:       %[[B:.*]] = arith.addi %[[B0]], %[[G]]
// CHECK:       arith.addi %[[B]], %c256
// CHECK:       arith.addi %[[B]], %c264
// CHECK:       arith.addi %[[B]], %c320
// CHECK:       arith.addi %[[B]], %c328
// CHECK:       gpu.barrier
// CHECK:       %[[R:.*]]:4 = scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args(%{{.*}} = %[[Z:.*]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]]) -> (f32, f32, f32, f32)
// CHECK:         %[[KN:.*]] = arith.muli %[[K]], %c8
// CHECK:         memref.load %[[S]]
// CHECK:         memref.load %[[S]]
// CHECK:         arith.mulf
// CHECK:         arith.addf
// CHECK:         scf.yield
// CHECK:       gpu.barrier
// CHECK:       memref.store %[[R]]#2, %arg2
// CHECK-NOT:   nvgpu
// CHECK-NOT:   vector<
gpu.module @m {
  gpu.func @mma(%a: memref<?xf16>, %b: memref<?xf16>, %c: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %fa = vector.load %a[%c0] : memref<?xf16>, vector<8xf16>
    %ra = vector.shape_cast %fa : vector<8xf16> to vector<4x2xf16>
    %x0 = memref.load %b[%tid] : memref<?xf16>
    %fb = vector.broadcast %x0 : f16 to vector<2x2xf16>
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync (%ra, %fb, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %d[1, 0] : f32 from vector<2x2xf32>
    memref.store %e, %c[%tid] : memref<?xf32>
    gpu.return
  }
}

// -----

// ldmatrix x4 (no transpose) and x2.trans from workgroup memory, 1 warp: lanes below 8 x tiles
// copy the 8 halves their address points at into their row of the slice (as f32); after a
// barrier each lane reads row g, columns 2t, 2t + 1 of each tile (transposed: rows 2t, 2t + 1,
// column g), then a barrier. A 2-D block size counts x * y invocations.

// CHECK-LABEL: gpu.func @ldmatrix
// CHECK-SAME:  workgroup(%{{.*}} : memref<16x16xf16, #gpu.address_space<workgroup>>, %[[S:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK:       %[[X:.*]] = gpu.thread_id x
// CHECK:       %[[Y:.*]] = gpu.thread_id y
// CHECK:       %[[Z:.*]] = gpu.thread_id z
// CHECK:       %[[Y8:.*]] = arith.muli %[[Y]], %c8
// CHECK:       %[[XY:.*]] = arith.addi %[[X]], %[[Y8]]
// CHECK:       %[[Z32:.*]] = arith.muli %[[Z]], %c32
// CHECK:       %[[TID:.*]] = arith.addi %[[XY]], %[[Z32]]
// CHECK:       %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK:       %[[ALL:.*]] = arith.cmpi ult, %[[LANE]], %c32
// CHECK:       scf.if %[[ALL]] {
// CHECK-COUNT-8: memref.load %arg3[%arg0, %{{.*}}] : memref<16x16xf16
// CHECK:       }
// CHECK:       gpu.barrier
// CHECK-COUNT-8: memref.load %[[S]]
// CHECK:       gpu.barrier
// CHECK:       %[[HALF:.*]] = arith.cmpi ult, %[[LANE]], %c16
// CHECK:       scf.if %[[HALF]] {
// CHECK:       gpu.barrier
// CHECK-COUNT-4: memref.load %[[S]]
// CHECK:       gpu.barrier
// CHECK-NOT:   nvgpu
gpu.module @m {
  gpu.func @ldmatrix(%i: index, %j: index, %out: memref<?xf16>) workgroup(%sm: memref<16x16xf16, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 8, 4, 1>} {
    %a = nvgpu.ldmatrix %sm[%i, %j] {numTiles = 4 : i32, transpose = false} : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    %b = nvgpu.ldmatrix %sm[%i, %j] {numTiles = 2 : i32, transpose = true} : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
    %x = vector.extract %a[3, 1] : f16 from vector<4x2xf16>
    %y = vector.extract %b[1, 0] : f16 from vector<2x2xf16>
    %s = arith.addf %x, %y : f16
    memref.store %s, %out[%i] : memref<?xf16>
    gpu.return
  }
}

// -----

// The accumulator carried by an scf.for (uniform bounds: kernel arguments) becomes 4 scalars;
// the select after the loop, elementwise, one per element; f16 accumulators are summed in f32
// and rounded once.

// CHECK-LABEL: gpu.func @loop
// CHECK:       %[[L:.*]]:4 = scf.for %{{.*}} = %arg0 to %arg1 step %arg2 iter_args({{.*}}) -> (f16, f16, f16, f16)
// CHECK:         arith.extf %{{.*}} : f16 to f32
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK-COUNT-4: arith.truncf %{{.*}} : f32 to f16
// CHECK:         scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f16, f16, f16, f16
// CHECK:       arith.select %{{.*}}, %[[L]]#0, %{{.*}} : f16
// CHECK-COUNT-3: arith.select
// CHECK-NOT:   vector<
gpu.module @m {
  gpu.func @loop(%lb: index, %ub: index, %st: index, %fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %ok: i1, %out: memref<?xf16>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %z = arith.constant dense<0.0> : vector<2x2xf16>
    %r = scf.for %k = %lb to %ub step %st iter_args(%acc = %z) -> (vector<2x2xf16>) {
      %d = nvgpu.mma.sync (%fa, %fb, %acc) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
      scf.yield %d : vector<2x2xf16>
    }
    %s = arith.select %ok, %r, %z : vector<2x2xf16>
    %e = vector.extract %s[0, 1] : f16 from vector<2x2xf16>
    %c0 = arith.constant 0 : index
    memref.store %e, %out[%c0] : memref<?xf16>
    gpu.return
  }
}

// -----

// tf32 (m16n8k8): A and B rounded as cvt.rna.tf32.f32 (bits + 0x1000, low 13 bits cleared; NaN
// kept) when stored; a 192-float slice (A 16 x 8, B 8 x 8); sums over K = 8.

// CHECK-LABEL: gpu.func @tf32
// CHECK-SAME:  workgroup(%[[S:.*]] : memref<192xf32, #gpu.address_space<workgroup>>)
// CHECK:       %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK:       %[[UP:.*]] = arith.addi %[[BITS]], %c4096_i32
// CHECK:       %[[CUT:.*]] = arith.andi %[[UP]], %c-8192_i32
// CHECK:       %[[R:.*]] = arith.bitcast %[[CUT]] : i32 to f32
// CHECK:       %[[NAN:.*]] = arith.cmpf uno
// CHECK:       %[[V:.*]] = arith.select %[[NAN]], %{{.*}}, %[[R]] : f32
// CHECK:       memref.store %[[V]], %[[S]]
// CHECK:       scf.for %{{.*}} = %c0 to %c8 step %c1
gpu.module @m {
  gpu.func @tf32(%fa: vector<4x1xf32>, %fb: vector<2x1xf32>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync (%fa, %fb, %z) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
    %c0 = arith.constant 0 : index
    memref.store %e, %out[%c0] : memref<?xf32>
    gpu.return
  }
}

// -----

// cvt.rna.tf32.f32 (what the TF32 route applies before mma.sync) as the same rounding on the
// bits, in a kernel without matrix ops too (no exchange, no workgroup buffer).

// CHECK-LABEL: gpu.func @cvt
// CHECK-NOT:   workgroup(
// CHECK:       %[[BITS:.*]] = arith.bitcast %arg0 : f32 to i32
// CHECK:       arith.addi %[[BITS]], %c4096_i32
// CHECK:       %[[V:.*]] = arith.select
// CHECK:       %[[I:.*]] = arith.bitcast %[[V]] : f32 to i32
// CHECK:       memref.store %[[I]], %arg1
// CHECK-NOT:   nvvm
gpu.module @m {
  gpu.func @cvt(%x: f32, %o: memref<?xi32>) kernel {
    %r = nvvm.convert.float.to.tf32 %x {rnd = #nvvm.fp_rnd_mode<rna>}
    %c0 = arith.constant 0 : index
    memref.store %r, %o[%c0] : memref<?xi32>
    gpu.return
  }
}
