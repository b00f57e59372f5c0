// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of the elementwise rules and of reconciling declared result types.

func.func @exp_int(%x: tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.exp' expects a floating-point tensor, got i32}}
  %0 = "relax.exp"(%x) : (tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @silu_int_chain(%x: tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  %0 = "relax.negative"(%x) : (tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi64>
  // expected-error@+1 {{'relax.silu' expects a floating-point tensor, got i64}}
  %1 = "relax.silu"(%0) : (tensor<?xi64>) -> tensor<?xi64>
  return %1 : tensor<?xi64>
}

// -----

func.func @astype_declared_wrong(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.astype' result #0 is declared i32 but the op produces i8}}
  %0 = "relax.astype"(%x) {dtype = i8} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @declared_dtype_mismatch(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf16> attributes {relax.function} {
  // expected-error@+1 {{'relax.sqrt' result #0 is declared f16 but the op produces f32}}
  %0 = "relax.sqrt"(%x) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf16>
  return %0 : tensor<?xf16>
}

// -----

func.func @declared_rank_mismatch(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.exp' result #0 is declared with rank 3 but the deduced shape (n, 4) has rank 2}}
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @declared_dim_false(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x5xf32, #relax.shape<["n", 5]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.exp' result #0 dim 1 is declared 5 but deduced 4}}
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x5xf32, #relax.shape<["n", 5]>>
  return %0 : tensor<?x5xf32, #relax.shape<["n", 5]>>
}

// -----

func.func @declared_dim_unproven(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.exp' result #0 dim 0 is declared m but deduced n, which is not provably equal; state it with relax.match_cast}}
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["m", 4]>>
}

// -----

func.func @declared_unknown_cannot_deduce(%x: tensor<?xf32>) -> tensor<2xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.exp' result #0 dim 0 is declared 2 but cannot be deduced; state it with relax.match_cast}}
  %0 = "relax.exp"(%x) : (tensor<?xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
