// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-flatten-launches)' | FileCheck %s
// Buffers used in a launch become 1-D views built outside it (offset 0 on the base
// buffer); accesses index them linearly (offset + i * stride + j), memref.dim reads the
// size taken outside, and constants are sunk into the launch.

// CHECK-LABEL: func.func @f(
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %[[SIZES:.*]]:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<f32> to memref<?xf32>
// CHECK: gpu.launch
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2.0{{.*}} : f32
// CHECK: %[[ROW:.*]] = arith.muli %[[I:.*]], %[[C4:.*]] : index
// CHECK: %[[L0:.*]] = arith.addi %{{.*}}, %[[ROW]] : index
// CHECK: %[[L:.*]] = arith.addi %[[L0]], %[[J:.*]] : index
// CHECK: memref.load %[[FLAT]][%[[L]]] : memref<?xf32>
// CHECK: arith.mulf %{{.*}}, %[[TWO]] : f32
// CHECK: memref.store %{{.*}}, %[[FLAT]][%{{.*}}] : memref<?xf32>
// CHECK: arith.cmpi ult, %{{.*}}, %[[SIZES]]#0 : index
// CHECK-NOT: memref.dim %arg0
func.func @f(%a: memref<?x4xf32>, %flag: memref<?xi8>) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %two = arith.constant 2.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %a[%bx, %tx] : memref<?x4xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %a[%bx, %tx] : memref<?x4xf32>
    %n = memref.dim %a, %c0 : memref<?x4xf32>
    %in = arith.cmpi ult, %bx, %n : index
    gpu.terminator
  }
  return
}

// vector.load / vector.store (along the unit-stride innermost dimension) are indexed the
// same way, their alignment kept; a view's offset and row stride come from outside.
// CHECK-LABEL: func.func @vec(
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]]
// CHECK: gpu.launch
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %[[STRIDES]]#0 : index
// CHECK: %[[L0:.*]] = arith.addi %[[OFF]], %[[ROW]] : index
// CHECK: %[[L:.*]] = arith.addi %[[L0]], %{{.*}} : index
// CHECK: %[[V:.*]] = vector.load %[[FLAT]][%[[L]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK: vector.store %[[V]], %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
func.func @vec(%a: memref<?x?xf32, strided<[?, 1], offset: ?>>, %b: memref<?x?xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = vector.load %a[%bx, %tx] {alignment = 16 : i64} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<4xf32>
    vector.store %v, %b[%bx, %tx] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
    gpu.terminator
  }
  return
}

// memref.atomic_rmw (the decode attention's row counters) is indexed the same way; its
// result replaces the old one's.
// CHECK-LABEL: func.func @atomic(
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]]
// CHECK: gpu.launch
// CHECK: %[[OLD:.*]] = memref.atomic_rmw addi %{{.*}}, %[[FLAT]][%{{.*}}] : (i32, memref<?xi32>) -> i32
// CHECK: memref.store %[[OLD]], %[[FLAT]][%{{.*}}] : memref<?xi32>
func.func @atomic(%a: memref<?x8xi32>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %old = memref.atomic_rmw addi %one, %a[%bx, %tx] : (i32, memref<?x8xi32>) -> i32
    memref.store %old, %a[%tx, %bx] : memref<?x8xi32>
    gpu.terminator
  }
  return
}
