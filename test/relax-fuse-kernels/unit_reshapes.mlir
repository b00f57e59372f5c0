// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels{unit-reshapes=true})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s --check-prefix=OFF

// unit-reshapes=true (the GPU pipelines): a generic that reads a value through a reshape adding
// unit dims (positions (n) as (n, 1), broadcast over 64 columns: the rope tables, the mask)
// reads the reshape's source through its indexing map instead, and upstream elementwise fusion
// then takes the producer: one loop nest (one launch), where the reshape kept two.

// CHECK: #map = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func private @fused_positions_to_col_scale_row(
// CHECK-NOT: tensor.reshape
// CHECK-NOT: linalg.copy
// CHECK: %0 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?xf32>, tensor<64xf32>) outs(%arg2 : tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %1 = linalg.index 0 : index
// CHECK-NEXT: %2 = arith.index_cast %1 : index to i64
// CHECK-NEXT: %3 = arith.sitofp %2 : i64 to f32
// CHECK-NEXT: %4 = arith.addf %in, %3 : f32
// CHECK-NEXT: %5 = arith.mulf %4, %in_0 : f32
// CHECK-NEXT: linalg.yield %5 : f32
// CHECK-NEXT: } -> tensor<?x64xf32>
// CHECK-NEXT: return %0 : tensor<?x64xf32>

// OFF-LABEL: func.func private @fused_positions_to_col_scale_row(
// OFF: %[[P:.*]] = linalg.generic
// OFF: tensor.reshape %[[P]]
// OFF: linalg.copy
// OFF: linalg.generic

#id1 = affine_map<(d0) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row0 = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>

// x + its index (elementwise)
func.func private @positions(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%out : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    %f = arith.sitofp %j : i64 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// (n) -> (n, 1), as relax-legalize writes a reshape
func.func private @to_col(%x: tensor<?xf32>, %out: tensor<?x1xf32>) -> tensor<?x1xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %shape = tensor.from_elements %n, %c1 : tensor<2xindex>
  %v = tensor.reshape %x(%shape) : (tensor<?xf32>, tensor<2xindex>) -> tensor<?x1xf32>
  %r = linalg.copy ins(%v : tensor<?x1xf32>) outs(%out : tensor<?x1xf32>) -> tensor<?x1xf32>
  return %r : tensor<?x1xf32>
}

// (n, 1) * (64) -> (n, 64), broadcast
func.func private @scale_row(%c: tensor<?x1xf32>, %w: tensor<64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#row0, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %w : tensor<?x1xf32>, tensor<64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

func.func @table(%x: tensor<?xf32, #relax.shape<["n"]>>, %w: tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @positions, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %1 = "relax.call_tir"(%0) {callee = @to_col, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x1xf32, #relax.shape<["n", 1]>>
  %2 = "relax.call_tir"(%1, %w) {callee = @scale_row, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x1xf32, #relax.shape<["n", 1]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
