// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-gpu-forward-copies)' | FileCheck %s
// A copy of a reshaped input into a fresh buffer that is only read afterwards (attention's
// q.k sum) goes away: the sum reads the reshape in place, the alloc and dealloc go too.

// CHECK-LABEL: func.func private @qk
// CHECK: %[[R:.*]] = memref.reshape %arg0
// CHECK-NOT: linalg.copy
// CHECK-NOT: memref.alloc(
// CHECK: linalg.generic {{.*}} ins(%[[R]], %arg1 : memref<?x2x1x2x16xf32>, memref<?x2x16xf32>)
// CHECK-NOT: memref.dealloc %{{.*}} : memref<?x2x1x2x16xf32>
func.func private @qk(%arg0: memref<?x4x16xf32>, %arg1: memref<?x2x16xf32>, %arg2: memref<?x2x?x2xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %cst = arith.constant 0.000000e+00 : f32
  %dim = memref.dim %arg0, %c0 : memref<?x4x16xf32>
  %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x2x1x2x16xf32>
  %shape = memref.alloc() {alignment = 64 : i64} : memref<5xindex>
  memref.store %dim, %shape[%c0] : memref<5xindex>
  memref.store %c2, %shape[%c1] : memref<5xindex>
  memref.store %c1, %shape[%c2] : memref<5xindex>
  memref.store %c2, %shape[%c3] : memref<5xindex>
  memref.store %c16, %shape[%c4] : memref<5xindex>
  %reshape = memref.reshape %arg0(%shape) : (memref<?x4x16xf32>, memref<5xindex>) -> memref<?x2x1x2x16xf32>
  linalg.copy ins(%reshape : memref<?x2x1x2x16xf32>) outs(%alloc : memref<?x2x1x2x16xf32>)
  linalg.fill ins(%cst : f32) outs(%arg2 : memref<?x2x?x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>,
                                   affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>,
                                   affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%alloc, %arg1 : memref<?x2x1x2x16xf32>, memref<?x2x16xf32>) outs(%arg2 : memref<?x2x?x2xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %0 = arith.mulf %in, %in_1 : f32
    %1 = arith.addf %0, %out : f32
    linalg.yield %1 : f32
  }
  memref.dealloc %alloc : memref<?x2x1x2x16xf32>
  memref.dealloc %shape : memref<5xindex>
  return
}

// -----

// Kept: the copy's destination is written again after the copy (by the fill), and a copy
// whose source is overwritten later (the second one: %arg0 is filled afterwards) would read
// the new values.

// CHECK-LABEL: func.func private @kept
// CHECK: linalg.copy ins(%arg0 : memref<?xf32>) outs(%[[A:.*]] : memref<?xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<?xf32>)
// CHECK: linalg.copy ins(%arg0 : memref<?xf32>) outs(%[[B:.*]] : memref<?xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg0 : memref<?xf32>)
func.func private @kept(%arg0: memref<?xf32>, %arg1: memref<?xf32>, %arg2: memref<?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 1.000000e+00 : f32
  %n = memref.dim %arg0, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.copy ins(%arg0 : memref<?xf32>) outs(%a : memref<?xf32>)
  linalg.fill ins(%cst : f32) outs(%a : memref<?xf32>)
  linalg.copy ins(%a : memref<?xf32>) outs(%arg1 : memref<?xf32>)
  %b = memref.alloc(%n) : memref<?xf32>
  linalg.copy ins(%arg0 : memref<?xf32>) outs(%b : memref<?xf32>)
  linalg.fill ins(%cst : f32) outs(%arg0 : memref<?xf32>)
  linalg.copy ins(%b : memref<?xf32>) outs(%arg2 : memref<?xf32>)
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return
}
