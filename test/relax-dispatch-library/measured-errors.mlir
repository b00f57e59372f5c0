// RUN: %relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(relax-dispatch-library{policy=measured table=%S/Inputs/calibration-bad.json})' -o /dev/null

// A calibration table whose M range is empty ([64, 4]) is refused at the module.
// expected-error @+1 {{malformed class}}
module {
  func.func @f(%x: tensor<?x512xf32, #relax.shape<["m", 512]>>, %w: tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["m", 2048]>>
      attributes {relax.function} {
    %0 = "relax.matmul"(%x, %w) : (tensor<?x512xf32, #relax.shape<["m", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["m", 2048]>>
    return %0 : tensor<?x2048xf32, #relax.shape<["m", 2048]>>
  }
}
