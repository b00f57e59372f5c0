// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-spirv-f64-math)' | FileCheck %s
// GLSL.std.450 has Exp, Log, Tanh, Sin, Cos and Pow for 16/32-bit floats only (an f64 exp
// was an invalid spirv.GL.Exp: vulkan-program fuzz seeds 11, 25, 48, 58) and there is no
// SPIR-V erf: relax-spirv-f64-math expands those math ops of f64 inside gpu.modules into f64
// arithmetic that SPIR-V has (fma, floor, divide, the bits as i64). f32 math and host code
// stay.

// exp: n = floor(x log2(e) + 1/2), r = x - n ln2 (two parts), a degree-13 Taylor polynomial,
// 2^n as two exponent-bit scales.
// CHECK-LABEL: gpu.func @exp(
// CHECK-NOT: math.exp
// CHECK: math.floor %{{.*}} : f64
// CHECK: math.fma
// CHECK: arith.fptosi %{{.*}} : f64 to i64
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i64 to f64
// CHECK: arith.cmpf ogt, %arg0, %{{.*}} : f64
// CHECK: arith.cmpf uno, %arg0, %arg0 : f64
// CHECK-NOT: math.exp
// CHECK: math.exp %arg1 : f32
// CHECK: gpu.return

// log: the exponent from the bits (subnormals scaled by 2^54 first), 2 atanh((m-1)/(m+1)).
// CHECK-LABEL: gpu.func @log(
// CHECK-NOT: math.log
// CHECK: arith.bitcast %{{.*}} : f64 to i64
// CHECK: arith.divf %{{.*}}, %{{.*}} : f64
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @others(
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.sin
// CHECK-NOT: math.cos
// CHECK-NOT: math.powf
// CHECK: gpu.return

// f32 sin / cos: GL.Sin / GL.Cos only where |x| <= pi (Vulkan bounds their error there, lavapipe
// gave sin(2^63) = -1, numpy 0.99993: fuzz seed 97000180); else x 2/pi modulo 4 exactly in f64.
// CHECK-LABEL: gpu.func @trig32(
// CHECK: %[[IN:.*]] = arith.cmpf ole, %{{.*}}, %{{.*}} : f32
// CHECK: scf.if %[[IN]] -> (f32) {
// CHECK-NEXT: math.sin %arg0 : f32
// CHECK: } else {
// CHECK: arith.extf %arg0 : f32 to f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK: gpu.return

// CHECK-LABEL: func.func @host(
// CHECK-NEXT: math.exp %arg0 : f64
gpu.module @k {
  gpu.func @exp(%x: f64, %y: f32) -> (f64, f32) {
    %0 = math.exp %x : f64
    %1 = math.exp %y : f32
    gpu.return %0, %1 : f64, f32
  }
  gpu.func @log(%x: f64) -> f64 {
    %0 = math.log %x : f64
    gpu.return %0 : f64
  }
  gpu.func @others(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64) {
    %0 = math.tanh %x : f64
    %1 = math.erf %x : f64
    %2 = math.sin %x : f64
    %3 = math.cos %x : f64
    %4 = math.powf %x, %y : f64
    gpu.return %0, %1, %2, %3, %4 : f64, f64, f64, f64, f64
  }
  gpu.func @trig32(%x: f32, %v: vector<4xf32>) -> (f32, vector<4xf32>) {
    %0 = math.sin %x : f32
    %1 = math.cos %v : vector<4xf32>
    gpu.return %0, %1 : f32, vector<4xf32>
  }
}
func.func @host(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}
