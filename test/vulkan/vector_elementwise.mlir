// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-gpu-vector-elementwise{threads=8}, canonicalize, cse)' | FileCheck %s
// Elementwise / broadcast / injective ops on 32-bit data: under a run-time guard (the
// innermost extent a multiple of 4, every vector operand's buffer 16-byte aligned) a
// launch where each thread takes 4 consecutive elements of the innermost dimension with
// vector<4xf32> loads and stores (alignment 16); an operand that does not read the
// innermost loop (a column, stride 0 along it) is one scalar load broadcast to the 4
// lanes; the else branch keeps the op for the naive route.

// CHECK-LABEL: func.func private @bias_relu_col(
// CHECK-SAME: %[[X:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?xf32>, %[[C:.*]]: memref<?x1xf32>, %[[Y:.*]]: memref<?x?xf32>)
// CHECK-DAG: %[[ZV:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0 : memref<?x?xf32>
// CHECK: %[[W:.*]] = memref.dim %[[X]], %c1 : memref<?x?xf32>
// CHECK: %[[WR:.*]] = arith.remui %[[W]], %c4 : index
// CHECK: %[[WOK:.*]] = arith.cmpi eq, %[[WR]], %c0 : index
// CHECK: %[[PX:.*]] = memref.extract_aligned_pointer_as_index %[[X]] : memref<?x?xf32> -> index
// CHECK: arith.remui %[[PX]], %c16 : index
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]] : memref<?xf32> -> index
// CHECK: arith.remui %[[PB]], %c16 : index
// CHECK-NOT: memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: %[[PY:.*]] = memref.extract_aligned_pointer_as_index %[[Y]] : memref<?x?xf32> -> index
// CHECK: arith.remui %[[PY]], %c16 : index
// CHECK: %[[A1:.*]] = arith.andi %[[WOK]], %{{.*}} : i1
// CHECK: %[[A2:.*]] = arith.andi %[[A1]], %{{.*}} : i1
// CHECK: %[[OK:.*]] = arith.andi %[[A2]], %{{.*}} : i1
// CHECK: scf.if %[[OK]] {
// CHECK: %[[Q:.*]] = arith.divui %[[W]], %c4 : index
// CHECK: %[[ITEMS:.*]] = arith.muli %[[Q]], %[[N]] : index
// CHECK: %[[G:.*]] = arith.minui %{{.*}}, %c65535 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%[[GX:.*]] = %[[G]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) {
// CHECK: scf.for %[[V:.*]] = %{{.*}} to %[[ITEMS]] step %{{.*}} {
// CHECK: %[[QI:.*]] = arith.remui %[[V]], %[[Q]] : index
// CHECK: %[[ROW:.*]] = arith.divui %[[V]], %[[Q]] : index
// CHECK: %[[COL:.*]] = arith.muli %[[QI]], %c4{{.*}} : index
// CHECK: %[[XV:.*]] = vector.load %[[X]][%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: %[[BV:.*]] = vector.load %[[B]][%[[COL]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK: %[[CS:.*]] = memref.load %[[C]][%[[ROW]], %c0{{.*}}] : memref<?x1xf32>
// CHECK: %[[S:.*]] = arith.addf %[[XV]], %[[BV]] : vector<4xf32>
// CHECK: %[[CV:.*]] = vector.broadcast %[[CS]] : f32 to vector<4xf32>
// CHECK: %[[M:.*]] = arith.mulf %[[S]], %[[CV]] : vector<4xf32>
// CHECK: %[[R:.*]] = arith.maximumf %[[M]], %[[ZV]] : vector<4xf32>
// CHECK: vector.store %[[R]], %[[Y]][%[[ROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: linalg.generic
// CHECK: arith.maximumf %{{.*}}, %[[ZERO]] : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#col = affine_map<(d0, d1) -> (d0, 0)>
func.func private @bias_relu_col(%x: memref<?x?xf32>, %b: memref<?xf32>, %c: memref<?x1xf32>, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b, %c : memref<?x?xf32>, memref<?xf32>, memref<?x1xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%in: f32, %bias: f32, %scale: f32, %out: f32):
    %0 = arith.addf %in, %bias : f32
    %1 = arith.mulf %0, %scale : f32
    %2 = arith.maximumf %1, %zero : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// A copy out of a view with a run-time offset and row stride (a slice): the guard also
// checks the view's element offset and row stride (multiples of 4) and its unit inner stride.

