// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-vulkan-host)' | FileCheck %s
// Launches and host copies become calls of the Vulkan runtime with i64 arguments
// (buffers by address, scalars by value, floats by their bits); the launch table is
// recorded on the module.

// CHECK: module attributes {vulkan.launches = [{args = ["buffer", "index", "f32"], binary = "k", entry = "k", id = 0 : i64}]}
// CHECK-DAG: func.func private @relax_vk_copy(i64, i64, i64)
// CHECK-DAG: func.func private @relax_vk_launch_0(i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @host(
// CHECK: %[[GX:.*]] = arith.index_cast %arg2 : index to i64
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: %[[PA:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK: %[[BITS:.*]] = arith.bitcast %arg3 : f32 to i32
// CHECK: %[[F:.*]] = arith.extui %[[BITS]] : i32 to i64
// CHECK: call @relax_vk_launch_0(%[[GX]], %{{.*}}, %{{.*}}, %[[PA]], %{{.*}}, %[[F]])
// CHECK: call @relax_vk_copy(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i64) -> ()
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: memref.copy
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<?xf32>, %n: index, %s: f32) kernel {
      gpu.return
    }
  }
  func.func @host(%a: memref<?xf32>, %b: memref<?xf32>, %n: index, %s: f32) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@k blocks in (%n, %c1, %c1) threads in (%c64, %c1, %c1) args(%a : memref<?xf32>, %n : index, %s : f32)
    memref.copy %a, %b : memref<?xf32> to memref<?xf32>
    return
  }
}

// -----

func.func @strided(%a: memref<?x4xf32>, %b: memref<?x2xf32, strided<[4, 1]>>) {
  %s = memref.subview %a[0, 0] [2, 2] [1, 1] : memref<?x4xf32> to memref<2x2xf32, strided<[4, 1]>>
  %t = memref.alloc() : memref<2x2xf32>
  // expected-error @+1 {{memref.copy between non-contiguous buffers}}
  memref.copy %s, %t : memref<2x2xf32, strided<[4, 1]>> to memref<2x2xf32>
  return
}
