// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-spirv-coherent-buffers)' | FileCheck %s
// The one-launch attention split's pattern: a workgroup stores its partial into @ws, fences
// (Device scope), bumps a counter atomically (@cnt) and, if last, loads the other
// workgroups' partials from @ws. Only @ws is stored AND loaded in a kernel with a
// Device-scope barrier: it alone gets `coherent` (serialized as OpDecorate Coherent). @cnt is
// touched by atomics and a plain store, @in only loaded, @out only stored. A kernel whose
// barrier is Workgroup-scoped (@b) hands nothing over between workgroups: unchanged.

// CHECK-LABEL: spirv.module @__spv__a
// CHECK: spirv.GlobalVariable @a_ws bind(0, 0) {coherent}
// CHECK: spirv.GlobalVariable @a_cnt bind(0, 1) :
// CHECK: spirv.GlobalVariable @a_in bind(0, 2) :
// CHECK: spirv.GlobalVariable @a_out bind(0, 3) :
// CHECK-LABEL: spirv.module @__spv__b
// CHECK-NOT: coherent
gpu.module @a {
  spirv.module @__spv__a Logical GLSL450 requires #spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]> {
    spirv.GlobalVariable @a_ws bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    spirv.GlobalVariable @a_cnt bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<i32, stride=4> [0])>, StorageBuffer>
    spirv.GlobalVariable @a_in bind(0, 2) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    spirv.GlobalVariable @a_out bind(0, 3) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    spirv.func @a() "None" {
      %c0 = spirv.Constant 0 : i32
      %c1 = spirv.Constant 1 : i32
      %ws = spirv.mlir.addressof @a_ws : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
      %cnt = spirv.mlir.addressof @a_cnt : !spirv.ptr<!spirv.struct<(!spirv.rtarray<i32, stride=4> [0])>, StorageBuffer>
      %in = spirv.mlir.addressof @a_in : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
      %out = spirv.mlir.addressof @a_out : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
      %pin = spirv.AccessChain %in[%c0, %c1] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
      %x = spirv.Load "StorageBuffer" %pin : f32
      %pws = spirv.AccessChain %ws[%c0, %c1] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
      spirv.Store "StorageBuffer" %pws, %x : f32
      spirv.MemoryBarrier <Device>, <AcquireRelease|UniformMemory>
      %pc = spirv.AccessChain %cnt[%c0, %c1] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<i32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<i32, StorageBuffer>
      %old = spirv.AtomicIAdd <Device> <AcquireRelease> %pc, %c1 : !spirv.ptr<i32, StorageBuffer>
      %last = spirv.IEqual %old, %c1 : i32
      spirv.mlir.selection {
        spirv.BranchConditional %last, ^bb1, ^bb2
      ^bb1:
        spirv.MemoryBarrier <Device>, <AcquireRelease|UniformMemory>
        %pws0 = spirv.AccessChain %ws[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
        %y = spirv.Load "StorageBuffer" %pws0 : f32
        %pout = spirv.AccessChain %out[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
        spirv.Store "StorageBuffer" %pout, %y : f32
        spirv.Store "StorageBuffer" %pc, %c0 : i32
        spirv.Branch ^bb2
      ^bb2:
        spirv.mlir.merge
      }
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @a
    spirv.ExecutionMode @a "LocalSize", 8, 1, 1
  }
}
gpu.module @b {
  spirv.module @__spv__b Logical GLSL450 requires #spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]> {
    spirv.GlobalVariable @b_buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    spirv.func @b() "None" {
      %c0 = spirv.Constant 0 : i32
      %buf = spirv.mlir.addressof @b_buf : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
      %p = spirv.AccessChain %buf[%c0, %c0] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
      %x = spirv.Load "StorageBuffer" %p : f32
      spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
      spirv.Store "StorageBuffer" %p, %x : f32
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @b
    spirv.ExecutionMode @b "LocalSize", 8, 1, 1
  }
}
