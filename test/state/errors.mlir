// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of the state ops and of state declarations (relax.state on the module).

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @unknown_name(%pos: tensor<?x0xi8, #relax.shape<["p", 0]>>) -> tensor<?x2x4xf32> attributes {relax.function} {
    // expected-error@+1 {{'relax.state_read' unknown state 'kk' (module states: k)}}
    %0 = "relax.state_read"() {state = "kk", end = "p"} : () -> tensor<?x2x4xf32>
    return %0 : tensor<?x2x4xf32>
  }
}

// -----

func.func @no_state_declared(%new: tensor<1x2x4xf32>) attributes {relax.function} {
  // expected-error@+1 {{'relax.state_write' unknown state 'k' (module states: none declared)}}
  "relax.state_write"(%new) {state = "k"} : (tensor<1x2x4xf32>) -> ()
  return
}

// -----

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @row_shape_mismatch(%new: tensor<?x2x5xf32, #relax.shape<["s", 2, 5]>>) attributes {relax.function} {
    // expected-error@+1 {{'relax.state_write' value dim 2 against state 'k': 5 != 4}}
    "relax.state_write"(%new) {state = "k", offset = 0} : (tensor<?x2x5xf32, #relax.shape<["s", 2, 5]>>) -> ()
    return
  }
}

// -----

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @dtype_mismatch(%new: tensor<1x2x4xf16>) attributes {relax.function} {
    // expected-error@+1 {{'relax.state_write' value has element type f16, state 'k' holds f32}}
    "relax.state_write"(%new) {state = "k"} : (tensor<1x2x4xf16>) -> ()
    return
  }
}

// -----

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @rank_mismatch(%new: tensor<1x8xf32>) attributes {relax.function} {
    // expected-error@+1 {{'relax.state_write' value has rank 2, state 'k' has rank 3 (rows of shape (2, 4))}}
    "relax.state_write"(%new) {state = "k"} : (tensor<1x8xf32>) -> ()
    return
  }
}

// -----

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @range_backwards(%x: tensor<1xf32>) -> tensor<?x2x4xf32> attributes {relax.function} {
    // expected-error@+1 {{'relax.state_read' row range [begin, end): 5 > 2}}
    %0 = "relax.state_read"() {state = "k", begin = 5, end = 2} : () -> tensor<?x2x4xf32>
    return %0 : tensor<?x2x4xf32>
  }
}

// -----

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}} {
  func.func @capacity_without_bound(%x: tensor<1xf32>) -> tensor<?x2x4xf32> attributes {relax.function} {
    // expected-error@+1 {{'relax.state_read' state 'k': capacity symbol 'cap' needs an upper bound in the module's 'relax.upper_bounds'}}
    %0 = "relax.state_read"() {state = "k", end = 1} : () -> tensor<?x2x4xf32>
    return %0 : tensor<?x2x4xf32>
  }
}

// -----

module attributes {relax.state = {k = tensor<?x?xf32, #relax.shape<["cap", "w"]>>}, relax.upper_bounds = {cap = 64 : i64, w = 4 : i64}} {
  func.func @symbolic_row(%x: tensor<1xf32>) -> tensor<?x?xf32> attributes {relax.function} {
    // expected-error@+1 {{'relax.state_read' state 'k': dim 1 must be static (only axis 0, the capacity, may be symbolic), got w}}
    %0 = "relax.state_read"() {state = "k", end = 1} : () -> tensor<?x?xf32>
    return %0 : tensor<?x?xf32>
  }
}

// -----

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @unbound_offset(%new: tensor<1x2x4xf32>) attributes {relax.function} {
    // expected-error@+1 {{'relax.state_write' attribute 'offset' uses unbound symbol(s) q}}
    "relax.state_write"(%new) {state = "k", offset = "q"} : (tensor<1x2x4xf32>) -> ()
    return
  }
}
