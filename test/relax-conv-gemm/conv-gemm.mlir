// relax-conv-gemm: f32 conv2d of groups 1.
// gemm=blas: im2col kernel + relax_blas_conv_gemm (a 1x1 stride-1 conv without padding reads
// its input in place); an (O, 1, 1) bias add that is the conv's only user folds into the call.
// gemm=generated (the default): im2col (K, N, OH, OW) + the GEMM kernel (O, N, OH, OW) +
// permute_dims to NCHW. Depthwise, small and non-f32 convs stay.
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{gemm=blas})' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{gemm=blas min-flops=1000000000})' | FileCheck %s --check-prefix=BIG
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm)' | FileCheck %s --check-prefix=GEN

// GEN-LABEL: func.func @conv3x3_bias_relu
// GEN: %[[COL:.+]] = "relax.call_tir"(%arg0) {callee = @relax_im2col_t_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx4xDxD
// GEN-SAME: -> tensor<36x?x?x?xf32, #relax.shape<[36, "n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
// GEN: %[[Y:.+]] = "relax.call_tir"(%arg1, %[[COL]]) {callee = @relax_conv_gemm_f32_8x4x3x3_36xDxDxD
// GEN-SAME: -> tensor<8x?x?x?xf32, #relax.shape<[8, "n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
// GEN: %[[T:.+]] = "relax.permute_dims"(%[[Y]]) {axes = array<i64: 1, 0, 2, 3>}
// GEN: "relax.add"(%arg2, %[[T]])
// GEN-LABEL: func.func private @relax_im2col_t_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx4xDxD(
// GEN: linalg.copy
// GEN: tensor.expand_shape %{{.+}} {{\[}}[0, 1, 2], [3], [4], [5]] output_shape [4, 3, 3, %{{.+}}, %{{.+}}, %{{.+}}] : tensor<36x?x?x?xf32> into tensor<4x3x3x?x?x?xf32>
// GEN: linalg.generic
// GEN-LABEL: func.func private @relax_conv_gemm_f32_8x4x3x3_36xDxDxD(
// GEN-DAG: tensor.collapse_shape %arg0 {{\[}}[0], [1, 2, 3]] : tensor<8x4x3x3xf32> into tensor<8x36xf32>
// GEN-DAG: tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<36x?x?x?xf32> into tensor<36x?xf32>
// GEN: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x36xf32>, tensor<36x?xf32>) outs(%{{.+}} : tensor<8x?xf32>)
// GEN: tensor.reshape

// CHECK-LABEL: func.func @conv3x3_bias_relu
// CHECK: %[[COL:.+]] = "relax.call_tir"(%arg0) {callee = @relax_im2col_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx4xDxD
// CHECK-SAME: -> tensor<?x36x?x?xf32, #relax.shape<["n", 36, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
// CHECK: %[[Y:.+]] = "relax.call_dps_library"(%arg1, %[[COL]], %arg2) {callee = "relax_blas_conv_gemm_bias_f32"
// CHECK-NOT: relax.add
// CHECK: "relax.relu"(%[[Y]])
// CHECK-LABEL: func.func private @relax_im2col_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx4xDxD(
// CHECK-SAME: %[[X:.+]]: tensor<?x4x?x?xf32>, %[[O:.+]]: tensor<?x36x?x?xf32>)
// CHECK: linalg.copy ins(%[[X]]
// CHECK: %[[E:.+]] = tensor.expand_shape %[[O]] {{\[}}[0], [1, 2, 3], [4], [5]] output_shape [%{{.+}}, 4, 3, 3, %{{.+}}, %{{.+}}] : tensor<?x36x?x?xf32> into tensor<?x4x3x3x?x?xf32>
// CHECK: %[[G:.+]] = linalg.generic {{.+}} ins(%{{.+}} : tensor<?x4x?x?xf32>) outs(%[[E]] : tensor<?x4x3x3x?x?xf32>)
// CHECK: tensor.collapse_shape %[[G]] {{\[}}[0], [1, 2, 3], [4], [5]] : tensor<?x4x3x3x?x?xf32> into tensor<?x36x?x?xf32>
// The work at the upper bounds (2 * 4 * 4 * 8 * 36 = 9216) is below min-flops=1e9:
// BIG-LABEL: func.func @conv3x3_bias_relu
// BIG: "relax.conv2d"
// BIG: "relax.add"
func.func @conv3x3_bias_relu(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<8x4x3x3xf32>, %b: tensor<8x1x1xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>> attributes {relax.function, relax.upper_bounds = {n = 2 : i64, h = 8 : i64, w = 8 : i64}} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<8x4x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  %1 = "relax.add"(%b, %0) : (tensor<8x1x1xf32>, tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  %2 = "relax.relu"(%1) : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  return %2 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
}

// -----

// A 1x1 conv reads x in place; its result has a second user, so the add stays.
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: relax_im2col
// CHECK: %[[Y:.+]] = "relax.call_dps_library"(%arg1, %arg0) {callee = "relax_blas_conv_gemm_f32"
// CHECK: "relax.add"(%[[Y]], %arg2)
// CHECK: "relax.multiply"(%[[Y]],
func.func @pointwise(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<32x16x1x1xf32>, %b: tensor<32x1x1xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<32x16x1x1xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %1 = "relax.add"(%0, %b) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<32x1x1xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %2 = "relax.multiply"(%0, %1) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  return %2 : tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
}

// -----

// Depthwise (groups 4), f16 and tiny static convs stay relax.conv2d.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: call_dps_library
// CHECK-COUNT-3: "relax.conv2d"
func.func @stays(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %dw: tensor<4x1x3x3xf32>, %h: tensor<1x4x8x8xf16>, %wh: tensor<4x4x3x3xf16>, %s: tensor<1x1x2x2xf32>, %ws: tensor<1x1x1x1xf32>) -> (tensor<?x4x?x?xf32>, tensor<1x4x6x6xf16>, tensor<1x1x2x2xf32>) attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %dw) {padding = array<i64: 1, 1>, groups = 4 : i64} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<4x1x3x3xf32>) -> tensor<?x4x?x?xf32>
  %1 = "relax.conv2d"(%h, %wh) : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
  %2 = "relax.conv2d"(%s, %ws) : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  return %0, %1, %2 : tensor<?x4x?x?xf32>, tensor<1x4x6x6xf16>, tensor<1x1x2x2xf32>
}