// CHECK-LABEL: func.func private @slice_copy(
// CHECK-SAME: %[[X:.*]]: memref<?x?xf32>, %[[O:.*]]: index, %[[Y:.*]]: memref<?x?xf32>)
// CHECK: %[[W:.*]] = memref.dim %[[Y]], %c1 : memref<?x?xf32>
// CHECK: %[[SV:.*]] = memref.subview %[[X]]
// CHECK: arith.remui %[[W]], %c4 : index
// CHECK: memref.extract_aligned_pointer_as_index %[[SV]]
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %[[STR:.*]]:2 = memref.extract_strided_metadata %[[SV]]
// CHECK: arith.remui %[[OFF]], %c4 : index
// CHECK: arith.remui %[[STR]]#0, %c4 : index
// CHECK-NOT: arith.cmpi eq, %[[STR]]#1
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: vector.load %[[SV]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<4xf32>
// CHECK: vector.store %{{.*}}, %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: linalg.copy ins(%[[SV]]
func.func private @slice_copy(%x: memref<?x?xf32>, %o: index, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "injective"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %y, %c0 : memref<?x?xf32>
  %m = memref.dim %y, %c1 : memref<?x?xf32>
  %s = memref.subview %x[0, %o] [%n, %m] [1, 1] : memref<?x?xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
  linalg.copy ins(%s : memref<?x?xf32, strided<[?, 1], offset: ?>>) outs(%y : memref<?x?xf32>)
  return
}

// -----

// A pure elementwise op on dense buffers (identity maps and layouts) is the same op on the
// buffers collapsed to one dimension: only the element count must be a multiple of 4, so
// rows of 5 take the vector kernel when the row count is a multiple of 4.

// CHECK-LABEL: func.func private @dense(
// CHECK-SAME: %[[X:.*]]: memref<?x5xf32>, %[[Y:.*]]: memref<?x5xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0 : memref<?x5xf32>
// CHECK: %[[TOTAL:.*]] = arith.muli %[[N]], %c5 : index
// CHECK: arith.remui %[[TOTAL]], %c4 : index
// CHECK: scf.if
// CHECK: %[[XF:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1]] : memref<?x5xf32> into memref<?xf32>
// CHECK: %[[YF:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0, 1]] : memref<?x5xf32> into memref<?xf32>
// CHECK: %[[ITEMS:.*]] = arith.divui %[[TOTAL]], %c4 : index
// CHECK: gpu.launch
// CHECK: scf.for %[[V:.*]] = %{{.*}} to %[[ITEMS]] step %{{.*}} {
// CHECK: %[[E:.*]] = arith.muli %[[V]], %c4 : index
// CHECK: %[[XV:.*]] = vector.load %[[XF]][%[[E]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK: %[[NEG:.*]] = arith.negf %[[XV]] : vector<4xf32>
// CHECK: vector.store %[[NEG]], %[[YF]][%[[E]]] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func private @dense(%x: memref<?x5xf32>, %y: memref<?x5xf32>) attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x5xf32>) outs(%y : memref<?x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Left alone: a transpose (the innermost loop is not the input's last index), a static
// innermost extent of 5 with a row broadcast (not collapsible), 16-bit integer data (16-bit
// floats take 4 or 8 per thread: test/relax-gpu-schedule/half_rows_elementwise.mlir), a
// column stride of 2, an op using linalg.index, and a kernel of another kind.

// CHECK-LABEL: func.func private @transpose(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK-LABEL: func.func private @odd_width(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK-LABEL: func.func private @half(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK-LABEL: func.func private @every_other(
// CHECK-NOT: gpu.launch
// CHECK: linalg.copy
// CHECK-LABEL: func.func private @iota(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK-LABEL: func.func private @other_kind(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func private @transpose(%x: memref<?x?xf32>, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "injective"} {
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @odd_width(%x: memref<?x5xf32>, %b: memref<5xf32>, %y: memref<?x5xf32>) attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d1)>, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : memref<?x5xf32>, memref<5xf32>) outs(%y : memref<?x5xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %0 = arith.addf %in, %bias : f32
    linalg.yield %0 : f32
  }
  return
}
func.func private @half(%x: memref<?x?xi16>, %y: memref<?x?xi16>) attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x?xi16>) outs(%y : memref<?x?xi16>) {
  ^bb0(%in: i16, %out: i16):
    %0 = arith.addi %in, %in : i16
    linalg.yield %0 : i16
  }
  return
}
func.func private @every_other(%x: memref<?x?xf32, strided<[?, 2]>>, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "injective"} {
  linalg.copy ins(%x : memref<?x?xf32, strided<[?, 2]>>) outs(%y : memref<?x?xf32>)
  return
}
func.func private @iota(%y: memref<?x?xi32>) attributes {relax.kernel, relax.kernel_kind = "injective"} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%y : memref<?x?xi32>) {
  ^bb0(%out: i32):
    %i = linalg.index 1 : index
    %0 = arith.index_cast %i : index to i32
    linalg.yield %0 : i32
  }
  return
}
func.func private @other_kind(%x: memref<?x?xf32>, %y: memref<?x?xf32>) attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x?xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  return
}
