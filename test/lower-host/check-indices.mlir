// relax-lower-host of relax.check_indices (relax.take's indices, mode "check"): one loop
// nest over the indices for their min and max, then an `index` check (status != 0: the
// runtime raises IndexOutOfRangeError with the worst index and the size) that guards the
// kernel like every other check. On vulkan the check is deferred to the runtime; on cuda
// it is dropped (the kernel clamps).
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize, relax-lower-host)' | FileCheck %s

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4xf32>, %[[I:[^:]+]]: tensor<?x?xi32>)
// CHECK-SAME: relax.checks = [{bound = ["a", "c", "e"], detail = "i32", expr = "a", id = 1 : i64, kind = "index", location = "{{.+}}", rank = 2 : i64, where = "relax.take axis 0 at {{.+}}check-indices.mlir:{{[0-9]+}}:8"}
// CHECK: arith.constant 9223372036854775807 : i64
// CHECK-NEXT: arith.constant -9223372036854775808 : i64
// CHECK-NEXT: %[[R:.+]]:2 = scf.for %[[K0:.+]] = %c0 to %{{.+}} step %c1 iter_args(%[[MN:.+]] = %c9223372036854775807_i64, %[[MX:.+]] = %c-9223372036854775808_i64) -> (i64, i64) {
// CHECK-NEXT: %[[IN:.+]]:2 = scf.for %[[K1:.+]] = %c0 to %{{.+}} step %c1 iter_args(%[[MNI:.+]] = %[[MN]], %[[MXI:.+]] = %[[MX]]) -> (i64, i64) {
// CHECK-NEXT: %[[V:.+]] = tensor.extract %[[I]][%[[K0]], %[[K1]]] : tensor<?x?xi32>
// CHECK-NEXT: %[[W:.+]] = arith.extsi %[[V]] : i32 to i64
// CHECK-NEXT: %[[MN2:.+]] = arith.minsi %[[MNI]], %[[W]] : i64
// CHECK-NEXT: %[[MX2:.+]] = arith.maxsi %[[MXI]], %[[W]] : i64
// CHECK-NEXT: scf.yield %[[MN2]], %[[MX2]] : i64, i64
// CHECK: scf.yield %[[IN]]#0, %[[IN]]#1 : i64, i64
// CHECK: %[[D:.+]] = arith.index_cast %{{.+}} : index to i64
// CHECK: %[[NEG:.+]] = arith.subi %c0_i64, %[[D]] : i64
// CHECK: %[[LO:.+]] = arith.cmpi sge, %[[R]]#0, %[[NEG]] : i64
// CHECK: %[[HI:.+]] = arith.cmpi slt, %[[R]]#1, %[[D]] : i64
// CHECK: %[[OK:.+]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK: %[[WORST:.+]] = arith.select %[[LO]], %[[R]]#1, %[[R]]#0 : i64
// CHECK: scf.if
// CHECK: func.call @relax_take_axis0_f32_Dx4_r2
func.func @main(%x: tensor<?x4xf32, #relax.shape<["a", 4]>>, %i: tensor<?x?xi32, #relax.shape<["c", "e"]>>) -> tensor<?x?x4xf32, #relax.shape<["c", "e", 4]>> attributes {relax.function} {
  %0 = "relax.take"(%x, %i) {axis = 0 : i64} : (tensor<?x4xf32, #relax.shape<["a", 4]>>, tensor<?x?xi32, #relax.shape<["c", "e"]>>) -> tensor<?x?x4xf32, #relax.shape<["c", "e", 4]>>
  return %0 : tensor<?x?x4xf32, #relax.shape<["c", "e", 4]>>
}

// -----

// A 0-d unsigned index (a decode step's token): no loop; the lower bound is 0.
// CHECK-LABEL: func.func @token(
// CHECK-SAME: kind = "index"
// CHECK-NOT: scf.for
// CHECK: %[[V:.+]] = tensor.extract %{{.+}}[] : tensor<ui32>
// CHECK-NEXT: %[[S:.+]] = builtin.unrealized_conversion_cast %[[V]] : ui32 to i32
// CHECK-NEXT: %[[W:.+]] = arith.extui %[[S]] : i32 to i64
// CHECK: arith.cmpi sge, %[[W]], %c0_i64 : i64
// CHECK: arith.cmpi slt, %[[W]], %{{.+}} : i64
func.func @token(%x: tensor<100x8xf32>, %t: tensor<ui32>) -> tensor<8xf32> attributes {relax.function} {
  %0 = "relax.take"(%x, %t) {axis = 0 : i64} : (tensor<100x8xf32>, tensor<ui32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// mode "clip": no check.
// CHECK-LABEL: func.func @clip(
// CHECK-NOT: kind = "index"
// CHECK-NOT: scf.for
// CHECK: func.call @relax_take
func.func @clip(%x: tensor<100x8xf32>, %t: tensor<ui32>) -> tensor<8xf32> attributes {relax.function} {
  %0 = "relax.take"(%x, %t) {axis = 0 : i64, mode = "clip"} : (tensor<100x8xf32>, tensor<ui32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A vulkan module: the host cannot read the indices (device memory, launches recorded and
// run after the host code): the check is deferred to the runtime. The bound symbols go into
// a detail array, then @relax_gpu_check_indices(check id, indices address, count, element
// code (width * 2 + unsigned), size, details address, detail slots, index slot), under the
// flag of the checks so far, before the kernel.
// CHECK-LABEL: func.func private @relax_gpu_check_indices(i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @gpu(
// CHECK-SAME: relax.checks = [{bound = ["b"], detail = "ui32", expr = "100", id = [[ID:[0-9]+]] : i64, kind = "index"
// CHECK-NOT: scf.for
// CHECK: %[[REP:.+]] = memref.alloca() : memref<3xi64>
// CHECK: %[[BUF:.+]] = bufferization.to_buffer %{{.+}} read_only : tensor<ui32> to memref<ui32>
// CHECK: %[[A:.+]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[R:.+]] = memref.extract_aligned_pointer_as_index %[[REP]]
// CHECK: call @relax_gpu_check_indices(%c[[ID]]_i64, %{{.+}}, %{{.+}}, %c65_i64, %{{.+}}, %{{.+}}, %c3_i64, %c1_i64)
// CHECK: func.call @relax_take
module attributes {relax.target = {kind = "vulkan"}} {
  func.func @gpu(%x: tensor<100x8xf32>, %t: tensor<ui32>, %y: tensor<?xf32, #relax.shape<["b"]>>) -> tensor<8xf32> attributes {relax.function} {
    %0 = "relax.take"(%x, %t) {axis = 0 : i64} : (tensor<100x8xf32>, tensor<ui32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----

// The cuda target defers the check as vulkan does (the runtime snapshots the indices with a
// device copy inside the call's graph and checks them after the sync; docs/semantics.md).
// CHECK-LABEL: func.func @cuda(
// CHECK-SAME: relax.checks = [{detail = "ui32", expr = "100", id = [[ID:[0-9]+]] : i64, kind = "index"
// CHECK: call @relax_gpu_check_indices(%c[[ID]]_i64, %{{.+}}, %{{.+}}, %c65_i64, %{{.+}}, %{{.+}}, %c2_i64, %c0_i64)
// CHECK: func.call @relax_take
module attributes {relax.target = {kind = "cuda"}} {
  func.func @cuda(%x: tensor<100x8xf32>, %t: tensor<ui32>) -> tensor<8xf32> attributes {relax.function} {
    %0 = "relax.take"(%x, %t) {axis = 0 : i64} : (tensor<100x8xf32>, tensor<ui32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
