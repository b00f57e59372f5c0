// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-lower-host)' | FileCheck %s

// Sizes computed at run time never trap and never wrap: `n // m` divides by a divisor
// made safe first (m == 0 -> 1; m == -1 -> negate), and reports m != 0 as a check of
// kind "division"; a size not provably >= 0 is a "size" check; the allocation's result
// is an "alloc" check. All of them guard the kernel call (one scf.if).

func.func private @fill(%out: tensor<?xf32>) -> tensor<?xf32>

// CHECK-LABEL: func.func @f(%arg0: memref<?xi8>, %arg1: tensor<?xf32>, %arg2: tensor<?xf32>)
// CHECK-SAME: {bound = ["n", "m"], expr = "n // m", id = 1 : i64, kind = "division", where = "relax.call_tir at
// CHECK-SAME: {bound = ["n", "m"], expected = "(n // m,)", expr = "n // m", id = 2 : i64, kind = "size"
// CHECK-SAME: {bound = ["n", "m"], expr = "4*(n // m)", id = 3 : i64, kind = "overflow"
// CHECK-SAME: {bound = ["n", "m"], detail = "f32", expected = "(n // m,)", expr = "4*(n // m)", id = 4 : i64, kind = "alloc"
// CHECK: %[[N:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[M:.*]] = tensor.dim %arg2, %c0
// CHECK: %[[Z:.*]] = arith.cmpi eq, %[[M]], %c0 : index
// CHECK: %[[NZ:.*]] = arith.cmpi ne, %[[M]], %c0 : index
// CHECK: %[[M1:.*]] = arith.cmpi eq, %[[M]], %c-1 : index
// CHECK: %[[BAD:.*]] = arith.ori %[[Z]], %[[M1]] : i1
// CHECK: %[[SAFE:.*]] = arith.select %[[BAD]], %c1, %[[M]] : index
// CHECK: %[[Q:.*]] = arith.floordivsi %[[N]], %[[SAFE]] : index
// CHECK: %[[NEG:.*]] = arith.subi %c0, %[[N]] : index
// CHECK: %[[D:.*]] = arith.select %[[M1]], %[[NEG]], %[[Q]] : index
// CHECK: %[[NONNEG:.*]] = arith.cmpi sle, %c0, %[[D]] : index
// CHECK: %[[LO:.*]], %[[HI:.*]] = arith.mulsi_extended %c4, %[[D]] : index
// CHECK: %[[NOOVF:.*]] = arith.cmpi eq, %[[HI]],
// CHECK: %[[A:.*]] = memref.alloc(%[[D]]) {alignment = 64 : i64} : memref<?xf32>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[PNZ:.*]] = arith.cmpi ne, %[[P]], %c0 : index
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %[[LO]], %c0 : index
// CHECK: %[[AOK:.*]] = arith.ori %[[PNZ]], %[[EMPTY]] : i1
// CHECK: %[[OK1:.*]] = arith.andi %[[NZ]], %[[NONNEG]] : i1
// CHECK: %[[OK2:.*]] = arith.andi %[[OK1]], %[[NOOVF]] : i1
// CHECK: %[[OK3:.*]] = arith.andi %[[OK2]], %[[AOK]] : i1
// CHECK: scf.if %[[OK3]]
// CHECK-NEXT: func.call @fill(
func.func @f(%x: tensor<?xf32, #relax.shape<["n"]>>, %y: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32, #relax.shape<["n // m"]>> attributes {relax.function} {
  %0 = "relax.call_tir"() {callee = @fill, operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?xf32, #relax.shape<["n // m"]>>
  return %0 : tensor<?xf32, #relax.shape<["n // m"]>>
}

// CHECK-LABEL: func.func @g(
// CHECK-SAME: {bound = ["n", "m"], expr = "-m + n", id = 5 : i64, kind = "overflow"
// CHECK-SAME: {bound = ["n", "m"], expected = "(-m + n,)", expr = "-m + n", id = 6 : i64, kind = "size", where = "result #0 of relax.call_tir at
// n - m: negation never traps, the sum's signed overflow is checked (both operands differ in sign from it)
// CHECK: %[[NM:.*]] = arith.subi %c0, %[[M2:.*]] : index
// CHECK: %[[S:.*]] = arith.addi %[[N2:.*]], %[[NM]] : index
// CHECK: %[[X1:.*]] = arith.xori %[[N2]], %[[S]] : index
// CHECK: %[[X2:.*]] = arith.xori %[[NM]], %[[S]] : index
// CHECK: %[[X:.*]] = arith.andi %[[X1]], %[[X2]] : index
// CHECK: arith.cmpi sge, %[[X]], %c0 : index
// CHECK: arith.cmpi sle, %c0, %[[S]] : index
func.func @g(%x: tensor<?xf32, #relax.shape<["n"]>>, %y: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32, #relax.shape<["n - m"]>> attributes {relax.function} {
  %0 = "relax.call_tir"() {callee = @fill, operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<?xf32, #relax.shape<["n - m"]>>
  return %0 : tensor<?xf32, #relax.shape<["n - m"]>>
}
