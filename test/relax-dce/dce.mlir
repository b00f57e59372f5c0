// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-dce)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-dce)' | mlir-opt --irdl-file=%irdl --verify-each > /dev/null

// relax-dce removes unused ops without effects: a dead chain goes in one run, the
// kernel only a removed call_tir called goes too (a kernel nothing called before stays). What can raise (assert, match_cast)
// stays, and so do a call_tir of a kernel with an effect (a call to an unknown function)
// and a relax.call of a graph function holding a match_cast.

// CHECK-NOT: func.func private @k_exp
// CHECK-LABEL: func.func private @k_unused(
// CHECK-LABEL: func.func private @k_effect(
// CHECK-LABEL: func.func @pure(
// CHECK-NEXT: %0 = "relax.exp"(%arg0)
// CHECK-LABEL: func.func @checked(
// CHECK-NEXT: %0 = "relax.match_cast"(%arg0)
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: "relax.assert"() {dims = #relax.shape<["n", 4]>, message = "n == 4", predicate = "eq"} : () -> ()
// CHECK-NEXT: %0 = "relax.match_cast"(%arg1) {shape = #relax.shape<["m", 4]>}
// CHECK-NEXT: %1 = "relax.call_tir"(%arg0) {callee = @k_effect,
// CHECK-NEXT: %2 = "relax.call"(%arg0) {callee = @checked,
// CHECK-NEXT: %3 = "relax.multiply"(%arg0, %arg0)
// CHECK-NEXT: return %3

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func private @k_exp(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

func.func private @k_unused(%x: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
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

func.func @pure(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

func.func @checked(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.match_cast"(%x) {shape = #relax.shape<["k", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["k", 4]>>
  return %x : tensor<?x4xf32, #relax.shape<["n", 4]>>
}

func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.add"(%0, %x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %2 = "relax.negative"(%1) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  "relax.assert"() {dims = #relax.shape<["n", 4]>, message = "n == 4", predicate = "eq"} : () -> ()
  %3 = "relax.match_cast"(%y) {shape = #relax.shape<["m", 4]>} : (tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["m", 4]>>
  %4 = "relax.call_tir"(%x) {callee = @k_exp, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %5 = "relax.call_tir"(%x) {callee = @k_effect, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %6 = "relax.call"(%x) {callee = @pure, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %7 = "relax.call"(%x) {callee = @checked, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %8 = "relax.multiply"(%x, %x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %8 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
