// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory{use-upper-bounds=false})' | FileCheck %s --check-prefix=NOBOUND
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory, relax-lower-host)' | FileCheck %s --check-prefix=HOST

// relax.upper_bounds = {n = 128}: ONE static arena, each value sized at n = 128
// ((n, 8) f32: 4096 bytes; (n, n) f32: 65536 bytes), offsets fixed at compile time (the two
// (n, 8) values share theirs: the first is dead when the second is written); a
// run-time check n <= 128 guards it (an input beyond the bound is a ShapeError).

func.func private @up(%a: tensor<?x4xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>
func.func private @sq(%a: tensor<?x8xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32>
func.func private @down(%a: tensor<?x?xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32>
func.func private @down8(%a: tensor<?x?xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>

// CHECK-LABEL: func.func @f(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 69632 : i64, planned = 3 : i64, storages = []}
// CHECK-NEXT: "relax.assert"() {dims = #relax.shape<["n", 128]>, message = "n <= 128 {{.*}}", predicate = "le"}
// CHECK-NEXT: %[[A:.*]] = "relax.alloc_storage"() : () -> tensor<69632xi8>
// CHECK-NEXT: "relax.alloc_tensor"(%[[A]]) {offset = 65536 : i64} : (tensor<69632xi8>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @up, dests = array<i64: 0>
// CHECK-NEXT: "relax.alloc_tensor"(%[[A]]) {offset = 0 : i64} : (tensor<69632xi8>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @sq, dests = array<i64: 0>
// CHECK-NEXT: "relax.alloc_tensor"(%[[A]]) {offset = 65536 : i64} : (tensor<69632xi8>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @down8, dests = array<i64: 0>
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @sq,
// CHECK-NOT: dests
// CHECK: return

// Without the bounds: symbolic storages (32*n, 4*n*n, 32*n bytes); the third value
// provably fits the first's storage (equal sizes) once that one is dead.
// NOBOUND-LABEL: func.func @f(
// NOBOUND-SAME: relax.memory_plan = {arena_bytes = 0 : i64, planned = 3 : i64, storages = ["32*n", "4*n*n"]}
// NOBOUND-NOT: relax.assert
// NOBOUND: %[[S0:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["32*n"]>>
// NOBOUND-NEXT: "relax.alloc_tensor"(%[[S0]]) {offset = 0 : i64}
// NOBOUND-NEXT: "relax.call_tir"{{.*}}callee = @up
// NOBOUND-NEXT: %[[S1:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["4*n*n"]>>
// NOBOUND-NEXT: "relax.alloc_tensor"(%[[S1]])
// NOBOUND-NEXT: "relax.call_tir"{{.*}}callee = @sq
// NOBOUND-NEXT: "relax.alloc_tensor"(%[[S0]])
// NOBOUND-NEXT: "relax.call_tir"{{.*}}callee = @down8

// relax-lower-host: the bound check guards the rest (every kernel call runs under it);
// the static arena is a view of the session workspace (allocated once, not per call),
// each planned tensor a memref.view at its offset, fed as destination.
// HOST-LABEL: func.func @f(%arg0: memref<?xi8>
// HOST-SAME: kind = "assert", lhs = "n", location = {{.*}}predicate = "le", rhs = "128"
// HOST-SAME: relax.workspace_bytes = 69632 : i64
// HOST: %[[LE:.*]] = arith.cmpi sle, %{{.*}}, %c128 : index
// the arena is a view of the session workspace (the first argument), not a module global
// HOST: %[[M:.*]] = memref.view %arg0[%c0][] : memref<?xi8> to memref<69632xi8>
// HOST: %[[V:.*]] = memref.view %[[M]][%c65536][%{{.*}}] : memref<69632xi8> to memref<?x8xf32>
// HOST-NEXT: %[[T:.*]] = bufferization.to_tensor %[[V]] restrict writable : memref<?x8xf32> to tensor<?x8xf32>
// HOST-NEXT: scf.if %[[LE]] -> (tensor<?x8xf32>) {
// HOST-NEXT: func.call @up(%arg1, %[[T]])
func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>> attributes {relax.function, relax.upper_bounds = {n = 128 : i64}} {
  %0 = "relax.call_tir"(%x) {callee = @up, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %1 = "relax.call_tir"(%0) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  %2 = "relax.call_tir"(%1) {callee = @down8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "n"]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %3 = "relax.call_tir"(%2) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  return %3 : tensor<?x?xf32, #relax.shape<["n", "n"]>>
}
