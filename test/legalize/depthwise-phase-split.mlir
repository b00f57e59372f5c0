// relax-legalize of a strided depthwise conv2d: the padded input is written split by phase,
// (N, C, sh, sw, (H + pt + pb + sh - 1) // sh, (W + pl + pr + sw - 1) // sw), one strided copy
// of the input per (row phase, column phase) into a zero fill, each a full-rank copy (the
// strided slice expanded by two unit dims: no rank-reducing slice, whose dropped dims
// memref.subview would pick by strides); the conv generic reads tap (kh, kw) at phase
// (kh % sh, kw % sw), offset (oh + kh // sh, ow + kw // sw): unit strides.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl > /dev/null

// CHECK-DAG: #[[XM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3 mod 2, d4 mod 2, d2 + d3 floordiv 2, d5 + d4 floordiv 2)>
// CHECK-DAG: #[[WM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, 0, d3, d4)>
// CHECK-DAG: #[[OM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func private @relax_conv2d_s2_2_p1_1_1_1_d1_1_g6_f32_Dx6xDxD_6x1x3x3(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x6x?x?xf32>
// CHECK: %[[E:.+]] = tensor.empty({{.+}}) : tensor<?x6x2x2x?x?xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<?x6x2x2x?x?xf32>)
// row phase 0 <- input rows 1, 3, ...; column phase 0 <- input columns 1, 3, ... (padding 1)
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[X]][0, 0, 1, 1] [%{{.+}}, 6, %{{.+}}, %{{.+}}] [1, 1, 2, 2]
// CHECK: %[[V0:.+]] = tensor.expand_shape %[[S0]] {{\[}}[0], [1], [2, 3, 4], [5]] {{.+}} into tensor<?x6x1x1x?x?xf32>
// CHECK: %[[D0:.+]] = tensor.extract_slice %[[Z]][0, 0, 0, 0, 1, 1] [%{{.+}}, 6, 1, 1, %{{.+}}, %{{.+}}] [1, 1, 1, 1, 1, 1] : tensor<?x6x2x2x?x?xf32> to tensor<?x6x1x1x?x?xf32>
// CHECK: linalg.copy ins(%[[V0]] : tensor<?x6x1x1x?x?xf32>) outs(%[[D0]] : tensor<?x6x1x1x?x?xf32>)
// CHECK: tensor.extract_slice %[[X]][0, 0, 1, 0] {{.+}} [1, 1, 2, 2]
// CHECK: tensor.extract_slice %[[X]][0, 0, 0, 1] {{.+}} [1, 1, 2, 2]
// row phase 1, column phase 1 <- input rows and columns 0, 2, ...
// CHECK: tensor.extract_slice %[[X]][0, 0, 0, 0] {{.+}} [1, 1, 2, 2]
// CHECK: %[[P:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 1, 1, 0, 0]
// CHECK: linalg.generic {indexing_maps = [#[[XM]], #[[WM]], #[[OM]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[P]], %{{.+}} : tensor<?x6x2x2x?x?xf32>, tensor<6x1x3x3xf32>)
func.func @dw(%x: tensor<?x6x?x?xf32, #relax.shape<["n", 6, "h", "w"]>>, %w: tensor<6x1x3x3xf32>) -> tensor<?x6x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 6 : i64} : (tensor<?x6x?x?xf32, #relax.shape<["n", 6, "h", "w"]>>, tensor<6x1x3x3xf32>) -> tensor<?x6x?x?xf32>
  return %0 : tensor<?x6x?x?xf32>
}
