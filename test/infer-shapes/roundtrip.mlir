// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes)' | mlir-opt --irdl-file=%irdl | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes)' | mlir-opt --irdl-file=%irdl | relax-opt - | FileCheck %s

// What relax-infer-shapes emits (deduced encodings, relax.assert, segment
// sizes of variadic groups) parses and verifies in upstream mlir-opt with the
// checked-in IRDL, and prints the same; relax-opt reads mlir-opt's output back.

func.func private @k_scale(tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK-LABEL: func.func @leaf(
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["k", 4]>> attributes
// CHECK-NOT: relax.assert
// CHECK: "relax.split"{{.*}} -> (tensor<?x4xf32, #relax.shape<["k", 4]>>, tensor<?x4xf32, #relax.shape<["k", 4]>>)
// CHECK: "relax.add"{{.*}} -> tensor<?x4xf32, #relax.shape<["k", 4]>>
func.func @leaf(%x: tensor<?x4xf32, #relax.shape<["2*k", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  %0:2 = "relax.split"(%x) {sections = 2 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["2*k", 4]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  %1 = "relax.add"(%0#0, %0#1) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: -> (tensor<?x?xf32, #relax.shape<["(m + n) // 2", "h"]>>, tensor<?xf32, #relax.shape<["4*m + 4*n - 1"]>>) attributes
// CHECK: "relax.concat"{{.*}} -> tensor<?x4xf32, #relax.shape<["m + n", 4]>>
// CHECK: "relax.assert"() {dims = #relax.shape<["(m + n) % 2", 0]>, message = "relax.call: @leaf argument #0 dim 0: 2*k divides m + n: (m + n) % 2 == 0", predicate = "eq"} : () -> ()
// CHECK: "relax.call"{{.*}} -> tensor<?x4xf32, #relax.shape<["(m + n) // 2", 4]>>
// CHECK: "relax.match_cast"{{.*}} -> tensor<?x4xf32, #relax.shape<["h", 4]>>
// CHECK: "relax.call_tir"{{.*}} -> tensor<?x4xf32, #relax.shape<["(m + n) // 2", 4]>>
// CHECK: "relax.permute_dims"{{.*}} -> tensor<4x?xf32, #relax.shape<[4, "h"]>>
// CHECK: "relax.matmul"{{.*}} -> tensor<?x?xf32, #relax.shape<["(m + n) // 2", "h"]>>
// CHECK: "relax.flatten"{{.*}} -> tensor<?xf32, #relax.shape<["4*m + 4*n"]>>
// CHECK: "relax.assert"() {dims = #relax.shape<[1, "4*m + 4*n"]>, message = "relax.strided_slice: slice begin <= end of dim 0: 1 <= 4*m + 4*n", predicate = "le"} : () -> ()
// CHECK: "relax.strided_slice"{{.*}} -> tensor<?xf32, #relax.shape<["4*m + 4*n - 1"]>>
func.func @main(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf32, #relax.shape<["m", 4]>>, %w: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>) attributes {relax.function} {
  %0 = "relax.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x?xf32>
  %1 = "relax.call"(%0) {callee = @leaf, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %2 = "relax.match_cast"(%w) {shape = #relax.shape<["h", 4]>} : (tensor<?x?xf32>) -> tensor<?x4xf32, #relax.shape<["h", 4]>>
  %3 = "relax.call_tir"(%1, %2) {callee = @k_scale, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32>, tensor<?x4xf32, #relax.shape<["h", 4]>>) -> tensor<?x4xf32, #relax.shape<["(m + n) // 2", 4]>>
  %t = "relax.permute_dims"(%2) : (tensor<?x4xf32, #relax.shape<["h", 4]>>) -> tensor<?x?xf32>
  %4 = "relax.matmul"(%3, %t) : (tensor<?x4xf32, #relax.shape<["(m + n) // 2", 4]>>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %5 = "relax.flatten"(%0) : (tensor<?x?xf32>) -> tensor<?xf32>
  %6 = "relax.strided_slice"(%5) {axes = array<i64: 0>, begin = #relax.shape<[1]>, end = #relax.shape<["4*m + 4*n"]>} : (tensor<?xf32>) -> tensor<?xf32>
  return %4, %6 : tensor<?x?xf32>, tensor<?xf32>
}
