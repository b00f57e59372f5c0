// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-fold-batch-norm)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-fold-batch-norm)' | mlir-opt --irdl-file=%irdl --verify-each > /dev/null

// conv2d + bias, then an inference BatchNorm (per-channel scale and shift): the scale
// moves into the weight's output channels, the bias becomes b * s + t, one add remains.

// CHECK-LABEL: func.func @conv_bias_bn(
// CHECK-SAME: %[[X:arg0]]: tensor<2x3x8x8xf32>, %[[W:arg1]]: tensor<4x3x3x3xf32>, %[[B:arg2]]: tensor<4x1x1xf32>, %[[S:arg3]]: tensor<4x1x1xf32>, %[[T:arg4]]: tensor<4x1x1xf32>)
// CHECK-NEXT: %[[S4:.*]] = "relax.reshape"(%[[S]]) {shape = #relax.shape<[4, 1, 1, 1]>} : (tensor<4x1x1xf32>) -> tensor<4x1x1x1xf32>
// CHECK-NEXT: %[[W2:.*]] = "relax.multiply"(%[[W]], %[[S4]]) : (tensor<4x3x3x3xf32>, tensor<4x1x1x1xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NEXT: %[[Y:.*]] = "relax.conv2d"(%[[X]], %[[W2]]) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-NEXT: %[[BS:.*]] = "relax.multiply"(%[[B]], %[[S]]) : (tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<4x1x1xf32>
// CHECK-NEXT: %[[B2:.*]] = "relax.add"(%[[BS]], %[[T]]) : (tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<4x1x1xf32>
// CHECK-NEXT: %[[R:.*]] = "relax.add"(%[[Y]], %[[B2]]) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[A:.*]] = "relax.relu"(%[[R]])
// CHECK-NEXT: return %[[A]]
func.func @conv_bias_bn(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>, %s: tensor<4x1x1xf32>, %t: tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1 = "relax.add"(%0, %b) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %2 = "relax.multiply"(%1, %s) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %3 = "relax.add"(%2, %t) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %4 = "relax.relu"(%3) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %4 : tensor<2x4x8x8xf32>
}

// -----

// A depthwise conv (groups = C) with a symbolic batch and image size (bounded), the scale
// [1, C, 1, 1] on the left of the multiply, no bias, no shift: the weight is scaled, the
// conv keeps its attributes, nothing is added.

