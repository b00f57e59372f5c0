// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory)' | FileCheck %s

// No relax.upper_bounds: symbolic storages, reused in program order when sizes are
// provably compatible (prove_equal / prove_le on byte sizes, symbols >= 0):
// * %2 (16*n bytes) reuses the dead storage of %0 (32*n): 16*n <= 32*n;
// * %3 (32*m) does NOT reuse the dead storage of %1 (32*n): 32*m <= 32*n is unknown;
// * %4 (64*n) takes %1's storage, enlarged to 64*n at its allocation (n is bound there:
//   32*n <= 64*n), instead of a new one.

func.func private @k8(%a: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>
func.func private @k4(%a: tensor<?x8xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32>
func.func private @k16(%a: tensor<?x4xf32>, %out: tensor<?x16xf32>) -> tensor<?x16xf32>

// CHECK-LABEL: func.func @g(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 0 : i64, planned = 5 : i64, storages = ["32*n", "64*n", "32*m"]}
// CHECK-NEXT: %[[S0:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["32*n"]>>
// CHECK-NEXT: %[[T0:.*]] = "relax.alloc_tensor"(%[[S0]]) {offset = 0 : i64} : (tensor<?xi8, #relax.shape<["32*n"]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
// CHECK-NEXT: %[[V0:.*]] = "relax.call_tir"(%arg0, %[[T0]]) {callee = @k8, dests = array<i64: 0>
// CHECK-NEXT: %[[S1:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["64*n"]>>
// CHECK-NEXT: %[[T1:.*]] = "relax.alloc_tensor"(%[[S1]])
// CHECK-NEXT: %[[V1:.*]] = "relax.call_tir"(%[[V0]], %[[T1]]) {callee = @k8, dests
// CHECK-NEXT: %[[T2:.*]] = "relax.alloc_tensor"(%[[S0]]) {offset = 0 : i64} : (tensor<?xi8, #relax.shape<["32*n"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
// CHECK-NEXT: %[[V2:.*]] = "relax.call_tir"(%[[V1]], %[[T2]]) {callee = @k4, dests
// CHECK-NEXT: %[[S2:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["32*m"]>>
// CHECK-NEXT: %[[T3:.*]] = "relax.alloc_tensor"(%[[S2]])
// CHECK-NEXT: %[[V3:.*]] = "relax.call_tir"(%arg1, %[[T3]]) {callee = @k8, dests
// CHECK-NEXT: %[[T4:.*]] = "relax.alloc_tensor"(%[[S1]]) {offset = 0 : i64} : (tensor<?xi8, #relax.shape<["64*n"]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
// CHECK-NEXT: %[[V4:.*]] = "relax.call_tir"(%[[V2]], %[[T4]]) {callee = @k16, dests
// CHECK-NEXT: "relax.call_tir"(%[[V4]]) {callee = @k16, operandSegmentSizes
// CHECK-NEXT: "relax.call_tir"(%[[V3]]) {callee = @k8, operandSegmentSizes
func.func @g(%x: tensor<?x8xf32, #relax.shape<["n", 8]>>, %y: tensor<?x8xf32, #relax.shape<["m", 8]>>) -> (tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<?x8xf32, #relax.shape<["m", 8]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %1 = "relax.call_tir"(%0) {callee = @k8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %2 = "relax.call_tir"(%1) {callee = @k4, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %3 = "relax.call_tir"(%y) {callee = @k8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["m", 8]>>) -> tensor<?x8xf32, #relax.shape<["m", 8]>>
  %4 = "relax.call_tir"(%2) {callee = @k16, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %5 = "relax.call_tir"(%4) {callee = @k16, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  %6 = "relax.call_tir"(%3) {callee = @k8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["m", 8]>>) -> tensor<?x8xf32, #relax.shape<["m", 8]>>
  return %5, %6 : tensor<?x16xf32, #relax.shape<["n", 16]>>, tensor<?x8xf32, #relax.shape<["m", 8]>>
}
