// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-plan-memory)' | FileCheck %s

// relax.call: a result aliases only the arguments its callee may return (directly or
// through views such as match_cast), read from a summary of the callee. @fresh returns a
// call_tir result (never its argument), so in @through_fresh %0 dies at the call and %2
// reuses its bytes (offset 0: a 64-byte arena). @view returns its argument, so in
// @through_view %0 lives as long as the call's result: %2 needs its own offset.

func.func private @k(%a: tensor<4x4xf32>, %out: tensor<4x4xf32>) -> tensor<4x4xf32>

func.func @fresh(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

func.func @view(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<[4, 4]>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @through_fresh(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 64 : i64, planned = 2 : i64, storages = []}
// CHECK: "relax.alloc_tensor"(%{{.*}}) {offset = 0 : i64}
// CHECK-NEXT: %[[A:.*]] = "relax.call_tir"(%arg0, %{{.*}}) {callee = @k, dests
// CHECK-NEXT: %[[B:.*]] = "relax.call"(%[[A]]) {callee = @fresh
// CHECK-NEXT: "relax.alloc_tensor"(%{{.*}}) {offset = 0 : i64}
// CHECK-NEXT: "relax.call_tir"(%[[B]], %{{.*}}) {callee = @k, dests
func.func @through_fresh(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "relax.call"(%0) {callee = @fresh} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "relax.call_tir"(%1) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "relax.call_tir"(%2) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @through_view(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 128 : i64, planned = 2 : i64, storages = []}
// CHECK: "relax.alloc_tensor"(%{{.*}}) {offset = 0 : i64}
// CHECK-NEXT: %[[A:.*]] = "relax.call_tir"(%arg0, %{{.*}}) {callee = @k, dests
// CHECK-NEXT: %[[B:.*]] = "relax.call"(%[[A]]) {callee = @view
// CHECK-NEXT: "relax.alloc_tensor"(%{{.*}}) {offset = 64 : i64}
// CHECK-NEXT: "relax.call_tir"(%[[B]], %{{.*}}) {callee = @k, dests
func.func @through_view(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "relax.call"(%0) {callee = @view} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "relax.call_tir"(%1) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "relax.call_tir"(%2) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// A chain of calls whose results alias their arguments (@view): each alias set holds the
// one root, however long the chain (the sets once doubled per call: 2**30 entries after
// the 30 layer calls of a real model). %0 is live to the last use of the chain's end.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: relax.memory_plan = {arena_bytes = 128 : i64, planned = 2 : i64, storages = []}
func.func @chain(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "relax.call"(%0) {callee = @view} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "relax.call"(%1) {callee = @view} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "relax.call"(%2) {callee = @view} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = "relax.call_tir"(%3) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = "relax.call_tir"(%4) {callee = @k, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %5 : tensor<4x4xf32>
}
