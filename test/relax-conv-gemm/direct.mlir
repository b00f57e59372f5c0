// relax-conv-gemm{direct=...}: groups-1 f32 convs whose output channels fill whole vectors of
// the module's target become the weight packing (O, C, KH, KW) -> (O/B, C, KH, KW, B) and the
// direct kernel (NCHW in and out, no im2col); the channel block B is two vectors where it
// divides O (AVX-512: 32, AVX2: 16), else one. auto leaves O = 24 on AVX-512 (half vectors)
// to the GEMM route; all takes any O that is a multiple of 8.
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{direct=auto})' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{direct=all})' | FileCheck %s --check-prefix=ALL
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm)' | FileCheck %s --check-prefix=OFF

// The pack reads w[ob * 32 + oi, k] into wp[ob, k, oi]; the conv accumulates into
// (n, ob, oh, ow, oi); the copy to NCHW writes the output viewed (n, ob, oi, oh, ow) and
// reads acc[n, ob, oh, ow, oi] (projected permutations: a transpose the vectorizer takes):
// CHECK-DAG: #[[PIN:.+]] = affine_map<(d0, d1, d2) -> (d0 * 32 + d1, d2)>
// CHECK-DAG: #[[POUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2, d4)>
// CHECK-DAG: #[[TOC:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4, d2)>
// CHECK-DAG: #[[ID5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv3x3s2
// CHECK: %[[W:.+]] = "relax.call_tir"(%arg1) {callee = @relax_conv_pack_b32_f32_64x16x3x3
// CHECK-SAME: -> tensor<2x16x3x3x32xf32>
// CHECK: %[[Y:.+]] = "relax.call_tir"(%arg0, %[[W]]) {callee = @relax_conv_direct_s2_2_p1_1_1_1_d1_1_f32_Dx16xDxD_2x16x3x3x32
// CHECK-SAME: -> tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
// CHECK: "relax.relu"(%[[Y]])
// CHECK-NOT: im2col
// CHECK-LABEL: func.func private @relax_conv_pack_b32_f32_64x16x3x3(
// CHECK: %[[WS:.+]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2, 3]] : tensor<64x16x3x3xf32> into tensor<64x144xf32>
// CHECK: %[[WD:.+]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3], [4]] : tensor<2x16x3x3x32xf32> into tensor<2x144x32xf32>
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#[[PIN:.+]], #[[POUT:.+]]], {{.+}} ins(%[[WS]] : tensor<64x144xf32>) outs(%[[WD]] : tensor<2x144x32xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[}}[0], [1, 2, 3], [4]] output_shape [2, 16, 3, 3, 32]
// The padded input is a tensor.pad (the schedule writes it plane by plane on the threads):
// CHECK-LABEL: func.func private @relax_conv_direct_s2_2_p1_1_1_1_d1_1_f32_Dx16xDxD_2x16x3x3x32(
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// Nine taps, each a strided view of the padded input and a (O/B, C, B) slice of the weight:
// CHECK-COUNT-9: tensor.extract_slice %{{.+}}[0, 0, {{[0-2]}}, {{[0-2]}}] [%{{.+}}, 16, %{{.+}}, %{{.+}}] [1, 1, 2, 2] : tensor<?x16x?x?xf32> to tensor<?x16x?x?xf32>
// CHECK: %[[ACC:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x2x?x?x32xf32>)
// CHECK: %[[C:.+]] = linalg.generic {indexing_maps = [{{.+}}, #[[OUT:.+]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[ACC]] : tensor<?x2x?x?x32xf32>)
// CHECK: %[[E:.+]] = tensor.expand_shape %arg2 {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.+}}, 2, 32, %{{.+}}, %{{.+}}] : tensor<?x64x?x?xf32> into tensor<?x2x32x?x?xf32>
// CHECK: %[[T:.+]] = linalg.generic {indexing_maps = [#[[TOC]], #[[ID5]]], {{.+}} ins(%[[C]] : tensor<?x2x?x?x32xf32>) outs(%[[E]] : tensor<?x2x32x?x?xf32>)
// CHECK: %[[Y:.+]] = tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x32x?x?xf32> into tensor<?x64x?x?xf32>
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @conv3x3s2
// OFF: relax_im2col_t_
// OFF-NOT: relax_conv_direct
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @conv3x3s2(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<64x16x3x3xf32>) -> tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<64x16x3x3xf32>) -> tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  %1 = "relax.relu"(%0) : (tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>) -> tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  return %1 : tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
}
}

