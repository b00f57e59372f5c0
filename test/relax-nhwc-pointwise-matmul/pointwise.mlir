// relax-nhwc-pointwise-matmul: an NHWC 1x1 stride-1 unpadded groups-1 conv becomes
// reshape(x, [N*H*W, C]) @ reshape(w, [C, O]) reshaped back to (N, H, W, O); strided,
// padded, grouped and NCHW convs stay convs.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-nhwc-pointwise-matmul)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-nhwc-pointwise-matmul, relax-infer-shapes)' | mlir-opt --irdl-file=%irdl > /dev/null

// CHECK-LABEL: func.func @main(
// CHECK: %[[X:.+]] = "relax.reshape"(%arg0) {shape = #relax.shape<["h*n*w", 16]>} : {{.*}} -> tensor<?x16xf32, #relax.shape<["h*n*w", 16]>>
// CHECK: %[[W:.+]] = "relax.reshape"(%arg1) {shape = #relax.shape<[16, 32]>} : (tensor<1x1x16x32xf32>) -> tensor<16x32xf32>
// CHECK: %[[M:.+]] = "relax.matmul"(%[[X]], %[[W]]) : {{.*}} -> tensor<?x32xf32, #relax.shape<["h*n*w", 32]>>
// CHECK: %[[Y:.+]] = "relax.reshape"(%[[M]]) {shape = #relax.shape<["n", "h", "w", 32]>}
// CHECK: "relax.conv2d"(%[[Y]], %arg2) {data_layout = "NHWC", strides = array<i64: 2, 2>}
// CHECK: "relax.conv2d"(%[[Y]], %arg3) {data_layout = "NHWC", padding = array<i64: 1, 1>}
// CHECK: "relax.conv2d"(%[[Y]], %arg4) {data_layout = "NHWC", groups = 2 : i64}
// CHECK: "relax.conv2d"(%arg5, %arg6) : (tensor<?x16x?x?xf32
func.func @main(%x: tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>, %w: tensor<1x1x16x32xf32>, %ws: tensor<1x1x32x8xf32>, %wp: tensor<1x1x32x8xf32>, %wg: tensor<1x1x16x8xf32>, %xc: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %wc: tensor<8x16x1x1xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {data_layout = "NHWC"} : (tensor<?x?x?x16xf32, #relax.shape<["n", "h", "w", 16]>>, tensor<1x1x16x32xf32>) -> tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>
  %1 = "relax.conv2d"(%0, %ws) {data_layout = "NHWC", strides = array<i64: 2, 2>} : (tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>, tensor<1x1x32x8xf32>) -> tensor<?x?x?x8xf32, #relax.shape<["n", "(h - 1) // 2 + 1", "(w - 1) // 2 + 1", 8]>>
  %2 = "relax.conv2d"(%0, %wp) {data_layout = "NHWC", padding = array<i64: 1, 1>} : (tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>, tensor<1x1x32x8xf32>) -> tensor<?x?x?x8xf32, #relax.shape<["n", "h + 2", "w + 2", 8]>>
  %3 = "relax.conv2d"(%0, %wg) {data_layout = "NHWC", groups = 2 : i64} : (tensor<?x?x?x32xf32, #relax.shape<["n", "h", "w", 32]>>, tensor<1x1x16x8xf32>) -> tensor<?x?x?x8xf32, #relax.shape<["n", "h", "w", 8]>>
  %4 = "relax.conv2d"(%xc, %wc) : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<8x16x1x1xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  return %4 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
}
