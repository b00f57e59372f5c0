// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s

// Parameter patterns become checks guarding the rest of the function; call_tir
// becomes a checked allocation of the symbolic size (its byte size must not overflow,
// malloc must not fail) plus func.call of the kernel. The session workspace is the
// first argument.

func.func @add_kernel(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// CHECK-LABEL: module attributes {relax.detail_slots = 4 : i64}
// CHECK: func.func private @add_kernel
// CHECK-LABEL: func.func @main(%arg0: memref<?xi8>, %arg1: tensor<?x4xf32>, %arg2: tensor<?x4xf32>) -> (i32, i64, i64, i64, i64, tensor<?x4xf32>)
// CHECK-SAME: llvm.emit_c_interface
// CHECK-SAME: relax.checks = [{bound = ["n"], expected = "(n, 4)", id = 1 : i64, index = 1 : i64, kind = "param", rank = 2 : i64, where = "argument #1"},
// CHECK-SAME: {bound = ["n"], expr = "16*n", id = 2 : i64, kind = "overflow", where = "relax.call_tir at
// CHECK-SAME: {bound = ["n"], detail = "f32", expected = "(n, 4)", expr = "16*n", id = 3 : i64, kind = "alloc", where = "result #0 of relax.call_tir at
// CHECK-SAME: detail = "value dim 0: 2*k divides (actual dim 0)", expected = "(2*k, 4)", id = 4 : i64, kind = "match_cast"
// CHECK-SAME: relax.detail_symbols = ["n", "k"]
// CHECK-SAME: relax.graph_type = (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
// CHECK-SAME: relax.lowered
// CHECK-SAME: relax.workspace_bytes = 0 : i64
// CHECK: %[[D0:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[D1:.*]] = tensor.dim %arg2, %c0
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[D0]], %[[D1]] : index
// CHECK: %[[R:.*]]:6 = scf.if %[[OK]] -> (i32, i64, i64, i64, i64, tensor<?x4xf32>) {
// 16*n bytes: no signed overflow (the high half is the sign of the low half)
// CHECK:   %[[LO:.*]], %[[HI:.*]] = arith.mulsi_extended %c16, %[[D0]] : index
// CHECK:   %[[SIGN:.*]] = arith.shrsi %[[LO]], %c63 : index
// CHECK:   %[[NOOVF:.*]] = arith.cmpi eq, %[[HI]], %[[SIGN]] : index
// CHECK:   %[[A:.*]] = memref.alloc(%[[D0]]) {alignment = 64 : i64} : memref<?x4xf32>
// CHECK:   %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:   %[[NN:.*]] = arith.cmpi ne, %[[P]], %c0 : index
// CHECK:   %[[Z:.*]] = arith.cmpi eq, %[[LO]], %c0 : index
// CHECK:   %[[AOK:.*]] = arith.ori %[[NN]], %[[Z]] : i1
// CHECK:   %[[E:.*]] = bufferization.to_tensor %[[A]] restrict writable
// CHECK:   %[[OK2:.*]] = arith.andi %[[NOOVF]], %[[AOK]] : i1
// CHECK:   scf.if %[[OK2]]
// CHECK:   %[[C:.*]] = func.call @add_kernel(%arg1, %arg2, %[[E]])
// match_cast (2*k, 4): k = d // 2, and d % 2 == 0 is checked
// CHECK:   arith.floordivsi
// CHECK:   %[[EVEN:.*]] = arith.cmpi eq
// CHECK:   scf.if %[[EVEN]]
// shape_of
// CHECK:     tensor.from_elements {{.*}} : tensor<2xi64>
// CHECK:     scf.yield %c0_i32, %c0_i64, %c0_i64, %c0_i64, %c0_i64, %[[C]]
// CHECK:   } else {
// CHECK:     %c4_i32 = arith.constant 4 : i32
// CHECK:     tensor.empty(%c0) : tensor<?x4xf32>
// CHECK:   } else {
// CHECK:     %c3_i32 = arith.constant 3 : i32
// CHECK:     %c2_i32 = arith.constant 2 : i32
// CHECK: } else {
// CHECK:   %c1_i32 = arith.constant 1 : i32
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4, %[[R]]#5
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %y) {callee = @add_kernel, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.match_cast"(%0) {shape = #relax.shape<["2*k", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["2*k", 4]>>
  %2 = "relax.shape_of"(%1) : (tensor<?x4xf32, #relax.shape<["2*k", 4]>>) -> tensor<2xi64>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
