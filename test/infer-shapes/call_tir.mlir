// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// relax.call_tir and relax.call_dps_library: the result types state the
// output shapes (over bound symbols); inference keeps them and flows them on.

func.func private @k_exp(tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-LABEL: func.func @tir_single(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_tir"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
// CHECK: "relax.exp"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @tir_single(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k_exp, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.exp"(%0) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

func.func private @k_two(tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
// CHECK-LABEL: func.func @tir_two_outputs(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["m + 2*n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_tir"{{.*}} -> (tensor<?xf32, #relax.shape<["m + n"]>>, tensor<?xf32, #relax.shape<["n"]>>)
// CHECK: "relax.concat"{{.*}} -> tensor<?xf32, #relax.shape<["m + 2*n"]>>
func.func @tir_two_outputs(%x: tensor<?xf32, #relax.shape<["n"]>>, %y: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0:2 = "relax.call_tir"(%x, %y) {callee = @k_two, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> (tensor<?xf32, #relax.shape<["n + m"]>>, tensor<?xf32, #relax.shape<["n"]>>)
  %1 = "relax.concat"(%0#0, %0#1) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n + m"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

func.func private @k_same(tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
// CHECK-LABEL: func.func @tir_same_typed_run(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_tir"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @tir_same_typed_run(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %x, %x) {callee = @k_same, operandSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

func.func private @k_vars(tensor<?xf32>, tensor<?xf32>, index)
// CHECK-LABEL: func.func @tir_vars_symbolic(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n - 1"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_tir"{{.*}} -> tensor<?xf32, #relax.shape<["n - 1"]>>
func.func @tir_vars_symbolic(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n - 1"]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k_vars, tir_vars = #relax.shape<["n - 1"]>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n - 1"]>>
  return %0 : tensor<?xf32, #relax.shape<["n - 1"]>>
}

// -----

func.func private @k_static(tensor<4xf32>, tensor<2x2xf32>)
// CHECK-LABEL: func.func @tir_static_result(
// CHECK-SAME: -> tensor<2x2xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_tir"{{.*}} -> tensor<2x2xf32>
func.func @tir_static_result(%x: tensor<4xf32>) -> tensor<2x2xf32> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @k_static, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @dps_library_matmul(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_dps_library"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
// CHECK: "relax.add"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @dps_library_matmul(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.call_dps_library"(%a, %b) {callee = "cblas_sgemm", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %1 = "relax.add"(%0, %0) : (tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @dps_library_i8(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.call_dps_library"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @dps_library_i8(%a: tensor<?xi8, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  %0 = "relax.call_dps_library"(%a) {callee = "lib_dequant", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xi8, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}
