// RUN: cat %S/../Inputs/multi_use_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-kernels{siblings=true})' | FileCheck %s
// RUN: cat %S/../Inputs/multi_use_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-fuse-kernels)' | FileCheck %s --check-prefix=OFF

// siblings=true (the GPU pipelines): independent all-parallel loop nests of one kernel whose
// iteration domains are provably equal become one generic writing all their outputs (rope's
// q, k and v; the GPU's naive route: one launch, not three). Equal domains come from the
// graph's symbolic shapes of the kernel's arguments (both "n" here).

// CHECK-LABEL: func.func @qkv(
// CHECK-NEXT: %0:3 = "relax.call_tir"(%arg0, %arg1, %arg2) {callee = @fused_scale_rot_copy,
// CHECK-LABEL: func.func @other_rows(
// CHECK-NEXT: %0:2 = "relax.call_tir"(%arg0, %arg1) {callee = @fused_scale_rot,

// CHECK-LABEL: func.func private @fused_scale_rot_copy(
// CHECK-SAME: %arg0: tensor<?x64xf32>, %arg1: tensor<?x64xf32>, %arg2: tensor<?x64xf32>, %arg3: tensor<?x64xf32>, %arg4: tensor<?x64xf32>, %arg5: tensor<?x64xf32>)
// CHECK: %0:3 = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1, %arg2 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) outs(%arg3, %arg4, %arg5 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %in_1: f32, %out: f32, %out_2: f32, %out_3: f32):
// CHECK-NEXT: %1 = arith.mulf %in, %cst : f32
// CHECK: %extracted = tensor.extract %arg1[
// CHECK-NEXT: %6 = arith.addf %in_0, %extracted : f32
// CHECK-NEXT: linalg.yield %1, %6, %in_1 : f32, f32, f32
// CHECK-NEXT: } -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
// CHECK-NEXT: return %0#0, %0#1, %0#2

// Rows "n" and "m": nothing says they are equal, so two loop nests stay.
// CHECK-LABEL: func.func private @fused_scale_rot(
// CHECK: %0 = linalg.generic {{.*}} ins(%arg0 : tensor<?x64xf32>) outs(%arg2 : tensor<?x64xf32>) {
// CHECK: %1 = linalg.generic {{.*}} ins(%arg1 : tensor<?x64xf32>) outs(%arg3 : tensor<?x64xf32>) {
// CHECK: return %0, %1

// OFF-LABEL: func.func private @fused_scale_rot_copy(
// OFF: %0 = linalg.generic
// OFF: %1 = linalg.generic
// OFF: %2 = linalg.copy
// OFF: return %0, %1, %2

// The three heads of one projection, as rope's q and k and v's copy: one group (marked by hand,
// as relax-fuse-ops marks the split of a projection with its three consumers).
func.func @qkv(%q: tensor<?x64xf32, #relax.shape<["n", 64]>>, %k: tensor<?x64xf32, #relax.shape<["n", 64]>>, %v: tensor<?x64xf32, #relax.shape<["n", 64]>>) -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%q) {callee = @scale, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, relax.fusion_group = 0 : i64} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%k) {callee = @rot, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, relax.fusion_group = 0 : i64} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.call_tir"(%v) {callee = @copy, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, relax.fusion_group = 0 : i64} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %0, %1, %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>
}

func.func @other_rows(%q: tensor<?x64xf32, #relax.shape<["n", 64]>>, %k: tensor<?x64xf32, #relax.shape<["m", 64]>>) -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["m", 64]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%q) {callee = @scale, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, relax.fusion_group = 0 : i64} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%k) {callee = @rot, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, relax.fusion_group = 0 : i64} : (tensor<?x64xf32, #relax.shape<["m", 64]>>) -> tensor<?x64xf32, #relax.shape<["m", 64]>>
  return %0, %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["m", 64]>>
}
