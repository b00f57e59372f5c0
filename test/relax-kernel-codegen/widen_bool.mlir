// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-widen-bool-memrefs)' | FileCheck %s
// i1 memrefs become i8: stores extend, loads truncate; other element types are untouched.

// CHECK-LABEL: func.func @not(
// CHECK-SAME: %arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xf32>
// CHECK: %[[L:.*]] = memref.load %arg0[%{{.*}}] : memref<?xi8>
// CHECK: %[[B:.*]] = arith.trunci %[[L]] : i8 to i1
// CHECK: %[[N:.*]] = arith.xori %[[B]], %{{.*}} : i1
// CHECK: %[[W:.*]] = arith.extui %[[N]] : i1 to i8
// CHECK: memref.store %[[W]], %arg1[%{{.*}}] : memref<?xi8>
// CHECK: memref.load %arg2[%{{.*}}] : memref<?xf32>
func.func @not(%a: memref<?xi1>, %out: memref<?xi1>, %f: memref<?xf32>, %i: index) {
  %t = arith.constant true
  %x = memref.load %a[%i] : memref<?xi1>
  %y = arith.xori %x, %t : i1
  memref.store %y, %out[%i] : memref<?xi1>
  %z = memref.load %f[%i] : memref<?xf32>
  return
}
