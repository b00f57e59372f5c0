// RUN: relax-opt %s --pass-pipeline='builtin.module(cuda)' --mlir-print-ir-after-all 2> %t.cuda.ir > %t.cuda
// RUN: FileCheck %s --check-prefix=ORDER < %t.cuda.ir
// RUN: FileCheck %s --check-prefix=PTX < %t.cuda
// RUN: relax-opt %s --pass-pipeline='builtin.module(vulkan)' --mlir-print-ir-after-all 2> %t.vk.ir > /dev/null
// RUN: FileCheck %s --check-prefix=ORDER < %t.vk.ir
// The GPU pipelines run relax-kernel-fastmath{reassoc=false} after relax-expand-math and
// before relax-gpu-schedule: the linalg bodies carry fastmath<contract> (no reassoc: the
// row kernels fix their order themselves), and the schedules' launches clone them with it.
// Here a sum of products over each row (as attention's q.k) takes the Rows rule; on cuda
// NVPTX then writes fma.rn.f32 where it wrote mul.rn.f32 + add.rn.f32, which ptxas does
// not fuse.

// ORDER: IR Dump After relax-expand-math
// ORDER: IR Dump After relax-kernel-fastmath
// ORDER: func.func private @fused_multiply_sum(
// ORDER: %[[M:.*]] = arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// ORDER-NEXT: arith.addf %[[M]], %{{.*}} fastmath<contract> : f32
// ORDER: IR Dump After relax-gpu-signless
// ORDER: IR Dump After relax-gpu-schedule
// ORDER: func.func private @fused_multiply_sum(
// ORDER: gpu.launch
// ORDER: %[[M2:.*]] = arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// ORDER-NEXT: arith.addf %[[M2]], %{{.*}} fastmath<contract> : f32

// PTX-NOT: mul.rn.f32
// PTX: gpu.binary @fused_multiply_sum_kernel {{.*}}fma.rn.f32
// PTX-NOT: mul.rn.f32
func.func @main(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %y: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
    attributes {relax.function} {
  %p = "relax.multiply"(%x, %y) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32, #relax.shape<["n", "k"]>>
  %s = "relax.sum"(%p) {axes = array<i64: 1>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %s : tensor<?xf32, #relax.shape<["n"]>>
}
