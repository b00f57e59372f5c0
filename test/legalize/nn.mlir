// relax-legalize on convolution, pooling, topk and sort: zero padding (fill + copy into the
// interior) feeding one generic per convolution (groups 1 and depthwise, output width
// innermost), or tensor.pad feeding the upstream linalg named ops (other grouped
// convolutions: channel dims expanded to (groups, C / groups)); pooling as a separable
// window (rows, then columns: strided slices and elementwise generics),
// topk's selection rounds and the two-generic sort kernel.
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --split-input-file > /dev/null

// The output width (d6) is the innermost loop, below the reductions over (c, kh, kw).
// CHECK-DAG: #[[XM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d3, d2 + d4, d5 + d6)>
// CHECK-DAG: #[[WM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d3, d4, d5)>
// CHECK-DAG: #[[OM:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d6)>
// CHECK-LABEL: func.func @conv
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_conv2d_s1_1_p1_1_1_1_d1_1_f32_Dx4xDxD_8x4x3x3
// CHECK: "relax.call_tir"(%arg0, %arg2) {callee = @relax_conv2d_s2_2_p1_1_1_1_d1_1_g2_f32_Dx4xDxD_8x2x3x3
// CHECK-LABEL: func.func private @relax_conv2d_s1_1_p1_1_1_1_d1_1_f32_Dx4xDxD_8x4x3x3(
// CHECK-SAME: %[[X:.+]]: tensor<?x4x?x?xf32>, %[[W:.+]]: tensor<8x4x3x3xf32>, %[[O:.+]]: tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x4x?x?xf32>)
// CHECK: %[[S:.+]] = tensor.extract_slice %[[Z]][0, 0, 1, 1]
// CHECK: %[[C:.+]] = linalg.copy ins(%[[X]] : tensor<?x4x?x?xf32>) outs(%[[S]] : tensor<?x4x?x?xf32>)
// CHECK: %[[P:.+]] = tensor.insert_slice %[[C]] into %[[Z]][0, 0, 1, 1]
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[O]] : tensor<?x8x?x?xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[XM]], #[[WM]], #[[OM]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]} ins(%[[P]], %[[W]] : tensor<?x4x?x?xf32>, tensor<8x4x3x3xf32>) outs(%[[F]] : tensor<?x8x?x?xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-LABEL: func.func private @relax_conv2d_s2_2_p1_1_1_1_d1_1_g2_f32_Dx4xDxD_8x2x3x3(
// CHECK: tensor.pad
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.+}}, 2, 2, %{{.+}}, %{{.+}}] : tensor<?x4x?x?xf32> into tensor<?x2x2x?x?xf32>
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 4, 2, 3, 3] : tensor<8x2x3x3xf32> into tensor<2x4x2x3x3xf32>
// CHECK: linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x4x?x?xf32> into tensor<?x8x?x?xf32>
// CHECK: linalg.copy
func.func @conv(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<8x4x3x3xf32>, %g: tensor<8x2x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<8x4x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  %1 = "relax.conv2d"(%x, %g) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<8x2x3x3xf32>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
  return %1 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "(h - 1) // 2 + 1", "(w - 1) // 2 + 1"]>>
}


// -----

