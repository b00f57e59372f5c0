// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{enable=false})' | FileCheck %s --check-prefix=OFF
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx2})' | FileCheck %s --check-prefix=AVX2
// RUN: not relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=vax})' 2>&1 | FileCheck %s --check-prefix=BAD

// AVX2 (16 ymm registers): 6 x 16 register tiles (12 accumulators), 32-wide GEMV rows.
// AVX2-LABEL: func.func private @mm
// AVX2: scf.for %{{.*}} = %c0 to %c256 step %c16
// AVX2: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<6x16xf32>)
// AVX2-COUNT-6: vector.fma {{.*}} : vector<16xf32>
// AVX2: iter_args({{.*}}) -> (vector<1x32xf32>)
// BAD: unknown schedule target 'vax' (host, avx512, avx2, sse, neon)

// Symbolic M, static K and N: 6-row register tiles over N panels of 256 (an scf.forall:
// the panels are independent; OpenMP threads, their count read at run time) and K blocks of
// 128, the M loop peeled (the remainder runs 1-row tiles), the 6x64 accumulator carried
// in registers across the k loop (hoisted out of it), FMAs of a broadcast A element and
// a 64-wide row of B. The fill of C is fused into the panel loop: each thread zeroes its
// panel, row by row in 256-wide vector stores.
// CHECK-LABEL: func.func private @mm
// CHECK-SAME: relax.schedule = "matmul"
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%{{.*}}) in (8) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: vector.transfer_write %{{.*}} : vector<1x256xf32>, tensor<1x256xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c128
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c6
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK: vector.transfer_read {{.*}} : tensor<6x64xf32>, vector<6x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<6x1xf32>, vector<6x1xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x64xf32>, vector<1x64xf32>
// CHECK-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// CHECK: scf.yield
// CHECK: vector.transfer_write {{.*}} : vector<6x64xf32>, tensor<6x64xf32>
// The remainder rows (and M = 1, GEMV): one row at a time, 256 columns wide (16 FMA
// chains per k step: a 1-row tile is bound by loads of B, not by FMA latency).
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c6
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<1x256xf32>)
// CHECK: vector.fma {{.*}} : vector<256xf32>
// OFF-NOT: relax.schedule
// OFF: linalg.matmul
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// Large M (a relax-specialize-ranges variant for M >= 40): B is packed the BLAS way. Per
// K block (here all 512 rows) the panel's B is copied once, by a vectorized loop of 8x64
// transfers, into 64-column micro-panels (4 x 512 x 64, each contiguous); the column tiles
// then run outside the row tiles, so each micro-panel serves every 6-row register tile in
// turn (the 6x64 accumulator, 6 broadcasts and 6 FMAs of a 64-wide packed row per k step),
// and then the M mod 6 remainder rows, one at a time on the same packed micro-panel.
// CHECK-LABEL: func.func private @mm_packed
// CHECK-SAME: relax.schedule = "matmul"
// CHECK: scf.forall (%{{.*}}) in (8) shared_outs
// CHECK: vector.transfer_write %{{.*}} : vector<1x256xf32>, tensor<?x256xf32>
// CHECK: %[[P0:.*]] = tensor.empty() : tensor<4x512x64xf32>
// CHECK: %[[P:.*]] = scf.for %{{.*}} = %c0 to %c256 step %c64 iter_args(%{{.*}} = %[[P0]]) -> (tensor<4x512x64xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
// CHECK: vector.transfer_read %arg1[{{.*}}], %{{.*}} {in_bounds = [true, true]} : tensor<512x2048xf32>, vector<8x64xf32>
// CHECK: vector.transfer_write {{.*}} : vector<8x64xf32>, tensor<512x64xf32>
// CHECK: tensor.insert_slice {{.*}} [1, 512, 64] [1, 1, 1] : tensor<512x64xf32> into tensor<4x512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK: %[[MP:.*]] = tensor.extract_slice %[[P]][{{.*}}, 0, 0] [1, 512, 64] [1, 1, 1] : tensor<4x512x64xf32> to tensor<512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c6
// CHECK: scf.for %[[K6:.*]] = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK: tensor.extract_slice %[[MP]][%[[K6]], 0] [1, 64] [1, 1] : tensor<512x64xf32> to tensor<1x64xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<6x1xf32>, vector<6x1xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x64xf32>, vector<1x64xf32>
// CHECK-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c6
// CHECK: scf.for %[[K1:.*]] = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<1x64xf32>)
// CHECK: tensor.extract_slice %[[MP]][%[[K1]], 0] [1, 64] [1, 1] : tensor<512x64xf32> to tensor<1x64xf32>
// CHECK: vector.fma {{.*}} : vector<64xf32>
func.func private @mm_packed(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.range = {m_min = 128 : i64}} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// The same range with B's rows 2 KB apart (N = 512, K = 2048): packed as well, per K block
// of 512 rows (four blocks, each packed once into 4 x 512 x 64 micro-panels).
// CHECK-LABEL: func.func private @mm_packed_n512
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %c2048 step %c512
// CHECK: tensor.empty() : tensor<4x512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c6
// CHECK: iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK: iter_args({{.*}}) -> (vector<1x64xf32>)
func.func private @mm_packed_n512(%a: tensor<?x2048xf32>, %b: tensor<2048x512xf32>, %c: tensor<?x512xf32>) -> tensor<?x512xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.range = {m_min = 128 : i64}} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x512xf32>) -> tensor<?x512xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x2048xf32>, tensor<2048x512xf32>) outs(%0 : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %1 : tensor<?x512xf32>
}

