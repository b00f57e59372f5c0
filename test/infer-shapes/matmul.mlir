// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// relax.matmul with numpy semantics: K must agree (assert when unproven),
// 1-D operands drop their dim, batch dims broadcast.

// CHECK-LABEL: func.func @mm_2d(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @mm_2d(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_batched_lhs(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>>
func.func @mm_batched_lhs(%a: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_batch_bcast(
// CHECK-SAME: -> tensor<?x?x?x?xf32, #relax.shape<["b", "h", "n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?x?x?xf32, #relax.shape<["b", "h", "n", "m"]>>
func.func @mm_batch_bcast(%a: tensor<?x1x?x?xf32, #relax.shape<["b", 1, "n", "k"]>>, %b: tensor<?x?x?xf32, #relax.shape<["h", "k", "m"]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x1x?x?xf32, #relax.shape<["b", 1, "n", "k"]>>, tensor<?x?x?xf32, #relax.shape<["h", "k", "m"]>>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_k_unproven_asserts(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["k", "m"]>, message = "relax.matmul: reduction dim K (lhs dim -1 vs rhs dim -2): k == m", predicate = "eq"} : () -> ()
// CHECK: "relax.matmul"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @mm_k_unproven_asserts(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_static(
// CHECK-SAME: -> tensor<2x5xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<2x5xf32>
func.func @mm_static(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_vec_mat(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?xf32, #relax.shape<["m"]>>
func.func @mm_vec_mat(%a: tensor<?xf32, #relax.shape<["k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?xf32, #relax.shape<["k"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_mat_vec(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @mm_mat_vec(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?xf32, #relax.shape<["k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?xf32, #relax.shape<["k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_vec_vec(
// CHECK-SAME: -> tensor<f32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<f32>
func.func @mm_vec_vec(%a: tensor<?xf32, #relax.shape<["k"]>>, %b: tensor<?xf32, #relax.shape<["k"]>>) -> tensor<f32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?xf32, #relax.shape<["k"]>>, tensor<?xf32, #relax.shape<["k"]>>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @mm_out_dtype(
// CHECK-SAME: -> tensor<?x4xi32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?x4xi32, #relax.shape<["n", 4]>>
func.func @mm_out_dtype(%a: tensor<?x?xi8, #relax.shape<["n", "k"]>>, %b: tensor<?x4xi8, #relax.shape<["k", 4]>>) -> tensor<?x?xi32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) {out_dtype = i32} : (tensor<?x?xi8, #relax.shape<["n", "k"]>>, tensor<?x4xi8, #relax.shape<["k", 4]>>) -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @mm_k_expr(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @mm_k_expr(%a: tensor<?x?xf32, #relax.shape<["n", "2*k"]>>, %b: tensor<?x?xf32, #relax.shape<["k + k", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "2*k"]>>, tensor<?x?xf32, #relax.shape<["k + k", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mm_batch_unproven(
// CHECK-SAME: -> tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["b", "c"]>, message = "relax.matmul: broadcast dim -1: b == c", predicate = "eq"} : () -> ()
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>>
func.func @mm_batch_unproven(%a: tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, %c: tensor<?x?x?xf32, #relax.shape<["c", "k", "m"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %c) : (tensor<?x?x?xf32, #relax.shape<["b", "n", "k"]>>, tensor<?x?x?xf32, #relax.shape<["c", "k", "m"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
