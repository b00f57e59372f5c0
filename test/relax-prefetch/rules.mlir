// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-prefetch)' | FileCheck %s

// What relax-prefetch touches: loops carrying a vector (a register accumulator) in a
// kernel marked relax.prefetch = D; in them, 1-D reads of at least a cache line whose
// address depends on the induction variable and whose rows are not adjacent in memory.

// A symbolic step: D * step ahead. The row index comes from an index computation in the
// loop body (cloned at the shifted iteration). The loop-invariant read, the read of less
// than a line and the read of contiguous rows get nothing.
// CHECK-LABEL: func.func private @k
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[S:.*]] iter_args
// CHECK-NEXT: %[[R:.*]] = affine.apply #{{.*}}(%[[I]])
// CHECK-NEXT: vector.transfer_read %arg1[%c0, %c0]
// CHECK-NEXT: vector.transfer_read %arg0[%[[R]], %c0]{{.*}} vector<4xf32>
// CHECK-NEXT: vector.transfer_read %arg2[%[[R]], %c0]{{.*}} vector<32xf32>
// CHECK: %[[D:.*]] = arith.muli %[[S]], %c2{{.*}} : index
// CHECK-NEXT: %[[J:.*]] = arith.addi %[[I]], %[[D]] : index
// CHECK-NEXT: %[[RJ:.*]] = affine.apply #{{.*}}(%[[J]])
// CHECK-NEXT: memref.prefetch %arg0[%[[RJ]], %c0], read, locality<3>, data : memref<?x1024xf32>
// CHECK: memref.prefetch %arg0[%[[RJ]], %c16{{.*}}], read, locality<3>, data : memref<?x1024xf32>
// CHECK-NEXT: vector.transfer_read %arg0[%[[R]], %c0]{{.*}} vector<32xf32>
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func private @k(%a: memref<?x1024xf32>, %inv: memref<8x32xf32>, %packed: memref<?x32xf32>, %n: index, %s: index)
    -> vector<32xf32> attributes {relax.kernel, relax.prefetch = 2 : i64} {
  %c0 = arith.constant 0 : index
  %f0 = arith.constant 0.0 : f32
  %z = arith.constant dense<0.0> : vector<32xf32>
  %r = scf.for %i = %c0 to %n step %s iter_args(%acc = %z) -> (vector<32xf32>) {
    %row = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %v0 = vector.transfer_read %inv[%c0, %c0], %f0 {in_bounds = [true]} : memref<8x32xf32>, vector<32xf32>
    %v1 = vector.transfer_read %a[%row, %c0], %f0 {in_bounds = [true]} : memref<?x1024xf32>, vector<4xf32>
    %v2 = vector.transfer_read %packed[%row, %c0], %f0 {in_bounds = [true]} : memref<?x32xf32>, vector<32xf32>
    %v3 = vector.transfer_read %a[%row, %c0], %f0 {in_bounds = [true]} : memref<?x1024xf32>, vector<32xf32>
    %s0 = arith.addf %acc, %v0 : vector<32xf32>
    %s2 = arith.addf %s0, %v2 : vector<32xf32>
    %s3 = arith.addf %s2, %v3 : vector<32xf32>
    scf.yield %s3 : vector<32xf32>
  }
  return %r : vector<32xf32>
}

// Not marked: untouched.
// CHECK-LABEL: func.func private @unmarked
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func private @unmarked(%a: memref<?x1024xf32>, %n: index) -> vector<32xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f0 = arith.constant 0.0 : f32
  %z = arith.constant dense<0.0> : vector<32xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (vector<32xf32>) {
    %v = vector.transfer_read %a[%i, %c0], %f0 {in_bounds = [true]} : memref<?x1024xf32>, vector<32xf32>
    %s = arith.addf %acc, %v : vector<32xf32>
    scf.yield %s : vector<32xf32>
  }
  return %r : vector<32xf32>
}

// A read along a column (not the innermost dim): not a row, no prefetch.
// CHECK-LABEL: func.func private @column
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func private @column(%a: memref<1024x?xf32>, %n: index) -> vector<32xf32> attributes {relax.kernel, relax.prefetch = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f0 = arith.constant 0.0 : f32
  %z = arith.constant dense<0.0> : vector<32xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (vector<32xf32>) {
    %v = vector.transfer_read %a[%c0, %i], %f0 {in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<1024x?xf32>, vector<32xf32>
    %s = arith.addf %acc, %v : vector<32xf32>
    scf.yield %s : vector<32xf32>
  }
  return %r : vector<32xf32>
}

// The packing copy (vector transfers only): its strided rows are prefetched one whole
// iteration (8 rows) ahead, though D = 4; the writes are not prefetched.
// CHECK-LABEL: func.func private @copy
// CHECK: scf.for %[[I:.*]] = %c0 to %{{.*}} step %c8
// CHECK: %[[J:.*]] = arith.addi %[[I]], %c8{{.*}} : index
// CHECK-NEXT: memref.prefetch %arg0[%[[J]], %c0], read
// CHECK: memref.prefetch %arg0[%[[J]], %c16{{.*}}], read
// CHECK-NEXT: vector.transfer_read %arg0[%[[I]], %c0]
// CHECK-NEXT: vector.transfer_write
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func private @copy(%b: memref<?x2048xf32>, %p: memref<?x32xf32>, %n: index) attributes {relax.kernel, relax.prefetch = 4 : i64} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %f0 = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c8 {
    %v = vector.transfer_read %b[%i, %c0], %f0 {in_bounds = [true]} : memref<?x2048xf32>, vector<32xf32>
    vector.transfer_write %v, %p[%i, %c0] {in_bounds = [true]} : vector<32xf32>, memref<?x32xf32>
  }
  return
}
