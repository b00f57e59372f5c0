// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-row-reductions{threads=4}, canonicalize, cse)' | FileCheck %s
// A softmax kernel becomes one gpu.launch with a workgroup per row (rows w, w + grid, ...;
// grid = min(rows, 65535)): each reduction runs strided over the row in its 4 threads
// from the combiner's identity, then a tree reduction in workgroup memory (halving steps
// 2, 1 between barriers) leaves the row's value in every thread's registers; the fills
// become initial values (max(x, -inf) folds away) and the row buffers are never stored (they are erased).

// CHECK-LABEL: func.func private @softmax(
// CHECK-NOT: linalg.
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0 : memref<?x?xf32>
// CHECK: %[[W:.*]] = memref.dim %arg0, %c1 : memref<?x?xf32>
// CHECK: %[[FEW:.*]] = arith.cmpi ult, %[[ROWS]], %c1024 : index
// CHECK: scf.if %[[FEW]] {
// CHECK: %[[GRID:.*]] = arith.minui %[[ROWS]], %c65535 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%[[GX:.*]] = %[[GRID]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SH:.*]] : memref<4xf32, #gpu.address_space<workgroup>>) {
// CHECK: scf.for %[[ROW:.*]] = %[[BX]] to %[[ROWS]] step %[[GX]] {
// CHECK: %[[PMAX:.*]] = scf.for %[[J:.*]] = %[[T]] to %[[W]] step %c4{{.*}} iter_args(%[[ACC:.*]] = %[[NINF]]) -> (f32) {
// CHECK: %[[X:.*]] = memref.load %arg0[%[[ROW]], %[[J]]] : memref<?x?xf32>
// CHECK: %[[MX:.*]] = arith.maximumf %[[X]], %[[ACC]] : f32
// CHECK: scf.yield %[[MX]] : f32
// CHECK: %[[RAN:.*]] = arith.cmpi slt, %[[T]], %[[W]] : index
// CHECK: %[[P:.*]] = arith.select %[[RAN]], %[[PMAX]], %[[NINF]] : f32
// CHECK: memref.store %[[P]], %[[SH]][%[[T]]]
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %[[T]], %c2{{.*}} : index
// CHECK: scf.if
// CHECK: arith.maximumf
// CHECK: gpu.barrier
// CHECK: arith.cmpi ult, %[[T]], %c1{{.*}} : index
// CHECK: scf.if
// CHECK: arith.maximumf
// CHECK: gpu.barrier
// CHECK: %[[TOT:.*]] = memref.load %[[SH]][%c0{{.*}}]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %[[T]] to %[[W]] step %c4{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32) {
// CHECK: arith.subf %{{.*}}, %[[TOT]] : f32
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: gpu.barrier
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[ZERO]] : f32
// CHECK: scf.for %[[J2:.*]] = %[[T]] to %[[W]] step %c4{{.*}} {
// CHECK: %[[X2:.*]] = memref.load %arg0[%[[ROW]], %[[J2]]] : memref<?x?xf32>
// CHECK: %[[D:.*]] = arith.subf %[[X2]], %[[TOT]] : f32
// CHECK: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK: %[[Y:.*]] = arith.divf %[[E]], %[[SUM]] : f32
// CHECK: memref.store %[[Y]], %arg1[%[[ROW]], %[[J2]]] : memref<?x?xf32>
// CHECK: gpu.terminator
// From 1024 rows on: a thread per row (rows b*4 + t, stepping by grid*4), each reduction a
// serial loop in registers, no workgroup memory, no barrier; still one launch.
// CHECK: } else {
// CHECK: %[[G:.*]] = arith.divui %{{.*}}, %c4{{.*}} : index
// CHECK: %[[G2:.*]] = arith.minui %[[G]], %c65535 : index
// CHECK: gpu.launch blocks(%[[B2:.*]], %{{.*}}, %{{.*}}) in (%[[GX2:.*]] = %[[G2]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[T2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) {
// CHECK-NOT: gpu.barrier
// CHECK: %[[BT:.*]] = arith.muli %[[B2]], %c4{{.*}} : index
// CHECK: %[[R0:.*]] = arith.addi %[[BT]], %[[T2]] : index
// CHECK: %[[RS:.*]] = arith.muli %[[GX2]], %c4{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[R0]] to %[[ROWS]] step %[[RS]] {
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[W]] step %c1{{.*}} iter_args(%{{.*}} = %[[NINF]]) -> (f32) {
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @softmax(%x: memref<?x?xf32>, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %mx = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%ninf : f32) outs(%mx : memref<?xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x?xf32>) outs(%mx : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %sum = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<?xf32>)
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %mx : memref<?x?xf32>, memref<?xf32>) outs(%sum : memref<?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %out : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %mx, %sum : memref<?x?xf32>, memref<?xf32>, memref<?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%in: f32, %m: f32, %s: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.divf %1, %s : f32
    linalg.yield %2 : f32
  }
  memref.dealloc %mx : memref<?xf32>
  memref.dealloc %sum : memref<?xf32>
  return
}

// A sum over the last axis of a 3-D tensor into a kernel result (keepdims): the rows
// are (d0, d1), delinearized from the row index; thread 0 stores each row's sum.
// CHECK-LABEL: func.func private @sum3(
// CHECK: %[[A:.*]] = memref.dim %arg0, %c0 : memref<?x?x?xf32>
// CHECK: %[[B:.*]] = memref.dim %arg0, %c1 : memref<?x?x?xf32>
// CHECK: %[[R:.*]] = arith.muli %[[A]], %[[B]] : index
// CHECK: gpu.launch
// CHECK: %[[T0:.*]] = arith.cmpi eq, %{{.*}}, %c0{{.*}} : index
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %[[R]] step
// CHECK: %[[I1:.*]] = arith.remui %[[ROW]], %[[B]] : index
// CHECK: %[[I0:.*]] = arith.divui %[[ROW]], %[[B]] : index
// CHECK: memref.load %arg0[%[[I0]], %[[I1]], %{{.*}}] : memref<?x?x?xf32>
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %cst : f32
// CHECK: scf.if %[[T0]] {
// CHECK-NEXT: memref.store %[[S]], %arg1[%[[I0]], %[[I1]], %c0{{.*}}] : memref<?x?x1xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func private @sum3(%x: memref<?x?x?xf32>, %y: memref<?x?x1xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x?x1xf32>)
  linalg.generic {indexing_maps = [#id3, #keep], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<?x?x?xf32>) outs(%y : memref<?x?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// A reduction over a middle axis is a row kernel with its loops reordered (the reduced loop
// last, see row_reductions_axis.mlir): one launch, no linalg op left.
// CHECK-LABEL: func.func private @middle(
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch
// CHECK-NOT: linalg.generic
// CHECK: return
#mid = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func private @middle(%x: memref<?x?x?xf32>, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x?xf32>)
  linalg.generic {indexing_maps = [#id3, #mid], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : memref<?x?x?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// A body that is not out = comb(f(in), out) (here the accumulator is used twice) keeps
// the parallel-loop route too.
// CHECK-LABEL: func.func private @notcomb(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
func.func private @notcomb(%x: memref<?x?xf32>, %y: memref<?xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %out, %out : f32
    %1 = arith.addf %in, %0 : f32
    linalg.yield %1 : f32
  }
  return
}
