// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of convolution, pooling and sorting.

func.func @conv_channels(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' input channels vs weight dim 1 * groups: 4 != 3}}
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @conv_groups_split_outputs(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<5x2x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' output channels divisible by groups (2): 1 != 0}}
  %0 = "relax.conv2d"(%x, %w) {groups = 2 : i64} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<5x2x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @conv_rank(%x: tensor<?x3x?xf32, #relax.shape<["n", 3, "l"]>>, %w: tensor<8x3x3xf32>) -> tensor<?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' expects a rank-4 input (NCHW) and a rank-4 weight (OIHW), got ranks 3 and 3}}
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x3x?xf32, #relax.shape<["n", 3, "l"]>>, tensor<8x3x3xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @conv_int(%x: tensor<1x3x5x5xi32>, %w: tensor<8x3x3x3xi32>) -> tensor<?x?x?x?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' expects floating-point tensors, got i32}}
  %0 = "relax.conv2d"(%x, %w) : (tensor<1x3x5x5xi32>, tensor<8x3x3x3xi32>) -> tensor<?x?x?x?xi32>
  return %0 : tensor<?x?x?x?xi32>
}

// -----

func.func @conv_window_too_big(%x: tensor<1x3x2x5xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' height: the padded input must cover the dilated window: 3 > 2}}
  %0 = "relax.conv2d"(%x, %w) : (tensor<1x3x2x5xf32>, tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @conv_padding_length(%x: tensor<1x3x5x5xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' `padding` must have 2 or 4 values, got 3}}
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1, 1>} : (tensor<1x3x5x5xf32>, tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @conv_zero_stride(%x: tensor<1x3x5x5xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' `strides` values must be >= 1, got [0, 1]}}
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 0, 1>} : (tensor<1x3x5x5xf32>, tensor<8x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @pool_ceil_mode(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.max_pool2d' ceil_mode=true is not supported (floor mode only)}}
  %0 = "relax.max_pool2d"(%x) {pool_size = array<i64: 2, 2>, ceil_mode = true} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @pool_padding_over_half(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.avg_pool2d' padding [2, 0] must be at most half the window [3, 3]}}
  %0 = "relax.avg_pool2d"(%x) {pool_size = array<i64: 3, 3>, padding = array<i64: 2, 0>} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @avg_pool_int(%x: tensor<1x8x4x4xi32>) -> tensor<?x?x?x?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.avg_pool2d' expects a floating-point tensor, got i32}}
  %0 = "relax.avg_pool2d"(%x) {pool_size = array<i64: 2, 2>} : (tensor<1x8x4x4xi32>) -> tensor<?x?x?x?xi32>
  return %0 : tensor<?x?x?x?xi32>
}

// -----

func.func @topk_k_too_big(%x: tensor<?x4xf32, #relax.shape<["b", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.topk' k (axis 1 length): 5 > 4}}
  %0, %1 = "relax.topk"(%x) {k = 5 : i64} : (tensor<?x4xf32, #relax.shape<["b", 4]>>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
  return %0 : tensor<?x?xf32>
}

// -----

func.func @argsort_dtype(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.argsort' index `dtype` must be i32 or i64, got f32}}
  %0 = "relax.argsort"(%x) {dtype = f32} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @sort_axis(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.sort' axis 1 is out of range for rank 1}}
  %0 = "relax.sort"(%x) {axis = 1 : i64} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
