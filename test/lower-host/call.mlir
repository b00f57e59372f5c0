// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s

// relax.call becomes func.call of the lowered callee (with the caller's workspace); its
// status is propagated unchanged (check ids are unique in the module). tir_vars become
// index arguments.

func.func @scale_kernel(%a: tensor<?x?xf32>, %out: tensor<?x?xf32>, %n: index) -> tensor<?x?xf32> attributes {relax.kernel} {
  %r = linalg.copy ins(%a : tensor<?x?xf32>) outs(%out : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @g(%arg0: memref<?xi8>, %arg1: tensor<?x4xf32>) -> (i32, i64, i64, i64, tensor<?x4xf32>)
// CHECK: %[[D:.*]] = tensor.dim %arg1, %c0 : tensor<?x4xf32>
// CHECK: %[[A:.*]] = tensor.cast %arg1 : tensor<?x4xf32> to tensor<?x?xf32>
// CHECK: %[[M:.*]] = memref.alloc(%[[D]]) {alignment = 64 : i64} : memref<?x4xf32>
// CHECK: %[[E:.*]] = bufferization.to_tensor %[[M]] restrict writable : memref<?x4xf32> to tensor<?x4xf32>
// CHECK: %[[O:.*]] = tensor.cast %[[E]] : tensor<?x4xf32> to tensor<?x?xf32>
// 3*n as a tir_var, checked for overflow like every symbolic product
// CHECK: %[[N3:.*]], %[[H3:.*]] = arith.mulsi_extended %c3, %[[D]] : index
// CHECK: %[[OK:.*]] = scf.if
// CHECK:   %[[R:.*]] = func.call @scale_kernel(%[[A]], %[[O]], %[[N3]])
// CHECK:   %[[RC:.*]] = tensor.cast %[[R]] : tensor<?x?xf32> to tensor<?x4xf32>
// CHECK:   scf.yield %c0_i32, %c0_i64, %c0_i64, %c0_i64, %[[RC]] : i32, i64, i64, i64, tensor<?x4xf32>
func.func @g(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @scale_kernel, tir_vars = #relax.shape<["3*n"]>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// CHECK-LABEL: func.func @f(%arg0: memref<?xi8>, %arg1: tensor<?x4xf32>) -> (i32, i64, i64, i64, tensor<?x4xf32>)
// CHECK: %[[C:.*]]:5 = call @g(%arg0, %arg1) : (memref<?xi8>, tensor<?x4xf32>) -> (i32, i64, i64, i64, tensor<?x4xf32>)
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[C]]#0, %c0_i32 : i32
// CHECK: %[[R:.*]]:5 = scf.if %[[OK]] -> (i32, i64, i64, i64, tensor<?x4xf32>) {
// CHECK:   scf.yield %c0_i32, %c0_i64, %c0_i64, %c0_i64, %[[C]]#4
// CHECK: } else {
// CHECK:   %[[S:.*]] = arith.select %[[OK]], %c0_i32, %[[C]]#0 : i32
// CHECK:   %{{.*}} = arith.select %[[OK]], %c0_i64, %[[C]]#1 : i64
// CHECK:   scf.yield %[[S]],
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4
func.func @f(%x: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>> attributes {relax.function} {
  %0 = "relax.call"(%x) {callee = @g, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["m", 4]>>
}
