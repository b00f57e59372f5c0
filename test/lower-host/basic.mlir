// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s

// Parameter patterns become checks guarding the rest of the function; call_tir
// becomes tensor.empty of the symbolic size plus func.call of the kernel.

func.func @add_kernel(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// CHECK-LABEL: module attributes {relax.detail_slots = 4 : i64}
// CHECK: func.func private @add_kernel
// CHECK-LABEL: func.func @main(%arg0: tensor<?x4xf32>, %arg1: tensor<?x4xf32>) -> (i32, i64, i64, i64, i64, tensor<?x4xf32>)
// CHECK-SAME: llvm.emit_c_interface
// CHECK-SAME: relax.checks = [{bound = ["n"], detail = "argument #1 dim 0", expected = "(n, 4)", id = 1 : i64, index = 1 : i64, kind = "param", rank = 2 : i64, where = "argument #1"}
// CHECK-SAME: kind = "match_cast"
// CHECK-SAME: relax.detail_symbols = ["n", "k"]
// CHECK-SAME: relax.graph_type = (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
// CHECK-SAME: relax.lowered
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[D1:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[D0]], %[[D1]] : index
// CHECK: %[[R:.*]]:6 = scf.if %[[OK]] -> (i32, i64, i64, i64, i64, tensor<?x4xf32>) {
// CHECK:   %[[E:.*]] = tensor.empty(%[[D0]]) : tensor<?x4xf32>
// CHECK:   %[[C:.*]] = func.call @add_kernel(%arg0, %arg1, %[[E]])
// match_cast (2*k, 4): k = d // 2, and d % 2 == 0 is checked
// CHECK:   arith.floordivsi
// CHECK:   %[[EVEN:.*]] = arith.cmpi eq
// CHECK:   scf.if %[[EVEN]]
// shape_of
// CHECK:     tensor.from_elements {{.*}} : tensor<2xi64>
// CHECK:     scf.yield %c0_i32, %c0_i64, %c0_i64, %c0_i64, %c0_i64, %[[C]]
// CHECK:   } else {
// CHECK:     %c2_i32 = arith.constant 2 : i32
// CHECK:     tensor.empty(%c0) : tensor<?x4xf32>
// CHECK: } else {
// CHECK:   %c1_i32 = arith.constant 1 : i32
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4, %[[R]]#5
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %y) {callee = @add_kernel, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.match_cast"(%0) {shape = #relax.shape<["2*k", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["2*k", 4]>>
  %2 = "relax.shape_of"(%1) : (tensor<?x4xf32, #relax.shape<["2*k", 4]>>) -> tensor<2xi64>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
