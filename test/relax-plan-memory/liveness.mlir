// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory)' | FileCheck %s

// Static sizes: one arena; a value reuses the bytes of one whose last use came before
// its definition (lifetimes include both ends: a kernel reads its inputs while it writes).
// %1 = k(%0), %2 = k(%1), %3 = k(%2): %0 and %2 share offset 0, %1 sits at 64.
// The returned value is not planned.

func.func private @k(%a: tensor<4x4xf32>, %out: tensor<4x4xf32>) -> tensor<4x4xf32>

// CHECK-LABEL: func.func @chain(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 128 : i64, planned = 3 : i64, storages = []}
// CHECK-NEXT: %[[A:.*]] = "relax.alloc_storage"() : () -> tensor<128xi8>
// CHECK-NEXT: %[[T0:.*]] = "relax.alloc_tensor"(%[[A]]) {offset = 0 : i64} : (tensor<128xi8>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[V0:.*]] = "relax.call_tir"(%arg0, %[[T0]]) {callee = @k, dests = array<i64: 0>,
// CHECK-NEXT: %[[T1:.*]] = "relax.alloc_tensor"(%[[A]]) {offset = 64 : i64}
// CHECK-NEXT: %[[V1:.*]] = "relax.call_tir"(%[[V0]], %[[T1]]) {callee = @k, dests = array<i64: 0>,
// CHECK-NEXT: %[[T2:.*]] = "relax.alloc_tensor"(%[[A]]) {offset = 0 : i64}
// CHECK-NEXT: %[[V2:.*]] = "relax.call_tir"(%[[V1]], %[[T2]]) {callee = @k, dests = array<i64: 0>,
// CHECK-NEXT: %[[V3:.*]] = "relax.call_tir"(%[[V2]]) {callee = @k, operandSegmentSizes
// CHECK-NEXT: return %[[V3]]
func.func @chain(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "relax.call_tir"(%0) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "relax.call_tir"(%1) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "relax.call_tir"(%2) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// A value that stays live (used at the end) blocks its bytes for the whole span;
// a value aliased by a returned value (through match_cast) is not planned.
// CHECK-LABEL: func.func @long_lived(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 192 : i64, planned = 3 : i64, storages = []}
// CHECK: "relax.alloc_tensor"(%{{.*}}) {offset = 0 : i64}
// CHECK-NEXT: %[[L:.*]] = "relax.call_tir"(%arg0, %{{.*}}) {callee = @k, dests
// CHECK-NEXT: "relax.alloc_tensor"(%{{.*}}) {offset = 64 : i64}
// CHECK-NEXT: "relax.call_tir"(%[[L]], %{{.*}}) {callee = @k, dests
// CHECK-NEXT: "relax.alloc_tensor"(%{{.*}}) {offset = 128 : i64}
// CHECK-NEXT: "relax.call_tir"({{.*}}) {callee = @k, dests
// CHECK-NEXT: %[[E:.*]] = "relax.call_tir"(%{{.*}}) {callee = @k, operandSegmentSizes
// CHECK-NEXT: "relax.match_cast"(%[[E]])
// CHECK-NEXT: "relax.call_tir"({{.*}}) {callee = @add, operandSegmentSizes
func.func private @add(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %out: tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @long_lived(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "relax.call_tir"(%0) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "relax.call_tir"(%1) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "relax.call_tir"(%2) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = "relax.match_cast"(%3) {shape = #relax.shape<[4, 4]>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = "relax.call_tir"(%0, %2) {callee = @add, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %4, %5 : tensor<4x4xf32>, tensor<4x4xf32>
}
