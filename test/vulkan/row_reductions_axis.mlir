// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-row-reductions)' | FileCheck %s
// A softmax over a middle axis (decode attention's scores, (kv, groups, seq, heads) reduced
// over seq): the generics' loops are reordered so that the reduced loop is last, and the
// kernel becomes one row-kernel launch pair (a workgroup per row / a thread per row) instead
// of one launch per op; the elementwise ops store at their permuted indices.

// CHECK-LABEL: func.func private @softmax_axis2
// CHECK-NOT: linalg.
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: gpu.barrier
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: linalg.
// CHECK: return
func.func private @softmax_axis2(%x: memref<?x2x?x2xf32>, %out: memref<?x2x?x2xf32>)
    attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %c0 = arith.constant 0 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %d0 = memref.dim %x, %c0 : memref<?x2x?x2xf32>
  %mx = memref.alloc(%d0) : memref<?x2x2xf32>
  %sm = memref.alloc(%d0) : memref<?x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%mx : memref<?x2x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>],
                  iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x : memref<?x2x?x2xf32>) outs(%mx : memref<?x2x2xf32>) {
  ^bb0(%in: f32, %o: f32):
    %m = arith.maximumf %in, %o : f32
    linalg.yield %m : f32
  }
  linalg.fill ins(%zero : f32) outs(%sm : memref<?x2x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>],
                  iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %mx : memref<?x2x?x2xf32>, memref<?x2x2xf32>) outs(%sm : memref<?x2x2xf32>) {
  ^bb0(%in: f32, %m: f32, %o: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    %s = arith.addf %e, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %mx, %sm : memref<?x2x?x2xf32>, memref<?x2x2xf32>, memref<?x2x2xf32>) outs(%out : memref<?x2x?x2xf32>) {
  ^bb0(%in: f32, %m: f32, %s: f32, %o: f32):
    %d = arith.subf %in, %m : f32
    %e = math.exp %d : f32
    %r = arith.divf %e, %s : f32
    linalg.yield %r : f32
  }
  memref.dealloc %mx : memref<?x2x2xf32>
  memref.dealloc %sm : memref<?x2x2xf32>
  return
}