// Large M with N and K symbolic: B is packed as well (its row stride is unknown at compile
// time). K is split into full blocks of 512 (peeled: static 512 x 64 micro-panels, packed
// as above, read by the 6-row tiles and the remainder rows) and the last, partial block,
// which reads B in place with the unpacked tiles (6 x 64 and 1 x 64). The symbolic column
// remainder (N mod 64 columns of the last panel) runs, B in place, a 32-column tile (peeled
// again; its transfers masked all the same, by an all-true mask: with create_named_contraction
// MLIR 22 masks every transfer of a dynamic-shaped operand, assume_dynamic_dims_match_vec_sizes
// or not) and masked 16-column tiles.
// The packed panel is allocated once per N panel (LICM), refilled per K block.
// CHECK-LABEL: func.func private @mm_dyn_packed
// CHECK-SAME: relax.schedule = "matmul"
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// CHECK: tensor.empty() : tensor<4x512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c512
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
// CHECK: vector.transfer_read %arg1[{{.*}}], %{{.*}} {in_bounds = [true, true]} : tensor<?x?xf32>, vector<8x64xf32>
// CHECK: tensor.insert_slice {{.*}} [1, 512, 64] [1, 1, 1] : tensor<512x64xf32> into tensor<4x512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c6
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<1x64xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x32xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x16xf32>)
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %{{.*}} step %c512
// CHECK-NOT: tensor.empty
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// CHECK: iter_args({{.*}}) -> (vector<1x64xf32>)
// CHECK: return
func.func private @mm_dyn_packed(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.range = {m_min = 128 : i64}} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%0 : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// Fully symbolic sizes: the column loop is peeled as well: 64-wide tiles, then the last
// N mod 64 columns of the last panel in 16-wide (one register) masked tiles. The masks are
// made once per tile, outside the k loop, where the accumulator's masked read and write
// are hoisted too; per k step only B's row is a masked read, and the FMAs are unmasked (a
// masked contraction lowers to an FMA and a select per vector). The fill of C is fused
// into the panel loop: each thread zeroes its panel row by row in 256-wide vector stores,
// masked for the last panel (no scalar store loop, no memset).
// CHECK-LABEL: func.func private @mm_dyn(
// CHECK-SAME: relax.schedule = "matmul"
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// CHECK: %[[PANEL:.*]] = affine.min
// CHECK: %[[FM:.*]] = vector.create_mask %[[PANEL]] : vector<256xi1>
// CHECK: %[[FM2:.*]] = vector.broadcast %[[FM]] : vector<256xi1> to vector<1x256xi1>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c0, %c0], %[[FM2]] {in_bounds = [true, true]} : vector<1x256xf32>, tensor<1x?xf32>
// CHECK: scf.for %{{.*}} step %c128
// CHECK: iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK: vector.fma {{.*}} : vector<64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c16
// CHECK: %[[W:.*]] = affine.min
// CHECK: %[[M:.*]] = vector.create_mask %[[W]] : vector<16xi1>
// CHECK: %[[MB:.*]] = vector.broadcast %[[M]] : vector<16xi1> to vector<1x16xi1>
// CHECK: %[[MC:.*]] = vector.from_elements
// CHECK: %[[ACC:.*]] = vector.transfer_read %{{.*}}[%c0, %c0], %cst, %[[MC]] {in_bounds = [true, true]} : tensor<6x?xf32>, vector<6x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<6x16xf32>)
// CHECK-NOT: mask
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0], %cst {in_bounds = [true, true]} : tensor<6x1xf32>, vector<6x1xf32>
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0], %cst, %[[MB]] {in_bounds = [true, true]} : tensor<1x?xf32>, vector<1x16xf32>
// CHECK-NOT: select
// CHECK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: select
// CHECK: scf.yield
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c0, %c0], %[[MC]] {in_bounds = [true, true]} : vector<6x16xf32>, tensor<6x?xf32>
// The M mod 6 remainder rows: the same, 1 row at a time (1 x 64, then masked 1 x 16).
// CHECK: iter_args({{.*}}) -> (vector<1x64xf32>)
// CHECK: vector.create_mask %{{.*}} : vector<16xi1>
// CHECK: iter_args({{.*}}) -> (vector<1x16xf32>)
// CHECK-NOT: select
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector<1xf32>
// CHECK: return
func.func private @mm_dyn(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%0 : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// No schedule for f64 (or for kinds without one): the kernel is left as it was.
// CHECK-LABEL: func.func private @mm_f64
// CHECK-NOT: relax.schedule
// CHECK: linalg.matmul
func.func private @mm_f64(%a: tensor<?x8xf64>, %b: tensor<8x8xf64>, %c: tensor<?x8xf64>) -> tensor<?x8xf64>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f64
  %0 = linalg.fill ins(%cst : f64) outs(%c : tensor<?x8xf64>) -> tensor<?x8xf64>
  %1 = linalg.matmul ins(%a, %b : tensor<?x8xf64>, tensor<8x8xf64>) outs(%0 : tensor<?x8xf64>) -> tensor<?x8xf64>
  return %1 : tensor<?x8xf64>
}

