// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-register-accumulators)' | FileCheck %s
// The matmul's output element is loaded once, carried through the k loop, stored once
// (only when the loop runs at all).

// CHECK-LABEL: func.func private @matmul(
// CHECK: scf.parallel (%[[J:.*]], %[[I:.*]]) =
// CHECK-NEXT: %[[RUNS:.*]] = arith.cmpi slt, %c0, %[[NK:.*]] : index
// CHECK-NEXT: scf.if %[[RUNS]] {
// CHECK-NEXT: %[[INIT:.*]] = memref.load %arg2[%[[I]], %[[J]]] : memref<?x?xf32>
// CHECK-NEXT: %[[R:.*]] = scf.for %[[K:.*]] = %c0 to %[[NK]] step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT: %[[A:.*]] = memref.load %arg0[%[[I]], %[[K]]]
// CHECK-NEXT: %[[B:.*]] = memref.load %arg1[%[[K]], %[[J]]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// CHECK-NEXT: scf.yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %[[R]], %arg2[%[[I]], %[[J]]] : memref<?x?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
func.func private @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x?xf32>
  %nk = memref.dim %a, %c1 : memref<?x?xf32>
  %m = memref.dim %b, %c1 : memref<?x?xf32>
  scf.parallel (%j, %i) = (%c0, %c0) to (%m, %n) step (%c1, %c1) {
    scf.for %k = %c0 to %nk step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x?xf32>
      %y = memref.load %b[%k, %j] : memref<?x?xf32>
      %acc = memref.load %c[%i, %j] : memref<?x?xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %c[%i, %j] : memref<?x?xf32>
    }
    scf.reduce
  }
  return
}

// A buffer read elsewhere in the loop keeps its loads and stores.
// CHECK-LABEL: func.func private @aliased(
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: memref.store
func.func private @aliased(%c: memref<?xf32>, %n: index) attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %n step %c1 {
    %acc = memref.load %c[%c0] : memref<?xf32>
    %other = memref.load %c[%k] : memref<?xf32>
    %s = arith.addf %acc, %other : f32
    memref.store %s, %c[%c0] : memref<?xf32>
  }
  return
}

// A loop that stores back exactly what it loaded (a product of ones: acc * 1.0 folded to
// acc) yields its iter_arg; the pass read the stored value before replacing the load and
// built the yield on the erased load (a segfault: vulkan-program fuzz seed 3000075).
// CHECK-LABEL: func.func private @store_back(
// CHECK: %[[INIT:.*]] = memref.load %arg0[%c0] : memref<1xf64>
// CHECK-NEXT: %[[R:.*]] = scf.for %{{.*}} = %c0 to %arg1 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f64) {
// CHECK-NEXT: scf.yield %[[ACC]] : f64
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %[[R]], %arg0[%c0] : memref<1xf64>
func.func private @store_back(%out: memref<1xf64>, %n: index) attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %n step %c1 {
    %v = memref.load %out[%c0] : memref<1xf64>
    memref.store %v, %out[%c0] : memref<1xf64>
  }
  return
}
