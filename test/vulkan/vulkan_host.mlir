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

// -----

// A module with executable-owned state (relax.state): the state buffers are arguments
// like any other buffer. A state_write (relax-lower-host: memref.copy into a memref.view
// of the rows) becomes a device copy recorded in the command buffer, to the view's address;
// a kernel reads a state_read view by its address (the runtime finds the session's buffer).

// CHECK-LABEL: module attributes {relax.state = {h = tensor<?x3xf32, #relax.shape<["cap", 3]>>}, relax.upper_bounds = {cap = 64 : i64}, vulkan.launches = [{args = ["buffer"], binary = "k", entry = "k", id = 0 : i64}]}
// CHECK-LABEL: func.func @write_then_read(
// CHECK-SAME: %[[STATE:.*]]: memref<?xi8>, %[[NEW:.*]]: memref<?x3xf32>, %[[OFF:.*]]: index, %[[N:.*]]: index)
// CHECK: %[[ROWS:.*]] = memref.view %[[STATE]][%[[OFF]]][%[[N]]] : memref<?xi8> to memref<?x3xf32>
// CHECK: %[[SRC:.*]] = memref.extract_aligned_pointer_as_index %[[NEW]]
// CHECK: %[[DST:.*]] = memref.extract_aligned_pointer_as_index %[[ROWS]]
// CHECK: %[[DST64:.*]] = arith.index_cast %[[DST]] : index to i64
// CHECK: call @relax_vk_copy(%{{.*}}, %[[DST64]], %{{.*}}) : (i64, i64, i64) -> ()
// CHECK: %[[ALL:.*]] = memref.view %[[STATE]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[ALL]]
// CHECK: call @relax_vk_launch_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: memref.copy
module attributes {gpu.container_module, relax.state = {h = tensor<?x3xf32, #relax.shape<["cap", 3]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  gpu.module @k {
    gpu.func @k(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @write_then_read(%state: memref<?xi8>, %new: memref<?x3xf32>, %off: index, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.view %state[%off][%n] : memref<?xi8> to memref<?x3xf32>
    memref.copy %new, %rows : memref<?x3xf32> to memref<?x3xf32>
    %all = memref.view %state[%c0][%n] : memref<?xi8> to memref<?xf32>
    gpu.launch_func @k::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1) args(%all : memref<?xf32>)
    return
  }
}
