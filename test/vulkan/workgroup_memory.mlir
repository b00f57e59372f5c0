// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-spirv-workgroup-memory)' | FileCheck %s
// Workgroup attributions of an outlined kernel become static Workgroup-class allocations
// at its entry (what convert-gpu-to-spirv lowers to spirv.GlobalVariables); kernels
// without attributions are unchanged.

// CHECK-LABEL: gpu.func @k(%arg0: memref<?xf32>, %arg1: index) kernel {
// CHECK-NEXT: %[[A:.*]] = memref.alloc() : memref<64xf32, #spirv.storage_class<Workgroup>>
// CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<16xf32, #spirv.storage_class<Workgroup>>
// CHECK-NEXT: %[[T:.*]] = gpu.thread_id  x
// CHECK-NEXT: %[[V:.*]] = memref.load %arg0[%[[T]]] : memref<?xf32>
// CHECK-NEXT: memref.store %[[V]], %[[A]][%[[T]]] : memref<64xf32, #spirv.storage_class<Workgroup>>
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[W:.*]] = memref.load %[[A]][%arg1] : memref<64xf32, #spirv.storage_class<Workgroup>>
// CHECK-NEXT: memref.store %[[W]], %[[B]][%[[T]]] : memref<16xf32, #spirv.storage_class<Workgroup>>
// CHECK-NEXT: gpu.return
// CHECK-LABEL: gpu.func @plain(%arg0: memref<?xf32>) kernel {
// CHECK-NEXT: gpu.return
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf32>, %i: index) workgroup(%s: memref<64xf32, #gpu.address_space<workgroup>>, %r: memref<16xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %a[%t] : memref<?xf32>
      memref.store %v, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %w = memref.load %s[%i] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %r[%t] : memref<16xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @plain(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
