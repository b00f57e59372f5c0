// RUN: %relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(relax-dispatch-library{policy=fastest})' -o /dev/null

// An unknown policy is refused at the module.
// expected-error @+1 {{policy must be 'flops' or 'measured', got 'fastest'}}
module {
  func.func @f(%x: tensor<?x512xf32, #relax.shape<["m", 512]>>, %w: tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["m", 2048]>>
      attributes {relax.function} {
    %0 = "relax.matmul"(%x, %w) : (tensor<?x512xf32, #relax.shape<["m", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["m", 2048]>>
    return %0 : tensor<?x2048xf32, #relax.shape<["m", 2048]>>
  }
}
