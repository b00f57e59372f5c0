// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-kernels)' --split-input-file --verify-diagnostics

// A group whose intermediate has an unknown dim cannot be merged: the fused kernel could
// not size the intermediate's tensor.empty.

func.func private @k(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error @+1 {{in @f: cannot fuse group 0: intermediate result of @k has an unknown dim '?'}}
  %0 = "relax.call_tir"(%x) {callee = @k, relax.fusion_group = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["?", 4]>>
  %1 = "relax.call_tir"(%0) {callee = @k, relax.fusion_group = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["?", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %1 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// Only call_tir ops of kernels can be merged.

func.func private @k(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

func.func @g(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error @+1 {{in @g: fusion group 3 holds an op that is not a call_tir of a kernel in this module}}
  %0 = "relax.exp"(%x) {relax.fusion_group = 3 : i64} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.call_tir"(%0) {callee = @k, relax.fusion_group = 3 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %1 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// A hand-made group with a kernel on memrefs (relax-fuse-ops never makes one: such a kernel
// is opaque): call_tir's tensor-level fusion cannot inline it, reported, not raised.

func.func private @k(%x: memref<?x4xf32>, %out: memref<?x4xf32>) attributes {relax.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x4xf32>) outs(%out : memref<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  // expected-error @+1 {{in @f: cannot fuse group 0: kernel @k is not on tensors}}
  %0 = "relax.call_tir"(%x) {callee = @k, relax.fusion_group = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.call_tir"(%0) {callee = @k, relax.fusion_group = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %1 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
