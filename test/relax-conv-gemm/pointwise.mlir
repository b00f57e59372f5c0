// relax-conv-gemm{pointwise=on}: a 1x1 stride-1 unpadded groups-1 f32 conv becomes ONE
// linalg.batch_matmul over the images whose A (the weight viewed as (O, C)) is shared by every
// image (indexing map (n, o, p, c) -> (o, c)), x and the output read as (N, C, H*W) and
// (N, O, H*W): no im2col, no weight packing, no permute. A static map below 196 pixels goes to
// the direct kernel when that applies (O a multiple of the lanes); strided or padded 1x1 convs
// take the other routes.
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{pointwise=on direct=auto})' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{direct=auto})' | FileCheck %s --check-prefix=OFF

// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @pw
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_conv1x1_f32_Dx16xDxD_24x16x1x1
// CHECK-SAME: -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>
// CHECK-LABEL: func.func private @relax_conv1x1_f32_Dx16xDxD_24x16x1x1(
// CHECK-SAME: attributes {relax.kernel, relax.kernel_op = "conv1x1"}
// CHECK: %[[W:.+]] = tensor.reshape %arg1({{.+}}) : (tensor<24x16x1x1xf32>, tensor<2xindex>) -> tensor<24x16xf32>
// CHECK: %[[X:.+]] = tensor.reshape %arg0({{.+}}) : (tensor<?x16x?x?xf32>, tensor<3xindex>) -> tensor<?x16x?xf32>
// CHECK: %[[Y:.+]] = tensor.reshape %arg2({{.+}}) : (tensor<?x24x?x?xf32>, tensor<3xindex>) -> tensor<?x24x?xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[Y]] : tensor<?x24x?xf32>)
// CHECK: %[[P:.+]] = linalg.batch_matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%[[W]], %[[X]] : tensor<24x16xf32>, tensor<?x16x?xf32>) outs(%[[Z]] : tensor<?x24x?xf32>)
// CHECK: %[[R:.+]] = tensor.reshape %[[P]]({{.+}}) : (tensor<?x24x?xf32>, tensor<4xindex>) -> tensor<?x24x?x?xf32>
// CHECK: return %[[R]]
// OFF-LABEL: func.func @pw
// OFF: relax_im2col_t_
// OFF-NOT: relax_conv1x1
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @pw(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<24x16x1x1xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<24x16x1x1xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>
  return %0 : tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>
}
}

// -----

// Static maps: 14x14 (196 pixels) takes the batch matmul, 7x7 with O = 32 the direct kernel,
// 7x7 with O = 24 (half vectors on AVX-512: no direct kernel) the batch matmul.
// CHECK-LABEL: func.func @static_maps
// CHECK: callee = @relax_conv1x1_f32_Dx64x14x14_32x64x1x1
// CHECK: callee = @relax_conv_pack_b32_f32_32x64x1x1
// CHECK: callee = @relax_conv_direct_s1_1_p0_0_0_0_d1_1_f32_Dx64x7x7_1x64x1x1x32
// CHECK: callee = @relax_conv1x1_f32_Dx64x7x7_24x64x1x1
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @static_maps(%x: tensor<?x64x14x14xf32, #relax.shape<["n", 64, 14, 14]>>, %y: tensor<?x64x7x7xf32, #relax.shape<["n", 64, 7, 7]>>, %w: tensor<32x64x1x1xf32>, %v: tensor<24x64x1x1xf32>) -> (tensor<?x32x14x14xf32, #relax.shape<["n", 32, 14, 14]>>, tensor<?x32x7x7xf32, #relax.shape<["n", 32, 7, 7]>>, tensor<?x24x7x7xf32, #relax.shape<["n", 24, 7, 7]>>) attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x64x14x14xf32, #relax.shape<["n", 64, 14, 14]>>, tensor<32x64x1x1xf32>) -> tensor<?x32x14x14xf32, #relax.shape<["n", 32, 14, 14]>>
  %1 = "relax.conv2d"(%y, %w) : (tensor<?x64x7x7xf32, #relax.shape<["n", 64, 7, 7]>>, tensor<32x64x1x1xf32>) -> tensor<?x32x7x7xf32, #relax.shape<["n", 32, 7, 7]>>
  %2 = "relax.conv2d"(%y, %v) : (tensor<?x64x7x7xf32, #relax.shape<["n", 64, 7, 7]>>, tensor<24x64x1x1xf32>) -> tensor<?x24x7x7xf32, #relax.shape<["n", 24, 7, 7]>>
  return %0, %1, %2 : tensor<?x32x14x14xf32, #relax.shape<["n", 32, 14, 14]>>, tensor<?x32x7x7xf32, #relax.shape<["n", 32, 7, 7]>>, tensor<?x24x7x7xf32, #relax.shape<["n", 24, 7, 7]>>
}
}

// -----

// Stride 2 and padding: not pointwise.
// CHECK-LABEL: func.func @strided_padded
// CHECK-NOT: relax_conv1x1
// CHECK: return
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @strided_padded(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<24x16x1x1xf32>) -> (tensor<?x24x?x?xf32, #relax.shape<["n", 24, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>, tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h + 2", "w + 2"]>>) attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<24x16x1x1xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  %1 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<24x16x1x1xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h + 2", "w + 2"]>>
  return %0, %1 : tensor<?x24x?x?xf32, #relax.shape<["n", 24, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>, tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h + 2", "w + 2"]>>
}
}

// -----

// Output bytes at the batch bound (n <= 8): 8 x 96 x 112 x 112 x 4 = 38.5 MB, above 32 MiB,
// goes to the direct kernel (O = 96 fills whole vectors); 8 x 16 x 112 x 112 x 4 = 6.4 MB
// takes the batch matmul.
// CHECK-LABEL: func.func @big_outputs
// CHECK: callee = @relax_conv_pack_b32_f32_96x16x1x1
// CHECK: callee = @relax_conv_direct_s1_1_p0_0_0_0_d1_1_f32_Dx16x112x112_3x16x1x1x32
// CHECK: callee = @relax_conv1x1_f32_Dx16x112x112_16x16x1x1
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @big_outputs(%x: tensor<?x16x112x112xf32, #relax.shape<["n", 16, 112, 112]>>, %w: tensor<96x16x1x1xf32>, %v: tensor<16x16x1x1xf32>) -> (tensor<?x96x112x112xf32, #relax.shape<["n", 96, 112, 112]>>, tensor<?x16x112x112xf32, #relax.shape<["n", 16, 112, 112]>>) attributes {relax.function, relax.upper_bounds = {n = 8 : i64}} {
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x16x112x112xf32, #relax.shape<["n", 16, 112, 112]>>, tensor<96x16x1x1xf32>) -> tensor<?x96x112x112xf32, #relax.shape<["n", 96, 112, 112]>>
  %1 = "relax.conv2d"(%x, %v) : (tensor<?x16x112x112xf32, #relax.shape<["n", 16, 112, 112]>>, tensor<16x16x1x1xf32>) -> tensor<?x16x112x112xf32, #relax.shape<["n", 16, 112, 112]>>
  return %0, %1 : tensor<?x96x112x112xf32, #relax.shape<["n", 96, 112, 112]>>, tensor<?x16x112x112xf32, #relax.shape<["n", 16, 112, 112]>>
}
}
