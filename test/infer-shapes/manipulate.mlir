// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// Shape manipulation: reshape, permute_dims, expand_dims, squeeze, flatten,
// broadcast_to, concat, split, strided_slice, take, tril/triu.

// CHECK-LABEL: func.func @reshape_double_rows(
// CHECK-SAME: -> tensor<?x2xf32, #relax.shape<["2*n", 2]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.reshape"{{.*}} -> tensor<?x2xf32, #relax.shape<["2*n", 2]>>
func.func @reshape_double_rows(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["2*n", 2]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_infer_hole(
// CHECK-SAME: -> tensor<?x2xf32, #relax.shape<["2*n", 2]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.reshape"{{.*}} -> tensor<?x2xf32, #relax.shape<["2*n", 2]>>
func.func @reshape_infer_hole(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[-1, 2]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_hole_unproven(
// CHECK-SAME: -> tensor<2x?xf32, #relax.shape<[2, "3*n // 2"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n % 2", 0]>, message = "relax.reshape: element count 3*n divisible by 2: n % 2 == 0", predicate = "eq"} : () -> ()
// CHECK: "relax.reshape"{{.*}} -> tensor<2x?xf32, #relax.shape<[2, "3*n // 2"]>>
func.func @reshape_hole_unproven(%x: tensor<?x3xf32, #relax.shape<["n", 3]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[2, -1]>} : (tensor<?x3xf32, #relax.shape<["n", 3]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_merge(
// CHECK-SAME: -> tensor<?x64xf32, #relax.shape<["b*n", 64]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.reshape"{{.*}} -> tensor<?x64xf32, #relax.shape<["b*n", 64]>>
func.func @reshape_merge(%x: tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["b*n", 64]>} : (tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_swap_count_proven(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["m", "n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.reshape"{{.*}} -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
func.func @reshape_swap_count_proven(%x: tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["m", "n"]>} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_count_asserts(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["m", 4]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["4*n", "4*m"]>, message = "relax.reshape: element count: 4*n == 4*m", predicate = "eq"} : () -> ()
// CHECK: "relax.reshape"{{.*}} -> tensor<?x4xf32, #relax.shape<["m", 4]>>
func.func @reshape_count_asserts(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["m", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_static(
// CHECK-SAME: -> tensor<3x4xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.reshape"{{.*}} -> tensor<3x4xf32>
func.func @reshape_static(%x: tensor<2x6xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[3, 4]>} : (tensor<2x6xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @permute_default_reverse(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["c", "b", "a"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.permute_dims"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["c", "b", "a"]>>
func.func @permute_default_reverse(%x: tensor<?x?x?xf32, #relax.shape<["a", "b", "c"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.permute_dims"(%x) : (tensor<?x?x?xf32, #relax.shape<["a", "b", "c"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @permute_axes(
// CHECK-SAME: -> tensor<?x?x?x?xf32, #relax.shape<["b", "h", "n", "d"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.permute_dims"{{.*}} -> tensor<?x?x?x?xf32, #relax.shape<["b", "h", "n", "d"]>>
func.func @permute_axes(%x: tensor<?x?x?x?xf32, #relax.shape<["b", "n", "h", "d"]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.permute_dims"(%x) {axes = array<i64: 0, 2, 1, 3>} : (tensor<?x?x?x?xf32, #relax.shape<["b", "n", "h", "d"]>>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @permute_negative_axes(
// CHECK-SAME: -> tensor<4x?xf32, #relax.shape<[4, "n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.permute_dims"{{.*}} -> tensor<4x?xf32, #relax.shape<[4, "n"]>>
func.func @permute_negative_axes(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.permute_dims"(%x) {axes = array<i64: -1, -2>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @expand_dims_front_back(
// CHECK-SAME: -> tensor<1x?x?x1xf32, #relax.shape<[1, "n", "k", 1]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.expand_dims"{{.*}} -> tensor<1x?x?x1xf32, #relax.shape<[1, "n", "k", 1]>>
func.func @expand_dims_front_back(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.expand_dims"(%x) {axis = array<i64: 0, -1>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @squeeze_axis(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.squeeze"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
func.func @squeeze_axis(%x: tensor<?x1x?xf32, #relax.shape<["n", 1, "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.squeeze"(%x) {axis = array<i64: 1>} : (tensor<?x1x?xf32, #relax.shape<["n", 1, "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @squeeze_default_static_ones(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.squeeze"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @squeeze_default_static_ones(%x: tensor<1x?x1xf32, #relax.shape<[1, "n", 1]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.squeeze"(%x) : (tensor<1x?x1xf32, #relax.shape<[1, "n", 1]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @squeeze_symbolic_asserts(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["k", 1]>, message = "relax.squeeze: squeezed dim 1: k == 1", predicate = "eq"} : () -> ()
// CHECK: "relax.squeeze"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @squeeze_symbolic_asserts(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.squeeze"(%x) {axis = array<i64: 1>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_sum_dim(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["4*m + 4*n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.concat"{{.*}} -> tensor<?x4xf32, #relax.shape<["m + n", 4]>>
// CHECK: "relax.flatten"{{.*}} -> tensor<?xf32, #relax.shape<["4*m + 4*n"]>>
func.func @flatten_sum_dim(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32>
  %1 = "relax.flatten"(%0) : (tensor<?x?xf32>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_3d(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["b*k*n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.flatten"{{.*}} -> tensor<?xf32, #relax.shape<["b*k*n"]>>
func.func @flatten_3d(%x: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.flatten"(%x) : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_new_dims(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["n", "n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.broadcast_to"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["n", "n", "k"]>>
func.func @broadcast_to_new_dims(%x: tensor<1x?xf32, #relax.shape<[1, "k"]>>, %y: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.broadcast_to"(%x) {shape = #relax.shape<["n", "n", "k"]>} : (tensor<1x?xf32, #relax.shape<[1, "k"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_unproven(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["m", "n"]>, message = "relax.broadcast_to: broadcast dim 0: m == n", predicate = "eq"} : () -> ()
// CHECK: "relax.broadcast_to"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
func.func @broadcast_to_unproven(%x: tensor<?x?xf32, #relax.shape<["m", "k"]>>, %y: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.broadcast_to"(%x) {shape = #relax.shape<["n", "k"]>} : (tensor<?x?xf32, #relax.shape<["m", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_axis0(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["m + n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.concat"{{.*}} -> tensor<?x4xf32, #relax.shape<["m + n", 4]>>
func.func @concat_axis0(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_same_type_run(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["3*n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.concat"{{.*}} -> tensor<?x4xf32, #relax.shape<["3*n", 4]>>
func.func @concat_same_type_run(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.concat"(%a, %a, %a) {axis = 0 : i64, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_axis_neg(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k + 4"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.concat"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k + 4"]>>
func.func @concat_axis_neg(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.concat"(%a, %b) {axis = -1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_non_axis_asserts(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "2*k"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n", "m"]>, message = "relax.concat: non-concat dim 0: n == m", predicate = "eq"} : () -> ()
// CHECK: "relax.concat"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "2*k"]>>
func.func @concat_non_axis_asserts(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["m", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.concat"(%a, %b) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["m", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @split_sections_static(
// CHECK-SAME: -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.split"{{.*}} -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>)
func.func @split_sections_static(%x: tensor<?x8xf32, #relax.shape<["n", 8]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {relax.function} {
  %0:2 = "relax.split"(%x) {sections = 2 : i64, axis = 1 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  return %0#0, %0#1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @split_sections_symbolic(
// CHECK-SAME: -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.split"{{.*}} -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>)
func.func @split_sections_symbolic(%x: tensor<?x4xf32, #relax.shape<["2*n", 4]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>) attributes {relax.function} {
  %0:2 = "relax.split"(%x) {sections = 2 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["2*n", 4]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  return %0#0, %0#1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @split_sections_asserts(
// CHECK-SAME: -> (tensor<?x4xf32, #relax.shape<["n // 3", 4]>>, tensor<?x4xf32, #relax.shape<["n // 3", 4]>>, tensor<?x4xf32, #relax.shape<["n // 3", 4]>>) attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n % 3", 0]>, message = "relax.split: 3 sections dividing dim n: n % 3 == 0", predicate = "eq"} : () -> ()
// CHECK: "relax.split"{{.*}} -> (tensor<?x4xf32, #relax.shape<["n // 3", 4]>>, tensor<?x4xf32, #relax.shape<["n // 3", 4]>>, tensor<?x4xf32, #relax.shape<["n // 3", 4]>>)
func.func @split_sections_asserts(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) attributes {relax.function} {
  %0:3 = "relax.split"(%x) {sections = 3 : i64, resultSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>)
  return %0#0, %0#1, %0#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @split_indices(
// CHECK-SAME: -> (tensor<2x?xf32, #relax.shape<[2, "k"]>>, tensor<5x?xf32, #relax.shape<[5, "k"]>>, tensor<3x?xf32, #relax.shape<[3, "k"]>>) attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.split"{{.*}} -> (tensor<2x?xf32, #relax.shape<[2, "k"]>>, tensor<5x?xf32, #relax.shape<[5, "k"]>>, tensor<3x?xf32, #relax.shape<[3, "k"]>>)
func.func @split_indices(%x: tensor<10x?xf32, #relax.shape<[10, "k"]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) attributes {relax.function} {
  %0:3 = "relax.split"(%x) {indices = array<i64: 2, 7>, resultSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0>} : (tensor<10x?xf32, #relax.shape<[10, "k"]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>)
  return %0#0, %0#1, %0#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @split_indices_symbolic_dim(
// CHECK-SAME: -> (tensor<4xf32>, tensor<?xf32, #relax.shape<["n - 4"]>>) attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[4, "n"]>, message = "relax.split: split indices ascending and within the dim: 4 <= n", predicate = "le"} : () -> ()
// CHECK: "relax.split"{{.*}} -> (tensor<4xf32>, tensor<?xf32, #relax.shape<["n - 4"]>>)
func.func @split_indices_symbolic_dim(%x: tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>) attributes {relax.function} {
  %0:2 = "relax.split"(%x) {indices = array<i64: 4>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0, %0#1 : tensor<?xf32>, tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_begin1_end_n(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n - 1"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[1, "n"]>, message = "relax.strided_slice: slice begin <= end of dim 0: 1 <= n", predicate = "le"} : () -> ()
// CHECK: "relax.strided_slice"{{.*}} -> tensor<?xf32, #relax.shape<["n - 1"]>>
func.func @slice_begin1_end_n(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[1]>, end = #relax.shape<["n"]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_static_clamped(
// CHECK-SAME: -> tensor<3x?xf32, #relax.shape<[3, "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.strided_slice"{{.*}} -> tensor<3x?xf32, #relax.shape<[3, "k"]>>
func.func @slice_static_clamped(%x: tensor<10x?xf32, #relax.shape<[10, "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[-3]>, end = #relax.shape<[100]>} : (tensor<10x?xf32, #relax.shape<[10, "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_end_marker(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.strided_slice"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
func.func @slice_end_marker(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 1>, begin = #relax.shape<[0]>, end = #relax.shape<[2147483648]>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_stride2(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["(n + 1) // 2"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.strided_slice"{{.*}} -> tensor<?xf32, #relax.shape<["(n + 1) // 2"]>>
func.func @slice_stride2(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<["n"]>, strides = #relax.shape<[2]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_symbolic_bounds(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["-k + n", "k"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["k", "n"]>, message = "relax.strided_slice: slice begin <= end of dim 0: k <= n", predicate = "le"} : () -> ()
// CHECK: "relax.strided_slice"{{.*}} -> tensor<?x?xf32, #relax.shape<["-k + n", "k"]>>
func.func @slice_symbolic_bounds(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<["k"]>, end = #relax.shape<["n"]>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_negative_end(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n - 1"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[0, "n - 1"]>, message = "relax.strided_slice: slice begin <= end of dim 0: 0 <= n - 1", predicate = "le"} : () -> ()
// CHECK: "relax.strided_slice"{{.*}} -> tensor<?xf32, #relax.shape<["n - 1"]>>
func.func @slice_negative_end(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<[-1]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @take_axis0(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "d"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.take"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "d"]>>
func.func @take_axis0(%x: tensor<?x?xf32, #relax.shape<["v", "d"]>>, %i: tensor<?x?xi64, #relax.shape<["b", "n"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.take"(%x, %i) : (tensor<?x?xf32, #relax.shape<["v", "d"]>>, tensor<?x?xi64, #relax.shape<["b", "n"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @take_axis1(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.take"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @take_axis1(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %i: tensor<?xi32, #relax.shape<["m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.take"(%x, %i) {axis = 1 : i64} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?xi32, #relax.shape<["m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @tril_triu(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.tril"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>
// CHECK: "relax.triu"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>
func.func @tril_triu(%x: tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.tril"(%x) {k = 1 : i64} : (tensor<?x?x?xf32, #relax.shape<["b", "n", "n"]>>) -> tensor<?x?x?xf32>
  %1 = "relax.triu"(%0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %1 : tensor<?x?x?xf32>
}
