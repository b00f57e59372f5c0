// RUN: %relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(relax-conv-gemm{pointwise=auto})' -o /dev/null

// An unknown value of the pointwise option is refused at the module.
// expected-error @+1 {{pointwise must be 'off' or 'on', got 'auto'}}
module {
  func.func @f(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32> attributes {relax.function} {
    %0 = "relax.conv2d"(%x, %w) : (tensor<1x16x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
    return %0 : tensor<1x32x8x8xf32>
  }
}
