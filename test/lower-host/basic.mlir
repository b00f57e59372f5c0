// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s

// Parameter patterns become checks guarding the rest of the function (every kernel call
// runs under scf.if "every check so far held"); call_tir
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
// The function stays one block: the failure report (status + 4 detail slots) is an alloca
// that the first failing check point writes, off the hot path.
// CHECK: %[[REP:.*]] = memref.alloca() : memref<5xi64>
// CHECK: %[[BAD:.*]] = arith.xori %[[OK]], %true : i1
// CHECK: scf.if %[[BAD]] {
// CHECK:   %c1_i32 = arith.constant 1 : i32
// CHECK:   memref.store {{.*}}, %[[REP]][%c0] : memref<5xi64>
// CHECK: }
// 16*n bytes: no signed overflow (the high half is the sign of the low half)
// CHECK: %[[LO:.*]], %[[HI:.*]] = arith.mulsi_extended %c16, %[[D0]] : index
// CHECK: %[[SIGN:.*]] = arith.shrsi %[[LO]], %c63 : index
// CHECK: %[[NOOVF:.*]] = arith.cmpi eq, %[[HI]], %[[SIGN]] : index
// CHECK: %[[A:.*]] = memref.alloc(%[[D0]]) {alignment = 64 : i64} : memref<?x4xf32>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[NN:.*]] = arith.cmpi ne, %[[P]], %c0 : index
// CHECK: %[[Z:.*]] = arith.cmpi eq, %[[LO]], %c0 : index
// CHECK: %[[AOK:.*]] = arith.ori %[[NN]], %[[Z]] : i1
// CHECK: %[[E:.*]] = bufferization.to_tensor %[[A]] restrict writable
// CHECK: %[[OK2:.*]] = arith.andi %[[NOOVF]], %[[AOK]] : i1
// the report is written where the checks fail for the first time (the earlier ones held)
// CHECK: %[[BAD2:.*]] = arith.xori %[[OK2]], %true : i1
// CHECK: %[[FIRST:.*]] = arith.andi %[[OK]], %[[BAD2]] : i1
// CHECK: scf.if %[[FIRST]] {
// the first failing check of the point: overflow (3) before alloc (2)
// CHECK:   %[[ST:.*]] = arith.select %[[NOOVF]], %c3_i32, %c2_i32 : i32
// CHECK: }
// the kernel runs only when every check so far held
// CHECK: %[[ALL:.*]] = arith.andi %[[OK]], %[[OK2]] : i1
// CHECK: %[[C:.*]] = scf.if %[[ALL]] -> (tensor<?x4xf32>) {
// CHECK:   %[[K:.*]] = func.call @add_kernel(%arg1, %arg2, %[[E]])
// CHECK:   scf.yield %[[K]]
// CHECK: } else {
// CHECK:   scf.yield %[[E]]
// CHECK: }
// match_cast (2*k, 4): k = d // 2, and d % 2 == 0 is checked
// CHECK: arith.floordivsi
// CHECK: %[[EVEN:.*]] = arith.cmpi eq
// CHECK: %[[BAD3:.*]] = arith.xori %[[EVEN]], %true : i1
// CHECK: %[[FIRST3:.*]] = arith.andi %[[ALL]], %[[BAD3]] : i1
// CHECK: scf.if %[[FIRST3]] {
// CHECK:   %c4_i32 = arith.constant 4 : i32
// CHECK: }
// CHECK: %[[ALL3:.*]] = arith.andi %[[ALL]], %[[EVEN]] : i1
// shape_of
// CHECK: tensor.from_elements {{.*}} : tensor<2xi64>
// the return: zeros when every check held, else the report; the result is a fresh
// buffer, returned as it is either way (the caller frees a failed call's results unread)
// CHECK: %[[S:.*]] = memref.load %[[REP]][%c0] : memref<5xi64>
// CHECK: %[[S32:.*]] = arith.trunci %[[S]] : i64 to i32
// CHECK: %[[STATUS:.*]] = arith.select %[[ALL3]], %c0_i32, %[[S32]] : i32
// CHECK: return %[[STATUS]], {{.*}}, %[[C]] : i32, i64, i64, i64, i64, tensor<?x4xf32>
// CHECK-NOT: tensor.empty
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %y) {callee = @add_kernel, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.match_cast"(%0) {shape = #relax.shape<["2*k", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["2*k", 4]>>
  %2 = "relax.shape_of"(%1) : (tensor<?x4xf32, #relax.shape<["2*k", 4]>>) -> tensor<2xi64>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