// -----

// AVX2 (8 lanes): O = 24 is three vectors, one per block; the 1x1 conv has one tap.
// CHECK-LABEL: func.func @pointwise_avx2
// CHECK: callee = @relax_conv_pack_b8_f32_24x16x1x1
// CHECK: callee = @relax_conv_direct_s1_1_p0_0_0_0_d1_1_f32_Dx16xDxD_3x16x1x1x8
module attributes {relax.target = {kind = "cpu", isa = "avx2"}} {
func.func @pointwise_avx2(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<24x16x1x1xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<24x16x1x1xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>
  return %0 : tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>
}
}

// -----

// AVX-512: O = 24 fills no whole vector: auto keeps the GEMM route, all takes the direct
// kernel with 8-wide blocks; O = 12 (not a multiple of 8) stays with the GEMM route for both.
// CHECK-LABEL: func.func @half_vectors
// CHECK-NOT: relax_conv_direct
// CHECK: relax_im2col_t_
// ALL-LABEL: func.func @half_vectors
// ALL: callee = @relax_conv_direct_s1_1_p1_1_1_1_d1_1_f32_Dx16xDxD_3x16x3x3x8
// ALL: callee = @relax_im2col_t_
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @half_vectors(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<24x16x3x3xf32>, %w2: tensor<12x16x3x3xf32>) -> (tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>, tensor<?x12x?x?xf32, #relax.shape<["n", 12, "h", "w"]>>) attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<24x16x3x3xf32>) -> tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>
  %1 = "relax.conv2d"(%x, %w2) {padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<12x16x3x3xf32>) -> tensor<?x12x?x?xf32, #relax.shape<["n", 12, "h", "w"]>>
  return %0, %1 : tensor<?x24x?x?xf32, #relax.shape<["n", 24, "h", "w"]>>, tensor<?x12x?x?xf32, #relax.shape<["n", 12, "h", "w"]>>
}
}

// -----

// More taps than DIRECT_MAX_TAPS (the 7x7 stem): the kernel rows are a reduction loop (d6),
// one operand per kernel column: the padded rows read at oh * 2 + kh, the weight's
// (O/B, C, KH, B) column slice.
// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5, d1 * 2 + d6, d2)>
// CHECK-DAG: #[[WCOL:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d5, d6, d4)>
// CHECK-LABEL: func.func private @relax_conv_direct_s2_2_p3_3_3_3_d1_1_f32_Dx3xDxD_2x3x7x7x32(
// CHECK: tensor.pad %arg0 low[0, 0, 3, 3] high[0, 0, 3, 3]
// CHECK-COUNT-7: tensor.extract_slice %{{.+}}[0, 0, 0, {{[0-6]}}] [%{{.+}}, 3, %{{.+}}, %{{.+}}] [1, 1, 1, 2] : tensor<?x3x?x?xf32> to tensor<?x3x?x?xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ROWS]], #[[WCOL]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @stem7x7(%x: tensor<?x3x?x?xf32, #relax.shape<["n", 3, "h", "w"]>>, %w: tensor<64x3x7x7xf32>) -> tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 3, 3>} : (tensor<?x3x?x?xf32, #relax.shape<["n", 3, "h", "w"]>>, tensor<64x3x7x7xf32>) -> tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  return %0 : tensor<?x64x?x?xf32, #relax.shape<["n", 64, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
}
}
