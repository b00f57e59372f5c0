// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// relax-conv-gemm's epilogue (permute to NCHW + relu) fused with the next conv's im2col: the
// im2col generic writes a (C, KH, KW, N, OH, OW) view that is collapsed to the returned
// (C*KH*KW, N, OH, OW). Upstream fusion leaves that generic writing a fresh tensor.empty;
// the fused kernel must write into expand_shape(its output argument) instead, else the whole
// im2col matrix is allocated per call and copied into the output (57 MB at ResNet-18 b8).
// CHECK-LABEL: func.func private @fused_permute_dims_relu_im2col(
// CHECK-SAME: %{{.*}}: tensor<8x?x?x?xf32>, %[[OUT:[a-z0-9]+]]: tensor<72x?x?x?xf32>)
// CHECK: %[[VIEW:.*]] = tensor.expand_shape %[[OUT]] {{\[\[}}0, 1, 2], [3], [4], [5]] output_shape [8, 3, 3, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<72x?x?x?xf32> into tensor<8x3x3x?x?x?xf32>
// CHECK-NEXT: %[[COL:.*]] = linalg.generic {{.*}} outs(%[[VIEW]] : tensor<8x3x3x?x?x?xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[COL]] {{\[\[}}0, 1, 2], [3], [4], [5]]
// CHECK-NEXT: return %[[R]] : tensor<72x?x?x?xf32>

func.func @main(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<16x8x3x3xf32>) -> tensor<?x16x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w1) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>, tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32>
  %1 = "relax.relu"(%0) : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %2 = "relax.conv2d"(%1, %w2) {strides = array<i64: 1, 1>, padding = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32>, tensor<16x8x3x3xf32>) -> tensor<?x16x?x?xf32>
  return %2 : tensor<?x16x?x?xf32>
}
