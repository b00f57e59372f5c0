// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512 threads=true})' | FileCheck %s

// Kernels on memrefs (bufferized already, or written so) are well-formed input: no schedule
// fits them (the schedules are tensor-level), so they pass through unchanged to plain
// loops, where a kernel returning its memref used to raise "Cannot cast type to
// RankedTensorType" (the matmul kind; found with mutation fuzz seeds 1000211, 1000222).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#red = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func private @mm(%arg0: memref<?x512xf32>, %arg1: memref<512x2048xf32>, %arg2: memref<?x2048xf32>) -> memref<?x2048xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg0, %arg1 : memref<?x512xf32>, memref<512x2048xf32>) outs(%arg2 : memref<?x2048xf32>)
// CHECK-NEXT: return %arg2 : memref<?x2048xf32>
// CHECK-NEXT: }
func.func private @mm(%a: memref<?x512xf32>, %b: memref<512x2048xf32>, %c: memref<?x2048xf32>) -> memref<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%c : memref<?x2048xf32>)
  linalg.matmul ins(%a, %b : memref<?x512xf32>, memref<512x2048xf32>) outs(%c : memref<?x2048xf32>)
  return %c : memref<?x2048xf32>
}

// CHECK-LABEL: func.func private @add(%arg0: memref<?x64xf32>, %arg1: memref<64xf32>, %arg2: memref<?x64xf32>) -> memref<?x64xf32> attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
// CHECK-NEXT: linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : memref<?x64xf32>, memref<64xf32>) outs(%arg2 : memref<?x64xf32>) {
// CHECK-NEXT: ^bb0(%[[P:.*]]: f32, %[[Q:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[P]], %[[Q]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %arg2 : memref<?x64xf32>
// CHECK-NEXT: }
func.func private @add(%x: memref<?x64xf32>, %y: memref<64xf32>, %o: memref<?x64xf32>) -> memref<?x64xf32>
    attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<?x64xf32>, memref<64xf32>) outs(%o : memref<?x64xf32>) {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  return %o : memref<?x64xf32>
}

// CHECK-LABEL: func.func private @rsum(%arg0: memref<?x64xf32>, %arg1: memref<?xf32>) -> memref<?xf32> attributes {relax.kernel, relax.kernel_kind = "reduction"} {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.fill ins(%[[Z]] : f32) outs(%arg1 : memref<?xf32>)
// CHECK-NEXT: linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<?x64xf32>) outs(%arg1 : memref<?xf32>) {
// CHECK-NEXT: ^bb0(%[[P:.*]]: f32, %[[R:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[P]], %[[R]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %arg1 : memref<?xf32>
// CHECK-NEXT: }
func.func private @rsum(%x: memref<?x64xf32>, %o: memref<?xf32>) -> memref<?xf32>
    attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%o : memref<?xf32>)
  linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%o : memref<?xf32>) {
  ^bb0(%p: f32, %r: f32):
    %s = arith.addf %p, %r : f32
    linalg.yield %s : f32
  }
  return %o : memref<?xf32>
}
// CHECK-NOT: func.func
