// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of relax.matmul.

func.func @k_static_mismatch(%a: tensor<?x3xf32, #relax.shape<["n", 3]>>, %b: tensor<4x?xf32, #relax.shape<[4, "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' reduction dim K (lhs dim -1 vs rhs dim -2): 3 != 4}}
  %0 = "relax.matmul"(%a, %b) : (tensor<?x3xf32, #relax.shape<["n", 3]>>, tensor<4x?xf32, #relax.shape<[4, "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @k_symbolic_mismatch(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k + 1", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' reduction dim K (lhs dim -1 vs rhs dim -2): k != k + 1}}
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["k + 1", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @rank0_operand(%a: tensor<f32>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' operands must have rank >= 1}}
  %0 = "relax.matmul"(%a, %b) : (tensor<f32>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @dtype_mismatch(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf16, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' operands must have the same element type, got f32, f16}}
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf16, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @batch_mismatch(%a: tensor<2x?x?xf32, #relax.shape<[2, "n", "k"]>>, %b: tensor<3x?x?xf32, #relax.shape<[3, "k", "m"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' broadcast dim -1: 2 != 3}}
  %0 = "relax.matmul"(%a, %b) : (tensor<2x?x?xf32, #relax.shape<[2, "n", "k"]>>, tensor<3x?x?xf32, #relax.shape<[3, "k", "m"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @k_unknown(%a: tensor<?x?xf32, #relax.shape<["n", "?"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' reduction dim K (lhs dim -1 vs rhs dim -2): cannot check a relation on an unknown dimension '?'; name it with relax.match_cast}}
  %0 = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["n", "?"]>>, tensor<?x?xf32, #relax.shape<["k", "m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @vec_vec_mismatch(%a: tensor<3xf32>, %b: tensor<5xf32>) -> tensor<f32> attributes {relax.function} {
  // expected-error@+1 {{'relax.matmul' reduction dim K (lhs dim -1 vs rhs dim -2): 3 != 5}}
  %0 = "relax.matmul"(%a, %b) : (tensor<3xf32>, tensor<5xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
