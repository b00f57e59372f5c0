// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-bf16-truncf)' | FileCheck %s

// A vector f32 -> bf16 truncation becomes round-to-nearest-even on the bits: add 0x7fff
// plus the lowest kept bit, keep the high half; NaN becomes the quiet NaN 0x7fc0.
// CHECK-LABEL: func.func @vec
// CHECK-SAME: (%[[X:.*]]: vector<16xf32>)
// CHECK-NOT: arith.truncf
// CHECK: %[[B:.*]] = arith.bitcast %[[X]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[C16:.*]] = arith.constant dense<16> : vector<16xi32>
// CHECK: %[[SH:.*]] = arith.shrui %[[B]], %[[C16]] : vector<16xi32>
// CHECK: %[[C1:.*]] = arith.constant dense<1> : vector<16xi32>
// CHECK: %[[LSB:.*]] = arith.andi %[[SH]], %[[C1]] : vector<16xi32>
// CHECK: %[[BIAS:.*]] = arith.constant dense<32767> : vector<16xi32>
// CHECK: %[[INC:.*]] = arith.addi %[[LSB]], %[[BIAS]] : vector<16xi32>
// CHECK: %[[R:.*]] = arith.addi %[[B]], %[[INC]] : vector<16xi32>
// CHECK: %[[HI:.*]] = arith.shrui %[[R]], %[[C16]] : vector<16xi32>
// CHECK: %[[T:.*]] = arith.trunci %[[HI]] : vector<16xi32> to vector<16xi16>
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : vector<16xf32>
// CHECK: %[[QNAN:.*]] = arith.constant dense<32704> : vector<16xi16>
// CHECK: %[[S:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[T]] : vector<16xi1>, vector<16xi16>
// CHECK: %[[OUT:.*]] = arith.bitcast %[[S]] : vector<16xi16> to vector<16xbf16>
// CHECK: return %[[OUT]] : vector<16xbf16>
func.func @vec(%x: vector<16xf32>) -> vector<16xbf16> {
  %0 = arith.truncf %x : vector<16xf32> to vector<16xbf16>
  return %0 : vector<16xbf16>
}

// -----

// Scalars the same way (the kernels' remainder loops).
// CHECK-LABEL: func.func @scalar
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.constant 32767 : i32
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.constant 32704 : i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @scalar(%x: f32) -> bf16 {
  %0 = arith.truncf %x : f32 to bf16
  return %0 : bf16
}

// -----

// Left alone: f64 -> bf16 (through f32 it would round twice), f32 -> f16, a truncation
// with an explicit rounding mode, and f32 -> bf16 in a loop (walked: converted).
// CHECK-LABEL: func.func @others
// CHECK: arith.truncf %{{.*}} : f64 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.truncf %{{.*}} toward_zero : f32 to bf16
// CHECK: scf.for
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @others(%d: f64, %f: f32, %n: index) -> (bf16, f16, bf16) {
  %0 = arith.truncf %d : f64 to bf16
  %1 = arith.truncf %f : f32 to f16
  %2 = arith.truncf %f toward_zero : f32 to bf16
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %3 = arith.truncf %f : f32 to bf16
    func.call @use(%3) : (bf16) -> ()
  }
  return %0, %1, %2 : bf16, f16, bf16
}
func.func private @use(bf16)
