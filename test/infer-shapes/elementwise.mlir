// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// Elementwise unary ops and astype keep the operand's shape; float-only ops
// reject integer tensors (see elementwise-errors.mlir).

// CHECK-LABEL: func.func @exp_symbolic(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @exp_symbolic(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @sqrt_expr_dims(
// CHECK-SAME: -> tensor<?x?xf32, #relax.shape<["n", "k"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.sqrt"{{.*}} -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
func.func @sqrt_expr_dims(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.sqrt"(%x) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @tanh_derived_dim(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["2*n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.tanh"{{.*}} -> tensor<?x4xf32, #relax.shape<["2*n", 4]>>
func.func @tanh_derived_dim(%x: tensor<?x4xf32, #relax.shape<["2*n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.tanh"(%x) : (tensor<?x4xf32, #relax.shape<["2*n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @relu_int(
// CHECK-SAME: -> tensor<?xi32, #relax.shape<["n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.relu"{{.*}} -> tensor<?xi32, #relax.shape<["n"]>>
func.func @relu_int(%x: tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32> attributes {relax.function} {
  %0 = "relax.relu"(%x) : (tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @negative_static(
// CHECK-SAME: -> tensor<3x4xf32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.negative"{{.*}} -> tensor<3x4xf32>
func.func @negative_static(%x: tensor<3x4xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.negative"(%x) : (tensor<3x4xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @chain_unary(
// CHECK-SAME: -> tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.silu"{{.*}} -> tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>
// CHECK: "relax.gelu"{{.*}} -> tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>
// CHECK: "relax.sigmoid"{{.*}} -> tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>
func.func @chain_unary(%x: tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  %0 = "relax.silu"(%x) : (tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>) -> tensor<?x?x?xf32>
  %1 = "relax.gelu"(%0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %2 = "relax.sigmoid"(%1) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %2 : tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @scalar_rank0(
// CHECK-SAME: -> tensor<f32> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.abs"{{.*}} -> tensor<f32>
func.func @scalar_rank0(%x: tensor<f32>) -> tensor<f32> attributes {relax.function} {
  %0 = "relax.abs"(%x) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @astype_i32(
// CHECK-SAME: -> tensor<?x?xi32, #relax.shape<["n", "m"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.astype"{{.*}} -> tensor<?x?xi32, #relax.shape<["n", "m"]>>
func.func @astype_i32(%x: tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xi32> attributes {relax.function} {
  %0 = "relax.astype"(%x) {dtype = i32} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @astype_f16_static(
// CHECK-SAME: -> tensor<8x?xf16, #relax.shape<[8, "n"]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.astype"{{.*}} -> tensor<8x?xf16, #relax.shape<[8, "n"]>>
func.func @astype_f16_static(%x: tensor<8x?xi64, #relax.shape<[8, "n"]>>) -> tensor<?x?xf16> attributes {relax.function} {
  %0 = "relax.astype"(%x) {dtype = f16} : (tensor<8x?xi64, #relax.shape<[8, "n"]>>) -> tensor<?x?xf16>
  return %0 : tensor<?x?xf16>
}

// -----

// CHECK-LABEL: func.func @declared_result_kept(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.exp"{{.*}} -> tensor<?x4xf32, #relax.shape<["n", 4]>>
func.func @declared_result_kept(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
