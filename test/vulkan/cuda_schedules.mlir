// RUN: relax-opt %s --pass-pipeline='builtin.module(cuda)' | FileCheck %s
// The scheduled kernels through NVVM: the tiled matmul's workgroup buffers become shared
// memory (16-byte aligned: relax-cuda-align-workgroup-memory) with bar.sync between the staging and the rank-1 updates; behind the size guard
// (M or N below 32) the GEMV for M <= 4 (a 32-lane warp: 8 lanes x 4 columns with 128-bit
// loads of B, 4 lanes along K summed with shfl.sync.bfly, 4 warps splitting K summed in
// shared memory after one bar.sync), else the small kernel, one thread per element of C, no
// shared memory; the row kernel's tree reduction uses shared memory and barriers too, its
// thread-per-row form neither. The GEMM and the small kernel multiply-add with fma.rn.f32
// (fastmath<contract>; mul.rn + add.rn, which ptxas may not fuse, without it).

// CHECK: gpu.binary @relax_matmul_f32_r2_r2_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, properties = {{.*}}, assembly = "{{[^"]*}}.maxntid 8, 8, 1{{[^"]*}}.shared .align 16 .b8 __wg_relax_matmul_f32_r2_r2_kernel_0[4096];{{[^"]*}}.shared .align 16 .b8 __wg_relax_matmul_f32_r2_r2_kernel_1[4096];{{[^"]*}}st.shared.b32{{[^"]*}}bar.sync{{[^"]*}}ld.shared.b32{{[^"]*}}fma.rn.f32{{[^"]*}}bar.sync{{[^"]*}}"
// CHECK: gpu.binary @relax_matmul_f32_r2_r2_kernel_0  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, properties = {{.*}}, assembly = "{{[^"]*}}.maxntid 128, 1, 1{{[^"]*}}.shared .align 16 .b8 __wg_relax_matmul_f32_r2_r2_kernel_0[512];{{[^"]*}}ld.global.v4.b32{{[^"]*}}fma.rn.f32{{[^"]*}}shfl.sync.bfly.b32{{[^"]*}}bar.sync{{[^"]*}}"
// CHECK: gpu.binary @relax_matmul_f32_r2_r2_kernel_1  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, properties = {{.*}}, assembly = "
// CHECK-NOT: .shared
// CHECK-SAME: .maxntid 64, 1, 1
// CHECK-NOT: .shared
// CHECK-SAME: fma.rn.f32
// CHECK-NOT: .shared
// CHECK-SAME: st.global.b32
// CHECK-NOT: .shared
// CHECK-SAME: "
// CHECK-NOT: gpu.binary @relax_matmul_f32_r2_r2_kernel_2
// CHECK: gpu.binary @relax_softmax_axis1_f32_r2_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, properties = {{.*}}, assembly = "{{[^"]*}}.maxntid 128, 1, 1{{[^"]*}}.shared .align 16 .b8 __wg_relax_softmax_axis1_f32_r2_kernel_0[512];{{[^"]*}}bar.sync{{[^"]*}}"
// CHECK: gpu.binary @relax_softmax_axis1_f32_r2_kernel_{{[0-9]+}}  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, properties = {{.*}}, assembly = "
// CHECK-NOT: .shared
// CHECK-SAME: .maxntid 128, 1, 1
// CHECK-NOT: bar.sync
// CHECK-SAME: "
func.func @main(%a: tensor<?x?xf32, #relax.shape<["m", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["k", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
    attributes {relax.function} {
  %c = "relax.matmul"(%a, %b) : (tensor<?x?xf32, #relax.shape<["m", "k"]>>, tensor<?x?xf32, #relax.shape<["k", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
  %s = "relax.softmax"(%c) : (tensor<?x?xf32, #relax.shape<["m", "n"]>>) -> tensor<?x?xf32, #relax.shape<["m", "n"]>>
  return %s : tensor<?x?xf32, #relax.shape<["m", "n"]>>
}
