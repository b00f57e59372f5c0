// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of relax.call between graph functions.

func.func @callee_one(%x: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_arity(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' @callee_one takes 1 argument(s), got 2}}
  %0 = "relax.call"(%a, %a) {callee = @callee_one, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @callee_f32(%x: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_dtype(%a: tensor<?xf16, #relax.shape<["n"]>>) -> tensor<?xf16> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' argument #0 has element type f16, @callee_f32 expects f32}}
  %0 = "relax.call"(%a) {callee = @callee_f32, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf16, #relax.shape<["n"]>>) -> tensor<?xf16>
  return %0 : tensor<?xf16>
}

// -----

func.func @callee_rank2(%x: tensor<?x?xf32, #relax.shape<["p", "q"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x?xf32, #relax.shape<["p", "q"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @caller_rank(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' arguments do not match @callee_rank2's parameters: argument #0: rank 1 does not match rank 2 of (p, q)}}
  %0 = "relax.call"(%a) {callee = @callee_rank2, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @callee_even(%x: tensor<?xf32, #relax.shape<["2*k"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["2*k"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_odd_static(%a: tensor<5xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' arguments do not match @callee_even's parameters: argument #0 dim 0: 2*k cannot equal 5 (1 != 0)}}
  %0 = "relax.call"(%a) {callee = @callee_even, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<5xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @callee_shared(%x: tensor<?xf32, #relax.shape<["p"]>>, %y: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.add"(%x, %y) : (tensor<?xf32, #relax.shape<["p"]>>, tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_shared_conflict(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' arguments do not match @callee_shared's parameters: argument #1 dim 0: expected 3 but got 4}}
  %0 = "relax.call"(%a, %b) {callee = @callee_shared, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3xf32>, tensor<4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @callee_static(%x: tensor<?x4xf32, #relax.shape<["p", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["p", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @caller_static_conflict(%a: tensor<?x5xf32, #relax.shape<["n", 5]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' arguments do not match @callee_static's parameters: argument #0 dim 1: expected 4 but got 5}}
  %0 = "relax.call"(%a) {callee = @callee_static, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x5xf32, #relax.shape<["n", 5]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @callee_offset(%x: tensor<?xf32, #relax.shape<["p + 5"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["p + 5"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_too_small(%a: tensor<3xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' @callee_offset symbol p = -2 is a size: 0 > -2}}
  %0 = "relax.call"(%a) {callee = @callee_offset, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @callee_shared2(%x: tensor<?xf32, #relax.shape<["p"]>>, %y: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.add"(%x, %y) : (tensor<?xf32, #relax.shape<["p"]>>, tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_unknown_arg(%a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' argument #1 dim 0: an unknown dim '?' cannot be checked; name it with relax.match_cast}}
  %0 = "relax.call"(%a, %b) {callee = @callee_shared2, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func private @not_graph(tensor<?xf32>) -> tensor<?xf32>
func.func @caller_not_graph(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' callee @not_graph is not a graph function (add the relax.function attribute, or use call_tir)}}
  %0 = "relax.call"(%a) {callee = @not_graph, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @caller_missing(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' callee @nowhere does not exist}}
  %0 = "relax.call"(%a) {callee = @nowhere, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// expected-error@+1 {{@rec_a is part of a recursive cycle of relax.call; shape deduction needs an acyclic call graph}}
func.func @rec_a(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @rec_b, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @rec_b(%a: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.call"(%a) {callee = @rec_a, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @callee_declared(%x: tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?xf32, #relax.shape<["p"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @caller_declared_wrong(%a: tensor<?xf32, #relax.shape<["n"]>>, %b: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32, #relax.shape<["m"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.call' result #0 dim 0 is declared m but deduced n, which is not provably equal; state it with relax.match_cast}}
  %0 = "relax.call"(%a) {callee = @callee_declared, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["m"]>>
  return %0 : tensor<?xf32, #relax.shape<["m"]>>
}
