// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-sequential-inner-loops)' | FileCheck %s
// A parallel loop under another (a reduction between parallel dims) becomes nested
// scf.for loops run by the outer loop's thread; the outer parallel loop stays.

// CHECK-LABEL: func.func @sum_axis1(
// CHECK: scf.parallel (%[[A:.*]]) = (%c0) to (%[[NA:.*]]) step (%c1) {
// CHECK-NEXT: scf.for %[[N:.*]] = %c0 to %[[NN:.*]] step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[A]], %[[N]], %[[J]]]
// CHECK-NOT: scf.parallel
func.func @sum_axis1(%x: memref<?x?x4xf32>, %y: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %na = memref.dim %x, %c0 : memref<?x?x4xf32>
  %nn = memref.dim %x, %c1 : memref<?x?x4xf32>
  scf.parallel (%a) = (%c0) to (%na) step (%c1) {
    scf.for %n = %c0 to %nn step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        %v = memref.load %x[%a, %n, %j] : memref<?x?x4xf32>
        %acc = memref.load %y[%a, %j] : memref<?x4xf32>
        %s = arith.addf %v, %acc : f32
        memref.store %s, %y[%a, %j] : memref<?x4xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// The outermost parallel loop lists its last (contiguous) dimension first: tiling and
// mapping give it thread x.
// CHECK-LABEL: func.func @add2d(
// CHECK: scf.parallel (%[[J:.*]], %[[I:.*]]) = (%c0, %c0) to (%c4, %[[N:.*]]) step (%c1, %c1) {
// CHECK-NEXT: memref.load %arg0[%[[I]], %[[J]]]
func.func @add2d(%x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c4) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x4xf32>
    memref.store %v, %y[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  return
}
