// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of the binary rules: provably false broadcasts, dtypes, '?' dims.

func.func @bcast_3_vs_4(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.add' broadcast dim -1: 3 != 4}}
  %0 = "relax.add"(%a, %b) : (tensor<3xf32>, tensor<4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @bcast_n_vs_n_plus_1(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["n + 1", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.multiply' broadcast dim -2: n != n + 1}}
  %0 = "relax.multiply"(%a, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n + 1", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @bcast_2n_vs_2n_plus_1(%a: tensor<?xf32, #relax.shape<["2*k"]>>, %b: tensor<?xf32, #relax.shape<["2*k + 1"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.subtract' broadcast dim -1: 2*k != 2*k + 1}}
  %0 = "relax.subtract"(%a, %b) : (tensor<?xf32, #relax.shape<["2*k"]>>, tensor<?xf32, #relax.shape<["2*k + 1"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @dtype_mismatch(%a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xf16, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.add' operands must have the same element type, got f32, f16}}
  %0 = "relax.add"(%a, %b) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf16, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @bcast_unknown_dim(%a: tensor<?xf32>, %b: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.add' cannot broadcast dim -1 of an unknown size '?' with n; name it with relax.match_cast}}
  %0 = "relax.add"(%a, %b) : (tensor<?xf32>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @compare_declared_f32(%a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.less' result #0 is declared f32 but the op produces i1}}
  %0 = "relax.less"(%a, %b) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @where_cond_not_i1(%c: tensor<?xf32, #relax.shape<["n"]>>, %a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.where' condition must be an i1 tensor, got f32}}
  %0 = "relax.where"(%c, %a, %a) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @where_branch_dtypes(%c: tensor<?xi1, #relax.shape<["n"]>>, %a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.where' operands must have the same element type, got f32, i32}}
  %0 = "relax.where"(%c, %a, %b) : (tensor<?xi1, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @where_bcast_false(%c: tensor<2xi1>, %a: tensor<3xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.where' broadcast dim -1: 2 != 3}}
  %0 = "relax.where"(%c, %a, %a) : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
