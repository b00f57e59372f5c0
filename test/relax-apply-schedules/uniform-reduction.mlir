// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// A reduction whose combined value does not depend on any input element (`out + 1.0`: the
// sum of squares of ones(n, 2) after upstream fusion folded the constant input). MLIR 22's
// vectorizer adds such a value once per vector instead of once per element (rms_norm of
// ones gave sqrt(2): long fuzz seed 43001361), so the kernel keeps plain loops: no schedule.

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func private @uniform
// CHECK-NOT: relax.schedule
// CHECK: linalg.generic
// CHECK: arith.addf %{{.*}}, %cst{{.*}} : f32
// CHECK-NOT: vector.
func.func private @uniform(%arg0: tensor<?x2xf32>) -> tensor<?x2xf32> attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %eps = arith.constant 9.99999974E-6 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2xf32>
  %0 = tensor.empty(%dim) : tensor<?x2xf32>
  %1 = linalg.fill ins(%one : f32) outs(%0 : tensor<?x2xf32>) -> tensor<?x2xf32>
  %2 = tensor.empty(%dim) : tensor<?xf32>
  %3 = linalg.fill ins(%zero : f32) outs(%2 : tensor<?xf32>) -> tensor<?xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%1 : tensor<?x2xf32>) outs(%3 : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %6 = arith.addf %out, %one : f32
    linalg.yield %6 : f32
  } -> tensor<?xf32>
  %5 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<?xf32>) outs(%arg0 : tensor<?x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %6 = arith.divf %in, %two : f32
    %7 = arith.addf %6, %eps : f32
    %8 = math.rsqrt %7 : f32
    linalg.yield %8 : f32
  } -> tensor<?x2xf32>
  return %5 : tensor<?x2xf32>
}

// The same rows with the input element combined (`out + x * x`) are scheduled.
// CHECK-LABEL: func.func private @varying
// CHECK-SAME: relax.schedule = "rows"
func.func private @varying(%x: tensor<?x2xf32>, %arg0: tensor<?x2xf32>) -> tensor<?x2xf32> attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %eps = arith.constant 9.99999974E-6 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x2xf32>
  %2 = tensor.empty(%dim) : tensor<?xf32>
  %3 = linalg.fill ins(%zero : f32) outs(%2 : tensor<?xf32>) -> tensor<?xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x2xf32>) outs(%3 : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %6 = arith.addf %out, %sq : f32
    linalg.yield %6 : f32
  } -> tensor<?xf32>
  %5 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<?xf32>) outs(%arg0 : tensor<?x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %6 = arith.divf %in, %two : f32
    %7 = arith.addf %6, %eps : f32
    %8 = math.rsqrt %7 : f32
    linalg.yield %8 : f32
  } -> tensor<?x2xf32>
  return %5 : tensor<?x2xf32>
}