// A fused group (matmul + bias + relu): the matmul schedule, then the elementwise one on
// the epilogue.
// CHECK-LABEL: func.func private @mm_bias_relu
// CHECK-SAME: relax.schedule = "matmul+elementwise"
// CHECK: vector.fma {{.*}} : vector<64xf32>
// CHECK: scf.forall
// CHECK: arith.addf {{.*}} : vector<1x64xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x64xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func private @mm_bias_relu(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %bias: tensor<2048xf32>, %o: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %a, %c0 : tensor<?x512xf32>
  %e = tensor.empty(%dim) : tensor<?x2048xf32>
  %0 = linalg.fill ins(%cst : f32) outs(%e : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%1, %bias : tensor<?x2048xf32>, tensor<2048xf32>) outs(%o : tensor<?x2048xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %3 = arith.addf %x, %y : f32
    %4 = arith.maximumf %3, %cst : f32
    linalg.yield %4 : f32
  } -> tensor<?x2048xf32>
  return %2 : tensor<?x2048xf32>
}

// linalg.batch_matmul (attention's products): one batch per scf.forall iteration, then
// the matmul schedule on each (here N = 64: one register-tile column, K symbolic). Each
// batch zeroes its C in the batch loop, a 64-wide vector store per row.
// CHECK-LABEL: func.func private @bmm
// CHECK-SAME: relax.schedule = "batch_matmul"
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true, true, true]} : vector<1x1x64xf32>, tensor<1x1x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c6
// CHECK: iter_args({{.*}}) -> (vector<1x6x64xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<64xf32>
func.func private @bmm(%a: tensor<4x?x?xf32>, %b: tensor<4x?x64xf32>, %c: tensor<4x?x64xf32>) -> tensor<4x?x64xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<4x?x64xf32>) -> tensor<4x?x64xf32>
  %1 = linalg.batch_matmul ins(%a, %b : tensor<4x?x?xf32>, tensor<4x?x64xf32>) outs(%0 : tensor<4x?x64xf32>) -> tensor<4x?x64xf32>
  return %1 : tensor<4x?x64xf32>
}

