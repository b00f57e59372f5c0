// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{attention=false})' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{attention=false})' | mlir-opt --split-input-file --irdl-file=%irdl --verify-each > /dev/null

// A matmul whose B operand is a permute_dims swapping its last two axes, with no other user,
// calls the _tb variant on the permute's input: no transpose copy (attention's q @ k^T).

// CHECK-LABEL: func.func @scores(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_tb_33_f32"
// CHECK-SAME: (tensor<?x?x64xf32, #relax.shape<["b", "s", 64]>>, tensor<?x?x64xf32, #relax.shape<["b", "t", 64]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>
// CHECK-NEXT: return %0
func.func @scores(%q: tensor<?x?x64xf32, #relax.shape<["b", "s", 64]>>, %k: tensor<?x?x64xf32, #relax.shape<["b", "t", 64]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>> attributes {relax.function} {
  %kt = "relax.permute_dims"(%k) {axes = array<i64: 0, 2, 1>} : (tensor<?x?x64xf32, #relax.shape<["b", "t", 64]>>) -> tensor<?x64x?xf32, #relax.shape<["b", 64, "t"]>>
  %0 = "relax.matmul"(%q, %kt) : (tensor<?x?x64xf32, #relax.shape<["b", "s", 64]>>, tensor<?x64x?xf32, #relax.shape<["b", 64, "t"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>
  return %0 : tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>
}

// -----

// A linear layer with its weight (out, in) transposed in the graph, + bias; rank-2 permute
// with the axes left out (reversed) and with negative axes.

// CHECK-LABEL: func.func @linear(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1, %arg2) {callee = "relax_blas_matmul_bias_tb_32_f32"
// CHECK-NEXT: %1 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_tb_32_f32"
// CHECK-NEXT: return %0, %1
func.func @linear(%x: tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>, %w: tensor<16x32xf32>, %bias: tensor<16xf32>) -> (tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>, tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>) attributes {relax.function} {
  %wt = "relax.permute_dims"(%w) : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %0 = "relax.matmul"(%x, %wt) : (tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>, tensor<32x16xf32>) -> tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>
  %1 = "relax.add"(%0, %bias) : (tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>, tensor<16xf32>) -> tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>
  %wt2 = "relax.permute_dims"(%w) {axes = array<i64: -1, -2>} : (tensor<16x32xf32>) -> tensor<32x16xf32>
  %2 = "relax.matmul"(%x, %wt2) : (tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>, tensor<32x16xf32>) -> tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>
  return %1, %2 : tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>, tensor<?x?x16xf32, #relax.shape<["b", "s", 16]>>
}

// -----

// Not folded: the transposed value has another user; the permute moves a batch axis; the
// transposed value is also the A operand.

// CHECK-LABEL: func.func @kept(
// CHECK-NEXT: %0 = "relax.permute_dims"(%arg1)
// CHECK-NEXT: %1 = "relax.call_dps_library"(%arg0, %0) {callee = "relax_blas_matmul_33_f32"
// CHECK-NEXT: %2 = "relax.permute_dims"(%arg2)
// CHECK-NEXT: %3 = "relax.call_dps_library"(%arg0, %2) {callee = "relax_blas_matmul_33_f32"
// CHECK-NEXT: %4 = "relax.permute_dims"(%arg3)
// CHECK-NEXT: %5 = "relax.call_dps_library"(%4, %4) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: return %1, %0, %3, %5
func.func @kept(%q: tensor<?x?x8xf32, #relax.shape<["b", "s", 8]>>, %k: tensor<?x?x8xf32, #relax.shape<["b", "t", 8]>>,
                %v: tensor<8x?x?xf32, #relax.shape<[8, "b", "t"]>>, %m: tensor<?x?xf32, #relax.shape<["n", "n"]>>)
    -> (tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>, tensor<?x8x?xf32, #relax.shape<["b", 8, "t"]>>, tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>, tensor<?x?xf32, #relax.shape<["n", "n"]>>) attributes {relax.function} {
  %kt = "relax.permute_dims"(%k) {axes = array<i64: 0, 2, 1>} : (tensor<?x?x8xf32, #relax.shape<["b", "t", 8]>>) -> tensor<?x8x?xf32, #relax.shape<["b", 8, "t"]>>
  %0 = "relax.matmul"(%q, %kt) : (tensor<?x?x8xf32, #relax.shape<["b", "s", 8]>>, tensor<?x8x?xf32, #relax.shape<["b", 8, "t"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>
  %vb = "relax.permute_dims"(%v) {axes = array<i64: 1, 0, 2>} : (tensor<8x?x?xf32, #relax.shape<[8, "b", "t"]>>) -> tensor<?x8x?xf32, #relax.shape<["b", 8, "t"]>>
  %1 = "relax.matmul"(%q, %vb) : (tensor<?x?x8xf32, #relax.shape<["b", "s", 8]>>, tensor<?x8x?xf32, #relax.shape<["b", 8, "t"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>
  %mt = "relax.permute_dims"(%m) : (tensor<?x?xf32, #relax.shape<["n", "n"]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  %2 = "relax.matmul"(%mt, %mt) : (tensor<?x?xf32, #relax.shape<["n", "n"]>>, tensor<?x?xf32, #relax.shape<["n", "n"]>>) -> tensor<?x?xf32, #relax.shape<["n", "n"]>>
  return %0, %kt, %1, %2 : tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>, tensor<?x8x?xf32, #relax.shape<["b", 8, "t"]>>, tensor<?x?x?xf32, #relax.shape<["b", "s", "t"]>>, tensor<?x?xf32, #relax.shape<["n", "n"]>>
}
