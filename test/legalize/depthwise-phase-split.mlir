// relax-legalize of a strided depthwise conv2d: the padded input split by phase,
// (N, C, sh, sw, Hs, Ws) with Hs = (H + pt + pb + sh - 1) // sh (Ws likewise), written as ONE
// tensor.pad to (N, C, sh * Hs, sw * Ws) (its high side sh * Hs - H - pt: the rows past the
// padding are zeros no tap reads), its expand_shape to (N, C, Hs, sh, Ws, sw) and a
// linalg.transpose to the phases: ops that tile by (image, channel) plane, so the cpu
// schedule splits each plane inside the conv's task. The conv generic reads tap (kh, kw) at
// phase (kh % sh, kw % sw), offset (oh + kh // sh, ow + kw // sw): unit strides.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl > /dev/null

// CHECK-DAG: #[[XM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3 mod 2, d4 mod 2, d2 + d3 floordiv 2, d5 + d4 floordiv 2)>
// CHECK-DAG: #[[WM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, 0, d3, d4)>
// CHECK-DAG: #[[OM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func private @relax_conv2d_s2_2_p1_1_1_1_d1_1_g6_f32_Dx6xDxD_6x1x3x3(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x6x?x?xf32>
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[N:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[H:.+]] = tensor.dim %[[X]], %c2
// Hs = (H + 3) // 2; the high side 2 * Hs - (H + 1)
// CHECK: %[[H3:.+]] = arith.addi %[[H]], %[[C3]] : index
// CHECK: %[[HS:.+]] = arith.divui %[[H3]], %[[C2]] : index
// CHECK: %[[HP:.+]] = arith.muli %[[HS]], %[[C2]] : index
// CHECK: %[[H1:.+]] = arith.addi %[[H]], %[[C1]] : index
// CHECK: %[[HH:.+]] = arith.subi %[[HP]], %[[H1]] : index
// CHECK: %[[WS:.+]] = arith.divui
// CHECK: %[[WH:.+]] = arith.subi
// CHECK: %[[P:.+]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, %[[HH]], %[[WH]]]
// CHECK: tensor.yield %{{.+}} : f32
// CHECK: %[[E:.+]] = tensor.expand_shape %[[P]] {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [%[[N]], 6, %[[HS]], 2, %[[WS]], 2] : tensor<?x6x?x?xf32> into tensor<?x6x?x2x?x2xf32>
// CHECK: %[[D:.+]] = tensor.empty(%[[N]], %[[HS]], %[[WS]]) : tensor<?x6x2x2x?x?xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[E]] : tensor<?x6x?x2x?x2xf32>) outs(%[[D]] : tensor<?x6x2x2x?x?xf32>) permutation = [0, 1, 3, 5, 2, 4]
// CHECK-NOT: linalg.copy
// CHECK: linalg.generic {indexing_maps = [#[[XM]], #[[WM]], #[[OM]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[T]], %{{.+}} : tensor<?x6x2x2x?x?xf32>, tensor<6x1x3x3xf32>)
func.func @dw(%x: tensor<?x6x?x?xf32, #relax.shape<["n", 6, "h", "w"]>>, %w: tensor<6x1x3x3xf32>) -> tensor<?x6x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 6 : i64} : (tensor<?x6x?x?xf32, #relax.shape<["n", 6, "h", "w"]>>, tensor<6x1x3x3xf32>) -> tensor<?x6x?x?xf32>
  return %0 : tensor<?x6x?x?xf32>
}
