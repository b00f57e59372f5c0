// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// Kernels on memrefs are opaque to fusion whatever kind they record (call_tir's
// tensor-level fusion cannot inline them): a matmul and its elementwise consumer on
// memrefs form no group (no relax.fusion_group) and pass relax-fuse-kernels unchanged,
// where it used to raise a KeyError (see ../relax-annotate-kernel-kinds/memref-kernel.mlir).

// CHECK-NOT: relax.fusion_group
#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func private @mm(%arg0: memref<?x64xf32>, %arg1: memref<64x64xf32>, %arg2: memref<?x64xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg2 : memref<?x64xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 : memref<?x64xf32>, memref<64x64xf32>) outs(%arg2 : memref<?x64xf32>)
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func private @mm(%a: memref<?x64xf32>, %w: memref<64x64xf32>, %out: memref<?x64xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%out : memref<?x64xf32>)
  linalg.matmul ins(%a, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%out : memref<?x64xf32>)
  return
}

// CHECK-LABEL: func.func private @relu(%arg0: memref<?x64xf32>, %arg1: memref<?x64xf32>) attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : memref<?x64xf32>) outs(%arg1 : memref<?x64xf32>) {
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[R:.*]] = arith.maximumf %[[IN]], %[[Z]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }
func.func private @relu(%a: memref<?x64xf32>, %out: memref<?x64xf32>) attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : memref<?x64xf32>) outs(%out : memref<?x64xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.maximumf %p, %cst : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @mlp(%arg0: tensor<?x64xf32, #relax.shape<["n", 64]>>, %arg1: tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1) {callee = @mm, operandSegmentSizes = {{.*}}} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
// CHECK-NEXT: %1 = "relax.call_tir"(%0) {callee = @relu, operandSegmentSizes = {{.*}}} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
// CHECK-NEXT: return %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>
// CHECK-NEXT: }
// CHECK-NOT: func.func
func.func @mlp(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %w) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.call_tir"(%0) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %1 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
