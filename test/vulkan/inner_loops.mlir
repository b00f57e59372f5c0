// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-sequential-inner-loops)' | FileCheck %s
// A parallel loop perfectly nested under another through scf.for loops (a reduction
// between parallel dims) joins the outer one: a thread per output element, the reduction
// serial in it. Any other nested parallel loop becomes nested scf.for loops run by the
// outer loop's thread. The outermost parallel loop lists its innermost dimension first.

// CHECK-LABEL: func.func @sum_axis1(
// CHECK: scf.parallel (%[[J:.*]], %[[A:.*]]) = (%c0, %c0) to (%c4, %[[NA:.*]]) step (%c1, %c1) {
// CHECK-NEXT: scf.for %[[N:.*]] = %c0 to %[[NN:.*]] step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[A]], %[[N]], %[[J]]]
// CHECK-NEXT: memref.load %arg1[%[[A]], %[[J]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %arg1[%[[A]], %[[J]]]
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
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

// Two reductions between three parallel dims (iterators p, r, p, r, p): all three
// parallel dims join, both reductions stay serial, in their order.
// CHECK-LABEL: func.func @two_reductions(
// CHECK: scf.parallel (%[[K:.*]], %[[I:.*]], %[[A:.*]]) = (%c0, %c0, %c0) to (%c3, %c2, %{{.*}}) step (%c1, %c1, %c1) {
// CHECK-NEXT: scf.for %[[R:.*]] = %c0 to %c5 step %c1 {
// CHECK-NEXT: scf.for %[[S:.*]] = %c0 to %c7 step %c1 {
// CHECK-NEXT: memref.load %arg0[%[[A]], %[[R]], %[[I]], %[[S]], %[[K]]]
// CHECK-NOT: scf.parallel
func.func @two_reductions(%x: memref<?x5x2x7x3xf32>, %y: memref<?x2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %na = memref.dim %x, %c0 : memref<?x5x2x7x3xf32>
  scf.parallel (%a) = (%c0) to (%na) step (%c1) {
    scf.for %r = %c0 to %c5 step %c1 {
      scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
        scf.for %s = %c0 to %c7 step %c1 {
          scf.parallel (%k) = (%c0) to (%c3) step (%c1) {
            %v = memref.load %x[%a, %r, %i, %s, %k] : memref<?x5x2x7x3xf32>
            %acc = memref.load %y[%a, %i, %k] : memref<?x2x3xf32>
            %t = arith.addf %v, %acc : f32
            memref.store %t, %y[%a, %i, %k] : memref<?x2x3xf32>
            scf.reduce
          }
        }
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// Not a perfect nest (a store next to the loop): the inner parallel loop runs serially in
// the outer loop's thread.
// CHECK-LABEL: func.func @not_perfect(
// CHECK: scf.parallel (%[[A:.*]]) = (%c0) to (%{{.*}}) step (%c1) {
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.for %[[N:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NOT: scf.parallel
func.func @not_perfect(%x: memref<?x?x4xf32>, %y: memref<?x4xf32>, %z: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %na = memref.dim %x, %c0 : memref<?x?x4xf32>
  %nn = memref.dim %x, %c1 : memref<?x?x4xf32>
  scf.parallel (%a) = (%c0) to (%na) step (%c1) {
    memref.store %zero, %z[%a] : memref<?xf32>
    scf.for %n = %c0 to %nn step %c1 {
      scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
        %v = memref.load %x[%a, %n, %j] : memref<?x?x4xf32>
        memref.store %v, %y[%a, %j] : memref<?x4xf32>
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
