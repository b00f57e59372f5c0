// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels, relax-apply-schedules{target=avx512})' | FileCheck %s

// The end of a downsampling residual block: the 3x3/2 conv's GEMM output and the strided 1x1
// shortcut's, both permuted to NCHW, the shortcut scaled by an unfolded per-channel factor
// (rsqrt of a parameter vector), added, relu. One permute_rows kernel: the 16-element
// parameter generic stays before the loop, both transposes and the epilogue run per output
// row on the threads (they ran as plain loops on one thread before: two transposes and a
// lower-rank generic did not match the schedule).
// CHECK-LABEL: func.func private @fused_permute_dims_permute_dims_rsqrt_reshape_multiply_add_relu(
// CHECK-SAME: relax.schedule = "permute_rows"
// CHECK: math.rsqrt
// CHECK: } -> tensor<16xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 16, %{{.+}}) shared_outs
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x1x1x?xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x1x1x?xf32>)
// CHECK: linalg.generic
// CHECK: } -> tensor<1x1x1x?xf32>
// CHECK: scf.forall.in_parallel

func.func @main(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, %w1: tensor<16x8x3x3xf32>, %w2: tensor<16x8x1x1xf32>, %var: tensor<16xf32>) -> tensor<?x16x?x?xf32> attributes {relax.function} {
  %c1 = "relax.conv2d"(%x, %w1) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<16x8x3x3xf32>) -> tensor<?x16x?x?xf32>
  %c2 = "relax.conv2d"(%x, %w2) {strides = array<i64: 2, 2>, padding = array<i64: 0, 0>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<16x8x1x1xf32>) -> tensor<?x16x?x?xf32>
  %s = "relax.rsqrt"(%var) : (tensor<16xf32>) -> tensor<16xf32>
  %sr = "relax.reshape"(%s) {shape = #relax.shape<[16, 1, 1]>} : (tensor<16xf32>) -> tensor<16x1x1xf32>
  %m = "relax.multiply"(%c2, %sr) : (tensor<?x16x?x?xf32>, tensor<16x1x1xf32>) -> tensor<?x16x?x?xf32>
  %a = "relax.add"(%c1, %m) : (tensor<?x16x?x?xf32>, tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32>
  %r = "relax.relu"(%a) : (tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32>
  return %r : tensor<?x16x?x?xf32>
}
