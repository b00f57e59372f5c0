// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-cse)' | mlir-opt --irdl-file=%irdl --verify-each > /dev/null

// relax-cse: exp(x) + exp(x) computes exp once, and the ops that become equal once their
// operands are merged (negative(exp(x)) twice) merge in the same run. Ops with other
// operands or other attributes stay apart; match_cast (it can raise and binds symbols)
// and a call_tir of a kernel with an effect never merge; a call_tir of a pure kernel does.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %0 = "relax.exp"(%arg0)
// CHECK-NEXT: %1 = "relax.add"(%0, %0)
// CHECK-NEXT: %2 = "relax.negative"(%0)
// CHECK-NEXT: %3 = "relax.multiply"(%2, %2)
// CHECK-NEXT: %4 = "relax.exp"(%arg1)
// CHECK-NEXT: %5 = "relax.sum"(%arg0) {axes = array<i64: 1>, keepdims = false}
// CHECK-NEXT: %6 = "relax.sum"(%arg0) {axes = array<i64: 1>, keepdims = true}
// CHECK-NEXT: %7 = "relax.match_cast"(%arg0)
// CHECK-NEXT: %8 = "relax.match_cast"(%arg0)
// CHECK-NEXT: %9 = "relax.call_tir"(%arg0) {callee = @k_pure,
// CHECK-NEXT: %10 = "relax.call_tir"(%arg0) {callee = @k_effect,
// CHECK-NEXT: %11 = "relax.call_tir"(%arg0) {callee = @k_effect,
// CHECK-NEXT: return %1, %3, %4, %5, %6, %7, %8, %9, %9, %10, %11 :

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func private @k_pure(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

func.func private @log_tensor(tensor<?x4xf32>)

func.func private @k_effect(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  func.call @log_tensor(%x) : (tensor<?x4xf32>) -> ()
  return %out : tensor<?x4xf32>
}

func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?x1xf32, #relax.shape<["n", 1]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %2 = "relax.add"(%0, %1) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %3 = "relax.negative"(%0) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %4 = "relax.negative"(%1) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %5 = "relax.multiply"(%3, %4) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %6 = "relax.exp"(%y) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %7 = "relax.sum"(%x) {axes = array<i64: 1>, keepdims = false} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %8 = "relax.sum"(%x) {axes = array<i64: 1>, keepdims = true} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x1xf32, #relax.shape<["n", 1]>>
  %9 = "relax.match_cast"(%x) {shape = #relax.shape<["n", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %10 = "relax.match_cast"(%x) {shape = #relax.shape<["n", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %11 = "relax.call_tir"(%x) {callee = @k_pure, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %12 = "relax.call_tir"(%x) {callee = @k_pure, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %13 = "relax.call_tir"(%x) {callee = @k_effect, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %14 = "relax.call_tir"(%x) {callee = @k_effect, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %2, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?x1xf32, #relax.shape<["n", 1]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>
}
