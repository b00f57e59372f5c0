// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// Reductions, arg reductions, softmax and normalizations.

// CHECK-LABEL: func.func @sum_all(
// CHECK-SAME: -> tensor<f32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.sum"{{.*}} -> tensor<f32>
func.func @sum_all(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<f32> attributes {relax.function} {
  %0 = "relax.sum"(%x) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @sum_axis_keepdims(
// CHECK-SAME: -> tensor<?x?x1xf32, #relax.shape<["b", "n", 1]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.sum"{{.*}} -> tensor<?x?x1xf32, #relax.shape<["b", "n", 1]>>
func.func @sum_axis_keepdims(%x: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.sum"(%x) {axes = array<i64: -1>, keepdims = true} : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mean_axes(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.mean"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @mean_axes(%x: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.mean"(%x) {axes = array<i64: 0, 2>} : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @max_int_axis(
// CHECK-SAME: -> tensor<?xi32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.max"{{.*}} -> tensor<?xi32, #relax.shape<["n"]>>
func.func @max_int_axis(%x: tensor<?x4xi32, #relax.shape<["n", 4]>>) -> tensor<?xi32> attributes {relax.function} {
  %0 = "relax.max"(%x) {axes = array<i64: 1>} : (tensor<?x4xi32, #relax.shape<["n", 4]>>) -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @prod_keepdims_all(
// CHECK-SAME: -> tensor<1x1xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.prod"{{.*}} -> tensor<1x1xf32>
func.func @prod_keepdims_all(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.prod"(%x) {keepdims = true} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @argmax_axis(
// CHECK-SAME: -> tensor<?xi64, #relax.shape<["n"]>> attributes
// the reduced size must be >= 1 (numpy raises on an empty sequence): a run-time check
// CHECK-NEXT: "relax.assert"() {dims = #relax.shape<[1, "k"]>, message = "relax.argmax: attempt to get argmax of an empty sequence: the length of axis 1: 1 <= k", predicate = "le"}
// CHECK-NEXT: "relax.argmax"{{.*}} -> tensor<?xi64, #relax.shape<["n"]>>
func.func @argmax_axis(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xi64> attributes {relax.function} {
  %0 = "relax.argmax"(%x) {axis = 1 : i64} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// CHECK-LABEL: func.func @argmin_flat(
// CHECK-SAME: -> tensor<i64> attributes
// the reduced size must be >= 1 (numpy raises on an empty sequence): a run-time check
// CHECK-NEXT: "relax.assert"() {dims = #relax.shape<[1, "k*n"]>, message = "relax.argmin: attempt to get argmin of an empty sequence: the reduced size: 1 <= k*n", predicate = "le"}
// CHECK-NEXT: "relax.argmin"{{.*}} -> tensor<i64>
func.func @argmin_flat(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<i64> attributes {relax.function} {
  %0 = "relax.argmin"(%x) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// CHECK-LABEL: func.func @argmax_keepdims(
// CHECK-SAME: -> tensor<1x?xi64, #relax.shape<[1, "k"]>> attributes
// the reduced size must be >= 1 (numpy raises on an empty sequence): a run-time check
// CHECK-NEXT: "relax.assert"() {dims = #relax.shape<[1, "n"]>, message = "relax.argmax: attempt to get argmax of an empty sequence: the length of axis 0: 1 <= n", predicate = "le"}
// CHECK-NEXT: "relax.argmax"{{.*}} -> tensor<1x?xi64, #relax.shape<[1, "k"]>>
func.func @argmax_keepdims(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xi64> attributes {relax.function} {
  %0 = "relax.argmax"(%x) {axis = 0 : i64, keepdims = true} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xi64>
  return %0 : tensor<?x?xi64>
}

// -----

// CHECK-LABEL: func.func @softmax_default(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.softmax"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>
// CHECK: "relax.log_softmax"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>
func.func @softmax_default(%x: tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.softmax"(%x) : (tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>) -> tensor<?x?x?xf32>
  %1 = "relax.log_softmax"(%0) {axis = 1 : i64} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %1 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_last(
// CHECK-SAME: -> tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.layer_norm"{{.*}} -> tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>
func.func @layer_norm_last(%x: tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>, %g: tensor<64xf32>, %bt: tensor<64xf32>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.layer_norm"(%x, %g, %bt) : (tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm_symbolic_weight(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "d"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["e", "d"]>, message = "relax.rms_norm: operand #1 dim 0 vs normalized dim: e == d", predicate = "eq"} : () -> ()
// CHECK: "relax.rms_norm"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "d"]>>
func.func @rms_norm_symbolic_weight(%x: tensor<?x?xf32, #relax.shape<["n", "d"]>>, %w: tensor<?xf32, #relax.shape<["e"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.rms_norm"(%x, %w) : (tensor<?x?xf32, #relax.shape<["n", "d"]>>, tensor<?xf32, #relax.shape<["e"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm_two_axes(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.layer_norm"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>
func.func @layer_norm_two_axes(%x: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, %g: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %bt: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.layer_norm"(%x, %g, %bt) {axes = array<i64: 1, 2>} : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
