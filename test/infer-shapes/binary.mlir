// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// Binary elementwise ops: numpy broadcasting over symbolic dims. Provably
// equal dims are silent, static 1s broadcast, unproven equalities become a
// relax.assert before the op (never a silent assumption).

// CHECK-LABEL: func.func @add_same(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.add"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @add_same(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.add"(%a, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @add_bcast_row(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.add"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @add_bcast_row(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<4xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.add"(%a, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mul_bcast_unit(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.multiply"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @mul_bcast_unit(%a: tensor<?x1xf32, #relax.shape<["n", 1]>>, %b: tensor<1x?xf32, #relax.shape<[1, "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.multiply"(%a, %b) : (tensor<?x1xf32, #relax.shape<["n", 1]>>, tensor<1x?xf32, #relax.shape<[1, "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @sub_rank_extend(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.subtract"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>
func.func @sub_rank_extend(%a: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.subtract"(%a, %b) : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @add_unproven_asserts(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n", "m"]>, message = "relax.add: broadcast dim -2: n == m", predicate = "eq"} : () -> ()
// CHECK: "relax.add"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @add_unproven_asserts(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.add"(%a, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @add_expr_equal(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n + 1", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.add"{{.*}} -> tensor<?x4xf32, #relax.shape<["n + 1", 4]>>
func.func @add_expr_equal(%a: tensor<?x4xf32, #relax.shape<["n + 1", 4]>>, %b: tensor<?x4xf32, #relax.shape<["1 + n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.add"(%a, %b) : (tensor<?x4xf32, #relax.shape<["n + 1", 4]>>, tensor<?x4xf32, #relax.shape<["1 + n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @add_scalar_rank0(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.add"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
func.func @add_scalar_rank0(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<f32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.add"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<f32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @add_assert_dedup(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["n", "m"]>, message = "relax.add: broadcast dim -1: n == m", predicate = "eq"} : () -> ()
// CHECK: "relax.add"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
// CHECK: "relax.multiply"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @add_assert_dedup(%a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.add"(%a, %b) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32>
  %1 = "relax.multiply"(%a, %b) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @divide_static(
// CHECK-SAME: -> tensor<2x3xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.divide"{{.*}} -> tensor<2x3xf32>
func.func @divide_static(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.divide"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @compare_i1(
// CHECK-SAME: -> tensor<?x4xi1, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.less"{{.*}} -> tensor<?x4xi1, #relax.shape<["n", 4]>>
func.func @compare_i1(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x1xf32, #relax.shape<["n", 1]>>) -> tensor<?x?xi1> attributes {relax.function} {
  %0 = "relax.less"(%a, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x1xf32, #relax.shape<["n", 1]>>) -> tensor<?x?xi1>
  return %0 : tensor<?x?xi1>
}

// -----

// CHECK-LABEL: func.func @equal_int(
// CHECK-SAME: -> tensor<?xi1, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.equal"{{.*}} -> tensor<?xi1, #relax.shape<["n"]>>
func.func @equal_int(%a: tensor<?xi64, #relax.shape<["n"]>>, %b: tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi1> attributes {relax.function} {
  %0 = "relax.equal"(%a, %b) : (tensor<?xi64, #relax.shape<["n"]>>, tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi1>
  return %0 : tensor<?xi1>
}

// -----

// CHECK-LABEL: func.func @maximum_power_chain(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.maximum"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
// CHECK: "relax.power"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
func.func @maximum_power_chain(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?xf32, #relax.shape<["k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.maximum"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?xf32, #relax.shape<["k"]>>) -> tensor<?x?xf32>
  %1 = "relax.power"(%0, %a) : (tensor<?x?xf32>, tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @where_three_way(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.where"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @where_three_way(%c: tensor<?x1xi1, #relax.shape<["n", 1]>>, %x: tensor<1x?xf32, #relax.shape<[1, "m"]>>, %y: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.where"(%c, %x, %y) : (tensor<?x1xi1, #relax.shape<["n", 1]>>, tensor<1x?xf32, #relax.shape<[1, "m"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @floor_divide_int(
// CHECK-SAME: -> tensor<?xi32, #relax.shape<["2*n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.floor_divide"{{.*}} -> tensor<?xi32, #relax.shape<["2*n"]>>
func.func @floor_divide_int(%a: tensor<?xi32, #relax.shape<["2*n"]>>, %b: tensor<1xi32>) -> tensor<?xi32> attributes {relax.function} {
  %0 = "relax.floor_divide"(%a, %b) : (tensor<?xi32, #relax.shape<["2*n"]>>, tensor<1xi32>) -> tensor<?xi32>
  return %0 : tensor<?xi32>
}
