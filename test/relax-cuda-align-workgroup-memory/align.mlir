// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-cuda-align-workgroup-memory)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-cuda-align-workgroup-memory{align=32})' | FileCheck %s --check-prefix=A32
// Every workgroup attribution of an outlined kernel gets llvm.align = 16 (a larger one is
// kept); kernels without attributions are unchanged.

// CHECK-LABEL: gpu.func @k(
// CHECK-SAME: workgroup(%{{.*}} : memref<64xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<16xf16, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
// CHECK-LABEL: gpu.func @plain(%arg0: memref<?xf32>) kernel {
// A32-LABEL: gpu.func @k(
// A32-SAME: {llvm.align = 32 : i64}, %{{.*}} : memref<16xf16, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%a: memref<?xf16>) workgroup(%s: memref<64xf16, #gpu.address_space<workgroup>>, %r: memref<16xf16, #gpu.address_space<workgroup>> {llvm.align = 64 : i64}) kernel {
      %t = gpu.thread_id x
      %v = memref.load %a[%t] : memref<?xf16>
      memref.store %v, %s[%t] : memref<64xf16, #gpu.address_space<workgroup>>
      memref.store %v, %r[%t] : memref<16xf16, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @plain(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
