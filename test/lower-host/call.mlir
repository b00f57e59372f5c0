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
// CHECK: %[[NOOVF3:.*]] = arith.cmpi eq, %[[H3]],
// CHECK: %[[OK:.*]] = arith.andi %{{.*}}, %[[NOOVF3]] : i1
// CHECK-NEXT: %[[REP:.*]] = memref.alloca() : memref<4xi64>
// CHECK: %[[R:.*]] = scf.if %[[OK]] -> (tensor<?x?xf32>) {
// CHECK:   %[[K:.*]] = func.call @scale_kernel(%[[A]], %[[O]], %[[N3]])
// CHECK:   scf.yield %[[K]] : tensor<?x?xf32>
// CHECK: } else {
// CHECK:   scf.yield %[[O]] : tensor<?x?xf32>
// CHECK: }
// CHECK: %[[RC:.*]] = tensor.cast %[[R]] : tensor<?x?xf32> to tensor<?x4xf32>
// CHECK: return {{.*}}, %[[RC]] : i32, i64, i64, i64, tensor<?x4xf32>
func.func @g(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @scale_kernel, tir_vars = #relax.shape<["3*n"]>, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// CHECK-LABEL: func.func @f(%arg0: memref<?xi8>, %arg1: tensor<?x4xf32>) -> (i32, i64, i64, i64, tensor<?x4xf32>)
// CHECK: %[[C:.*]]:5 = call @g(%arg0, %arg1) : (memref<?xi8>, tensor<?x4xf32>) -> (i32, i64, i64, i64, tensor<?x4xf32>)
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[C]]#0, %c0_i32 : i32
// CHECK: %[[REP:.*]] = memref.alloca() : memref<4xi64>
// CHECK: %[[BAD:.*]] = arith.xori %[[OK]], %true : i1
// CHECK: scf.if %[[BAD]] {
// CHECK:   %[[S64:.*]] = arith.extui %[[C]]#0 : i32 to i64
// CHECK:   memref.store %[[S64]], %[[REP]][%c0] : memref<4xi64>
// CHECK:   memref.store %[[C]]#1, %[[REP]][%c1{{.*}}] : memref<4xi64>
// CHECK: }
// CHECK: %[[S:.*]] = memref.load %[[REP]][%c0] : memref<4xi64>
// CHECK: %[[S32:.*]] = arith.trunci %[[S]] : i64 to i32
// CHECK: %[[STATUS:.*]] = arith.select %[[OK]], %c0_i32, %[[S32]] : i32
// the callee's result is a buffer the caller owns: returned as it is
// CHECK: return %[[STATUS]], {{.*}}, %[[C]]#4 : i32, i64, i64, i64, tensor<?x4xf32>
func.func @f(%x: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>> attributes {relax.function} {
  %0 = "relax.call"(%x) {callee = @g, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["m", 4]>>
}
