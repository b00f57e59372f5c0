// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// Depthwise 3x3 conv + bias + relu, fused (relax-fuse-ops), stride 1: ONE forall over (image,
// channel) planes (one parallel region per conv); in it the plane's tensor.pad (a fill, then
// the interior copied in 16-column rows, the last masked), the conv and its epilogue and
// accumulator fill; blocks of 4 rows x 16 columns accumulated in vector<4x16xf32> registers
// across the window loops (kh, kw); the last < 16 columns masked; the last < 4 rows one
// row-masked block (vector<4x16xi1>); the epilogue reads the plane in rows of 16-column
// vectors (full tiles peeled, the last masked).
// CHECK-LABEL: func.func private @fused_conv2d_add_relu
// CHECK-SAME: relax.schedule = "depthwise"
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (%{{.+}}, 32)
// CHECK-NOT: scf.forall
// CHECK: tensor.extract_slice %arg0[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] [1, 1, %{{.+}}, %{{.+}}] [1, 1, 1, 1] : tensor<?x32x?x?xf32> to tensor<1x1x?x?xf32>
// CHECK: linalg.fill {{.+}} -> tensor<1x1x?x?xf32>
// CHECK: scf.for {{.+}} step %c16
// CHECK: vector.create_mask %{{.+}} : vector<16xi1>
// CHECK: vector.transfer_read {{.+}} : tensor<1x1x1x?xf32>, vector<1x1x1x16xf32>
// CHECK: linalg.fill
// CHECK: scf.for %{{.+}} step %c4
// CHECK: scf.for %{{.+}} step %c16
// CHECK: %[[ACC:.+]] = vector.transfer_read {{.+}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[ACC]]) -> (vector<4x16xf32>)
// CHECK: scf.for {{.+}} -> (vector<4x16xf32>)
// CHECK: vector.transfer_read {{.+}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: arith.mulf {{.+}} : vector<4x16xf32>
// CHECK: arith.addf {{.+}} : vector<4x16xf32>
// CHECK: vector.transfer_write {{.+}} : vector<4x16xf32>, tensor<4x16xf32>
// CHECK: vector.create_mask %{{.+}} : vector<16xi1>
// CHECK: %[[MACC:.+]] = vector.transfer_read {{.+}} : tensor<4x?xf32>, vector<4x16xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[MACC]]) -> (vector<4x16xf32>)
// CHECK: vector.from_elements {{.+}} : vector<4x16xi1>
// CHECK: vector.transfer_read {{.+}} : tensor<?x?xf32>, vector<4x16xf32>
// CHECK: arith.maximumf {{.+}} : vector<1x16xf32>
// CHECK: arith.maximumf {{.+}} : vector<1x16xf32>
// CHECK: tensor.parallel_insert_slice
#map = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d4 + d5)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, 0, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func private @fused_conv2d_add_relu(%arg0: tensor<?x32x?x?xf32>, %arg1: tensor<32x1x3x3xf32>, %arg2: tensor<32x1x1xf32>, %arg3: tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "conv2d_add_relu"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x32x?x?xf32>
  %dim_0 = tensor.dim %arg0, %c2 : tensor<?x32x?x?xf32>
  %dim_1 = tensor.dim %arg0, %c3 : tensor<?x32x?x?xf32>
  %0 = tensor.empty(%dim, %dim_0, %dim_1) : tensor<?x32x?x?xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%arg4: index, %arg5: index, %arg6: index, %arg7: index):
    tensor.yield %cst : f32
  } : tensor<?x32x?x?xf32> to tensor<?x32x?x?xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%padded, %arg1 : tensor<?x32x?x?xf32>, tensor<32x1x3x3xf32>) outs(%1 : tensor<?x32x?x?xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %4 = arith.mulf %in, %in_2 : f32
    %5 = arith.addf %out, %4 : f32
    linalg.yield %5 : f32
  } -> tensor<?x32x?x?xf32>
  %3 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<?x32x?x?xf32>, tensor<32x1x1xf32>) outs(%arg3 : tensor<?x32x?x?xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %4 = arith.addf %in, %in_2 : f32
    %5 = arith.maximumf %4, %cst : f32
    linalg.yield %5 : f32
  } -> tensor<?x32x?x?xf32>
  return %3 : tensor<?x32x?x?xf32>
}

// -----

