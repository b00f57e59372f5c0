// relax-legalize of relax.take: mode "check" (the default) puts a relax.check_indices of
// the indices against the axis' size before the call (an out-of-range index is a run-time
// IndexError, issue 26.6); mode "clip" does not (the kernel, the same in both modes, clamps).
// Constant indices against a static size are checked here instead.
// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --verify-each --split-input-file > /dev/null

// CHECK-LABEL: func.func @check(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x4xf32, #relax.shape<["k", 4]>>, %[[I:[^:]+]]: tensor<?xi64
// CHECK: "relax.check_indices"(%[[I]]) {message = "relax.take axis 0", size = "k"} : (tensor<?xi64, #relax.shape<["n"]>>) -> ()
// CHECK-NEXT: "relax.call_tir"(%[[X]], %[[I]]) {callee = @[[K:relax_take_axis0_f32_Dx4_r1]]
// CHECK: "relax.check_indices"(%[[I]]) {message = "relax.take axis 1", size = 4 : i64}
// CHECK-NEXT: "relax.call_tir"(%[[X]], %[[I]]) {callee = @relax_take_axis1_f32_Dx4_r1
// CHECK-NOT: relax.check_indices
// CHECK: "relax.call_tir"(%[[X]], %[[I]]) {callee = @[[K]]
// CHECK: return
func.func @check(%x: tensor<?x4xf32, #relax.shape<["k", 4]>>, %i: tensor<?xi64, #relax.shape<["n"]>>) -> (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x?xf32, #relax.shape<["k", "n"]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) attributes {relax.function} {
  %0 = "relax.take"(%x, %i) {axis = 0 : i64} : (tensor<?x4xf32, #relax.shape<["k", 4]>>, tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.take"(%x, %i) {axis = 1 : i64, mode = "check"} : (tensor<?x4xf32, #relax.shape<["k", 4]>>, tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?x?xf32, #relax.shape<["k", "n"]>>
  %2 = "relax.take"(%x, %i) {axis = 0 : i64, mode = "clip"} : (tensor<?x4xf32, #relax.shape<["k", 4]>>, tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0, %1, %2 : tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x?xf32, #relax.shape<["k", "n"]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>
}

// -----

// Constant indices: within a static size, no run-time check; against a symbolic one, checked.
// CHECK-LABEL: func.func @constant(
// CHECK: %[[C:.+]] = arith.constant dense<[3, -4, 0]> : tensor<3xi64>
// CHECK-NOT: relax.check_indices
// CHECK: "relax.call_tir"
// CHECK: "relax.check_indices"(%[[C]]) {message = "relax.take axis 0", size = "k"}
// CHECK-NEXT: "relax.call_tir"
func.func @constant(%x: tensor<4x?xf32, #relax.shape<[4, "k"]>>, %y: tensor<?xf32, #relax.shape<["k"]>>) -> (tensor<3x?xf32, #relax.shape<[3, "k"]>>, tensor<3xf32>) attributes {relax.function} {
  %c = arith.constant dense<[3, -4, 0]> : tensor<3xi64>
  %0 = "relax.take"(%x, %c) {axis = 0 : i64} : (tensor<4x?xf32, #relax.shape<[4, "k"]>>, tensor<3xi64>) -> tensor<3x?xf32, #relax.shape<[3, "k"]>>
  %1 = "relax.take"(%y, %c) {axis = 0 : i64} : (tensor<?xf32, #relax.shape<["k"]>>, tensor<3xi64>) -> tensor<3xf32>
  return %0, %1 : tensor<3x?xf32, #relax.shape<[3, "k"]>>, tensor<3xf32>
}

// -----

func.func @constant_out_of_range(%x: tensor<4x2xf32>) -> tensor<2x2xf32> attributes {relax.function} {
  %c = arith.constant dense<[1, 4]> : tensor<2xi32>
  // expected-error @+1 {{in @constant_out_of_range: relax.take axis 0: index 4 is out of range for a dim of size 4}}
  %0 = "relax.take"(%x, %c) {axis = 0 : i64} : (tensor<4x2xf32>, tensor<2xi32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @bad_mode(%x: tensor<4x2xf32>, %i: tensor<2xi32>) -> tensor<2x2xf32> attributes {relax.function} {
  // expected-error @+1 {{mode must be one of check, clip, got 'wrap'}}
  %0 = "relax.take"(%x, %i) {axis = 0 : i64, mode = "wrap"} : (tensor<4x2xf32>, tensor<2xi32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
