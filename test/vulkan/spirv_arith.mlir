// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-spirv-arith)' | FileCheck %s
// relax-spirv-arith rewrites, inside gpu.modules only, the arith / math ops whose SPIR-V
// lowering would change their result.

// remsi: upstream's SPIR-V emulation took the sign from `a == |a|`, and |INT_MIN| is INT_MIN
// (INT32_MIN % 7 gave 2; vulkan-program fuzz seeds 1000110, 1000161). The sign test is
// a < 0 now, the magnitudes are unsigned.
// CHECK-LABEL: gpu.func @rem(
// CHECK-SAME: %[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK: %[[NA:.*]] = arith.cmpi slt, %[[A]], %[[Z]] : i32
// CHECK: %[[MA:.*]] = arith.subi %[[Z]], %[[A]] : i32
// CHECK: %[[UA:.*]] = arith.select %[[NA]], %[[MA]], %[[A]] : i32
// CHECK: %[[NB:.*]] = arith.cmpi slt, %[[B]], %[[Z]] : i32
// CHECK: %[[MB:.*]] = arith.subi %[[Z]], %[[B]] : i32
// CHECK: %[[UB:.*]] = arith.select %[[NB]], %[[MB]], %[[B]] : i32
// CHECK: %[[UR:.*]] = arith.remui %[[UA]], %[[UB]] : i32
// CHECK: %[[NR:.*]] = arith.subi %[[Z]], %[[UR]] : i32
// CHECK: %[[R:.*]] = arith.select %[[NA]], %[[NR]], %[[UR]] : i32
// CHECK-NOT: arith.remsi
// CHECK: gpu.return

// A signed compare of a sign-extended value (extsi, index_cast of a 32-bit SPIR-V index) with
// a constant: lavapipe miscompiles it in 64 bits (seeds 61000455, 5000256), so it is done in
// the narrow type; a constant outside that type decides it; unsigned ones and extui stay.
// CHECK-LABEL: gpu.func @cmp(
// CHECK-SAME: %[[X:.*]]: i32, %[[I:.*]]: index, %[[W:.*]]: i16)
// CHECK: %[[C88:.*]] = arith.constant 88 : i64
// CHECK: %[[E:.*]] = arith.extsi %[[X]] : i32 to i64
// CHECK: %[[U:.*]] = arith.extui %[[X]] : i32 to i64
// CHECK: %[[N88:.*]] = arith.constant 88 : i32
// CHECK: %[[S0:.*]] = arith.cmpi sgt, %[[X]], %[[N88]] : i32
// CHECK: %[[NM86:.*]] = arith.constant -86 : index
// CHECK: %[[S1:.*]] = arith.cmpi slt, %[[NM86]], %[[I]] : index
// CHECK: %[[S2:.*]] = arith.constant false
// CHECK: %[[S3:.*]] = arith.constant true
// CHECK: %[[S4:.*]] = arith.cmpi ugt, %[[E]], %[[C88]] : i64
// CHECK: %[[S5:.*]] = arith.cmpi sgt, %[[U]], %[[C88]] : i64
// CHECK: %[[S6:.*]] = arith.constant false
// CHECK: gpu.return %[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[S4]], %[[S5]], %[[S6]] :

// powf keeps numpy's semantics around GL.Pow (undefined for x < 0 and for 0 ** y, y <= 0):
// GL.Pow only sees |x| > 0 (1 where it is not), the IEEE cases are selects.
// CHECK-LABEL: gpu.func @pow(
// CHECK: %[[AX:.*]] = math.absf %arg0 : f32
// CHECK: %[[POS:.*]] = arith.cmpf ogt, %[[AX]], %{{.*}} : f32
// CHECK: %[[BASE:.*]] = arith.select %[[POS]], %[[AX]], %{{.*}} : f32
// CHECK: math.powf %[[BASE]], %arg1 : f32
// CHECK: math.floor %arg1 : f32
// CHECK: arith.bitcast %arg0 : f32 to i32
// CHECK: arith.negf
// CHECK: arith.cmpf uno, %arg0, %arg1 : f32
// CHECK-NOT: math.powf
// CHECK: gpu.return

// remf: FRem rounds for large quotients and is NaN for x rem inf; f32 fmod is exact in f64
// (a scaled long division, no FRem), f64 keeps FRem with the inf / zero cases selected. Vector
// operands (the 4-wide elementwise kernels) get the same rewrites.
// CHECK-LABEL: gpu.func @remf(
// CHECK: arith.extf %arg0 : f32 to f64
// CHECK-NOT: arith.remf %arg0
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.remf %arg2, %arg3 : f64
// CHECK: arith.remui %{{.*}}, %{{.*}} : vector<4xi32>
// CHECK-NOT: arith.remsi
// CHECK: gpu.return

// Outside gpu.modules (host code, the cpu target) nothing changes.
// CHECK-LABEL: func.func @host(
// CHECK-NEXT: arith.remsi
// CHECK-NEXT: math.powf
gpu.module @k {
  gpu.func @rem(%a: i32, %b: i32) -> i32 {
    %0 = arith.remsi %a, %b : i32
    gpu.return %0 : i32
  }
  gpu.func @cmp(%x: i32, %i: index, %w: i16) -> (i1, i1, i1, i1, i1, i1, i1) {
    %c88 = arith.constant 88 : i64
    %cm86 = arith.constant -86 : i64
    %big = arith.constant 4294967296 : i64
    %e = arith.extsi %x : i32 to i64
    %j = arith.index_cast %i : index to i64
    %u = arith.extui %x : i32 to i64
    %0 = arith.cmpi sgt, %e, %c88 : i64
    %1 = arith.cmpi slt, %cm86, %j : i64
    %2 = arith.cmpi sge, %e, %big : i64
    %3 = arith.cmpi slt, %e, %big : i64
    %4 = arith.cmpi ugt, %e, %c88 : i64
    %5 = arith.cmpi sgt, %u, %c88 : i64
    %ew = arith.extsi %w : i16 to i32
    %c40000 = arith.constant 40000 : i32
    %6 = arith.cmpi sgt, %ew, %c40000 : i32
    gpu.return %0, %1, %2, %3, %4, %5, %6 : i1, i1, i1, i1, i1, i1, i1
  }
  gpu.func @pow(%x: f32, %y: f32) -> f32 {
    %0 = math.powf %x, %y : f32
    gpu.return %0 : f32
  }
  gpu.func @remf(%x: f32, %y: f32, %a: f64, %b: f64, %v: vector<4xi32>) -> (f32, f64, vector<4xi32>) {
    %0 = arith.remf %x, %y : f32
    %1 = arith.remf %a, %b : f64
    %2 = arith.remsi %v, %v : vector<4xi32>
    gpu.return %0, %1, %2 : f32, f64, vector<4xi32>
  }
}
func.func @host(%a: i32, %b: i32, %x: f32) -> (i32, f32) {
  %0 = arith.remsi %a, %b : i32
  %1 = math.powf %x, %x : f32
  return %0, %1 : i32, f32
}
