// RUN: relax-opt %s --pass-pipeline='builtin.module(convert-gpu-to-spirv, relax-spirv-vector-buffers, canonicalize)' | FileCheck %s
// convert-gpu-to-spirv lowers a vector.load / vector.store of a scalar buffer to an
// AccessChain to its first element and a pointer Bitcast, which Vulkan's logical
// addressing forbids; relax-spirv-vector-buffers retypes such a buffer to a runtime array
// of vector<4xf32> (stride 16) and indexes it at element / 4. A scalar access of the same
// buffer becomes a component access [0, i / 4, i % 4]; a buffer whose vector accesses are
// not aligned to the whole vector keeps its bitcasts (no exact rewrite exists), and
// scalar-only buffers keep their type.

// CHECK-LABEL: spirv.func @vec(
// CHECK-SAME: %[[A:[^:]*]]: !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// CHECK-SAME: %[[B:[^:]*]]: !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// CHECK-SAME: %[[C:[^:]*]]: !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK-SAME: %[[D:[^:]*]]: !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK-NOT: spirv.Bitcast
// CHECK: %[[Q:.*]] = spirv.ShiftRightLogical %[[I:.*]], %{{.*}} : i32, i32
// CHECK: %[[PA:.*]] = spirv.AccessChain %[[A]][%{{.*}}, %[[Q]]] : {{.*}} -> !spirv.ptr<vector<4xf32>, StorageBuffer>
// CHECK: %[[VA:.*]] = spirv.Load "StorageBuffer" %[[PA]] ["Aligned", 16] : vector<4xf32>
// CHECK: %[[QS:.*]] = spirv.ShiftRightLogical %[[J:.*]], %{{.*}} : i32, i32
// CHECK: %[[R:.*]] = spirv.BitwiseAnd %[[J]], %{{.*}} : i32
// CHECK: %[[PS:.*]] = spirv.AccessChain %[[A]][%{{.*}}, %[[QS]], %[[R]]] : {{.*}} -> !spirv.ptr<f32, StorageBuffer>
// CHECK: spirv.Load "StorageBuffer" %[[PS]] : f32
// CHECK: %[[PC:.*]] = spirv.AccessChain %[[C]][%{{.*}}, %{{.*}}] : {{.*}} -> !spirv.ptr<f32, StorageBuffer>
// CHECK: spirv.Bitcast %[[PC]] : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<4xf32>, StorageBuffer>
// CHECK: spirv.AccessChain %[[D]][%{{.*}}, %{{.*}}] : {{.*}} -> !spirv.ptr<f32, StorageBuffer>
// CHECK: %[[PB:.*]] = spirv.AccessChain %[[B]][%{{.*}}, %{{.*}}] : {{.*}} -> !spirv.ptr<vector<4xf32>, StorageBuffer>
// CHECK: spirv.Store "StorageBuffer" %[[PB]], %{{.*}} ["Aligned", 16] : vector<4xf32>
module attributes {gpu.container_module} {
  gpu.module @k [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>] {
    gpu.func @vec(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %d: memref<?xf32>) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %t = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %i = arith.muli %t, %c4 : index
      %v = vector.load %a[%i] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
      %s = memref.load %a[%t] : memref<?xf32>
      %u = vector.load %c[%t] : memref<?xf32>, vector<4xf32>
      %e = memref.load %d[%t] : memref<?xf32>
      %w = arith.addf %v, %u : vector<4xf32>
      %sd = arith.addf %s, %e : f32
      %x = vector.broadcast %sd : f32 to vector<4xf32>
      %y = arith.addf %w, %x : vector<4xf32>
      vector.store %y, %b[%i] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
      gpu.return
    }
  }
}
