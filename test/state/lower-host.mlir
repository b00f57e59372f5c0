// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s

// State buffers (relax.state, sorted by name) are byte memrefs after the workspace in
// EVERY lowered function (the runtime's calling convention). A function that uses only
// some of them (here: k, not w) keeps its body in a private @__relax_body_<f> taking just
// those, and @f forwards them; relax.call calls the body with the states it uses, so a
// layer function called once per layer does not take every layer's cache. relax.state_read is a memref.view
// of the rows (no copy), relax.state_write a memref.copy into a view of its rows; both
// first check the rows against the capacity (the buffer's bytes // 32 bytes a row),
// reporting [begin, end, capacity] in the detail slots (kind "state").

module attributes {relax.state = {k = tensor<?x2x4xf32, #relax.shape<["cap", 2, 4]>>, w = tensor<8xi32>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @append(%new: tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>, %pos: tensor<?x0xi8, #relax.shape<["p", 0]>>) -> tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>> attributes {relax.function} {
    %past = "relax.state_read"() {state = "k", end = "p"} : () -> tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>>
    "relax.state_write"(%new) {state = "k", offset = "p"} : (tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>) -> ()
    return %past : tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>>
  }
  func.func @outer(%new: tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>, %pos: tensor<?x0xi8, #relax.shape<["p", 0]>>) -> tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>> attributes {relax.function} {
    %0 = "relax.call"(%new, %pos) {callee = @append, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x2x4xf32, #relax.shape<["s", 2, 4]>>, tensor<?x0xi8, #relax.shape<["p", 0]>>) -> tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>>
    return %0 : tensor<?x2x4xf32, #relax.shape<["p", 2, 4]>>
  }
}

// CHECK-LABEL: module attributes {relax.detail_slots = 5 : i64
// CHECK-LABEL: func.func private @__relax_body_append(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: tensor<?x2x4xf32>, %arg3: tensor<?x0xi8>) -> (i32, i64, i64, i64, i64, i64, tensor<?x2x4xf32>)
// CHECK: %[[S:.*]] = tensor.dim %arg2, %c0
// CHECK: %[[P:.*]] = tensor.dim %arg3, %c0
// CHECK: %[[B:.*]] = memref.dim %arg1, %c0 : memref<?xi8>
// CHECK: %[[CAP:.*]] = arith.divui %[[B]], %c32 : index
// CHECK: %[[OK:.*]] = arith.cmpi sle, %[[P]], %[[CAP]] : index
// CHECK: %[[REP:.*]] = memref.alloca() : memref<6xi64>
// CHECK: %[[N:.*]] = arith.subi %[[P]], %c0 : index
// CHECK: %[[VIEW:.*]] = memref.view %arg1[%c0][%[[N]]] : memref<?xi8> to memref<?x2x4xf32>
// CHECK: %[[PAST:.*]] = bufferization.to_tensor %[[VIEW]] restrict : memref<?x2x4xf32> to tensor<?x2x4xf32>
// CHECK: %[[END:.*]] = arith.addi %[[P]], %{{.*}} : index
// CHECK: %[[OK2:.*]] = arith.cmpi sle, %[[END]], %{{.*}} : index
// CHECK: %[[LOW:.*]], %[[HIGH:.*]] = arith.mulsi_extended %c32, %[[P]] : index
// CHECK: scf.if
// CHECK:   %c2_i32 = arith.constant 2 : i32
// CHECK: %[[ALL:.*]] = arith.andi %[[OK]], %{{.*}} : i1
// CHECK: %[[ROWS:.*]] = arith.subi %[[END]], %[[P]] : index
// CHECK: %[[DST:.*]] = memref.view %arg1[%[[LOW]]][%[[ROWS]]] : memref<?xi8> to memref<?x2x4xf32>
// the write runs only when every check held
// CHECK: scf.if %[[ALL]] {
// CHECK:   %[[SRC:.*]] = bufferization.to_buffer %arg2 read_only : tensor<?x2x4xf32> to memref<?x2x4xf32>
// CHECK:   memref.copy %[[SRC]], %[[DST]] : memref<?x2x4xf32> to memref<?x2x4xf32>
// CHECK: }
// the rows read are a view (no buffer of this function): a placeholder when a check failed
// CHECK: %[[RES:.*]] = scf.if %[[ALL]] -> (tensor<?x2x4xf32>) {
// CHECK:   scf.yield %[[PAST]]
// CHECK: } else {
// CHECK:   tensor.empty(%c0) : tensor<?x2x4xf32>
// CHECK: return {{.*}}, %[[RES]] :
// CHECK-LABEL: func.func @append(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: tensor<?x2x4xf32>, %arg4: tensor<?x0xi8>) -> (i32, i64, i64, i64, i64, i64, tensor<?x2x4xf32>)
// CHECK-SAME: relax.checks = [{bound = ["s", "p"], detail = "k", expr = "[0, p)", id = 1 : i64, kind = "state", location = {{.*}}, rank = 3 : i64, where = "relax.state_read at {{.*}}lower-host.mlir:14:13"},
// CHECK-SAME: {bound = ["s", "p"], detail = "k", expr = "[p, p + s)", id = 2 : i64, kind = "state", location = {{.*}}, rank = 3 : i64, where = "relax.state_write at {{.*}}lower-host.mlir:15:5"},
// CHECK-SAME: {bound = ["s", "p"], expr = "32*p", id = 3 : i64, kind = "overflow", where = "relax.state_write at
// CHECK-NEXT: %[[R:.*]]:7 = call @__relax_body_append(%arg0, %arg1, %arg3, %arg4) : (memref<?xi8>, memref<?xi8>, tensor<?x2x4xf32>, tensor<?x0xi8>)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4, %[[R]]#5, %[[R]]#6
// CHECK-LABEL: func.func private @__relax_body_outer(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: tensor<?x2x4xf32>, %arg3: tensor<?x0xi8>)
// CHECK: call @__relax_body_append(%arg0, %arg1, %arg2, %arg3) : (memref<?xi8>, memref<?xi8>, tensor<?x2x4xf32>, tensor<?x0xi8>)
// CHECK-LABEL: func.func @outer(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: tensor<?x2x4xf32>, %arg4: tensor<?x0xi8>)
// CHECK-NEXT: call @__relax_body_outer(%arg0, %arg1, %arg3, %arg4)
