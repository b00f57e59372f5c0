// Every relax-verify error, reported at its location.
// RUN: relax-opt %s --split-input-file --verify-diagnostics

// A symbol used in a result type that nothing binds.
func.func @unbound_result(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{result #0 type uses unbound symbol(s) m}}
  %0 = "relax.relu"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// An attribute (reshape target) using an unbound symbol.
func.func @unbound_attr(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{attribute 'shape' uses unbound symbol(s) k}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["k", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// A malformed shape expression.
func.func @malformed(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{malformed dimension expression 'n +'}}
  %0 = "relax.relu"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n +", 4]>>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// Static dims of the type disagree with the attribute.
func.func @static_disagree(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{dim 1: the type says 4 but the shape attribute says 5}}
  %0 = "relax.relu"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 5]>>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// Rank of the attribute disagrees with the type.
func.func @rank_disagree(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{shape attribute has rank 1 but the tensor type has rank 2}}
  %0 = "relax.relu"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n"]>>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// A parameter shape whose symbol cannot be bound (n*m: neither is solvable).
// expected-error@+1 {{symbol(s) m, n in the parameter shapes are not bound}}
func.func @unbindable(%x: tensor<?xf32, #relax.shape<["m*n"]>>) -> tensor<?xf32, #relax.shape<["m*n"]>> attributes {relax.function} {
  return %x : tensor<?xf32, #relax.shape<["m*n"]>>
}

// -----

// Upper bound on a symbol that is not a parameter symbol.
// expected-error@+1 {{upper bound names 'm', which is not a symbol of its parameters}}
func.func @bad_bound(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function, relax.upper_bounds = {m = 16 : i64}} {
  return %x : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// Non-positive upper bound.
// expected-error@+1 {{upper bound of 'n' must be a positive integer}}
func.func @zero_bound(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function, relax.upper_bounds = {n = 0 : i64}} {
  return %x : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// An attribute of the wrong kind.
func.func @bad_attr_kind(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{attribute 'keepdims' must be a bool}}
  %0 = "relax.sum"(%x) {keepdims = 3 : i64} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<f32>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// relax.call to something that does not exist.
func.func @missing_callee(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{callee @nowhere does not exist}}
  %0 = "relax.call"(%x) {callee = @nowhere, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// relax.call to a function that is not a graph function.
func.func private @kernel(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32>
func.func @not_graph(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{callee @kernel is not a graph function}}
  %0 = "relax.call"(%x) {callee = @kernel, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// call_tir whose kernel arity does not fit destination-passing style.
func.func private @k1(%a: tensor<?xf32>) -> tensor<?xf32>
func.func @bad_dps(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{destination-passing style needs 2}}
  %0 = "relax.call_tir"(%x) {callee = @k1, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// match_cast that cannot bind its new symbols (k*j is not linear in one symbol).
func.func @bad_match_cast(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{cannot bind symbol(s) j, k}}
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["j*k"]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["j*k"]>>
  return %x : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// A required attribute is missing (caught by the IRDL verifier at parse time).
func.func @missing_attr(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{attribute "shape" is expected but not provided}}
  %0 = "relax.reshape"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// An unknown relax op.
func.func @unknown_op(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{custom op 'relax.frobnicate' is unknown}}
  %0 = relax.frobnicate %x : tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// An unknown attribute of the relax dialect.
// expected-error@+1 {{}}
func.func @unknown_attr(%x: tensor<?xf32, #relax.nonsense<[1]>>) -> tensor<?xf32> attributes {relax.function} {
  return %x : tensor<?xf32>
}
