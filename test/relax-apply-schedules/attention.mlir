// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// Decode attention (relax_mlir/llm/model.py, _attend_cached) over a symbolic KV length:
// the scores sum(q * K, -1) (q reshaped to grouped-query heads) and the mix
// sum(p * V, axis=kv_len) are multiply-accumulate generics, not named matmuls.
// Scores: every parallel loop tiled by 1 (the KV length a plain loop bound), one 64-lane
// multiply and one horizontal reduction (fastmath<reassoc>) per output element.
// CHECK-LABEL: func.func private @fused_reshape_multiply_sum
// CHECK-SAME: relax.schedule = "contraction"
// CHECK: %[[P:.*]] = tensor.dim %arg1, %c0 : tensor<?x2x64xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %[[P]] step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x64xf32>, vector<64xf32>
// CHECK: arith.mulf {{.*}} : vector<64xf32>
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: return

// Mix: the KV length is the reduction, interchanged outermost: the cache is swept once in
// memory order; per cached row and head, one 64-lane multiply-add into the output tile.
// The probability is one scalar read and broadcast (not a lane-by-lane broadcast read).
// CHECK-LABEL: func.func private @fused_expand_dims_multiply_sum
// CHECK-SAME: relax.schedule = "contraction"
// CHECK: %[[P2:.*]] = tensor.dim %arg0, %c2 : tensor<1x4x?x2xf32>
// CHECK: scf.for %[[J:.*]] = %c0 to %[[P2]] step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1
// CHECK: tensor.extract_slice %arg1[%[[J]], %[[H]], 0] [1, 1, 64] [1, 1, 1] : tensor<?x2x64xf32> to tensor<1x1x64xf32>
// CHECK: %[[PR:.*]] = tensor.extract {{.*}} : tensor<1x1x1x1x1xf32>
// CHECK: %[[B:.*]] = vector.broadcast %[[PR]] : f32 to vector<64xf32>
// CHECK: %[[V:.*]] = vector.transfer_read {{.*}} : tensor<1x1x64xf32>, vector<64xf32>
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<1x1x1x64xf32>, vector<64xf32>
// CHECK: %[[M:.*]] = arith.mulf %[[B]], %[[V]] : vector<64xf32>
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : vector<64xf32>
// CHECK: vector.transfer_write %[[S]]
// CHECK-NOT: linalg.generic
// CHECK: return

// A head dim that is not static: nothing to vectorize along, left to plain loops.
// CHECK-LABEL: func.func private @dynamic_hd
// CHECK-NOT: relax.schedule
// CHECK: linalg.generic

func.func private @fused_reshape_multiply_sum(%arg0: tensor<1x8x64xf32>, %arg1: tensor<?x2x64xf32>, %arg2: tensor<1x4x?x2xf32>) -> tensor<1x4x?x2xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "reshape_multiply_sum"} {
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant dense<[1, 4, 1, 2, 64]> : tensor<5xindex>
  %0 = tensor.empty() : tensor<1x4x1x2x64xf32>
  %reshape = tensor.reshape %arg0(%cst_0) : (tensor<1x8x64xf32>, tensor<5xindex>) -> tensor<1x4x1x2x64xf32>
  %1 = linalg.copy ins(%reshape : tensor<1x4x1x2x64xf32>) outs(%0 : tensor<1x4x1x2x64xf32>) -> tensor<1x4x1x2x64xf32>
  %2 = linalg.fill ins(%cst : f32) outs(%arg2 : tensor<1x4x?x2xf32>) -> tensor<1x4x?x2xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%1, %arg1 : tensor<1x4x1x2x64xf32>, tensor<?x2x64xf32>) outs(%2 : tensor<1x4x?x2xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %4 = arith.mulf %in, %in_1 : f32
    %5 = arith.addf %4, %out : f32
    linalg.yield %5 : f32
  } -> tensor<1x4x?x2xf32>
  return %3 : tensor<1x4x?x2xf32>
}
func.func private @fused_expand_dims_multiply_sum(%arg0: tensor<1x4x?x2xf32>, %arg1: tensor<?x2x64xf32>, %arg2: tensor<1x4x2x64xf32>) -> tensor<1x4x2x64xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "expand_dims_multiply_sum"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %dim = tensor.dim %arg0, %c2 : tensor<1x4x?x2xf32>
  %0 = tensor.empty(%dim) : tensor<1x4x?x2x1xf32>
  %from_elements = tensor.from_elements %c1, %c4, %dim, %c2, %c1 : tensor<5xindex>
  %reshape = tensor.reshape %arg0(%from_elements) : (tensor<1x4x?x2xf32>, tensor<5xindex>) -> tensor<1x4x?x2x1xf32>
  %1 = linalg.copy ins(%reshape : tensor<1x4x?x2x1xf32>) outs(%0 : tensor<1x4x?x2x1xf32>) -> tensor<1x4x?x2x1xf32>
  %2 = linalg.fill ins(%cst : f32) outs(%arg2 : tensor<1x4x2x64xf32>) -> tensor<1x4x2x64xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>, affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%1, %arg1 : tensor<1x4x?x2x1xf32>, tensor<?x2x64xf32>) outs(%2 : tensor<1x4x2x64xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %4 = arith.mulf %in, %in_0 : f32
    %5 = arith.addf %4, %out : f32
    linalg.yield %5 : f32
  } -> tensor<1x4x2x64xf32>
  return %3 : tensor<1x4x2x64xf32>
}
func.func private @dynamic_hd(%arg0: tensor<1x?xf32>, %arg1: tensor<?x?xf32>, %arg2: tensor<1x?xf32>) -> tensor<1x?xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%arg2 : tensor<1x?xf32>) -> tensor<1x?xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<1x?xf32>, tensor<?x?xf32>) outs(%0 : tensor<1x?xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %2 = arith.mulf %in, %in_0 : f32
    %3 = arith.addf %2, %out : f32
    linalg.yield %3 : f32
  } -> tensor<1x?xf32>
  return %1 : tensor<1x?xf32>
}
