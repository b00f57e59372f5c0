// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops)' | FileCheck %s

// A residual block: the first conv's epilogue (permute to NCHW + relu) feeds the second conv's
// im2col AND the residual add. A group holding an im2col must have one output (the cpu
// schedules take single-output kernels; a multi-output one runs as plain loops on one
// thread), so the im2col stays its own kernel and the epilogue is a group of its own.
// CHECK-LABEL: func.func @main
// CHECK: %[[E:.*]] = "relax.call_tir"(%{{.*}}) {callee = @relax_permute_dims_axes1_0_2_3_f32_8xDxDxD, {{.*}}relax.fusion_group = 0 : i64
// CHECK-NEXT: %[[R:.*]] = "relax.call_tir"(%[[E]]) {callee = @relax_relu_f32_Dx8xDxD, {{.*}}relax.fusion_group = 0 : i64
// CHECK-NEXT: %[[COL:.*]] = "relax.call_tir"(%[[R]]) {callee = @relax_im2col_t_k3_3_s1_1_p1_1_1_1_d1_1_f32_Dx8xDxD, operandSegmentSizes
// CHECK-NOT: relax.fusion_group
// CHECK-SAME: -> tensor<72x?x?x?xf32
// CHECK: "relax.call_tir"(%{{.*}}, %[[R]]) {callee = @relax_add_f32_Dx8xDxD_Dx8xDxD, {{.*}}relax.fusion_group = 1 : i64

// Without the residual add the epilogue's only user is the im2col: one group, one output.
// CHECK-LABEL: func.func @chain
// CHECK: @relax_relu_f32_Dx8xDxD, {{.*}}relax.fusion_group = 2 : i64
// CHECK-NEXT: @relax_im2col_t_k3_3_s1_1_p1_1_1_1_d1_1_f32_Dx8xDxD, {{.*}}relax.fusion_group = 2 : i64

func.func @main(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w1) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32>
  %1 = "relax.relu"(%0) : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %2 = "relax.conv2d"(%1, %w2) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32>, tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32>
  %3 = "relax.add"(%2, %1) : (tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  return %3 : tensor<?x8x?x?xf32>
}

func.func @chain(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w1) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32>
  %1 = "relax.relu"(%0) : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %2 = "relax.conv2d"(%1, %w2) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32>, tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32>
  return %2 : tensor<?x8x?x?xf32>
}
