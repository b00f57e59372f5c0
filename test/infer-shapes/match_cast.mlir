// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// relax.match_cast refines a value to a pattern and binds the pattern's new
// symbols; later ops use them. It is checked at run time, so it adds no assert.

// CHECK-LABEL: func.func @mc_name_unknown_dims(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.match_cast"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
// CHECK: "relax.exp"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @mc_name_unknown_dims(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["n", "m"]>} : (tensor<?x?xf32>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %1 = "relax.exp"(%0) : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mc_refine_to_static(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.match_cast"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @mc_refine_to_static(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["n", 4]>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// CHECK-LABEL: func.func @mc_then_matmul(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.match_cast"{{.*}} -> tensor<?x?xf32, #relax.shape<["k", "m"]>>
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
func.func @mc_then_matmul(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %w: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.match_cast"(%w) {shape = #relax.shape<["k", "m"]>} : (tensor<?x?xf32>) -> tensor<?x?xf32, #relax.shape<["k", "m"]>>
  %1 = "relax.matmul"(%x, %0) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mc_linear_pattern(
// CHECK-SAME: -> tensor<2x?xf32, #relax.shape<[2, "h"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.match_cast"{{.*}} -> tensor<?xf32, #relax.shape<["2*h"]>>
// CHECK: "relax.reshape"{{.*}} -> tensor<2x?xf32, #relax.shape<[2, "h"]>>
func.func @mc_linear_pattern(%x: tensor<?xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["2*h"]>} : (tensor<?xf32>) -> tensor<?xf32, #relax.shape<["2*h"]>>
  %1 = "relax.reshape"(%0) {shape = #relax.shape<[2, "h"]>} : (tensor<?xf32, #relax.shape<["2*h"]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mc_bound_symbol_reuse(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.match_cast"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
// CHECK: "relax.add"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @mc_bound_symbol_reuse(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.match_cast"(%y) {shape = #relax.shape<["n", 4]>} : (tensor<?x?xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.add"(%x, %0) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @mc_result_type_deduced(
// CHECK-SAME: -> tensor<?x16xi32, #relax.shape<["b", 16]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.match_cast"{{.*}} -> tensor<?x16xi32, #relax.shape<["b", 16]>>
func.func @mc_result_type_deduced(%x: tensor<?x?xi32>) -> tensor<?x?xi32> attributes {relax.function} {
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["b", 16]>} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}
