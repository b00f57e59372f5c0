// relax-legalize on convolution, pooling and topk: tensor.pad feeding the upstream linalg
// conv/pooling named ops (grouped: channel dims expanded to (groups, C / groups)), and the
// two-generic sort kernel (positions counted, then gathered).
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --split-input-file > /dev/null

// CHECK-LABEL: func.func @conv
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_conv2d_s1_1_p1_1_1_1_d1_1_f32_Dx4xDxD_8x4x3x3
// CHECK: "relax.call_tir"(%arg0, %arg2) {callee = @relax_conv2d_s2_2_p1_1_1_1_d1_1_g2_f32_Dx4xDxD_8x2x3x3
// CHECK-LABEL: func.func private @relax_conv2d_s1_1_p1_1_1_1_d1_1_f32_Dx4xDxD_8x4x3x3(
// CHECK-SAME: %[[X:.+]]: tensor<?x4x?x?xf32>, %[[W:.+]]: tensor<8x4x3x3xf32>, %[[O:.+]]: tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
// CHECK: %[[P:.+]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[O]] : tensor<?x8x?x?xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[P]], %[[W]] : tensor<?x4x?x?xf32>, tensor<8x4x3x3xf32>) outs(%[[F]] : tensor<?x8x?x?xf32>)
// CHECK-LABEL: func.func private @relax_conv2d_s2_2_p1_1_1_1_d1_1_g2_f32_Dx4xDxD_8x2x3x3(
// CHECK: tensor.pad
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.+}}, 2, 2, %{{.+}}, %{{.+}}] : tensor<?x4x?x?xf32> into tensor<?x2x2x?x?xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 4, 2, 3, 3] : tensor<8x2x3x3xf32> into tensor<2x4x2x3x3xf32>
// CHECK: linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x4x?x?xf32> into tensor<?x8x?x?xf32>
// CHECK: linalg.copy
func.func @conv(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<8x4x3x3xf32>, %g: tensor<8x2x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<8x4x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  %1 = "relax.conv2d"(%x, %g) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<8x2x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  return %1 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
}


// -----

// CHECK-LABEL: func.func @pools
// CHECK-LABEL: func.func private @relax_max_pool2d_k3_3_s1_1_p1_1_1_1_d1_1_f32_Dx8xDxD(
// CHECK: %[[NEG:.+]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %{{.+}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEG]] : f32
// CHECK: %[[WIN:.+]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.pooling_nchw_max {{.*}} ins(%{{.+}}, %[[WIN]] : tensor<?x8x?x?xf32>, tensor<3x3xf32>)
// CHECK-LABEL: func.func private @relax_avg_pool2d_k3_3_s1_1_p1_1_1_1_cip0_f32_Dx8xDxD(
// CHECK: linalg.pooling_nchw_sum
// CHECK: linalg.generic
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: arith.divf

func.func @pools(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  %1 = "relax.avg_pool2d"(%x) {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  return %1 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
}


// -----

// CHECK-LABEL: func.func @topk
// CHECK: %[[R:.+]]:2 = "relax.call_tir"(%arg0) {callee = @relax_topk_axis1_desc1_k2_f32_r2
// CHECK-LABEL: func.func private @relax_topk_axis1_desc1_k2_f32_r2(
// CHECK-SAME: %{{.+}}: tensor<?x?xf32>, %{{.+}}: tensor<?x2xf32>, %{{.+}}: tensor<?x2xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<?x?xi64>)
// CHECK: arith.cmpf uno
// CHECK: arith.cmpi ult
// CHECK: arith.extui
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}}, %{{.+}} : tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK: arith.cmpi eq
// CHECK: arith.select

func.func @topk(%x: tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x2xi64, #relax.shape<["b", 2]>> attributes {relax.function} {
  %0, %1 = "relax.topk"(%x) {k = 2 : i64} : (tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> (tensor<?x2xf32, #relax.shape<["b", 2]>>, tensor<?x2xi64, #relax.shape<["b", 2]>>)
  return %1 : tensor<?x2xi64, #relax.shape<["b", 2]>>
}
