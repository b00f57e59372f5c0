// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-spirv-bf16-storage)' | FileCheck %s

// What is left of bf16 in a kernel after arith-emulate-unsupported-floats and relax-bf16-casts
// is storage: it becomes i16. Buffers, a scalar argument, workgroup memory, loads and stores
// (scalar and vector), a select, a loop value and a constant are retyped; the bitcasts between
// i16 and bf16 that the casts begin and end with disappear; the host passes the buffer as the
// i16 buffer the kernel declares (an unrealized cast: one LLVM descriptor) and the scalar by
// its bits.
// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[A:[^:]*]]: memref<?xbf16>, %[[S:[^:]*]]: bf16,
// CHECK: %[[AI:.*]] = builtin.unrealized_conversion_cast %[[A]] : memref<?xbf16> to memref<?xi16>
// CHECK: %[[SI:.*]] = arith.bitcast %[[S]] : bf16 to i16
// CHECK: gpu.launch_func @k::@k {{.*}} args(%[[AI]] : memref<?xi16>, %[[SI]] : i16, %{{.*}} : index)
// CHECK: gpu.func @k(%[[B:[^:]*]]: memref<?xi16>, %[[X:[^:]*]]: i16, %[[N:[^:]*]]: index) workgroup(%[[W:[^ ]*]] : memref<64xi16, #gpu.address_space<workgroup>>) kernel
// CHECK-NOT: bf16
// CHECK: %[[L:.*]] = memref.load %[[B]][%{{.*}}] : memref<?xi16>
// CHECK: %[[E:.*]] = arith.extui %[[L]] : i16 to i32
// CHECK: %[[ONE:.*]] = arith.constant 16256 : i16
// CHECK: %[[SEL:.*]] = arith.select %{{.*}}, %[[ONE]], %[[X]] : i16
// CHECK: memref.store %[[SEL]], %[[W]][%{{.*}}] : memref<64xi16, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = vector.load %[[B]][%{{.*}}] : memref<?xi16>, vector<8xi16>
// CHECK: vector.store %[[V]], %[[B]][%{{.*}}] : memref<?xi16>, vector<8xi16>
// CHECK: %[[NEG:.*]] = arith.constant dense<-16384> : vector<8xi16>
// CHECK: vector.store %[[NEG]], %[[B]][%{{.*}}] : memref<?xi16>, vector<8xi16>
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%[[IT:.*]] = %[[L]]) -> (i16)
// CHECK:   %[[WL:.*]] = memref.load %[[W]][%{{.*}}] : memref<64xi16, #gpu.address_space<workgroup>>
// CHECK:   scf.yield %[[WL]] : i16
// CHECK: memref.store %[[R]], %[[B]][%{{.*}}] : memref<?xi16>
// CHECK-NOT: bf16
// CHECK: gpu.return
module attributes {gpu.container_module} {
  func.func @host(%a: memref<?xbf16>, %s: bf16, %n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xbf16>, %s : bf16, %n : index)
    return
  }
  gpu.module @k {
    gpu.func @k(%b: memref<?xbf16>, %x: bf16, %n: index) workgroup(%w : memref<64xbf16, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %l = memref.load %b[%c0] : memref<?xbf16>
      %bits = arith.bitcast %l : bf16 to i16
      %wide = arith.extui %bits : i16 to i32
      %t = arith.trunci %wide : i32 to i1
      %one = arith.constant 1.0 : bf16
      %sel = arith.select %t, %one, %x : bf16
      memref.store %sel, %w[%c0] : memref<64xbf16, #gpu.address_space<workgroup>>
      %v = vector.load %b[%c8] : memref<?xbf16>, vector<8xbf16>
      vector.store %v, %b[%c0] : memref<?xbf16>, vector<8xbf16>
      %neg = arith.constant dense<-2.0> : vector<8xbf16>
      vector.store %neg, %b[%c8] : memref<?xbf16>, vector<8xbf16>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%it = %l) -> (bf16) {
        %wl = memref.load %w[%i] : memref<64xbf16, #gpu.address_space<workgroup>>
        scf.yield %wl : bf16
      }
      memref.store %r, %b[%c1] : memref<?xbf16>
      gpu.return
    }
  }
}
