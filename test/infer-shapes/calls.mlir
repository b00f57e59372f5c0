// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// relax.call between graph functions: the callee's parameter patterns are
// matched against the caller's argument shapes (callee symbols bound to
// caller expressions), and the callee's deduced result shapes are substituted.

// CHECK-LABEL: func.func @callee_plain(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["k", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?x4xf32, #relax.shape<["k", 4]>>
func.func @callee_plain(%x: tensor<?x4xf32, #relax.shape<["k", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["k", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// CHECK-LABEL: func.func @caller_plain(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @caller_plain(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @callee_plain, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @half(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.split"{{.*}} -> (tensor<?xf32, #relax.shape<["k"]>>, tensor<?xf32, #relax.shape<["k"]>>)
func.func @half(%x: tensor<?xf32, #relax.shape<["2*k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0:2 = "relax.split"(%x) {sections = 2 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["2*k"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}
// CHECK-LABEL: func.func @caller_half(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n // 2"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n % 2", 0]>, message = "relax.call: @half argument #0 dim 0: 2*k divides n: n % 2 == 0", predicate = "eq"} : () -> ()
// CHECK: "relax.call"{{.*}} -> tensor<?xf32, #relax.shape<["n // 2"]>>
func.func @caller_half(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @half, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @half_static(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["2*k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?xf32, #relax.shape<["2*k"]>>
func.func @half_static(%x: tensor<?xf32, #relax.shape<["2*k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["2*k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
// CHECK-LABEL: func.func @caller_half_static(
// CHECK-SAME: -> tensor<8xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> tensor<8xf32>
func.func @caller_half_static(%a: tensor<8xf32>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @half_static, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @two_args(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["p", "r"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?xf32, #relax.shape<["p", "r"]>>
func.func @two_args(%x: tensor<?x?xf32, #relax.shape<["p", "q"]>>, %y: tensor<?x?xf32, #relax.shape<["q", "r"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %y) : (tensor<?x?xf32, #relax.shape<["p", "q"]>>, tensor<?x?xf32, #relax.shape<["q", "r"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// CHECK-LABEL: func.func @caller_two_args(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @caller_two_args(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a, %b) {callee = @two_args, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @shared_sym(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["p"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.add"{{.*}} -> tensor<?xf32, #relax.shape<["p"]>>
func.func @shared_sym(%x: tensor<?xf32, #relax.shape<["p"]>>, %y: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.add"(%x, %y) : (tensor<?xf32, #relax.shape<["p"]>>, tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
// CHECK-LABEL: func.func @caller_shared_sym_asserts(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n", "m"]>, message = "relax.call: @shared_sym argument #1 dim 0: n == m", predicate = "eq"} : () -> ()
// CHECK: "relax.call"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @caller_shared_sym_asserts(%a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a, %b) {callee = @shared_sym, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_callee(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["p + q", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.concat"{{.*}} -> tensor<?x4xf32, #relax.shape<["p + q", 4]>>
func.func @concat_callee(%x: tensor<?x4xf32, #relax.shape<["p", 4]>>, %y: tensor<?x4xf32, #relax.shape<["q", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.concat"(%x, %y) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["p", 4]>>, tensor<?x4xf32, #relax.shape<["q", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
// CHECK-LABEL: func.func @caller_expr_result(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["3*n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> tensor<?x4xf32, #relax.shape<["3*n", 4]>>
func.func @caller_expr_result(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["2*n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a, %b) {callee = @concat_callee, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["2*n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @multi_result(
// CHECK-SAME: -> (tensor<?x?xf32, #relax.shape<["p", "q"]>>, tensor<?x?xf32, #relax.shape<["q", "p"]>>) attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?x?xf32, #relax.shape<["p", "q"]>>
// CHECK: "relax.permute_dims"{{.*}} -> tensor<?x?xf32, #relax.shape<["q", "p"]>>
func.func @multi_result(%x: tensor<?x?xf32, #relax.shape<["p", "q"]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x?xf32, #relax.shape<["p", "q"]>>) -> tensor<?x?xf32>
  %1 = "relax.permute_dims"(%x) : (tensor<?x?xf32, #relax.shape<["p", "q"]>>) -> tensor<?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xf32>
}
// CHECK-LABEL: func.func @caller_multi_result(
// CHECK-SAME: -> (tensor<?x3xf32, #relax.shape<["n", 3]>>, tensor<3x?xf32, #relax.shape<[3, "n"]>>) attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> (tensor<?x3xf32, #relax.shape<["n", 3]>>, tensor<3x?xf32, #relax.shape<[3, "n"]>>)
func.func @caller_multi_result(%a: tensor<?x3xf32, #relax.shape<["n", 3]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {relax.function} {
  %0:2 = "relax.call"(%a) {callee = @multi_result, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x3xf32, #relax.shape<["n", 3]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  return %0#0, %0#1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @chain_leaf(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["p"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?xf32, #relax.shape<["p"]>>
func.func @chain_leaf(%x: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
// CHECK-LABEL: func.func @chain_mid(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["2*q"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> tensor<?xf32, #relax.shape<["q"]>>
// CHECK: "relax.concat"{{.*}} -> tensor<?xf32, #relax.shape<["2*q"]>>
func.func @chain_mid(%x: tensor<?xf32, #relax.shape<["q"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%x) {callee = @chain_leaf, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["q"]>>) -> tensor<?xf32>
  %1 = "relax.concat"(%0, %x) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32>, tensor<?xf32, #relax.shape<["q"]>>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}
// CHECK-LABEL: func.func @chain_top(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["2*n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call"{{.*}} -> tensor<?xf32, #relax.shape<["2*n"]>>
func.func @chain_top(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @chain_mid, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @offset_param(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["p + 1"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?xf32, #relax.shape<["p + 1"]>>
func.func @offset_param(%x: tensor<?xf32, #relax.shape<["p + 1"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["p + 1"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
// CHECK-LABEL: func.func @caller_offset(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[0, "n - 1"]>, message = "relax.call: @offset_param symbol p = n - 1 is a size: 0 <= n - 1", predicate = "le"} : () -> ()
// CHECK: "relax.call"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @caller_offset(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @offset_param, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