// CHECK-LABEL: func.func @pools
// CHECK-LABEL: func.func private @relax_max_pool2d_k3_3_s1_1_p1_1_1_1_d1_1_f32_Dx8xDxD(
// CHECK-SAME: %[[X:.+]]: tensor<?x8x?x?xf32>, %[[O:.+]]: tensor<?x8x?x?xf32>)
// CHECK: %[[NEG:.+]] = arith.constant 0xFF800000 : f32
// padding with -inf as fill + copy into the interior (no tensor.pad: its strided memref.copy)
// CHECK: %[[F:.+]] = linalg.fill ins(%[[NEG]] : f32)
// CHECK: %[[IN:.+]] = tensor.extract_slice %[[F]][0, 0, 1, 1]
// CHECK: %[[CP:.+]] = linalg.copy ins(%[[X]] : tensor<?x8x?x?xf32>) outs(%[[IN]] : tensor<?x8x?x?xf32>)
// CHECK: %[[P:.+]] = tensor.insert_slice %[[CP]] into %[[F]][0, 0, 1, 1]
// the window's rows: three slices of the padded input shifted along H, one max generic
// CHECK: %[[R0:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 0] [%{{.+}}, 8, %{{.+}}, %{{.+}}] [1, 1, 1, 1]
// CHECK: %[[R1:.+]] = tensor.extract_slice %[[P]][0, 0, 1, 0] [%{{.+}}, 8, %{{.+}}, %{{.+}}] [1, 1, 1, 1]
// CHECK: %[[R2:.+]] = tensor.extract_slice %[[P]][0, 0, 2, 0] [%{{.+}}, 8, %{{.+}}, %{{.+}}] [1, 1, 1, 1]
// CHECK: %[[V:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[R0]], %[[R1]], %[[R2]] :
// CHECK: arith.maximumf
// CHECK: arith.maximumf
// then its columns: three slices of that shifted along W, one max generic into the output
// CHECK: %[[C0:.+]] = tensor.extract_slice %[[V]][0, 0, 0, 0]
// CHECK: %[[C1:.+]] = tensor.extract_slice %[[V]][0, 0, 0, 1]
// CHECK: %[[C2:.+]] = tensor.extract_slice %[[V]][0, 0, 0, 2]
// CHECK: %[[M:.+]] = linalg.generic {{.*}} ins(%[[C0]], %[[C1]], %[[C2]] : {{.*}}) outs(%[[O]] : tensor<?x8x?x?xf32>)
// CHECK: return %[[M]]
// CHECK-LABEL: func.func private @relax_avg_pool2d_k3_3_s1_1_p1_1_1_1_cip0_f32_Dx8xDxD(
// CHECK: linalg.fill
// CHECK: linalg.copy
// CHECK: tensor.insert_slice
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: arith.divf

func.func @pools(%x: tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.max_pool2d"(%x) {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1>} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  %1 = "relax.avg_pool2d"(%x) {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>) -> tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
  return %1 : tensor<?x8x?x?xf32, #relax.shape<["n", 8, "h", "w"]>>
}


// -----

// topk with a small k selects k times: round p reduces the line to the first element after
// round p - 1's pick (NaN greatest, ties by index) and inserts it into slot p.
// CHECK-LABEL: func.func @topk
// CHECK: %[[R:.+]]:2 = "relax.call_tir"(%arg0) {callee = @relax_topk_axis1_desc1_k2_f32_r2
// CHECK-LABEL: func.func private @relax_topk_axis1_desc1_k2_f32_r2(
// CHECK-SAME: %[[X:.+]]: tensor<?x?xf32>, %[[V:.+]]: tensor<?x2xf32>, %[[I:.+]]: tensor<?x2xi64>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[V]][0, 0] [%{{.+}}, 1] [1, 1] : tensor<?x2xf32> to tensor<?x1xf32>
// CHECK: %[[P0:.+]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<?x?xf32>) outs(%[[S0]], %{{.+}} : tensor<?x1xf32>, tensor<?x1xi64>)
// CHECK: tensor.insert_slice %[[P0]]#0 into %[[V]][0, 0] [%{{.+}}, 1] [1, 1]
// CHECK: tensor.extract_slice %{{.+}}[0, 1] [%{{.+}}, 1] [1, 1]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[X]], %[[P0]]#0, %[[P0]]#1 : tensor<?x?xf32>, tensor<?x1xf32>, tensor<?x1xi64>)
func.func @topk(%x: tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x2xi64, #relax.shape<["b", 2]>> attributes {relax.function} {
  %0, %1 = "relax.topk"(%x) {k = 2 : i64} : (tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> (tensor<?x2xf32, #relax.shape<["b", 2]>>, tensor<?x2xi64, #relax.shape<["b", 2]>>)
  return %1 : tensor<?x2xi64, #relax.shape<["b", 2]>>
}

// -----

// sort: every element's position counted against its line, then gathered by position.
// CHECK-LABEL: func.func @sort
// CHECK: "relax.call_tir"(%arg0) {callee = @relax_sort_axis1_desc0_f32_r2
// CHECK-LABEL: func.func private @relax_sort_axis1_desc0_f32_r2(
// CHECK-SAME: %{{.+}}: tensor<?x?xf32>, %{{.+}}: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<?x?xi64>)
// CHECK: arith.cmpf uno
// CHECK: arith.cmpi ult
// CHECK: arith.extui
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.+}} : tensor<?x?xf32>)
// CHECK: arith.cmpi eq
// CHECK: arith.select
func.func @sort(%x: tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x?xf32, #relax.shape<["b", "n"]>> attributes {relax.function} {
  %0 = "relax.sort"(%x) : (tensor<?x?xf32, #relax.shape<["b", "n"]>>) -> tensor<?x?xf32, #relax.shape<["b", "n"]>>
  return %0 : tensor<?x?xf32, #relax.shape<["b", "n"]>>
}
