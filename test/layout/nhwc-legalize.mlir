// relax-legalize of channels-last convolutions and pooling: zero padding (fill + copy into
// the interior, spatial dims 1 and 2), then upstream's conv_2d_nhwc_hwcf (groups 1),
// depthwise_conv_2d_nhwc_hwc (the (KH, KW, 1, C) weight collapsed), one generic over the
// channels expanded to (groups, C / groups) (other grouped), one window generic (pooling).
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --split-input-file > /dev/null

// CHECK-LABEL: func.func @conv
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_conv2d_lnhwc_s1_1_p1_1_1_1_d1_1_f32_DxDxDx4_3x3x4x8
// CHECK: "relax.call_tir"(%arg0, %arg2) {callee = @relax_conv2d_lnhwc_s2_2_p1_1_1_1_d1_1_g4_f32_DxDxDx4_3x3x1x4
// CHECK: "relax.call_tir"(%arg0, %arg3) {callee = @relax_conv2d_lnhwc_s1_1_p0_0_0_0_d2_2_g2_f32_DxDxDx4_3x3x2x6
// CHECK-LABEL: func.func private @relax_conv2d_lnhwc_s1_1_p1_1_1_1_d1_1_f32_DxDxDx4_3x3x4x8(
// CHECK-SAME: %[[X:.+]]: tensor<?x?x?x4xf32>, %[[W:.+]]: tensor<3x3x4x8xf32>, %[[O:.+]]: tensor<?x?x?x8xf32>) -> tensor<?x?x?x8xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x?x?x4xf32>)
// CHECK: %[[S:.+]] = tensor.extract_slice %[[Z]][0, 1, 1, 0]
// CHECK: %[[C:.+]] = linalg.copy ins(%[[X]] : tensor<?x?x?x4xf32>) outs(%[[S]] : tensor<?x?x?x4xf32>)
// CHECK: %[[P:.+]] = tensor.insert_slice %[[C]] into %[[Z]][0, 1, 1, 0]
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[O]] : tensor<?x?x?x8xf32>)
// CHECK: linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[P]], %[[W]] : tensor<?x?x?x4xf32>, tensor<3x3x4x8xf32>) outs(%[[F]] : tensor<?x?x?x8xf32>)
// CHECK-LABEL: func.func private @relax_conv2d_lnhwc_s2_2_p1_1_1_1_d1_1_g4_f32_DxDxDx4_3x3x1x4(
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1], [2, 3]] : tensor<3x3x1x4xf32> into tensor<3x3x4xf32>
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-LABEL: func.func private @relax_conv2d_lnhwc_s1_1_p0_0_0_0_d2_2_g2_f32_DxDxDx4_3x3x2x6(
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [%{{.+}}, %{{.+}}, %{{.+}}, 2, 2] : tensor<?x?x?x4xf32> into tensor<?x?x?x2x2xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [3, 3, 2, 2, 3] : tensor<3x3x2x6xf32> into tensor<3x3x2x2x3xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] : tensor<?x?x?x2x3xf32> into tensor<?x?x?x6xf32>
func.func @conv(%x: tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, %w: tensor<3x3x4x8xf32>, %d: tensor<3x3x1x4xf32>, %g: tensor<3x3x2x6xf32>) -> tensor<?x?x?x6xf32, #relax.shape<["n", "h - 4", "w - 4", 6]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC", padding = array<i64: 1, 1>} : (tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, tensor<3x3x4x8xf32>) -> tensor<?x?x?x8xf32, #relax.shape<["n", "h", "w", 8]>>
  %1 = "relax.conv2d"(%x, %d) {data_layout = "NHWC", strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 4 : i64} : (tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, tensor<3x3x1x4xf32>) -> tensor<?x?x?x4xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1", 4]>>
  %2 = "relax.conv2d"(%x, %g) {data_layout = "NHWC", dilation = array<i64: 2, 2>, groups = 2 : i64} : (tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, tensor<3x3x2x6xf32>) -> tensor<?x?x?x6xf32, #relax.shape<["n", "h - 4", "w - 4", 6]>>
  return %2 : tensor<?x?x?x6xf32, #relax.shape<["n", "h - 4", "w - 4", 6]>>
}

// -----

// Max pooling pads with the lowest value; the window's extent comes from a (KH, KW) tensor.empty.
// CHECK-DAG: #[[XM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
// CHECK-DAG: #[[KM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
// CHECK-LABEL: func.func private @relax_max_pool2d_lnhwc_k3_3_s2_2_p1_1_1_1_d1_1_f32
// CHECK: linalg.fill ins(%cst{{.*}} : f32) outs(%{{.+}} : tensor<?x?x?x16xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 1, 1, 0]
// CHECK: %[[K:.+]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[XM]], #[[KM]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: arith.maximumf
func.func @pool(%x: tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>) -> tensor<?x?x?x16xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1", 16]>> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {data_layout = "NHWC", pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>) -> tensor<?x?x?x16xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1", 16]>>
  return %0 : tensor<?x?x?x16xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1", 16]>>
}

// -----

// A 1x1 stride-1 unpadded f32 conv: the (N*H*W, C) view of the input times the (C, O)
// view of the weight, into the (N*H*W, O) view of the output (tensor.reshape: no copies).
// CHECK-LABEL: func.func private @relax_conv2d_lnhwc_s1_1_p0_0_0_0_d1_1_f32_DxDxDx16_1x1x16x32(
// CHECK-SAME: %[[X:.+]]: tensor<?x?x?x16xf32>, %[[W:.+]]: tensor<1x1x16x32xf32>, %[[O:.+]]: tensor<?x?x?x32xf32>)
// CHECK: %[[A:.+]] = tensor.reshape %[[X]](%{{.+}}) : (tensor<?x?x?x16xf32>, tensor<2xindex>) -> tensor<?x16xf32>
// CHECK: %[[B:.+]] = tensor.reshape %[[W]](%{{.+}}) : (tensor<1x1x16x32xf32>, tensor<2xindex>) -> tensor<16x32xf32>
// CHECK: %[[C:.+]] = tensor.reshape %[[O]](%{{.+}}) : (tensor<?x?x?x32xf32>, tensor<2xindex>) -> tensor<?x32xf32>
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[C]] : tensor<?x32xf32>)
// CHECK: %[[M:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<?x16xf32>, tensor<16x32xf32>) outs(%[[F]] : tensor<?x32xf32>)
// CHECK: tensor.reshape %[[M]](%{{.+}}) : (tensor<?x32xf32>, tensor<4xindex>) -> tensor<?x?x?x32xf32>
func.func @pointwise(%x: tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>, %w: tensor<1x1x16x32xf32>) -> tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC"} : (tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>, tensor<1x1x16x32xf32>) -> tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>
  return %0 : tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>
}
