// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops{quant-epilogue=true})' | FileCheck %s --check-prefixes=CHECK,EPI
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops)' | FileCheck %s --check-prefixes=CHECK,NOEPI

// The MLP's down projection on quantized weights: silu(gate) * up is the quantized matmul's
// prologue (a reduction takes one), and with quant-epilogue (the GPU targets, whose quantized
// GEMV applies it at the store) the residual add joins the group as a contraction's epilogue;
// by default (the cpu target) it stays a kernel of its own.

// CHECK-LABEL: func.func @down(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @relax_silu{{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %1 = "relax.call_tir"(%0, %arg1) {callee = @relax_multiply{{[^}]*}}relax.fusion_group = 0 : i64,
// CHECK-NEXT: %2 = "relax.call_tir"(%1, %arg2) {callee = @relax_quantized_matmul{{[^}]*}}relax.fusion_group = 0 : i64,
// EPI-NEXT: %3 = "relax.call_tir"(%2, %arg3) {callee = @relax_add{{[^}]*}}relax.fusion_group = 0 : i64,
// NOEPI-NEXT: %3 = "relax.call_tir"(%2, %arg3) {callee = @relax_add
// NOEPI-NOT: relax.fusion_group
// NOEPI-SAME: -> tensor
// CHECK-NEXT: return %3

func.func @down(%g: tensor<?x64xf32, #relax.shape<["n", 64]>>, %u: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<32x68xi8>, %r: tensor<?x32xf32, #relax.shape<["n", 32]>>) -> tensor<?x32xf32, #relax.shape<["n", 32]>> attributes {relax.function} {
  %s = "relax.silu"(%g) : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %x = "relax.multiply"(%s, %u) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %y = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<32x68xi8>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
  %z = "relax.add"(%y, %r) : (tensor<?x32xf32, #relax.shape<["n", 32]>>, tensor<?x32xf32, #relax.shape<["n", 32]>>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
  return %z : tensor<?x32xf32, #relax.shape<["n", 32]>>
}

// Only quantized matmuls: another reduction (a row sum) takes no epilogue with the option either.

// CHECK-LABEL: func.func @row_sum(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0) {callee = @relax_sum
// CHECK-NOT: relax.fusion_group
// CHECK: return

func.func @row_sum(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %b: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  %s = "relax.sum"(%x) {axes = array<i64: 1>} : (tensor<?x64xf32, #relax.shape<["n", 64]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %z = "relax.add"(%s, %b) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %z : tensor<?xf32, #relax.shape<["n"]>>
}
