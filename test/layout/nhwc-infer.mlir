// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | mlir-opt --irdl-file=%irdl --split-input-file > /dev/null

// data_layout = "NHWC": data (N, H, W, C), weight HWIO (KH, KW, C / groups, O); the output
// (N, OH, OW, O) with the same symbolic window arithmetic as NCHW.

// CHECK-LABEL: func.func @conv_nhwc(
// CHECK-SAME: -> tensor<?x?x?x8xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "w - 1", 8]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[5, "h + 4"]>
// CHECK: "relax.assert"() {dims = #relax.shape<[3, "w + 1"]>
// CHECK: "relax.conv2d"(%arg0, %arg1) {data_layout = "NHWC", {{.*}}groups = 2 : i64{{.*}}} : {{.*}} -> tensor<?x?x?x8xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "w - 1", 8]>>
func.func @conv_nhwc(%x: tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, %w: tensor<3x3x2x8xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC", strides = array<i64: 2, 1>, padding = array<i64: 2, 1, 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, tensor<3x3x2x8xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// Depthwise (weight (KH, KW, 1, C)), static sizes: the window check is proven, no assert.
// CHECK-LABEL: func.func @depthwise_nhwc(
// CHECK-NOT: relax.assert
// CHECK: -> tensor<2x7x7x32xf32>
func.func @depthwise_nhwc(%x: tensor<2x14x14x32xf32>, %w: tensor<3x3x1x32xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC", strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 32 : i64} : (tensor<2x14x14x32xf32>, tensor<3x3x1x32xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// Pooling keeps the channels last.
// CHECK-LABEL: func.func @pool_nhwc(
// CHECK: "relax.max_pool2d"{{.*}} -> tensor<?x?x?x16xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1", 16]>>
// CHECK: "relax.avg_pool2d"{{.*}} -> tensor<?x?x?x16xf32, #relax.shape<["n", "h - 2", "w - 2", 16]>>
func.func @pool_nhwc(%x: tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {data_layout = "NHWC", pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>) -> tensor<?x?x?x?xf32>
  %1 = "relax.avg_pool2d"(%x) {data_layout = "NHWC", pool_size = array<i64: 3, 3>} : (tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>) -> tensor<?x?x?x?xf32>
  return %1 : tensor<?x?x?x?xf32>
}
