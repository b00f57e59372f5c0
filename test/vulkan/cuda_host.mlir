// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-cuda-host)' | FileCheck %s
// The host code of the cuda target never touches device memory: bookkeeping buffers the host
// code itself writes and reads become stack buffers, copies between buffers become
// device-to-device copies (relax_cuda_copy), a host constant's copy reads the device copy
// the runtime uploads once (its address in a public slot).

// CHECK: module attributes {cuda.constants = {{\[}}[0, 16]]
// CHECK-DAG: memref.global "public" @_mlir_relax_cuda_cslot_0 : memref<1xi64> = dense<0>
// CHECK-DAG: memref.global "public" constant @_mlir_relax_cuda_const_0 : memref<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// CHECK-DAG: func.func private @relax_cuda_copy(i64, i64, i64)
// CHECK-LABEL: func.func @host(
// the shape of the reshape: on the stack, at the entry, its dealloc gone
// CHECK: %[[SHAPE:.*]] = memref.alloca() : memref<2xindex>
// the device buffer stays an allocation
// CHECK: %[[DEV:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[SHAPE]][%{{.*}}] : memref<2xindex>
// CHECK: memref.reshape %arg0(%[[SHAPE]])
// a copy between buffers: addresses and the byte count
// CHECK: %[[S:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[SA:.*]] = arith.index_cast %[[S]] : index to i64
// CHECK: %[[D:.*]] = memref.extract_aligned_pointer_as_index %[[DEV]]
// CHECK: %[[DA:.*]] = arith.index_cast %[[D]] : index to i64
// CHECK: call @relax_cuda_copy(%[[SA]], %[[DA]], %{{.*}}) : (i64, i64, i64) -> ()
// the constant's copy: its source is the device address in the slot
// CHECK: %[[SLOT:.*]] = memref.get_global @_mlir_relax_cuda_cslot_0 : memref<1xi64>
// CHECK: %[[CDEV:.*]] = memref.load %[[SLOT]][%{{.*}}] : memref<1xi64>
// CHECK: call @relax_cuda_copy(%[[CDEV]], %{{.*}}, %{{.*}}) : (i64, i64, i64) -> ()
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.dealloc %[[SHAPE]]
// CHECK: return
module attributes {gpu.container_module} {
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @host(%a: memref<?xf32>, %n: index, %m: index) -> (memref<?x?xf32>, memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %shape = memref.alloc() : memref<2xindex>
    %dev = memref.alloc(%n) : memref<?xf32>
    memref.store %n, %shape[%c0] : memref<2xindex>
    memref.store %m, %shape[%c1] : memref<2xindex>
    %r = memref.reshape %a(%shape) : (memref<?xf32>, memref<2xindex>) -> memref<?x?xf32>
    memref.copy %a, %dev : memref<?xf32> to memref<?xf32>
    %g = memref.get_global @__constant_4xf32 : memref<4xf32>
    %c = memref.alloc() : memref<4xf32>
    memref.copy %g, %c : memref<4xf32> to memref<4xf32>
    memref.dealloc %shape : memref<2xindex>
    memref.dealloc %dev : memref<?xf32>
    return %r, %c : memref<?x?xf32>, memref<4xf32>
  }
}

// -----

// A small static buffer that reaches a kernel stays a (device) allocation.
// CHECK-LABEL: func.func @to_kernel(
// CHECK: memref.alloc() : memref<4xf32>
// CHECK-NOT: memref.alloca
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @to_kernel() {
    %c1 = arith.constant 1 : index
    %b = memref.alloc() : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<4xf32>)
    memref.dealloc %b : memref<4xf32>
    return
  }
}

// -----

// A host global passed to a kernel directly: refused at compile time (the device would fault).
module attributes {gpu.container_module} {
  memref.global "private" constant @g : memref<4xf32> = dense<1.0>
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @global_to_kernel() {
    %c1 = arith.constant 1 : index
    %g = memref.get_global @g : memref<4xf32>
    // expected-error @+1 {{a kernel argument is a host global (memref.get_global): the kernel cannot read host memory}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%g : memref<4xf32>)
    return
  }
}

// -----

// A copy between non-contiguous buffers has no device form here.
func.func @strided(%a: memref<4x4xf32>, %b: memref<4x2xf32, strided<[4, 1]>>) {
  %s = memref.subview %a[0, 0] [4, 2] [1, 1] : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1]>>
  // expected-error @+1 {{memref.copy between non-contiguous buffers}}
  memref.copy %s, %b : memref<4x2xf32, strided<[4, 1]>> to memref<4x2xf32, strided<[4, 1]>>
  return
}
