// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-lower-host)' --verify-diagnostics

// Every relax op other than the cross-level ones must be legalized first.
func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error @+1 {{@f: 'relax.exp' has no host lowering: run relax-legalize first}}
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
