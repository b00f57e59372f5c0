// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of reductions, softmax and normalizations.

func.func @sum_axis_out_of_range(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.sum' axis 2 is out of range for rank 2}}
  %0 = "relax.sum"(%x) {axes = array<i64: 2>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @sum_repeated_axes(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.sum' axes [1, -1] repeat an axis}}
  %0 = "relax.sum"(%x) {axes = array<i64: 1, -1>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @mean_int(%x: tensor<?xi32, #relax.shape<["n"]>>) -> tensor<i32> attributes {relax.function} {
  // expected-error@+1 {{'relax.mean' expects a floating-point tensor, got i32}}
  %0 = "relax.mean"(%x) : (tensor<?xi32, #relax.shape<["n"]>>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

func.func @argmax_axis_out_of_range(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<i64> attributes {relax.function} {
  // expected-error@+1 {{'relax.argmax' axis 1 is out of range for rank 1}}
  %0 = "relax.argmax"(%x) {axis = 1 : i64} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

func.func @argmax_declared_f32(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<f32> attributes {relax.function} {
  // expected-error@+1 {{'relax.argmax' result #0 is declared f32 but the op produces i64}}
  %0 = "relax.argmax"(%x) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @softmax_int(%x: tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.softmax' expects a floating-point tensor, got i32}}
  %0 = "relax.softmax"(%x) : (tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @softmax_axis_out_of_range(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.softmax' axis -3 is out of range for rank 2}}
  %0 = "relax.softmax"(%x) {axis = -3 : i64} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @layer_norm_gamma_rank(%x: tensor<?x?xf32, #relax.shape<["b", "n"]>>, %g: tensor<?x?xf32, #relax.shape<["b", "n"]>>, %bt: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.layer_norm' operand #1 must have rank 1 (the normalized axes), got 2}}
  %0 = "relax.layer_norm"(%x, %g, %bt) : (tensor<?x?xf32, #relax.shape<["b", "n"]>>, tensor<?x?xf32, #relax.shape<["b", "n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @layer_norm_gamma_dtype(%x: tensor<?x?xf32, #relax.shape<["b", "n"]>>, %g: tensor<?xf16, #relax.shape<["n"]>>, %bt: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.layer_norm' operand #1 has element type f16, expected f32}}
  %0 = "relax.layer_norm"(%x, %g, %bt) : (tensor<?x?xf32, #relax.shape<["b", "n"]>>, tensor<?xf16, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @layer_norm_gamma_dim(%x: tensor<?x64xf32, #relax.shape<["b", 64]>>, %g: tensor<32xf32>, %bt: tensor<64xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.layer_norm' operand #1 dim 0 vs normalized dim: 32 != 64}}
  %0 = "relax.layer_norm"(%x, %g, %bt) : (tensor<?x64xf32, #relax.shape<["b", 64]>>, tensor<32xf32>, tensor<64xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @rms_norm_int(%x: tensor<?x4xi32, #relax.shape<["n", 4]>>, %w: tensor<4xi32>) -> tensor<?x?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.rms_norm' expects a floating-point tensor, got i32}}
  %0 = "relax.rms_norm"(%x, %w) : (tensor<?x4xi32, #relax.shape<["n", 4]>>, tensor<4xi32>) -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}

// -----

func.func @rms_norm_bad_axes(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %w: tensor<4xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.rms_norm' axis 5 is out of range for rank 2}}
  %0 = "relax.rms_norm"(%x, %w) {axes = array<i64: 5>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
