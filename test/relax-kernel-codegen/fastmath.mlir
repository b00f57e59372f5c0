// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-kernel-fastmath)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-kernel-fastmath{enable=false})' | FileCheck %s --check-prefix=OFF
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-kernel-fastmath{reassoc=false})' | FileCheck %s --check-prefix=CONTRACT

// CHECK-LABEL: func.func private @k
// CHECK: arith.addf %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.maximumf %{{.*}} fastmath<reassoc> : f32
// OFF-NOT: fastmath
// reassoc=false (the GPU pipelines): contract only, accumulations included; max/min nothing.
// CONTRACT-LABEL: func.func private @k
// CONTRACT: arith.addf %{{.*}} fastmath<contract> : f32
// CONTRACT: arith.maximumf %{{.*}}, %{{.*}} : f32
// CONTRACT-LABEL: func.func private @body
// CONTRACT: arith.mulf %{{.+}}, %{{.+}} fastmath<contract> : f32
// CONTRACT: arith.addf %{{.+}}, %{{.+}} fastmath<contract> : f32
func.func private @k(%a: f32, %b: f32) -> f32 attributes {relax.kernel} {
  %0 = arith.addf %a, %b : f32
  %1 = arith.maximumf %0, %b : f32
  return %1 : f32
}

// Host code keeps strict IEEE semantics.
// CHECK-LABEL: func.func @host
// CHECK: arith.addf %arg0, %arg1 : f32
func.func @host(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}

// Element-wise math gets contract only: reassoc would license pow(x, y) * x ->
// pow(x, y + 1), wrong at inf and NaN. The accumulation (reads the init block
// argument) gets reassoc so that the reduction vectorizes.
// CHECK-LABEL: func.func private @body
// CHECK: %[[P:.+]] = math.powf
// CHECK: %[[M:.+]] = arith.mulf %{{.+}}, %[[P]] fastmath<contract> : f32
// CHECK: arith.addf %[[M]], %{{.+}} fastmath<reassoc,contract> : f32
func.func private @body(%x: tensor<?xf32>, %acc: tensor<f32>) -> tensor<f32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<?xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %p = math.powf %a, %a : f32
    %m = arith.mulf %a, %p : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
