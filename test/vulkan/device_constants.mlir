// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-gpu-device-constants)' | FileCheck %s

// A tensor constant of host code gets a copy in a fresh allocation (a device buffer once
// bufferized), used instead of the constant; constants inside kernels stay.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<[2, 3, 0, 1]> : tensor<4xi64>
// CHECK-NEXT: %[[D:.*]] = bufferization.alloc_tensor() copy(%[[C]]) : tensor<4xi64>
// CHECK-NEXT: %[[R:.*]] = call @k(%arg0, %[[D]])
// CHECK-NEXT: return %[[R]]
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[2, 3, 0, 1]> : tensor<4xi64>
  %r = func.call @k(%x, %c) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func private @k(
// CHECK-NEXT: arith.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NOT: alloc_tensor
func.func private @k(%x: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<4xf32> attributes {relax.kernel} {
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %s = arith.addf %x, %one : tensor<4xf32>
  return %s : tensor<4xf32>
}
