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

// -----

// A misspelled attribute of a relax op (the op table declares `axis`).
func.func @misspelled(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.softmax' has no attribute 'axes' (did you mean 'axis'?); its attributes: axis}}
  %0 = "relax.softmax"(%x) {axes = 1 : i64} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// A wrongly typed attribute.
func.func @wrong_type(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.softmax' attribute 'axis' must be a int, got "1"}}
  %0 = "relax.softmax"(%x) {axis = "1"} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// A relax op in a function not marked relax.function.
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'relax.relu' is outside a graph function: mark @plain with the relax.function attribute}}
  %0 = "relax.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// #relax.shape on a memref (read by MLIR as a memory space): refused, not a crash later.
// expected-error@+1 {{@f parameter #0: #relax.shape is the encoding of a ranked tensor type and cannot appear in memref<?xf32, #relax.shape<["n"]>>}}
func.func @f(%x: memref<?xf32, #relax.shape<["n"]>>) {
  return
}

// -----

// A graph function declared without a body.
// expected-error@+1 {{graph function @decl has no body}}
func.func private @decl(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function}

// -----

// Graph function names that the runtime or the C library reserve.
// expected-error@+1 {{graph function @malloc: the name is reserved}}
func.func @malloc(%x: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{graph function @relax_mlir_metadata: the name is reserved}}
func.func @relax_mlir_metadata(%x: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function} {
  return %x : tensor<4xf32>
}
// expected-error@+1 {{graph function @_mlir_ciface_g: the name is reserved}}
func.func @_mlir_ciface_g(%x: tensor<4xf32>) -> tensor<4xf32> attributes {relax.function} {
  return %x : tensor<4xf32>
}

// -----

// A relax.assert that can never hold.
func.func @never(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.assert' always fails: n != n + 1 for every size (message: "off by one")}}
  "relax.assert"() {dims = #relax.shape<["n", "n + 1"]>, message = "off by one"} : () -> ()
  // expected-error@+1 {{'relax.assert' always fails: n + 1 > n for every size}}
  "relax.assert"() {dims = #relax.shape<["n + 1", "n"]>, message = "le", predicate = "le"} : () -> ()
  "relax.assert"() {dims = #relax.shape<["n", "2*n"]>, message = "holds at n = 0 only"} : () -> ()
  return %x : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// A shape expression too long to be a real shape is a diagnostic, not a RecursionError.
func.func @deep(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{dimension expression of 2006 characters is too long (at most 1000)}}
  %0 = "relax.relu"(%x) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["-------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------n"]>>
  return %x : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// "/" is not integer division: a hint to use "//".
func.func @slash(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{malformed dimension expression 'n /2': '/' is not integer division; use '//' (n // 2)}}
  %0 = "relax.relu"(%x) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n /2"]>>
  return %x : tensor<?xf32, #relax.shape<["n"]>>
}
