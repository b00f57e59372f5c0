// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize, relax-lower-host)' | FileCheck %s

// A layer stack in a loop: relax.repeat becomes ONE scf.for around ONE call of the lowered
// callee, carrying the status, the detail slots and the carried value; a failed call skips
// the remaining iterations (scf.if on the carried status) and its status is propagated after
// the loop. The iteration reaches the callee as a zero-byte (i, 0) tensor. In the callee,
// relax.view is a memref.view of the stacked weights' bytes at 64*i (checked to lie inside
// them: no copy, identity layout), and relax.state_write with block i of 3 writes into the
// i-th third of the state's rows (capacity per block: the buffer's bytes // (16 * 3); block
// checked against 3; byte offset i * capacity * 16).

module attributes {relax.state = {k = tensor<?x4xf32, #relax.shape<["cap", 4]>>}, relax.upper_bounds = {cap = 64 : i64}} {
  func.func @step(%arg0: tensor<?x0xi8, #relax.shape<["i", 0]>>, %arg1: tensor<2x4xf32>, %arg2: tensor<?x64xi8, #relax.shape<["c", 64]>>) -> tensor<2x4xf32> attributes {relax.function} {
    %0 = "relax.view"(%arg2) {dtype = f32, offset = "64*i", shape = #relax.shape<[4, 4]>} : (tensor<?x64xi8, #relax.shape<["c", 64]>>) -> tensor<4x4xf32>
    %1 = "relax.matmul"(%arg1, %0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    "relax.state_write"(%1) {block = "i", blocks = 3 : i64, offset = 0 : i64, state = "k"} : (tensor<2x4xf32>) -> ()
    return %1 : tensor<2x4xf32>
  }
  func.func @main(%arg0: tensor<2x4xf32>, %arg1: tensor<3x64xi8>) -> tensor<2x4xf32> attributes {relax.function} {
    %0 = "relax.repeat"(%arg0, %arg1) {callee = @step, carried = 1 : i64, count = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xf32>, tensor<3x64xi8>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}


// CHECK-LABEL: func.func @step(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: tensor<?x0xi8>, %arg3: tensor<2x4xf32>, %arg4: tensor<?x64xi8>)
// CHECK: %[[I:.*]] = tensor.dim %arg2, %c0 : tensor<?x0xi8>
// CHECK: %[[C:.*]] = tensor.dim %arg4, %c0 : tensor<?x64xi8>
// CHECK: %[[N:.*]] = arith.muli %c1, %{{.*}} : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[N]], %c64 : index
// CHECK: %[[OFF:.*]], %{{.*}} = arith.mulsi_extended %c64, %[[I]] : index
// CHECK: %[[END:.*]] = arith.addi %[[OFF]], %c64{{.*}} : index
// CHECK: arith.cmpi sle, %[[END]], %[[BYTES]] : index
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %arg4 read_only : tensor<?x64xi8> to memref<?x64xi8>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[BUF]] {{\[\[}}0, 1]] : memref<?x64xi8> into memref<?xi8>
// CHECK: memref.view %[[FLAT]][%[[OFF]]][] : memref<?xi8> to memref<4x4xf32>
// CHECK: %[[SB:.*]] = memref.dim %arg1, %c0 : memref<?xi8>
// CHECK: %[[CAP:.*]] = arith.divui %[[SB]], %c48 : index
// CHECK: arith.cmpi slt, %[[I]], %c3 : index
// CHECK: %[[R:.*]] = arith.muli %[[I]], %[[CAP]] : index
// CHECK: %[[B:.*]] = arith.muli %[[R]], %c16 : index
// CHECK: %[[AT:.*]] = arith.addi %{{.*}}, %[[B]] : index
// CHECK: memref.view %arg1[%[[AT]]][] : memref<?xi8> to memref<2x4xf32>
// CHECK: memref.copy

// CHECK-LABEL: func.func @main(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: tensor<2x4xf32>, %arg3: tensor<3x64xi8>)
// CHECK: %[[L:.*]]:7 = scf.for %[[IV:.*]] = %c0 to %c3 step %c1 iter_args(%[[ST:.*]] = %c0_i32, %{{.*}} = %c0_i64, %{{.*}} = %c0_i64, %{{.*}} = %c0_i64, %{{.*}} = %c0_i64, %{{.*}} = %c0_i64, %[[X:.*]] = %arg2)
// CHECK:   %[[GO:.*]] = arith.cmpi eq, %[[ST]], %c0_i32 : i32
// CHECK:   scf.if %[[GO]]
// CHECK:     %[[IT:.*]] = tensor.empty(%[[IV]]) : tensor<?x0xi8>
// CHECK:     %[[RES:.*]]:7 = func.call @step(%arg0, %arg1, %[[IT]], %[[X]], %{{.*}})
// CHECK:     scf.yield %[[RES]]#0, %[[RES]]#1, %[[RES]]#2, %[[RES]]#3, %[[RES]]#4, %[[RES]]#5, %[[RES]]#6
// CHECK:   } else {
// CHECK:     scf.yield %[[ST]],
// CHECK-NOT: func.call @step
// CHECK: arith.cmpi eq, %[[L]]#0, %c0_i32 : i32
