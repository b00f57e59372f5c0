// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s

// Convolution, pooling and sorting: symbolic spatial sizes (floor division by the stride)
// and the run-time checks that the padded input covers the window.

// CHECK-LABEL: func.func @conv_same_size(
// CHECK-SAME: -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[3, "h + 2"]>, message = "relax.conv2d: height: the padded input must cover the dilated window: 3 <= h + 2", predicate = "le"}
// CHECK: "relax.assert"() {dims = #relax.shape<[3, "w + 2"]>
// CHECK: "relax.conv2d"{{.*}} -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
func.func @conv_same_size(%x: tensor<?x3x?x?xf32, #relax.shape<["n", 3, "h", "w"]>>, %w: tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>} : (tensor<?x3x?x?xf32, #relax.shape<["n", 3, "h", "w"]>>, tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// Stride, dilation, asymmetric padding (top, left, bottom, right) and groups.
// CHECK-LABEL: func.func @conv_strided_grouped(
// CHECK-SAME: -> tensor<?x6x?x?xf32, #relax.shape<["n", 6, "(h - 1) // 2 + 1", "w - 1"]>> attributes
// CHECK: "relax.assert"() {dims = #relax.shape<[5, "h + 4"]>
// CHECK: "relax.assert"() {dims = #relax.shape<[3, "w + 1"]>
func.func @conv_strided_grouped(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<6x2x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 1>, padding = array<i64: 2, 1, 2, 0>, dilation = array<i64: 2, 1>, groups = 2 : i64} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<6x2x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// Static sizes: the window check is proven, no assert.
// CHECK-LABEL: func.func @conv_static(
// CHECK-NOT: relax.assert
// CHECK: "relax.conv2d"{{.*}} -> tensor<1x4x3x2xf32>
func.func @conv_static(%x: tensor<1x3x7x7xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 3>} : (tensor<1x3x7x7xf32>, tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @pools(
// CHECK: "relax.max_pool2d"{{.*}} -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h // 2", "w // 2"]>>
// Chained windows fold: ((h // 2) - 1) // 2 is (h - 2) // 4.
// CHECK: "relax.avg_pool2d"{{.*}} -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 2) // 4 + 1", "(w - 2) // 4 + 1"]>>
func.func @pools(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x?x?x?xf32>
  %1 = "relax.avg_pool2d"(%0) {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  return %1 : tensor<?x?x?x?xf32>
}

// -----

// CHECK-LABEL: func.func @sorting(
// CHECK: "relax.sort"{{.*}} -> tensor<?x?xf32, #relax.shape<["b", "n"]>>
// CHECK: "relax.argsort"{{.*}} -> tensor<?x?xi32, #relax.shape<["b", "n"]>>
// CHECK: "relax.assert"() {dims = #relax.shape<[4, "n"]>, message = "relax.topk: k (axis 1 length): 4 <= n", predicate = "le"}
// CHECK: "relax.topk"{{.*}} -> (tensor<?x4xf32, #relax.shape<["b", 4]>>, tensor<?x4xi64, #relax.shape<["b", 4]>>)
func.func @sorting(%x: tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x?xi64> attributes {relax.function} {
  %0 = "relax.sort"(%x) {descending = true} : (tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x?xf32>
  %1 = "relax.argsort"(%x) {axis = 0 : i64, dtype = i32} : (tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x?xi32>
  %2, %3 = "relax.topk"(%x) {k = 4 : i64} : (tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
  return %3 : tensor<?x?xi64>
}
