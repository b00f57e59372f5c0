// RUN: relax-opt %s --pass-pipeline='builtin.module(vulkan)' --mlir-print-ir-after-all 2>%t.after >/dev/null
// RUN: FileCheck %s < %t.after
// The vulkan pipeline's SPIR-V for an elementwise add (as it is serialized: the IR after
// the last SPIR-V pass): the vector kernel declares its three buffers as runtime arrays of
// vector<4xf32> (relax-spirv-vector-buffers) and loads and stores whole vec4 elements,
// aligned to 16 bytes, at element index / 4, with no pointer bitcast (illegal in Vulkan's
// logical addressing); the scalar kernel beside it keeps f32 buffers.

// CHECK: IR Dump After SPIRVUpdateVCEPass (spirv-update-vce) ('spirv.module' operation: @__spv__relax_add_f32_r1_r1_kernel)
// CHECK: spirv.module @__spv__relax_add_f32_r1_r1_kernel Logical GLSL450
// CHECK: spirv.GlobalVariable @relax_add_f32_r1_r1_kernel_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @relax_add_f32_r1_r1_kernel_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @relax_add_f32_r1_r1_kernel_arg_2 bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<4xf32>, stride=16> [0])>, StorageBuffer>
// CHECK-NOT: spirv.Bitcast
// CHECK: %[[Q:.*]] = spirv.ShiftRightLogical %[[E:.*]], %{{.*}} : i32, i32
// CHECK: %[[PA:.*]] = spirv.AccessChain %relax_add_f32_r1_r1_kernel_arg_0_addr[%{{.*}}, %[[Q]]] : {{.*}} -> !spirv.ptr<vector<4xf32>, StorageBuffer>
// CHECK: %[[A:.*]] = spirv.Load "StorageBuffer" %[[PA]] ["Aligned", 16] : vector<4xf32>
// CHECK-NOT: spirv.Bitcast
// CHECK: %[[B:.*]] = spirv.Load "StorageBuffer" %{{.*}} ["Aligned", 16] : vector<4xf32>
// CHECK: %[[S:.*]] = spirv.FAdd %[[A]], %[[B]] : vector<4xf32>
// CHECK-NOT: spirv.Bitcast
// CHECK: spirv.Store "StorageBuffer" %{{.*}}, %[[S]] ["Aligned", 16] : vector<4xf32>
// CHECK: spirv.module @__spv__relax_add_f32_r1_r1_kernel_0 Logical GLSL450
// CHECK-NOT: vector<4xf32>
// CHECK: spirv.GlobalVariable @relax_add_f32_r1_r1_kernel_arg_1 bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK-NOT: vector<4xf32>
// CHECK: spirv.FAdd %{{.*}}, %{{.*}} : f32
func.func @main(%x: tensor<?xf32, #relax.shape<["n"]>>, %y: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
    attributes {relax.function} {
  %z = "relax.add"(%x, %y) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %z : tensor<?xf32, #relax.shape<["n"]>>
}
