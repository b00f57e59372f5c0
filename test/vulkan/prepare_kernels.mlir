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
