// relax-legalize: kernels that cannot trap, read out of bounds or compute poison
// (docs/semantics.md): guarded integer division, unsigned and bool arithmetic,
// argmax's first NaN, take from an empty axis, saturating float -> int casts.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --verify-each > /dev/null

// Unsigned: signless arith inside, the tensor element stays ui8 (cast at the body edges).
// CHECK-LABEL: func.func private @relax_divide_ui8_r1_r1(
// CHECK: ^bb0(%[[A:.+]]: ui8, %[[B:.+]]: ui8, %{{.+}}: ui8):
// CHECK: %[[SA:.+]] = builtin.unrealized_conversion_cast %[[A]] : ui8 to i8
// CHECK: %[[SB:.+]] = builtin.unrealized_conversion_cast %[[B]] : ui8 to i8
// CHECK: %[[Z:.+]] = arith.cmpi eq, %[[SB]], %[[C0:.+]] : i8
// CHECK: %[[D:.+]] = arith.select %[[Z]], %{{.+}}, %[[SB]] : i8
// CHECK: %[[Q:.+]] = arith.divui %[[SA]], %[[D]] : i8
// CHECK: %[[R:.+]] = arith.select %[[Z]], %[[C0]], %[[Q]] : i8
// CHECK: %[[U:.+]] = builtin.unrealized_conversion_cast %[[R]] : i8 to ui8
// CHECK: linalg.yield %[[U]] : ui8

// Bool add is logical or, as numpy's.
// CHECK-LABEL: func.func private @relax_add_i1_r1_r1(
// CHECK: arith.ori %{{.+}}, %{{.+}} : i1

// Signed floor division: divisor 1 where it is 0 or where INT_MIN // -1 would trap.
// CHECK-LABEL: func.func private @relax_floor_divide_i32_r1_r1(
// CHECK: %[[BZ:.+]] = arith.cmpi eq, %[[Y:.+]], %{{.+}} : i32
// CHECK: %[[MIN:.+]] = arith.cmpi eq, %[[X:.+]], %c-2147483648_i32 : i32
// CHECK: %[[M1:.+]] = arith.cmpi eq, %[[Y]], %c-1_i32 : i32
// CHECK: %[[OV:.+]] = arith.andi %[[MIN]], %[[M1]] : i1
// CHECK: %[[BAD:.+]] = arith.ori %[[BZ]], %[[OV]] : i1
// CHECK: %[[SAFE:.+]] = arith.select %[[BAD]], %c1_i32, %[[Y]] : i32
// CHECK: arith.divsi %[[X]], %[[SAFE]] : i32
// CHECK: arith.remsi %[[X]], %[[SAFE]] : i32

// argmax: a NaN beats any number.
// CHECK-LABEL: func.func private @relax_argmax_keep0_f32_r1(
// CHECK: arith.cmpf uno

// take: an empty axis is never read.
// CHECK-LABEL: func.func private @relax_take_axis0_f32_r1_r1(
// CHECK: %[[E:.+]] = arith.cmpi eq, %[[DIM:.+]], %c0 : index
// CHECK: scf.if %[[E]] -> (tensor<?xf32>) {
// CHECK: linalg.fill
// CHECK: } else {
// CHECK: tensor.extract

// float -> int: in-range values convert, the rest saturate (NaN -> 0), no poison.
// CHECK-LABEL: func.func private @relax_astype_to_i8_f32_r1(
// CHECK: %[[LO:.+]] = arith.cmpf oge, %[[V:.+]], %[[CLO:.+]] : f32
// CHECK: %[[HI:.+]] = arith.cmpf olt, %[[V]], %[[CHI:.+]] : f32
// CHECK: %[[OK:.+]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK: %[[S:.+]] = arith.select %[[OK]], %[[V]], %{{.+}} : f32
// CHECK: arith.fptosi %[[S]] : f32 to i8
func.func @f(%a: tensor<?xui8, #relax.shape<["n"]>>, %b: tensor<?xui8, #relax.shape<["n"]>>, %p: tensor<?xi1, #relax.shape<["n"]>>, %q: tensor<?xi32, #relax.shape<["n"]>>, %x: tensor<?xf32, #relax.shape<["k"]>>, %i: tensor<?xi64, #relax.shape<["n"]>>) -> (tensor<?xui8, #relax.shape<["n"]>>, tensor<?xi1, #relax.shape<["n"]>>, tensor<?xi32, #relax.shape<["n"]>>, tensor<i64>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?xi8, #relax.shape<["k"]>>) attributes {relax.function} {
  %0 = "relax.divide"(%a, %b) : (tensor<?xui8, #relax.shape<["n"]>>, tensor<?xui8, #relax.shape<["n"]>>) -> tensor<?xui8, #relax.shape<["n"]>>
  %1 = "relax.add"(%p, %p) : (tensor<?xi1, #relax.shape<["n"]>>, tensor<?xi1, #relax.shape<["n"]>>) -> tensor<?xi1, #relax.shape<["n"]>>
  %2 = "relax.floor_divide"(%q, %q) : (tensor<?xi32, #relax.shape<["n"]>>, tensor<?xi32, #relax.shape<["n"]>>) -> tensor<?xi32, #relax.shape<["n"]>>
  %3 = "relax.argmax"(%x) : (tensor<?xf32, #relax.shape<["k"]>>) -> tensor<i64>
  %4 = "relax.take"(%x, %i) {axis = 0 : i64} : (tensor<?xf32, #relax.shape<["k"]>>, tensor<?xi64, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %5 = "relax.astype"(%x) {dtype = i8} : (tensor<?xf32, #relax.shape<["k"]>>) -> tensor<?xi8, #relax.shape<["k"]>>
  return %0, %1, %2, %3, %4, %5 : tensor<?xui8, #relax.shape<["n"]>>, tensor<?xi1, #relax.shape<["n"]>>, tensor<?xi32, #relax.shape<["n"]>>, tensor<i64>, tensor<?xf32, #relax.shape<["n"]>>, tensor<?xi8, #relax.shape<["k"]>>
}
