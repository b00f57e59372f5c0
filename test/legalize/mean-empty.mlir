// relax-legalize: a mean over a static 0 dim has no element to average: its kernel writes
// NaN (0 / 0) and divides nothing (a division by the constant count 0 was folded to 0 by
// lavapipe's compiler: vulkan-program fuzz seed 1000400). A symbolic count divides at run time.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s

// CHECK-LABEL: func.func private @relax_mean_axes0_keep0_f32_0xD(
// CHECK: %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK: %[[R:.+]] = linalg.fill ins(%[[NAN]] : f32)
// CHECK-NOT: arith.divf
// CHECK: return %[[R]]
// CHECK-LABEL: func.func private @relax_mean_axes0_keep0_f32_r2(
// CHECK: arith.divf
func.func @f(%x: tensor<0x?xf32, #relax.shape<[0, "m"]>>, %y: tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> (tensor<?xf32, #relax.shape<["m"]>>, tensor<?xf32, #relax.shape<["m"]>>) attributes {relax.function} {
  %0 = "relax.mean"(%x) {axes = array<i64: 0>, keepdims = false} : (tensor<0x?xf32, #relax.shape<[0, "m"]>>) -> tensor<?xf32, #relax.shape<["m"]>>
  %1 = "relax.mean"(%y) {axes = array<i64: 0>, keepdims = false} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?xf32, #relax.shape<["m"]>>
  return %0, %1 : tensor<?xf32, #relax.shape<["m"]>>, tensor<?xf32, #relax.shape<["m"]>>
}
