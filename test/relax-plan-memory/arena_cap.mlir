// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory{max-arena-bytes=8192})' | FileCheck %s --check-prefix=SMALL
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory{max-arena-bytes=73728})' | FileCheck %s --check-prefix=TWO

// The static arena is capped (max-arena-bytes, 256 MiB by default): it is the session
// workspace, allocated in full at the first call, so relax.upper_bounds = {n = 2**40}
// must not make a call with n = 3 allocate 8 TiB (a MemoryError before), nor make an
// arena whose size does not fit in i64. The largest values leave the arena until it
// fits; a symbolic one gets a storage allocated per call at its actual size, a constant
// one (no symbol) is left to the allocation of its call_tir.

func.func private @up(%a: tensor<?x4xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>
func.func private @sq(%a: tensor<?x8xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32>
func.func private @down8(%a: tensor<?x?xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>
func.func private @big(%a: tensor<?x4xf32>, %out: tensor<65537x1024xf32>) -> tensor<65537x1024xf32>
func.func private @small(%a: tensor<65537x1024xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>

// n <= 2**40: (n, 8) f32 is 32 TiB, (n, n) f32 beyond i64 at the bound: no arena, no
// bound check; the symbolic storages of the unbounded plan.
// CHECK-LABEL: func.func @huge(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 0 : i64, planned = 3 : i64, storages = ["32*n", "4*n*n"]}
// CHECK-NOT: relax.assert
// CHECK: %[[S0:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["32*n"]>>
// CHECK-NEXT: "relax.alloc_tensor"(%[[S0]]) {offset = 0 : i64}
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @up, dests = array<i64: 0>
// CHECK-NEXT: %[[S1:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["4*n*n"]>>
// CHECK-NEXT: "relax.alloc_tensor"(%[[S1]]) {offset = 0 : i64}
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @sq, dests = array<i64: 0>
// CHECK-NEXT: "relax.alloc_tensor"(%[[S0]]) {offset = 0 : i64}
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @down8, dests = array<i64: 0>

// A constant 65537 x 1024 f32 intermediate (256 MiB + 4 KiB) stays unplanned; the small
// (n, 8) value after it still gets the arena (n <= 128: 4096 bytes).
// CHECK-LABEL: func.func @constant(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 4096 : i64, planned = 1 : i64, storages = []}
// CHECK-NEXT: "relax.assert"() {dims = #relax.shape<["n", 128]>
// CHECK-NEXT: %[[A:.*]] = "relax.alloc_storage"() : () -> tensor<4096xi8>
// CHECK-NEXT: "relax.call_tir"(%arg0) {callee = @big, operandSegmentSizes = {{.*}} -> tensor<65537x1024xf32>
// CHECK-NEXT: "relax.alloc_tensor"(%[[A]]) {offset = 0 : i64}
// CHECK-NEXT: "relax.call_tir"{{.*}}callee = @small, dests = array<i64: 0>

// With an 8 KiB cap and n <= 128: the 64 KiB (n, n) value leaves the arena for a
// symbolic storage; the two (n, 8) values keep one 4 KiB arena slot.
// SMALL-LABEL: func.func @bounded(
// SMALL-SAME: relax.memory_plan = {arena_bytes = 4096 : i64, planned = 3 : i64, storages = ["4*n*n"]}
// SMALL-NEXT: "relax.assert"() {dims = #relax.shape<["n", 128]>
// SMALL-NEXT: %[[A:.*]] = "relax.alloc_storage"() : () -> tensor<4096xi8>
// SMALL-NEXT: "relax.alloc_tensor"(%[[A]]) {offset = 0 : i64} : (tensor<4096xi8>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
// SMALL-NEXT: "relax.call_tir"{{.*}}callee = @up, dests = array<i64: 0>
// SMALL-NEXT: %[[S:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["4*n*n"]>>
// SMALL-NEXT: "relax.alloc_tensor"(%[[S]]) {offset = 0 : i64}
// SMALL-NEXT: "relax.call_tir"{{.*}}callee = @sq, dests = array<i64: 0>
// SMALL-NEXT: "relax.alloc_tensor"(%[[A]]) {offset = 0 : i64} : (tensor<4096xi8>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
// SMALL-NEXT: "relax.call_tir"{{.*}}callee = @down8, dests = array<i64: 0>

func.func @huge(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>> attributes {relax.function, relax.upper_bounds = {n = 1099511627776 : i64}} {
  %0 = "relax.call_tir"(%x) {callee = @up, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %1 = "relax.call_tir"(%0) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  %2 = "relax.call_tir"(%1) {callee = @down8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "n"]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %3 = "relax.call_tir"(%2) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  return %3 : tensor<?x?xf32, #relax.shape<["n", "n"]>>
}

func.func @constant(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>> attributes {relax.function, relax.upper_bounds = {n = 128 : i64}} {
  %0 = "relax.call_tir"(%x) {callee = @big, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<65537x1024xf32>
  %1 = "relax.call_tir"(%0) {callee = @small, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<65537x1024xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %2 = "relax.call_tir"(%1) {callee = @up8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  return %2 : tensor<?x8xf32, #relax.shape<["n", 8]>>
}

func.func private @up8(%a: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>

func.func @bounded(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>> attributes {relax.function, relax.upper_bounds = {n = 128 : i64}} {
  %0 = "relax.call_tir"(%x) {callee = @up, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %1 = "relax.call_tir"(%0) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  %2 = "relax.call_tir"(%1) {callee = @down8, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "n"]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %3 = "relax.call_tir"(%2) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  return %3 : tensor<?x?xf32, #relax.shape<["n", "n"]>>
}

// Two 64 KiB (n, n) values live together under a 72 KiB cap: the later one leaves the arena
// after the first plan had put it at 64 KiB; its own storage holds it at offset 0 (the
// arena's offset into a per-call storage of 4*n*n bytes wrote out of bounds: a crash of
// all-MiniLM-L6-v2 compiled with its default bounds).
// TWO-LABEL: func.func @two_big(
// TWO-SAME: relax.memory_plan = {arena_bytes = 69632 : i64, planned = 3 : i64, storages = ["4*n*n"]}
// TWO: %[[S:.*]] = "relax.alloc_storage"() : () -> tensor<?xi8, #relax.shape<["4*n*n"]>>
// TWO-NEXT: "relax.alloc_tensor"(%[[S]]) {offset = 0 : i64}
// TWO-NEXT: "relax.call_tir"{{.*}}callee = @sq, dests = array<i64: 0>
// TWO-NEXT: "relax.call_tir"{{.*}}callee = @add2
func.func private @add2(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32>
func.func @two_big(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>> attributes {relax.function, relax.upper_bounds = {n = 128 : i64}} {
  %0 = "relax.call_tir"(%x) {callee = @up, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %1 = "relax.call_tir"(%0) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  %2 = "relax.call_tir"(%0) {callee = @sq, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  %3 = "relax.call_tir"(%1, %2) {callee = @add2, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "n"]>>, tensor<?x?xf32, #relax.shape<["n", "n"]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  return %3 : tensor<?x8xf32, #relax.shape<["n", 8]>>
}
