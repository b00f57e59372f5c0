// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// A sum and a prod over no axes of a 0-d value fold to their operand once fused, so the
// fused kernel would return its INPUT as a result. The caller reads each result from the
// output buffer it passed (destination-passing style): there it read a workspace slot that
// a later kernel reused (long fuzz program seed 42000493, a silently wrong result). The
// kernel copies such a value into its output argument. (The take clamps, mode "clip": in
// the default mode its index check reads %s, which then leaves the fused kernel too.)
// CHECK-LABEL: func.func private @fused_sum_take_prod(
// CHECK-SAME: %[[IN:[a-z0-9]+]]: tensor<i8>, %{{.*}}: tensor<2x3xf32>, %[[OUT0:[a-z0-9]+]]: tensor<2xf32>, %[[OUT1:[a-z0-9]+]]: tensor<i8>)
// CHECK: %[[TAKE:.*]] = linalg.generic {{.*}} ins(%[[IN]] : tensor<i8>) outs(%[[OUT0]] : tensor<2xf32>)
// CHECK: %[[COPY:.*]] = linalg.copy {{.*}} ins(%[[IN]] : tensor<i8>) outs(%[[OUT1]] : tensor<i8>)
// CHECK: return %[[TAKE]], %[[COPY]] : tensor<2xf32>, tensor<i8>

func.func @main(%x: tensor<?xi8, #relax.shape<["k"]>>, %t: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<i8>) attributes {relax.function} {
  %m = "relax.max"(%x) {axes = array<i64: 0>, keepdims = false} : (tensor<?xi8, #relax.shape<["k"]>>) -> tensor<i8>
  %s = "relax.sum"(%m) {keepdims = false} : (tensor<i8>) -> tensor<i8>
  %g = "relax.take"(%t, %s) {axis = 1 : i64, mode = "clip"} : (tensor<2x3xf32>, tensor<i8>) -> tensor<2xf32>
  %p = "relax.prod"(%s) {keepdims = false} : (tensor<i8>) -> tensor<i8>
  return %g, %p : tensor<2xf32>, tensor<i8>
}
