// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// Creation ops: full, zeros, ones (shape attribute over bound symbols) and
// arange (symbolic start/end/step).

// CHECK-LABEL: func.func @zeros_symbolic(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "2*k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.zeros"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "2*k"]>>
func.func @zeros_symbolic(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.zeros"() {shape = #relax.shape<["n", "2*k"]>} : () -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @ones_static_i32(
// CHECK-SAME: -> tensor<3x4xi32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.ones"{{.*}} -> tensor<3x4xi32>
func.func @ones_static_i32(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xi32> attributes {relax.function} {
  %0 = "relax.ones"() {shape = #relax.shape<[3, 4]>, dtype = i32} : () -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @full_value(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n + 1"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.full"{{.*}} -> tensor<?xf32, #relax.shape<["n + 1"]>>
func.func @full_value(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.full"() {shape = #relax.shape<["n + 1"]>, value = 2.5 : f64} : () -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @zeros_scalar(
// CHECK-SAME: -> tensor<f32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.zeros"{{.*}} -> tensor<f32>
func.func @zeros_scalar(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<f32> attributes {relax.function} {
  %0 = "relax.zeros"() {shape = #relax.shape<[]>} : () -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @arange_to_n(
// CHECK-SAME: -> tensor<?xi64, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.arange"{{.*}} -> tensor<?xi64, #relax.shape<["n"]>>
func.func @arange_to_n(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  %0 = "relax.arange"() {end = "n"} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// CHECK-LABEL: func.func @arange_static(
// CHECK-SAME: -> tensor<3xi32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.arange"{{.*}} -> tensor<3xi32>
func.func @arange_static(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi32> attributes {relax.function} {
  %0 = "relax.arange"() {start = 2 : i64, end = 10 : i64, step = 3 : i64, dtype = i32} : () -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @arange_symbolic_start(
// CHECK-SAME: -> tensor<?xi64, #relax.shape<["-k + n"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<["k", "n"]>, message = "relax.arange: start <= end: k <= n", predicate = "le"} : () -> ()
// CHECK: "relax.arange"{{.*}} -> tensor<?xi64, #relax.shape<["-k + n"]>>
func.func @arange_symbolic_start(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xi64> attributes {relax.function} {
  %0 = "relax.arange"() {start = "k", end = "n"} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// CHECK-LABEL: func.func @arange_step2(
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.arange"{{.*}} -> tensor<?xf32, #relax.shape<["n"]>>
func.func @arange_step2(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.arange"() {end = "2*n", step = 2 : i64, dtype = f32} : () -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @arange_proven_order(
// CHECK-SAME: -> tensor<8xi64> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.arange"{{.*}} -> tensor<8xi64>
func.func @arange_proven_order(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  %0 = "relax.arange"() {start = "n", end = "n + 8"} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
