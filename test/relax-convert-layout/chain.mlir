// relax-convert-layout{layout=NHWC}: NCHW convs and pools run channels-last between
// permute_dims at the edges; the transposes are pushed through bias adds (a (C, 1, 1) bias
// re-laid out as (C,)), ReLU6 (scalar bounds), ReLU, residual adds and keepdims reductions,
// and inverse pairs cancel: a chain keeps one transpose at each end.
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-convert-layout)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-convert-layout)' | mlir-opt --irdl-file=%irdl --split-input-file > /dev/null
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-convert-layout, relax-infer-shapes)' > /dev/null

// An inverted-residual block (1x1 expand + bias + ReLU6, depthwise 3x3 + ReLU, 1x1 project,
// residual add) and a global average pool.
// CHECK-LABEL: func.func @main(
// CHECK: %[[X:.+]] = "relax.permute_dims"(%arg0) {axes = array<i64: 0, 2, 3, 1>}
// CHECK: %[[W1:.+]] = "relax.permute_dims"(%arg1) {axes = array<i64: 2, 3, 1, 0>} : (tensor<32x16x1x1xf32>) -> tensor<1x1x16x32xf32>
// CHECK: %[[C1:.+]] = "relax.conv2d"(%[[X]], %[[W1]]) {data_layout = "NHWC"} : {{.*}} -> tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>
// CHECK: %[[B:.+]] = "relax.reshape"(%arg2) {shape = #relax.shape<[32]>} : (tensor<32x1x1xf32>) -> tensor<32xf32>
// CHECK: %[[A:.+]] = "relax.add"(%[[C1]], %[[B]])
// CHECK: %[[LO:.+]] = "relax.maximum"(%[[A]], %cst)
// CHECK: %[[HI:.+]] = "relax.minimum"(%[[LO]], %cst_0)
// CHECK: %[[W2:.+]] = "relax.permute_dims"(%arg3) {axes = array<i64: 2, 3, 1, 0>} : (tensor<32x1x3x3xf32>) -> tensor<3x3x1x32xf32>
// CHECK: %[[C2:.+]] = "relax.conv2d"(%[[HI]], %[[W2]]) {data_layout = "NHWC", groups = 32 : i64, padding = array<i64: 1, 1>}
// CHECK: %[[R:.+]] = "relax.relu"(%[[C2]])
// CHECK: %[[C3:.+]] = "relax.conv2d"(%[[R]], %{{.+}}) {data_layout = "NHWC"}
// CHECK: %[[S:.+]] = "relax.add"(%[[X]], %[[C3]])
// CHECK: %[[M:.+]] = "relax.mean"(%[[S]]) {axes = array<i64: 1, 2>, keepdims = true} : {{.*}} -> tensor<?x1x1x16xf32, #relax.shape<["n", 1, 1, 16]>>
// CHECK: %[[Y:.+]] = "relax.permute_dims"(%[[M]]) {axes = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[Y]]
func.func @main(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w1: tensor<32x16x1x1xf32>, %b1: tensor<32x1x1xf32>, %w2: tensor<32x1x3x3xf32>, %w3: tensor<16x32x1x1xf32>) -> tensor<?x16x1x1xf32, #relax.shape<["n", 16, 1, 1]>> attributes {relax.function} {
  %lo = arith.constant dense<0.0> : tensor<f32>
  %hi = arith.constant dense<6.0> : tensor<f32>
  %0 = "relax.conv2d"(%x, %w1) : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<32x16x1x1xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %1 = "relax.add"(%0, %b1) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<32x1x1xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %2 = "relax.maximum"(%1, %lo) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<f32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %3 = "relax.minimum"(%2, %hi) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<f32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %4 = "relax.conv2d"(%3, %w2) {padding = array<i64: 1, 1>, groups = 32 : i64} : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<32x1x3x3xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %5 = "relax.relu"(%4) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %6 = "relax.conv2d"(%5, %w3) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<16x32x1x1xf32>) -> tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>
  %7 = "relax.add"(%x, %6) : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>) -> tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>
  %8 = "relax.mean"(%7) {axes = array<i64: -2, -1>, keepdims = true} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>) -> tensor<?x16x1x1xf32, #relax.shape<["n", 16, 1, 1]>>
  return %8 : tensor<?x16x1x1xf32, #relax.shape<["n", 16, 1, 1]>>
}

// -----

// Max pooling converts too; a (1, C, 1, 1) bias is re-laid out as (C,); a full NCHW
// operand the function has no NHWC form of stops the push (one transpose back before the
// add), and an op the pass does not know (reshape) reads NCHW.
// CHECK-LABEL: func.func @stops(
// CHECK: %[[P:.+]] = "relax.max_pool2d"(%{{.+}}) {data_layout = "NHWC", padding = array<i64: 1, 1>, pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>}
// CHECK: %[[B:.+]] = "relax.reshape"(%arg1) {shape = #relax.shape<[8]>} : (tensor<1x8x1x1xf32>) -> tensor<8xf32>
// CHECK: %[[A:.+]] = "relax.add"(%[[P]], %[[B]])
// CHECK: %[[T:.+]] = "relax.permute_dims"(%[[A]]) {axes = array<i64: 0, 3, 1, 2>}
// CHECK: %[[S:.+]] = "relax.add"(%[[T]], %arg2)
// CHECK: "relax.reshape"(%[[S]])
func.func @stops(%x: tensor<?x8x16x16xf32, #relax.shape<["n", 8, 16, 16]>>, %b: tensor<1x8x1x1xf32>, %y: tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>) -> tensor<?x512xf32, #relax.shape<["n", 512]>> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x8x16x16xf32, #relax.shape<["n", 8, 16, 16]>>) -> tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>
  %1 = "relax.add"(%0, %b) : (tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>, tensor<1x8x1x1xf32>) -> tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>
  %2 = "relax.add"(%1, %y) : (tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>, tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>) -> tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>
  %3 = "relax.reshape"(%2) {shape = #relax.shape<["n", 512]>} : (tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>) -> tensor<?x512xf32, #relax.shape<["n", 512]>>
  return %3 : tensor<?x512xf32, #relax.shape<["n", 512]>>
}

// -----

// NHWC convs are left alone; a program without NCHW convs or pools is unchanged.
// CHECK-LABEL: func.func @nothing(
// CHECK-NOT: relax.permute_dims
// CHECK: "relax.conv2d"(%arg0, %arg1) {data_layout = "NHWC"}
// CHECK-NEXT: "relax.relu"
func.func @nothing(%x: tensor<?x8x8x4xf32, #relax.shape<["n", 8, 8, 4]>>, %w: tensor<1x1x4x8xf32>) -> tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC"} : (tensor<?x8x8x4xf32, #relax.shape<["n", 8, 8, 4]>>, tensor<1x1x4x8xf32>) -> tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>
  %1 = "relax.relu"(%0) : (tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>) -> tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>
  return %1 : tensor<?x8x8x8xf32, #relax.shape<["n", 8, 8, 8]>>
}
