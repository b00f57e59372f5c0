// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-signless)' | FileCheck %s
// Max/min on i1 (a bool max/min reduction) become the logical op they are: SPIR-V's
// GL.UMax/UMin/SMax/SMin take 8- to 64-bit integers only (vulkan-program fuzz seeds
// 1000112, 1000120: an internal error in the codegen stage). Signed i1 has true = -1, so
// its max is an and and its min an or. Wider integers are left alone.

// CHECK-LABEL: func.func @f(
// CHECK-NEXT: %[[A:.*]] = arith.ori %arg0, %arg1 : i1
// CHECK-NEXT: %[[B:.*]] = arith.andi %arg0, %arg1 : i1
// CHECK-NEXT: %[[C:.*]] = arith.andi %arg0, %arg1 : i1
// CHECK-NEXT: %[[D:.*]] = arith.ori %arg0, %arg1 : i1
// CHECK-NEXT: %[[E:.*]] = arith.maxui %arg2, %arg3 : i8
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]]
func.func @f(%a: i1, %b: i1, %c: i8, %d: i8) -> (i1, i1, i1, i1, i8) {
  %0 = arith.maxui %a, %b : i1
  %1 = arith.minui %a, %b : i1
  %2 = arith.maxsi %a, %b : i1
  %3 = arith.minsi %a, %b : i1
  %4 = arith.maxui %c, %d : i8
  return %0, %1, %2, %3, %4 : i1, i1, i1, i1, i8
}
