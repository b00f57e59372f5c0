// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-expand-math)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-expand-math{enable=false})' | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @f32_exp
// CHECK-NOT: math.exp
// NaN never reaches the fptosi (its result would be poison): clamped by maxnumf/minnumf,
// selected back at the end.
// CHECK: %[[LO:.*]] = arith.maxnumf %arg0, %{{.*}} : f32
// CHECK: arith.minnumf %[[LO]], %{{.*}} : f32
// CHECK: math.floor
// CHECK: arith.fptosi
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.cmpf olt, %arg0
// CHECK: arith.select
// CHECK: arith.cmpf ogt, %arg0
// CHECK: arith.select
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %arg0, %arg0 : f32
// CHECK: %[[R:.*]] = arith.select %[[NAN]], %arg0, %{{.*}} : f32
// CHECK: return %[[R]]
// OFF-LABEL: func.func @f32_exp
// OFF: math.exp
func.func @f32_exp(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// f64 keeps libm's exp.
// CHECK-LABEL: func.func @f64_exp
// CHECK: math.exp %arg0 : f64
func.func @f64_exp(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}

// erf: x clamped by select(x > b, b, x) (NaN kept), x P(x^2) / Q(x^2), the result clamped
// to [-1, 1]; no exp, no libm.
// CHECK-LABEL: func.func @f32_erf
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK: %[[HI:.*]] = arith.cmpf ogt, %arg0, %{{.*}} : f32
// CHECK: %[[X:.*]] = arith.select %[[HI]], %{{.*}}, %arg0 : f32
// CHECK: arith.cmpf olt, %[[X]]
// CHECK: arith.divf
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: %[[R:.*]] = arith.select
// CHECK-NEXT: return %[[R]]
// OFF-LABEL: func.func @f32_erf
// OFF: math.erf
func.func @f32_erf(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  return %0 : f32
}

// tanh: x clamped by select(x > b, b, x) (NaN kept), one division, the result clamped to [-1, 1].
// CHECK-LABEL: func.func @f32_tanh
// CHECK-NOT: math.tanh
// CHECK: %[[HI:.*]] = arith.cmpf ogt, %arg0, %{{.*}} : f32
// CHECK: %[[X:.*]] = arith.select %[[HI]], %{{.*}}, %arg0 : f32
// CHECK: arith.cmpf olt, %[[X]]
// CHECK: arith.divf
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: %[[R:.*]] = arith.select
// CHECK-NEXT: return %[[R]]
// OFF-LABEL: func.func @f32_tanh
// OFF: math.tanh
func.func @f32_tanh(%x: f32) -> f32 {
  %0 = math.tanh %x : f32
  return %0 : f32
}

// f64 tanh keeps libm.
// CHECK-LABEL: func.func @f64_tanh
// CHECK: math.tanh %arg0 : f64
func.func @f64_tanh(%x: f64) -> f64 {
  %0 = math.tanh %x : f64
  return %0 : f64
}
