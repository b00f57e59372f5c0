// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of relax.repeat: the callee's first parameter is the iteration (a zero-byte
// (i, 0) i8 tensor), its results have the carried parameters' types, the count is >= 1.

func.func @no_iter(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @caller_no_iter(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.repeat' @no_iter takes 1 parameter(s): the iteration and 0 operand(s), got 1}}
  %0 = "relax.repeat"(%a) {callee = @no_iter, count = 2 : i64, carried = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @grows(%it: tensor<?x0xi8, #relax.shape<["i", 0]>>, %x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32> attributes {relax.function} {
  %0 = "relax.concat"(%x, %x) {axis = 0 : i64} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @caller_grows(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.repeat' @grows result #0 ((2*n, 4) x f32) must have the type of the carried parameter #1 ((n, 4) x f32), independent of the iteration 'i'}}
  %0 = "relax.repeat"(%a) {callee = @grows, count = 2 : i64, carried = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @step(%it: tensor<?x0xi8, #relax.shape<["i", 0]>>, %x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @caller_zero(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.repeat' count must be at least 1, got 0}}
  %0 = "relax.repeat"(%a) {callee = @step, count = 0 : i64, carried = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
