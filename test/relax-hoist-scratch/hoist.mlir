// relax-hoist-scratch moves a loop body's alloc / dealloc pair out of the loop: around the
// omp.wsloop inside omp.parallel (one buffer per thread), out of scf.for (repeatedly), never
// when the size is computed in the loop, the buffer escapes, or its dealloc is elsewhere.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-hoist-scratch)' | FileCheck %s

// CHECK-LABEL: func.func @rows
// CHECK: omp.parallel
// CHECK-NEXT: %[[ROW:.*]] = memref.alloc(%[[N:.*]]) {alignment = 64 : i64} : memref<1x?xf32>
// CHECK-NEXT: %[[ACC:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1xf32>
// CHECK-NEXT: omp.wsloop
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK: omp.yield
// CHECK: memref.dealloc %[[ACC]]
// CHECK-NEXT: memref.dealloc %[[ROW]]
// CHECK-NEXT: omp.terminator
func.func @rows(%x: memref<?x?xf32>, %y: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %x, %c0 : memref<?x?xf32>
  %n = memref.dim %x, %c1 : memref<?x?xf32>
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%m) step (%c1) {
        %row = memref.alloc(%n) {alignment = 64 : i64} : memref<1x?xf32>
        %acc = memref.alloc() {alignment = 64 : i64} : memref<1x1xf32>
        %v = memref.load %x[%i, %c0] : memref<?x?xf32>
        memref.store %v, %row[%c0, %c0] : memref<1x?xf32>
        %sub = memref.subview %row[0, 0] [1, 1] [1, 1] : memref<1x?xf32> to memref<1x1xf32, strided<[?, 1]>>
        %w = memref.load %sub[%c0, %c0] : memref<1x1xf32, strided<[?, 1]>>
        memref.store %w, %acc[%c0, %c0] : memref<1x1xf32>
        %z = memref.load %acc[%c0, %c0] : memref<1x1xf32>
        memref.store %z, %y[%i, %c0] : memref<?x?xf32>
        memref.dealloc %row : memref<1x?xf32>
        memref.dealloc %acc : memref<1x1xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// Out of two nested scf.for loops.
// CHECK-LABEL: func.func @nested
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.dim
// CHECK-NEXT: %[[T:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK: memref.dealloc %[[T]]
// CHECK-NEXT: return
func.func @nested(%x: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %x, %c0 : memref<?x8xf32>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      %t = memref.alloc() : memref<8xf32>
      %v = memref.load %x[%i, %j] : memref<?x8xf32>
      memref.store %v, %t[%c0] : memref<8xf32>
      memref.copy %t, %t : memref<8xf32> to memref<8xf32>
      memref.dealloc %t : memref<8xf32>
    }
  }
  return
}

// Stays: its size depends on the induction variable.
// CHECK-LABEL: func.func @size_in_loop
// CHECK: scf.for %[[I:.*]] =
// CHECK-NEXT: memref.alloc(%[[I]])
// CHECK: memref.dealloc
// CHECK-NEXT: }
func.func @size_in_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloc(%i) : memref<?xf32>
    memref.dealloc %t : memref<?xf32>
  }
  return
}

// Stays: the buffer is passed to a call (it may be kept), and a second one has no dealloc
// in the loop body.
// CHECK-LABEL: func.func @escapes
// CHECK: scf.for
// CHECK-NEXT: memref.alloc()
// CHECK-NEXT: func.call @keep
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: memref.alloc()
// CHECK-NEXT: }
func.func private @keep(memref<4xf32>)
func.func @escapes(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloc() : memref<4xf32>
    func.call @keep(%t) : (memref<4xf32>) -> ()
    memref.dealloc %t : memref<4xf32>
    %u = memref.alloc() : memref<4xf32>
  }
  return
}
