// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512}, one-shot-bufferize{bufferize-function-boundaries=true function-boundary-type-conversion=identity-layout-map}, canonicalize, cse, convert-vector-to-scf{full-unroll=true target-rank=1}, relax-prefetch)' | FileCheck %s

// The matmul schedule marks its kernel relax.prefetch = 4 (MatmulConfig.prefetch). B read
// in place (rows 8 KB apart: the hardware prefetcher does not follow a stride of a page
// or more): the register-tiled k loop prefetches the row of B it will read 4 k steps
// later, one memref.prefetch per cache line of the 64-float row (4), at k + 4 of the same
// view. A's scalars (less than a line per step) are not prefetched.
// CHECK-LABEL: func.func private @mm
// CHECK-SAME: relax.prefetch = 4 : i64
// CHECK: scf.for %[[K:.*]] = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK: %[[B:.*]] = memref.subview %[[PANEL:.*]][%[[K]], 0] [1, 64] [1, 1]
// CHECK-NOT: memref.prefetch
// CHECK: %[[AHEAD:.*]] = arith.addi %[[K]], %c4{{.*}} : index
// CHECK: %[[NEXT:.*]] = memref.subview %[[PANEL]][%[[AHEAD]], 0] [1, 64] [1, 1]
// CHECK: memref.prefetch %[[NEXT]][%c0, %c0], read, locality<3>, data : memref<1x64xf32, strided<[2048, 1], offset: ?>>
// CHECK: memref.prefetch %[[NEXT]][%c0, %c16{{.*}}], read, locality<3>, data
// CHECK: memref.prefetch %[[NEXT]][%c0, %c32{{.*}}], read, locality<3>, data
// CHECK: memref.prefetch %[[NEXT]][%c0, %c48{{.*}}], read, locality<3>, data
// CHECK-NEXT: vector.transfer_read %[[B]][%c0, %c0]{{.*}} : memref<1x64xf32, strided<[2048, 1], offset: ?>>, vector<64xf32>
// CHECK-COUNT-6: vector.fma
// The 1-row remainder tiles (256 columns): 16 lines per k step.
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<1x256xf32>)
// CHECK-COUNT-16: memref.prefetch
// CHECK: vector.transfer_read {{.*}} vector<256xf32>
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// -----

// Large M, B packed: the packed micro-panel's rows are adjacent (512 x 64, contiguous),
// which the hardware prefetcher follows: no prefetch there (measured neutral to slower).
// The 1-row remainder reads the packed micro-panel as well: no prefetch either. Only the
// packing copy, which reads B in place 8 rows per step, prefetches.
// CHECK-LABEL: func.func private @mm_packed
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c8
// CHECK-COUNT-8: memref.prefetch
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args({{.*}}) -> (vector<1x64xf32>)
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func private @mm_packed(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.range = {m_min = 128 : i64}} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// -----

// The GEMV schedule (M <= 3) is not marked: no prefetch.
// CHECK-LABEL: func.func private @gemv
// CHECK-NOT: relax.prefetch
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func private @gemv(%a: tensor<1x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<1x2048xf32>) -> tensor<1x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<1x2048xf32>) -> tensor<1x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<1x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<1x2048xf32>) -> tensor<1x2048xf32>
  return %1 : tensor<1x2048xf32>
}
