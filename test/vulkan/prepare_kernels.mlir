// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-prepare-kernels)' | FileCheck %s
// In a kernel, memref.copy becomes linalg.copy and an op with no parallel loop (a full
// reduction into a rank-0 buffer, a bare store) runs in a one-iteration scf.parallel;
// index buffers (shapes) and non-kernel functions are left alone.

// CHECK-LABEL: func.func private @k(
// CHECK: linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%arg0 : memref<?xf32>) outs(%arg1 : memref<?xf32>)
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c1) step (%c1) {
// CHECK-NEXT: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK: scf.reduce
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step (%c1{{.*}}) {
// CHECK-NEXT: memref.store %cst, %arg2[] : memref<f32>
// CHECK: scf.reduce
// CHECK: %[[C:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.store %arg4, %arg3[%[[C]]] : memref<1xindex>
// CHECK-NEXT: return
#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func private @k(%a: memref<?xf32>, %b: memref<?xf32>, %s: memref<f32>, %shape: memref<1xindex>, %n: index)
    attributes {relax.kernel} {
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction"]} ins(%a : memref<?xf32>) outs(%s : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  }
  %cst = arith.constant 1.0 : f32
  memref.store %cst, %s[] : memref<f32>
  %c0 = arith.constant 0 : index
  memref.store %n, %shape[%c0] : memref<1xindex>
  return
}

// CHECK-LABEL: func.func @host(
// CHECK-NEXT: memref.copy
func.func @host(%a: memref<?xf32>, %b: memref<?xf32>) {
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  return
}

// A full reduction with keepdims writes a 1x1 buffer: all its iterators are reductions,
// so it has no parallel loop either (vulkan-program fuzz seed 53: relax.min over every
// axis with keepdims returned the identity, the loop having run on the host before the
// device's fill).
// CHECK-LABEL: func.func private @keep(
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg1 : memref<1x1xf32>)
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c1) step (%c1) {
// CHECK-NEXT: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: scf.reduce
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#corner = affine_map<(d0, d1) -> (0, 0)>
func.func private @keep(%a: memref<?x3xf32>, %s: memref<1x1xf32>) attributes {relax.kernel} {
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%s : memref<1x1xf32>)
  linalg.generic {indexing_maps = [#id2, #corner], iterator_types = ["reduction", "reduction"]} ins(%a : memref<?x3xf32>) outs(%s : memref<1x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  }
  return
}
