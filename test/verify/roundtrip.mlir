// Relax IR round-trips through relax-opt and through upstream mlir-opt loading the
// checked-in IRDL, with the same printed output. relax-opt fills in the segment sizes
// left out of hand-written input (and resizes those written for another slot count).
// RUN: relax-opt %s > %t.ours
// RUN: mlir-opt --irdl-file=%irdl %t.ours > %t.upstream
// RUN: diff %t.ours %t.upstream
// RUN: relax-opt %s | relax-opt | FileCheck %s

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%arg0: tensor<?x512xf32, #relax.shape<["n", 512]>>
// CHECK-SAME: relax.upper_bounds = {n = 2048 : i64}
// CHECK: "relax.matmul"(%arg0, %arg1)
// CHECK: "relax.add"
// CHECK: "relax.relu"
func.func @mlp(%x: tensor<?x512xf32, #relax.shape<["n", 512]>>, %w: tensor<512x64xf32>, %b: tensor<64xf32>)
    -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function, relax.upper_bounds = {n = 2048 : i64}} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x512xf32, #relax.shape<["n", 512]>>, tensor<512x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %1 = "relax.add"(%0, %b) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %2 = "relax.relu"(%1) : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %2 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}

// CHECK-LABEL: func.func @cross_level
// CHECK: "relax.call_dps_library"(%arg0) {callee = "unique_i64", operandSegmentSizes = array<i32: 1, {{(0, )+}}0>, resultSegmentSizes = array<i32: 1, {{(0, )+}}0>}
// CHECK: "relax.match_cast"
// CHECK: "relax.call_tir"
func.func @cross_level(%x: tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi64, #relax.shape<["u"]>> attributes {relax.function} {
  %0 = "relax.call_dps_library"(%x) {callee = "unique_i64"} : (tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi64, #relax.shape<["n"]>>
  %1 = "relax.match_cast"(%0) {shape = #relax.shape<["u"]>} : (tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xi64, #relax.shape<["u"]>>
  %2 = "relax.call_tir"(%1) {callee = @copy, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xi64, #relax.shape<["u"]>>) -> tensor<?xi64, #relax.shape<["u"]>>
  return %2 : tensor<?xi64, #relax.shape<["u"]>>
}

func.func private @copy(%in: tensor<?xi64>, %out: tensor<?xi64>) -> tensor<?xi64> {
  %0 = linalg.copy ins(%in : tensor<?xi64>) outs(%out : tensor<?xi64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
