// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels, relax-apply-schedules{target=avx512})' | FileCheck %s

// A max pool alone: the padded copy, the row stage and the column stage, each over rows.
// CHECK-LABEL: func.func private @relax_max_pool2d_k3_3_s2_2_p1_1_1_1_d1_1_f32_Dx16xDxD(
// CHECK-SAME: relax.schedule = "pool"
// CHECK-COUNT-3: scf.forall

// The ResNet stem's 3x3/2 max pool after its conv's epilogue (relax-conv-gemm's permute to
// NCHW + relu, fused by relax-fuse-ops): four scf.forall loops over output rows (threads):
// the epilogue (the transpose fused into the relu's rows), the padded copy's rows (after its
// -inf fill), the window's row stage, the column stage.
// CHECK-LABEL: func.func private @fused_permute_dims_relu_max_pool2d(
// CHECK-SAME: relax.schedule = "pool"
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 16, %{{.+}}) shared_outs
// CHECK: linalg.transpose
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x16x?x?xf32>)
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 16, %{{.+}}) shared_outs
// CHECK: linalg.copy ins(%{{.*}} : tensor<1x1x1x?xf32>)
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 16, %{{.+}}) shared_outs
// CHECK: } -> tensor<1x1x1x?xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 16, %{{.+}}) shared_outs
// CHECK: } -> tensor<1x1x1x?xf32>

func.func @stem(%x: tensor<?x3x?x?xf32, #relax.shape<["n", 3, "h", "w"]>>, %w: tensor<16x3x7x7xf32>) -> tensor<?x16x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 3, 3>, groups = 1 : i64} : (tensor<?x3x?x?xf32, #relax.shape<["n", 3, "h", "w"]>>, tensor<16x3x7x7xf32>) -> tensor<?x16x?x?xf32>
  %1 = "relax.relu"(%0) : (tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32>
  %2 = "relax.max_pool2d"(%1) {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32>
  return %2 : tensor<?x16x?x?xf32>
}

func.func @pool(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>) -> tensor<?x16x?x?xf32> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>) -> tensor<?x16x?x?xf32>
  return %0 : tensor<?x16x?x?xf32>
}
