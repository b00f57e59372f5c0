// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-kernel-fastmath)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-kernel-fastmath{enable=false})' | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func private @k
// CHECK: arith.addf %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.maximumf %{{.*}} fastmath<reassoc> : f32
// OFF-NOT: fastmath
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