// A batch matmul in the large-M range (relax-specialize-ranges, M >= 40) packs B like the
// 2-D product: per batch (one scf.forall iteration) and N panel, the panel's B is copied
// once into 64-column micro-panels (4 x 1 x 512 x 64) that the 6-row tiles and the remainder
// rows read.
// CHECK-LABEL: func.func private @bmm_packed
// CHECK-SAME: relax.schedule = "batch_matmul"
// CHECK: scf.forall (%[[BT:.*]]) in (8) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c256
// CHECK: tensor.empty() : tensor<4x1x512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
// CHECK: vector.transfer_read %arg1[%[[BT]], {{.*}}], {{.*}} : tensor<8x512x512xf32>, vector<1x8x64xf32>
// CHECK: tensor.insert_slice {{.*}} [1, 1, 512, 64] [1, 1, 1, 1] : tensor<1x512x64xf32> into tensor<4x1x512x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c6
// CHECK: iter_args({{.*}}) -> (vector<1x6x64xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// CHECK: iter_args({{.*}}) -> (vector<1x1x64xf32>)
func.func private @bmm_packed(%a: tensor<8x?x512xf32>, %b: tensor<8x512x512xf32>, %c: tensor<8x?x512xf32>) -> tensor<8x?x512xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.range = {m_min = 40 : i64}} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<8x?x512xf32>) -> tensor<8x?x512xf32>
  %1 = linalg.batch_matmul ins(%a, %b : tensor<8x?x512xf32>, tensor<8x512x512xf32>) outs(%0 : tensor<8x?x512xf32>) -> tensor<8x?x512xf32>
  return %1 : tensor<8x?x512xf32>
}

// A static N that is no multiple of the 64-column register tile (1000 = 960 + 40): the
// matmul is split (structured.split) at column 960; the first 960 columns get the usual
// schedule (15 panels of 64 columns), the last 40 register tiles of exactly 32, then 8
// columns (whole registers, then the partial one) over all of K, no 1-column tiles. The
// fill of C is vectorized on its own, before both parts: per row, 256-column vector stores,
// the last (232 columns) masked.
// CHECK-LABEL: func.func private @mm_split
// CHECK-SAME: relax.schedule = "matmul"
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c1000 step %c256
// CHECK: vector.create_mask %{{.*}} : vector<256xi1>
// CHECK: vector.transfer_write {{.*}} : vector<1x256xf32>, tensor<1x?xf32>
// CHECK: scf.forall (%{{.*}}) in (15) shared_outs(%{{.*}}) -> (tensor<?x960xf32>)
// CHECK: iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK: iter_args({{.*}}) -> (vector<1x64xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%{{.*}}, 960] [1, 1] : tensor<?x960xf32> into tensor<?x1000xf32>
// CHECK: tensor.extract_slice %arg1[0, 960] [512, 40] [1, 1] : tensor<512x1000xf32> to tensor<512x40xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x32xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<1x32xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x8xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<8xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<1x8xf32>)
// CHECK-NOT: -> (vector<1x1xf32>)
// CHECK: return
func.func private @mm_split(%a: tensor<?x512xf32>, %b: tensor<512x1000xf32>, %c: tensor<?x1000xf32>) -> tensor<?x1000xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x1000xf32>) -> tensor<?x1000xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x1000xf32>) outs(%0 : tensor<?x1000xf32>) -> tensor<?x1000xf32>
  return %1 : tensor<?x1000xf32>
}

