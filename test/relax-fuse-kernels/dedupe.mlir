// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// Kernel identity is structural: the three groups below make ONE fused kernel.
// Groups 1 and 2 build the same unfused kernel (same callees); group 3 calls @exp_b, a
// copy of @exp_a under another name with other SSA names, so its unfused kernel differs
// but the fused result is the same IR and is shared too. The name comes from the first.

// CHECK-LABEL: func.func @three(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @fused_exp_a_relu,
// CHECK-NEXT: %1 = "relax.call_tir"(%arg1) {callee = @fused_exp_a_relu,
// CHECK-NEXT: %2 = "relax.call_tir"(%arg0) {callee = @fused_exp_a_relu,
// CHECK-NEXT: return %0, %1, %2
// CHECK-NOT: func.func private @exp_
// CHECK-NOT: func.func private @relu
// CHECK: func.func private @fused_exp_a_relu(%arg0: tensor<?x8xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel, relax.kernel_kind = "elementwise", relax.kernel_op = "exp_a_relu"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0 = linalg.generic {{.*}} ins(%arg0 : tensor<?x8xf32>) outs(%arg1 : tensor<?x8xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: %1 = math.exp %in : f32
// CHECK-NEXT: %2 = arith.maximumf %1, %cst : f32
// CHECK-NEXT: linalg.yield %2 : f32
// CHECK-NEXT: } -> tensor<?x8xf32>
// CHECK-NEXT: return %0 : tensor<?x8xf32>
// CHECK-NEXT: }
// CHECK-NOT: func.func

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func private @exp_a(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%out : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

func.func private @exp_b(%in: tensor<?x8xf32>, %dst: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel} {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : tensor<?x8xf32>) outs(%dst : tensor<?x8xf32>) {
  ^bb0(%u: f32, %v: f32):
    %w = math.exp %u : f32
    linalg.yield %w : f32
  } -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

func.func private @relu(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x8xf32>) outs(%out : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

func.func @three(%x: tensor<?x8xf32, #relax.shape<["n", 8]>>, %y: tensor<?x8xf32, #relax.shape<["n", 8]>>) -> (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<?x8xf32, #relax.shape<["n", 8]>>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @exp_a, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %1 = "relax.call_tir"(%0) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %2 = "relax.call_tir"(%y) {callee = @exp_a, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %3 = "relax.call_tir"(%2) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %4 = "relax.call_tir"(%x) {callee = @exp_b, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %5 = "relax.call_tir"(%4) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  return %1, %3, %5 : tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<?x8xf32, #relax.shape<["n", 8]>>
}
