// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-lift-params)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-lift-params)' | mlir-opt --irdl-file=%irdl --verify-each > /dev/null

// One input, three weights. The transpose of %w and the scaled %s depend only on weights:
// they move into @main_transform_params, which also gets its own copy of the constant the
// scale reads (main keeps its own: it still uses it). %b is read by main itself: kept (weight
// #2). %w and %s are no longer main's parameters; relax.num_input goes (main's parameters
// changed), the module records the lift.

// CHECK: module attributes {relax.lifted_params = {main = {kept = array<i64: 2>, num_input = 1 : i64, num_weights = 3 : i64, transform = "main_transform_params"}}}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:arg0]]: tensor<?x4xf32, #relax.shape<["n", 4]>>, %[[B:arg1]]: tensor<8xf32>, %[[WT:arg2]]: tensor<4x8xf32>, %[[T:arg3]]: tensor<8xf32>)
// CHECK-SAME: attributes {relax.function, relax.upper_bounds = {n = 16 : i64}}
// CHECK-NEXT: %[[C:.+]] = "relax.full"()
// CHECK-NEXT: %[[Y:.+]] = "relax.matmul"(%[[X]], %[[WT]])
// CHECK-NEXT: %[[Z:.+]] = "relax.multiply"(%[[Y]], %[[T]])
// CHECK-NEXT: %[[U:.+]] = "relax.add"(%[[Z]], %[[B]])
// CHECK-NEXT: %[[V:.+]] = "relax.multiply"(%[[U]], %[[C]])
// CHECK-NEXT: return %[[V]]
// CHECK-LABEL: func.func @main_transform_params(
// CHECK-SAME: %[[W:arg0]]: tensor<8x4xf32>, %[[S:arg1]]: tensor<8xf32>, %{{.+}}: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) attributes {relax.function} {
// CHECK-NEXT: %[[C2:.+]] = "relax.full"()
// CHECK-NEXT: %[[P:.+]] = "relax.permute_dims"(%[[W]]) {axes = array<i64: 1, 0>}
// CHECK-NEXT: %[[M:.+]] = "relax.multiply"(%[[S]], %[[C2]])
// CHECK-NEXT: return %[[P]], %[[M]] : tensor<4x8xf32>, tensor<8xf32>
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %w: tensor<8x4xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>> attributes {relax.function, relax.num_input = 1 : i64, relax.upper_bounds = {n = 16 : i64}} {
  %c = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 2.0 : f64} : () -> tensor<f32>
  %wt = "relax.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %t = "relax.multiply"(%s, %c) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = "relax.matmul"(%x, %wt) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4x8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %z = "relax.multiply"(%y, %t) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %u = "relax.add"(%z, %b) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %v = "relax.multiply"(%u, %c) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<f32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  return %v : tensor<?x8xf32, #relax.shape<["n", 8]>>
}

// -----

// A weight with a symbolic dim (m rows): its transpose is lifted, and the weight stays a
// parameter of @f (kept: it binds m there, which the input's shape needs); the transform
// gets the upper bound of m, not of the input's n. A chain (reshape then multiply) moves
// whole; only its end is a result. A lifted value that @f returns is a result too.