// A GEMV (M = 1) with N and K symbolic: the fill of C in 256-wide masked vector stores; per
// k block of 8 rows, A's 8 values read once (outside the column loop), 32-column tiles, then
// the last N mod 32 columns in ONE masked 32-column tile (the peeled loop's body, no loop of
// 16-wide tiles inside it) whose 8 FMAs per k block are unmasked (B's 8 rows and C read with
// the one mask).
// CHECK-LABEL: func.func private @gemv_dyn
// CHECK-SAME: relax.schedule = "gemv"
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c256
// CHECK: vector.create_mask %{{.*}} : vector<256xi1>
// CHECK: vector.transfer_write {{.*}} : vector<1x256xf32>, tensor<1x?xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// CHECK: vector.transfer_read {{.*}} : tensor<1x8xf32>, vector<1x8xf32>
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %{{.*}} step %c32
// CHECK: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK-NOT: scf.for
// CHECK: %[[M:.*]] = vector.create_mask %{{.*}} : vector<32xi1>
// CHECK: vector.transfer_read {{.*}} : tensor<8x?xf32>, vector<8x32xf32>
// CHECK: %[[MC:.*]] = vector.broadcast %[[M]] : vector<32xi1> to vector<1x32xi1>
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0], %cst, %[[MC]] {in_bounds = [true, true]} : tensor<1x?xf32>, vector<1x32xf32>
// CHECK-NOT: select
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: select
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%c0, %c0], %[[MC]] {in_bounds = [true, true]} : vector<1x32xf32>, tensor<1x?xf32>
// The last K mod 8 rows, one at a time: all columns in masked 32-column tiles (no peeled
// loop: these run once per call, not per k block).
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1x1xf32>, vector<1x1xf32>
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %{{.*}} step %c32
// CHECK: vector.create_mask %{{.*}} : vector<32xi1>
// CHECK: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: scf.for
// CHECK: return
func.func private @gemv_dyn(%a: tensor<1x?xf32>, %b: tensor<?x?xf32>, %c: tensor<1x?xf32>) -> tensor<1x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<1x?xf32>) -> tensor<1x?xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<1x?xf32>, tensor<?x?xf32>) outs(%0 : tensor<1x?xf32>) -> tensor<1x?xf32>
  return %1 : tensor<1x?xf32>
}

// Three rows (M = 3; also the M = 2-3 variant of a symbolic M): the rows loop innermost, so
// each 8 x 32 tile of B serves every row from L1 (the M = 1 order re-read B's k block per
// row: 15-28 % slower at M = 2-3, K x N = 512 x 2048 and up); the last N mod 32 columns in
// 16-wide masked tiles.
// CHECK-LABEL: func.func private @gemv3_dyn
// CHECK-SAME: relax.schedule = "gemv"
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c32
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1x8xf32>, vector<1x8xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: vector.create_mask %{{.*}} : vector<16xi1>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
func.func private @gemv3_dyn(%a: tensor<3x?xf32>, %b: tensor<?x?xf32>, %c: tensor<3x?xf32>) -> tensor<3x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<3x?xf32>) -> tensor<3x?xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<3x?xf32>, tensor<?x?xf32>) outs(%0 : tensor<3x?xf32>) -> tensor<3x?xf32>
  return %1 : tensor<3x?xf32>
}
