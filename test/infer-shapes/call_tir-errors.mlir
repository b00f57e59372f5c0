// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of relax.call_tir and relax.call_dps_library.

func.func private @k1(tensor<?xf32>, tensor<?xf32>)
func.func @tir_unknown_result(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_tir' result #0 shape has an unknown dim '?': output shapes must be stated}}
  %0 = "relax.call_tir"(%x) {callee = @k1, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func private @k2(tensor<?xf32>, tensor<?xf32>)
func.func @tir_unbound_result(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["m"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_tir' result #0 type uses unbound symbol(s) m}}
  %0 = "relax.call_tir"(%x) {callee = @k2, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["m"]>>
  return %0 : tensor<?xf32, #relax.shape<["m"]>>
}

// -----

func.func private @k3(tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
func.func @tir_kernel_arity(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_tir' callee @k3 takes 3 argument(s); destination-passing style needs 2 (1 inputs + 1 outputs + tir_vars)}}
  %0 = "relax.call_tir"(%x) {callee = @k3, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

func.func @tir_missing_kernel(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_tir' callee @nowhere does not exist}}
  %0 = "relax.call_tir"(%x) {callee = @nowhere, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

func.func private @k4(tensor<?xf32>, tensor<?xf32>, index)
func.func @tir_vars_unbound(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_tir' attribute 'tir_vars' uses unbound symbol(s) m}}
  %0 = "relax.call_tir"(%x) {callee = @k4, tir_vars = #relax.shape<["m"]>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

func.func @dps_unknown_result(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_dps_library' result #0 shape has an unknown dim '?': output shapes must be stated}}
  %0 = "relax.call_dps_library"(%x) {callee = "lib_f", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @dps_missing_callee(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.call_dps_library' op attribute "callee" is expected but not provided}}
  %0 = "relax.call_dps_library"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}
