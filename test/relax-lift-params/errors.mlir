// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-lift-params)' -o /dev/null

// relax.num_input must be an integer.
// expected-error @+1 {{relax.num_input must be an integer attribute, got "1"}}
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function, relax.num_input = "1"} {
  %0 = "relax.add"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ... no more than the function's parameters ...
// expected-error @+1 {{relax.num_input = 3 is out of range: @f has 2 parameter(s)}}
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function, relax.num_input = 3 : i64} {
  %0 = "relax.add"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ... and not negative.
// expected-error @+1 {{relax.num_input = -1 is out of range: @f has 2 parameter(s)}}
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function, relax.num_input = -1 : i64} {
  %0 = "relax.add"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The transform function's name is taken.
// expected-error @+1 {{cannot lift the weights of @f: a function @f_transform_params exists already}}
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function, relax.num_input = 1 : i64} {
  %0 = "relax.multiply"(%w, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "relax.add"(%x, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @f_transform_params(%w: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function} {
  return %w : tensor<4xf32>
}
