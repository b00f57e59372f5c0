// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s
// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | grep -c 'scf.if' | FileCheck %s --check-prefix=IFS
// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | grep -c 'tensor.empty' | FileCheck %s --check-prefix=EMPTY

// The host code grows with checks + results, never checks x results: 12 checks at 10
// check points (the parameters with the first assert, then each kernel's allocation
// checks and the next assert) and 7 results. Each point costs one flag and one scf.if
// that writes the failure report; each kernel call one scf.if on the flag (yielding its
// own output); the return one scf.if for the results that are no buffer of this
// function (the two arguments), a placeholder each. (A nest of one scf.if per point,
// each yielding every result, made 10 x 7 = 70 placeholders here; 727 for a 33-output
// torch module, whose one-shot bufferization took 65 s.)

// CHECK-LABEL: func.func @many(
// CHECK: memref.alloca() : memref<4xi64>
// CHECK-NOT: memref.alloca
// CHECK-COUNT-5: func.call @neg
// CHECK: %[[R:.*]]:2 = scf.if %{{.*}} -> (tensor<?x4xf32>, tensor<?x4xf32>) {
// CHECK-NEXT: scf.yield %arg1, %arg2
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[E1:.*]] = tensor.empty(%c0{{.*}}) : tensor<?x4xf32>
// CHECK-NEXT: %[[E2:.*]] = tensor.empty(%c0{{.*}}) : tensor<?x4xf32>
// CHECK-NEXT: scf.yield %[[E1]], %[[E2]]
// CHECK: return {{.*}}, %[[R]]#0, %[[R]]#1 :

// The whole function: 10 report writes + 5 guarded calls + 1 guarded return; 2 placeholders.
// IFS: 16
// EMPTY: 2

func.func @neg(%a: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.negf ins(%a : tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

func.func @many(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) attributes {relax.function} {
  "relax.assert"() {dims = #relax.shape<["n", 1000]>, message = "n <= 1000", predicate = "le"} : () -> ()
  %0 = "relax.call_tir"(%x) {callee = @neg, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  "relax.assert"() {dims = #relax.shape<["n", 999]>, message = "n <= 999", predicate = "le"} : () -> ()
  %1 = "relax.call_tir"(%0) {callee = @neg, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  "relax.assert"() {dims = #relax.shape<["n", 998]>, message = "n <= 998", predicate = "le"} : () -> ()
  %2 = "relax.call_tir"(%1) {callee = @neg, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  "relax.assert"() {dims = #relax.shape<["n", 997]>, message = "n <= 997", predicate = "le"} : () -> ()
  %3 = "relax.call_tir"(%2) {callee = @neg, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  "relax.assert"() {dims = #relax.shape<["n", 996]>, message = "n <= 996", predicate = "le"} : () -> ()
  %4 = "relax.call_tir"(%3) {callee = @neg, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0, %1, %2, %3, %4, %x, %y : tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>
}
