// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of relax.match_cast.

func.func @mc_static_impossible(%x: tensor<4xf32>) -> tensor<5xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' can never match: value dim 0: expected 5 but got 4}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<[5]>} : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @mc_rank_mismatch(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' can never match: value: rank 2 does not match rank 1 of (n,)}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["n"]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

func.func @mc_symbolic_impossible(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n + 1", 4]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' can never match: value dim 0: expected n + 1 but got n}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["n + 1", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n + 1", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n + 1", 4]>>
}

// -----

func.func @mc_odd_static(%x: tensor<5xf32>) -> tensor<?xf32, #relax.shape<["2*h"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' can never match: value dim 0: 2*h cannot equal 5 (1 != 0)}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["2*h"]>} : (tensor<5xf32>) -> tensor<?xf32, #relax.shape<["2*h"]>>
  return %0 : tensor<?xf32, #relax.shape<["2*h"]>>
}

// -----

func.func @mc_pattern_unknown(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' pattern may not contain '?': name every dim}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["n", "?"]>} : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @mc_unbindable(%x: tensor<?xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' cannot bind symbol(s) a, b}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["a*b"]>} : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @mc_declared_dtype(%x: tensor<?xf32>) -> tensor<?xi32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.match_cast' result #0 is declared i32 but the op produces f32}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["n"]>} : (tensor<?xf32>) -> tensor<?xi32, #relax.shape<["n"]>>
  return %0 : tensor<?xi32, #relax.shape<["n"]>>
}

// -----

func.func @mc_symbol_used_before_binding(%x: tensor<?xf32>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' attribute 'shape' uses unbound symbol(s) n}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["n"]>} : (tensor<?xf32>) -> tensor<?xf32>
  %1 = "relax.match_cast"(%x) {shape = #relax.shape<["n"]>} : (tensor<?xf32>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %1 : tensor<?xf32, #relax.shape<["n"]>>
}
