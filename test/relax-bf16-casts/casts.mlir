// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-bf16-casts)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-bf16-casts{f64=true})' | FileCheck %s --check-prefix=F64

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

// bf16 -> f32 (exact): the bits into the high half of an f32 (the emulation's fastmath flags
// on the extension go with it: on llvm.fpext they would be an #arith attribute).
// CHECK-LABEL: func.func @ext
// CHECK-SAME: (%[[X:.*]]: vector<8xbf16>)
// CHECK-NOT: arith.extf
// CHECK: %[[B:.*]] = arith.bitcast %[[X]] : vector<8xbf16> to vector<8xi16>
// CHECK: %[[W:.*]] = arith.extui %[[B]] : vector<8xi16> to vector<8xi32>
// CHECK: %[[C16:.*]] = arith.constant dense<16> : vector<8xi32>
// CHECK: %[[S:.*]] = arith.shli %[[W]], %[[C16]] : vector<8xi32>
// CHECK: %[[F:.*]] = arith.bitcast %[[S]] : vector<8xi32> to vector<8xf32>
// CHECK: return %[[F]] : vector<8xf32>
func.func @ext(%x: vector<8xbf16>) -> vector<8xf32> {
  %0 = arith.extf %x fastmath<contract> : vector<8xbf16> to vector<8xf32>
  return %0 : vector<8xf32>
}

// -----

// Left alone: bf16 -> f64, f16 -> f32, f64 -> bf16 (LLVM rounds it through f32, as
// ml_dtypes does), f32 -> f16, a truncation with an explicit rounding mode; f32 -> bf16 in a
// loop is converted.
// With f64=true (the vulkan pipeline) bf16 <-> f64 goes through f32: bf16 -> f32 by the shift,
// then extf; f64 -> f32 by truncf, then the rounding on the bits.
// F64-LABEL: func.func @others
// F64: %[[W:.*]] = arith.extui %{{.*}} : i16 to i32
// F64: %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i32
// F64: %[[F:.*]] = arith.bitcast %[[S]] : i32 to f32
// F64: arith.extf %[[F]] : f32 to f64
// F64: arith.extf %{{.*}} : f16 to f32
// F64: %[[T:.*]] = arith.truncf %{{.*}} : f64 to f32
// F64: arith.bitcast %[[T]] : f32 to i32
// F64: arith.cmpf uno, %[[T]], %[[T]] : f32
// F64: arith.bitcast %{{.*}} : i16 to bf16
// F64-NOT: f64 to bf16
// F64: arith.truncf %{{.*}} : f32 to f16
// CHECK-LABEL: func.func @others
// CHECK: arith.extf %{{.*}} : bf16 to f64
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf %{{.*}} : f64 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.truncf %{{.*}} toward_zero : f32 to bf16
// CHECK: scf.for
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @others(%d: f64, %f: f32, %n: index, %b: bf16, %h: f16) -> (bf16, f16, bf16) {
  %e0 = arith.extf %b : bf16 to f64
  %e1 = arith.extf %h : f16 to f32
  func.call @use64(%e0) : (f64) -> ()
  func.call @use32(%e1) : (f32) -> ()
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
func.func private @use64(f64)
func.func private @use32(f32)
