// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of the creation ops.

func.func @zeros_unknown_dim(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.zeros' shape may not contain '?'}}
  %0 = "relax.zeros"() {shape = #relax.shape<["?"]>} : () -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @ones_negative_dim(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.ones' negative dim -3}}
  %0 = "relax.ones"() {shape = #relax.shape<[-3, "n"]>} : () -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @full_unbound_symbol(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.full' attribute 'shape' uses unbound symbol(s) m}}
  %0 = "relax.full"() {shape = #relax.shape<["m"]>, value = 1.0 : f64} : () -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @arange_zero_step(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  // expected-error@+1 {{'relax.arange' step must be positive, got 0}}
  %0 = "relax.arange"() {end = "n", step = 0 : i64} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @arange_negative_step(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  // expected-error@+1 {{'relax.arange' step must be positive, got -1}}
  %0 = "relax.arange"() {end = 4 : i64, step = -1 : i64} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @arange_start_after_end(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  // expected-error@+1 {{'relax.arange' start <= end: 10 > 2}}
  %0 = "relax.arange"() {start = 10 : i64, end = 2 : i64} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @arange_symbolic_start_after_end(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  // expected-error@+1 {{'relax.arange' start <= end: n + 1 > n}}
  %0 = "relax.arange"() {start = "n + 1", end = "n"} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @arange_unbound_end(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi64> attributes {relax.function} {
  // expected-error@+1 {{'relax.arange' attribute 'end' uses unbound symbol(s) m}}
  %0 = "relax.arange"() {end = "m"} : () -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @arange_declared_dtype(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.arange' result #0 is declared i32 but the op produces i64}}
  %0 = "relax.arange"() {end = "n"} : () -> tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @zeros_bad_shape_attr(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{expected base attribute 'relax.shape' but got 'builtin.integer'}}
  %0 = "relax.zeros"() {shape = 4 : i64} : () -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
