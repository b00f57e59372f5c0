// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of data_layout.

func.func @bad_layout(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' `data_layout` must be one of ['NCHW', 'NHWC'], got 'NCWH'}}
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NCWH"} : (tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// An OIHW weight given to an NHWC conv: dim 2 of HWIO is the input channels.
func.func @nhwc_channels(%x: tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, %w: tensor<8x4x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' input channels vs weight dim 2 * groups: 4 != 3}}
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC"} : (tensor<?x?x?x4xf32, #relax.shape<["n", "h", "w", 4]>>, tensor<8x4x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @nhwc_rank(%x: tensor<?x?x4xf32, #relax.shape<["h", "w", 4]>>, %w: tensor<3x3x4x8xf32>) -> tensor<?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' expects a rank-4 input (NHWC) and a rank-4 weight (HWIO), got ranks 3 and 4}}
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC"} : (tensor<?x?x4xf32, #relax.shape<["h", "w", 4]>>, tensor<3x3x4x8xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @nhwc_groups_split_outputs(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x2x5xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' output channels divisible by groups (2): 1 != 0}}
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC", groups = 2 : i64} : (tensor<1x8x8x4xf32>, tensor<3x3x2x5xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

// The window is checked on H (dim 1), not on dim 2.
func.func @nhwc_window_too_big(%x: tensor<1x2x9x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.conv2d' height: the padded input must cover the dilated window: 3 > 2}}
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC"} : (tensor<1x2x9x4xf32>, tensor<3x3x4x8xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}

// -----

func.func @pool_bad_layout(%x: tensor<1x8x8x4xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.max_pool2d' `data_layout` must be one of ['NCHW', 'NHWC'], got 'HWC'}}
  %0 = "relax.max_pool2d"(%x) {data_layout = "HWC", pool_size = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}