// CHECK: module attributes {relax.lifted_params = {f = {kept = array<i64: 0>, num_input = 1 : i64, num_weights = 2 : i64, transform = "f_transform_params"}}}
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:arg0]]: tensor<?x?xf32, #relax.shape<["n", "m"]>>, %[[W:arg1]]: tensor<?x4xf32, #relax.shape<["m", 4]>>, %[[WT:arg2]]: tensor<4x?xf32, #relax.shape<[4, "m"]>>, %[[G:arg3]]: tensor<4xf32>)
// CHECK-NEXT: %[[Y:.+]] = "relax.matmul"(%[[X]], %[[W]])
// CHECK-NEXT: %[[Z:.+]] = "relax.multiply"(%[[Y]], %[[G]])
// CHECK-NEXT: return %[[Z]], %[[WT]]
// CHECK-LABEL: func.func @f_transform_params(
// CHECK-SAME: %[[W2:arg0]]: tensor<?x4xf32, #relax.shape<["m", 4]>>, %[[S:arg1]]: tensor<2x2xf32>)
// CHECK-SAME: attributes {relax.function, relax.upper_bounds = {m = 32 : i64}}
// CHECK-NEXT: %[[P:.+]] = "relax.permute_dims"(%[[W2]])
// CHECK-NEXT: %[[R:.+]] = "relax.reshape"(%[[S]])
// CHECK-NEXT: %[[M:.+]] = "relax.multiply"(%[[R]], %[[R]])
// CHECK-NEXT: return %[[P]], %[[M]]
func.func @f(%x: tensor<?x?xf32, #relax.shape<["n", "m"]>>, %w: tensor<?x4xf32, #relax.shape<["m", 4]>>, %s: tensor<2x2xf32>) -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4x?xf32, #relax.shape<[4, "m"]>>) attributes {relax.function, relax.num_input = 1 : i64, relax.upper_bounds = {m = 32 : i64, n = 8 : i64}} {
  %wt = "relax.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<4x?xf32, #relax.shape<[4, "m"]>>
  %r = "relax.reshape"(%s) {shape = #relax.shape<[4]>} : (tensor<2x2xf32>) -> tensor<4xf32>
  %g = "relax.multiply"(%r, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = "relax.matmul"(%x, %w) : (tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?x4xf32, #relax.shape<["m", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %z = "relax.multiply"(%y, %g) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %z, %wt : tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4x?xf32, #relax.shape<[4, "m"]>>
}

// -----

// What stays: a match_cast of a weight (it can fail at run time) and what depends on the
// symbol k it binds (a data-dependent size, not bound by the weights' shapes); a broadcast
// of a weight to the input's size n (an input-dependent shape); an op reading an input; a
// binding of constants only. Nothing is lifted: @g is unchanged, relax.num_input stays,
// no transform function and no module attribute.

// CHECK-NOT: relax.lifted_params
// CHECK-LABEL: func.func @g(
// CHECK-SAME: relax.num_input = 1 : i64
// CHECK-NEXT: "relax.match_cast"
// CHECK-NEXT: "relax.multiply"
// CHECK-NEXT: "relax.broadcast_to"
// CHECK-NEXT: "relax.full"
// CHECK-NEXT: "relax.add"
// CHECK-NEXT: return
// CHECK-NOT: func.func @g_transform_params
func.func @g(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %w: tensor<4xf32>) -> (tensor<?xf32, #relax.shape<["k"]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) attributes {relax.function, relax.num_input = 1 : i64} {
  %m = "relax.match_cast"(%w) {shape = #relax.shape<["k"]>} : (tensor<4xf32>) -> tensor<?xf32, #relax.shape<["k"]>>
  %mm = "relax.multiply"(%m, %m) : (tensor<?xf32, #relax.shape<["k"]>>, tensor<?xf32, #relax.shape<["k"]>>) -> tensor<?xf32, #relax.shape<["k"]>>
  %bw = "relax.broadcast_to"(%w) {shape = #relax.shape<["n", 4]>} : (tensor<4xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %c = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 1.0 : f64} : () -> tensor<f32>
  %a = "relax.add"(%x, %bw) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %mm, %a : tensor<?xf32, #relax.shape<["k"]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// Without relax.num_input nothing is lifted, even bindings of weights-only arguments.

// CHECK-NOT: relax.lifted_params
// CHECK-LABEL: func.func @plain(
// CHECK-NEXT: "relax.permute_dims"(%arg1)
// CHECK-NOT: func.func @plain_transform_params
func.func @plain(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) -> tensor<4x4xf32> attributes {relax.function} {
  %wt = "relax.permute_dims"(%w) {axes = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %y = "relax.matmul"(%x, %wt) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