// The same kernel at a STATIC batch of 1, symbolic H/W (one image of any size): the planes
// are tiled over the channels only (a one-step batch dim of the forall would be folded by
// canonicalization, dropping the script's handle to the conv: plain loops, issue 28); the
// schedule applies, the pad in the task, same 4x16 register blocks.
// CHECK-LABEL: func.func private @fused_conv2d_add_relu_n1
// CHECK-SAME: relax.schedule = "depthwise"
// CHECK: scf.forall (%{{[^,]+}}) in (32)
// CHECK-NOT: scf.forall
// CHECK: linalg.fill
// CHECK: vector.create_mask %{{.+}} : vector<16xi1>
// CHECK: scf.for %{{.+}} step %c4
// CHECK: scf.for %{{.+}} step %c16
// CHECK: arith.mulf {{.+}} : vector<4x16xf32>
// CHECK: arith.maximumf {{.+}} : vector<1x16xf32>
// CHECK: arith.maximumf {{.+}} : vector<1x16xf32>
// CHECK: tensor.parallel_insert_slice
#map = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d4 + d5)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, 0, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func private @fused_conv2d_add_relu_n1(%arg0: tensor<1x32x?x?xf32>, %arg1: tensor<32x1x3x3xf32>, %arg2: tensor<32x1x1xf32>, %arg3: tensor<1x32x?x?xf32>) -> tensor<1x32x?x?xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "conv2d_add_relu"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %dim = tensor.dim %arg0, %c2 : tensor<1x32x?x?xf32>
  %dim_0 = tensor.dim %arg0, %c3 : tensor<1x32x?x?xf32>
  %0 = tensor.empty(%dim, %dim_0) : tensor<1x32x?x?xf32>
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%arg4: index, %arg5: index, %arg6: index, %arg7: index):
    tensor.yield %cst : f32
  } : tensor<1x32x?x?xf32> to tensor<1x32x?x?xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x32x?x?xf32>) -> tensor<1x32x?x?xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%padded, %arg1 : tensor<1x32x?x?xf32>, tensor<32x1x3x3xf32>) outs(%1 : tensor<1x32x?x?xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %4 = arith.mulf %in, %in_1 : f32
    %5 = arith.addf %out, %4 : f32
    linalg.yield %5 : f32
  } -> tensor<1x32x?x?xf32>
  %3 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<1x32x?x?xf32>, tensor<32x1x1xf32>) outs(%arg3 : tensor<1x32x?x?xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %4 = arith.addf %in, %in_1 : f32
    %5 = arith.maximumf %4, %cst : f32
    linalg.yield %5 : f32
  } -> tensor<1x32x?x?xf32>
  return %3 : tensor<1x32x?x?xf32>
}

// -----

