// RUN: %relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(relax-conv-gemm{direct=always})' -o /dev/null

// An unknown value of the direct option is refused at the module.
// expected-error @+1 {{direct must be 'off', 'all' or 'auto', got 'always'}}
module {
  func.func @f(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x6x6xf32> attributes {relax.function} {
    %0 = "relax.conv2d"(%x, %w) : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x6x6xf32>
    return %0 : tensor<1x32x6x6xf32>
  }
}