// CHECK-LABEL: func.func @depthwise_sym(
// CHECK-NEXT: %[[S4:.*]] = "relax.reshape"(%arg2) {shape = #relax.shape<[8, 1, 1, 1]>} : (tensor<1x8x1x1xf32>) -> tensor<8x1x1x1xf32>
// CHECK-NEXT: %[[W2:.*]] = "relax.multiply"(%arg1, %[[S4]]) : (tensor<8x1x3x3xf32>, tensor<8x1x1x1xf32>) -> tensor<8x1x3x3xf32>
// CHECK-NEXT: %[[Y:.*]] = "relax.conv2d"(%arg0, %[[W2]]) {dilation = array<i64: 1, 1>, groups = 8 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<8x1x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
// CHECK-NEXT: return %[[Y]] :
func.func @depthwise_sym(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, %w: tensor<8x1x3x3xf32>, %s: tensor<1x8x1x1xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>> attributes {relax.function, relax.upper_bounds = {h = 64 : i64, n = 8 : i64, w = 64 : i64}} {
  %0 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 8 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<8x1x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  %1 = "relax.multiply"(%s, %0) : (tensor<1x8x1x1xf32>, tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  return %1 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
}

// -----

// Not folded: the conv's result has a second user; the scale is not per-channel (a full
// tensor); the weight (64*64*3*3 = 36864) is larger than one image's output (64*2*2):
// scaling it on every call would cost more than the multiply it saves. A BatchNorm after
// a relu (no conv before it) stays a per-channel scale and shift.

// CHECK-LABEL: func.func @kept(
// CHECK-NEXT: %[[C:.*]] = "relax.conv2d"(%arg0, %arg1)
// CHECK-NEXT: "relax.multiply"(%[[C]], %arg2)
// CHECK-NEXT: "relax.add"(%[[C]], %[[C]])
// CHECK-NEXT: %[[C2:.*]] = "relax.conv2d"(%arg0, %arg1)
// CHECK-NEXT: "relax.multiply"(%[[C2]], %arg3)
// CHECK-NEXT: %[[C3:.*]] = "relax.conv2d"(%arg4, %arg5)
// CHECK-NEXT: "relax.multiply"(%[[C3]], %arg6)
// CHECK-NEXT: %[[R:.*]] = "relax.relu"(%arg0)
// CHECK-NEXT: %[[M:.*]] = "relax.multiply"(%[[R]], %arg2)
// CHECK-NEXT: "relax.add"(%[[M]], %arg2)
// CHECK-NEXT: return
func.func @kept(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %s: tensor<4x1x1xf32>, %full: tensor<2x4x8x8xf32>, %x2: tensor<1x64x2x2xf32>, %w2: tensor<64x64x3x3xf32>, %s2: tensor<64x1x1xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<1x64x2x2xf32>, tensor<2x4x8x8xf32>) attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1 = "relax.multiply"(%0, %s) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %2 = "relax.add"(%0, %0) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %3 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %4 = "relax.multiply"(%3, %full) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %5 = "relax.conv2d"(%x2, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x2x2xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x2x2xf32>
  %6 = "relax.multiply"(%5, %s2) : (tensor<1x64x2x2xf32>, tensor<64x1x1xf32>) -> tensor<1x64x2x2xf32>
  %7 = "relax.relu"(%x) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %8 = "relax.multiply"(%7, %s) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %9 = "relax.add"(%8, %s) : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  return %1, %2, %4, %6, %9 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<1x64x2x2xf32>, tensor<2x4x8x8xf32>
}

// -----

// Symbolic image sizes without upper bounds: images are assumed large, so even a large
// weight (64*64*3*3) is folded.

// CHECK-LABEL: func.func @unbounded(
// CHECK-NEXT: %[[S4:.*]] = "relax.reshape"(%arg2) {shape = #relax.shape<[64, 1, 1, 1]>}
// CHECK-NEXT: %[[W2:.*]] = "relax.multiply"(%arg1, %[[S4]])
// CHECK-NEXT: %[[Y:.*]] = "relax.conv2d"(%arg0, %[[W2]])
// CHECK-NEXT: return %[[Y]] :
func.func @unbounded(%x: tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>>, %w: tensor<64x64x3x3xf32>, %s: tensor<64x1x1xf32>) -> tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>>, tensor<64x64x3x3xf32>) -> tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>>
  %1 = "relax.multiply"(%0, %s) : (tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>>, tensor<64x1x1xf32>) -> tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>>
  return %1 : tensor<1x64x?x?xf32, #relax.shape<[1, 64, "h", "w"]>>
}

// -----

// The weight (64*64*3*3) is larger than the image's output (64*2*2), but the function
// declares its weights (relax.num_input = 1) and the weight and scale are weights:
// relax-lift-params computes W * s once, at bind_params, so the fold applies. With the
// scale computed from the input, it does not (the weight-side multiply would run per call).

// CHECK-LABEL: func.func @declared_weights(
// CHECK-NEXT: %[[S4:.*]] = "relax.reshape"(%arg2)
// CHECK-NEXT: %[[W2:.*]] = "relax.multiply"(%arg1, %[[S4]])
// CHECK-NEXT: %[[Y:.*]] = "relax.conv2d"(%arg0, %[[W2]])
// CHECK-NEXT: %[[C:.*]] = "relax.conv2d"(%arg0, %arg1)
// CHECK-NEXT: %[[M:.*]] = "relax.mean"(%arg0)
// CHECK-NEXT: %[[M3:.*]] = "relax.reshape"(%[[M]])
// CHECK-NEXT: "relax.multiply"(%[[C]], %[[M3]])
func.func @declared_weights(%x: tensor<1x64x2x2xf32>, %w: tensor<64x64x3x3xf32>, %s: tensor<64x1x1xf32>) -> (tensor<1x64x2x2xf32>, tensor<1x64x2x2xf32>) attributes {relax.function, relax.num_input = 1 : i64} {
  %0 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x2x2xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x2x2xf32>
  %1 = "relax.multiply"(%0, %s) : (tensor<1x64x2x2xf32>, tensor<64x1x1xf32>) -> tensor<1x64x2x2xf32>
  %2 = "relax.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x2x2xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x2x2xf32>
  %m = "relax.mean"(%x) {axes = array<i64: 0, 2, 3>, keepdims = false} : (tensor<1x64x2x2xf32>) -> tensor<64xf32>
  %m3 = "relax.reshape"(%m) {shape = #relax.shape<[64, 1, 1]>} : (tensor<64xf32>) -> tensor<64x1x1xf32>
  %3 = "relax.multiply"(%2, %m3) : (tensor<1x64x2x2xf32>, tensor<64x1x1xf32>) -> tensor<1x64x2x2xf32>
  return %1, %3 : tensor<1x64x2x2xf32>, tensor<1x64x2x2xf32>
}