// Stride 2: the legalization's phase split (tensor.pad to (N, C, 2 * Hs, 2 * Ws), its
// expand_shape, a linalg.transpose to (N, C, 2, 2, Hs, Ws)) fused into the conv's plane task:
// ONE forall (one parallel region per conv, no split buffer of the whole input); in it the
// plane's pad (fill, then the interior copied in 16-column rows, the last masked), the split
// as a generic with the column phase innermost (LLVM's interleaved loads), then the conv
// reading ALL four phases of the plane (the task's slice widened to 1x1x2x2), each tap
// unit-stride rows and columns of one phase, vectorized like stride 1.
// (the split's loops: phase row, i, column phase, j -> phase row, i, j, column phase innermost)
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d2, d4, d5)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3, d4)>
// CHECK-LABEL: func.func private @fused_conv2d_add_relu_s2
// CHECK-SAME: relax.schedule = "depthwise"
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (%{{.+}}, 32)
// CHECK-NOT: scf.forall
// CHECK: tensor.extract_slice %arg0[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] [1, 1, %{{.+}}, %{{.+}}] [1, 1, 1, 1] : tensor<?x32x?x?xf32> to tensor<1x1x?x?xf32>
// CHECK: linalg.fill {{.+}} -> tensor<1x1x?x?xf32>
// CHECK: scf.for
// CHECK: scf.for {{.+}} step %c16
// CHECK: tensor.extract_slice {{.+}} to tensor<1x1x1x16xf32>
// CHECK: vector.create_mask %{{.+}} : vector<16xi1>
// CHECK: vector.transfer_read {{.+}} : tensor<1x1x1x?xf32>, vector<1x1x1x16xf32>
// CHECK: tensor.expand_shape {{.+}} into tensor<1x1x?x2x?x2xf32>
// CHECK: %[[SPLIT:.+]] = linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.+}} : tensor<1x1x?x2x?x2xf32>) outs(%{{.+}} : tensor<1x1x2x2x?x?xf32>)
// CHECK: scf.for %{{.+}} step %c4
// CHECK: tensor.extract_slice %[[SPLIT]][0, 0, 0, 0, %{{.+}}, 0]
// CHECK: scf.for %{{.+}} step %c16
// CHECK: vector.transfer_read {{.+}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for {{.+}} -> (vector<4x16xf32>)
// CHECK-NOT: vector.gather
// CHECK: vector.transfer_read {{.+}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: arith.mulf {{.+}} : vector<4x16xf32>
// CHECK: arith.maximumf {{.+}} : vector<1x16xf32>
// CHECK: arith.maximumf {{.+}} : vector<1x16xf32>
// CHECK: tensor.parallel_insert_slice
#map = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3 mod 2, d4 mod 2, d2 + d3 floordiv 2, d5 + d4 floordiv 2)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, 0, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
func.func private @fused_conv2d_add_relu_s2(%arg0: tensor<?x32x?x?xf32>, %arg1: tensor<32x1x3x3xf32>, %arg2: tensor<32x1x1xf32>, %arg3: tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "conv2d_add_relu"} {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x32x?x?xf32>
  %dim_0 = tensor.dim %arg3, %c2 : tensor<?x32x?x?xf32>
  %dim_1 = tensor.dim %arg3, %c3 : tensor<?x32x?x?xf32>
  %0 = tensor.empty(%dim, %dim_0, %dim_1) : tensor<?x32x?x?xf32>
  %dim_2 = tensor.dim %arg0, %c2 : tensor<?x32x?x?xf32>
  %dim_3 = tensor.dim %arg0, %c3 : tensor<?x32x?x?xf32>
  %1 = arith.addi %dim_2, %c3 : index
  %2 = arith.divui %1, %c2 : index
  %3 = arith.muli %2, %c2 : index
  %4 = arith.addi %dim_2, %c1 : index
  %5 = arith.subi %3, %4 : index
  %6 = arith.addi %dim_3, %c3 : index
  %7 = arith.divui %6, %c2 : index
  %8 = arith.muli %7, %c2 : index
  %9 = arith.addi %dim_3, %c1 : index
  %10 = arith.subi %8, %9 : index
  %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, %5, %10] {
  ^bb0(%arg4: index, %arg5: index, %arg6: index, %arg7: index):
    tensor.yield %cst : f32
  } : tensor<?x32x?x?xf32> to tensor<?x32x?x?xf32>
  %expanded = tensor.expand_shape %padded [[0], [1], [2, 3], [4, 5]] output_shape [%dim, 32, %2, 2, %7, 2] : tensor<?x32x?x?xf32> into tensor<?x32x?x2x?x2xf32>
  %11 = tensor.empty(%dim, %2, %7) : tensor<?x32x2x2x?x?xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x32x?x2x?x2xf32>) outs(%11 : tensor<?x32x2x2x?x?xf32>) permutation = [0, 1, 3, 5, 2, 4] 
  %12 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32>
  %13 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%transposed, %arg1 : tensor<?x32x2x2x?x?xf32>, tensor<32x1x3x3xf32>) outs(%12 : tensor<?x32x?x?xf32>) {
  ^bb0(%in: f32, %in_4: f32, %out: f32):
    %15 = arith.mulf %in, %in_4 : f32
    %16 = arith.addf %out, %15 : f32
    linalg.yield %16 : f32
  } -> tensor<?x32x?x?xf32>
  %14 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13, %arg2 : tensor<?x32x?x?xf32>, tensor<32x1x1xf32>) outs(%arg3 : tensor<?x32x?x?xf32>) {
  ^bb0(%in: f32, %in_4: f32, %out: f32):
    %15 = arith.addf %in, %in_4 : f32
    %16 = arith.maximumf %15, %cst : f32
    linalg.yield %16 : f32
  } -> tensor<?x32x?x?xf32>
  return %14 : tensor<?x32x?x?xf32>
}
