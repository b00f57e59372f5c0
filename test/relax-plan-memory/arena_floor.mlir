// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory)' | FileCheck %s

// A stride-2 conv's im2col and output sizes are floor divisions of the image size
// (36*n*((h - 1) // 2 + 1) bytes): nondecreasing in n and h, so they live in the static
// arena, sized at the bounds (n = 8, h = 64: 9216 and 4096 bytes, both live at once),
// instead of storages allocated per call. A size that decreases in h (64 - h) stays a
// symbolic storage.

func.func private @im2col(%a: tensor<?x1x?xf32>, %out: tensor<9x?x?xf32>) -> tensor<9x?x?xf32>
func.func private @gemm(%a: tensor<9x?x?xf32>, %out: tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
func.func private @crop(%a: tensor<4x?x?xf32>, %out: tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
func.func private @last(%a: tensor<4x?x?xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32>

// CHECK-LABEL: func.func @f(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 13312 : i64, planned = 3 : i64, storages = ["-16*h*n + 1024*n"]}
// CHECK: "relax.alloc_storage"() : () -> tensor<13312xi8>
// CHECK: "relax.alloc_tensor"(%{{.*}}) {offset = 0 : i64} : (tensor<13312xi8>) -> tensor<9x?x?xf32, #relax.shape<[9, "n", "(h - 1) // 2 + 1"]>>
// CHECK: "relax.alloc_tensor"(%{{.*}}) {offset = 9216 : i64} : (tensor<13312xi8>) -> tensor<4x?x?xf32, #relax.shape<[4, "n", "(h - 1) // 2 + 1"]>>

func.func @f(%x: tensor<?x1x?xf32, #relax.shape<["n", 1, "h"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function, relax.upper_bounds = {n = 8 : i64, h = 64 : i64}} {
  %0 = "relax.call_tir"(%x) {callee = @im2col, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x1x?xf32, #relax.shape<["n", 1, "h"]>>) -> tensor<9x?x?xf32, #relax.shape<[9, "n", "(h - 1) // 2 + 1"]>>
  %1 = "relax.call_tir"(%0) {callee = @gemm, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<9x?x?xf32, #relax.shape<[9, "n", "(h - 1) // 2 + 1"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "n", "(h - 1) // 2 + 1"]>>
  %2 = "relax.call_tir"(%1) {callee = @crop, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x?x?xf32, #relax.shape<[4, "n", "(h - 1) // 2 + 1"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "n", "64 - h"]>>
  %3 = "relax.call_tir"(%2) {callee = @last, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x?x?xf32, #relax.shape<[4, "n", "64 - h"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %3 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// The function checks h <= 64 itself before any kernel (the torch importer's range check):
// the plan adds its bound check for n only (the first failing check names torch's range).
// CHECK-LABEL: func.func @g(
// CHECK: "relax.assert"() {dims = #relax.shape<["n", 8]>, message = "n <= 8 (relax.upper_bounds
// CHECK-NOT: "h <= 64 (relax.upper_bounds
// CHECK: "relax.assert"() {dims = #relax.shape<["h", 64]>, message = "size h <= 64 (torch's range)"
// CHECK-NOT: "h <= 64 (relax.upper_bounds
// CHECK: return

func.func @g(%x: tensor<?x1x?xf32, #relax.shape<["n", 1, "h"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "n", "(h - 1) // 2 + 1"]>> attributes {relax.function, relax.upper_bounds = {n = 8 : i64, h = 64 : i64}} {
  "relax.assert"() {dims = #relax.shape<["h", 64]>, message = "size h <= 64 (torch's range)", predicate = "le"} : () -> ()
  %0 = "relax.call_tir"(%x) {callee = @im2col, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x1x?xf32, #relax.shape<["n", 1, "h"]>>) -> tensor<9x?x?xf32, #relax.shape<[9, "n", "(h - 1) // 2 + 1"]>>
  %1 = "relax.call_tir"(%0) {callee = @gemm, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<9x?x?xf32, #relax.shape<[9, "n", "(h - 1) // 2 + 1"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "n", "(h - 1) // 2 + 1"]>>
  return %1 : tensor<4x?x?xf32, #relax.shape<[4, "n", "(h - 1) // 2 + 1"]>>
}
