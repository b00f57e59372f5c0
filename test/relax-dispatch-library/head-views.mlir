// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{attention=false})' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{attention=false})' | mlir-opt --split-input-file --irdl-file=%irdl --verify-each > /dev/null

// Attention's head split -- reshape (b, s, 4, 8), permute (b, 4, s, 8), reshape (4*b, s, 8) of
// a projection (b, s, 32) -- feeding the products alone: the calls read the projections in
// place (head views, `_h<a><b>`) and the three copies of q, k and v disappear. (Fused
// attention is off here: attention.mlir tests it; these are its fallback's products.)

// CHECK-LABEL: func.func @attention(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_tb_33_h11_f32"
// CHECK-SAME: (tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>, tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>) -> tensor<?x?x?xf32, #relax.shape<["4*b", "s", "s"]>>
// CHECK-NEXT: %1 = "relax.softmax"(%0)
// CHECK-NEXT: %2 = "relax.call_dps_library"(%1, %arg2) {callee = "relax_blas_matmul_33_h01_f32"
// CHECK-SAME: (tensor<?x?x?xf32, #relax.shape<["4*b", "s", "s"]>>, tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>) -> tensor<?x?x8xf32, #relax.shape<["4*b", "s", 8]>>
// CHECK-NEXT: return %2
!x = tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>
!x4 = tensor<?x?x4x8xf32, #relax.shape<["b", "s", 4, 8]>>
!h4 = tensor<?x4x?x8xf32, #relax.shape<["b", 4, "s", 8]>>
!h3 = tensor<?x?x8xf32, #relax.shape<["4*b", "s", 8]>>
!t3 = tensor<?x8x?xf32, #relax.shape<["4*b", 8, "s"]>>
!sc = tensor<?x?x?xf32, #relax.shape<["4*b", "s", "s"]>>
func.func @attention(%q: !x, %k: !x, %v: !x) -> !h3 attributes {relax.function} {
  %q4 = "relax.reshape"(%q) {shape = #relax.shape<["b", "s", 4, 8]>} : (!x) -> !x4
  %qp = "relax.permute_dims"(%q4) {axes = array<i64: 0, 2, 1, 3>} : (!x4) -> !h4
  %q3 = "relax.reshape"(%qp) {shape = #relax.shape<["4*b", "s", 8]>} : (!h4) -> !h3
  %k4 = "relax.reshape"(%k) {shape = #relax.shape<["b", "s", 4, 8]>} : (!x) -> !x4
  %kp = "relax.permute_dims"(%k4) {axes = array<i64: 0, 2, 1, 3>} : (!x4) -> !h4
  %k3 = "relax.reshape"(%kp) {shape = #relax.shape<["4*b", "s", 8]>} : (!h4) -> !h3
  %kt = "relax.permute_dims"(%k3) {axes = array<i64: 0, 2, 1>} : (!h3) -> !t3
  %s = "relax.matmul"(%q3, %kt) : (!h3, !t3) -> !sc
  %p = "relax.softmax"(%s) {axis = -1 : i64} : (!sc) -> !sc
  %v4 = "relax.reshape"(%v) {shape = #relax.shape<["b", "s", 4, 8]>} : (!x) -> !x4
  %vp = "relax.permute_dims"(%v4) {axes = array<i64: 0, 2, 1, 3>} : (!x4) -> !h4
  %v3 = "relax.reshape"(%vp) {shape = #relax.shape<["4*b", "s", 8]>} : (!h4) -> !h3
  %o = "relax.matmul"(%p, %v3) : (!sc, !h3) -> !h3
  return %o : !h3
}

// -----

// Kept as they are: the split heads have another user (q); the permute is not the head
// split (k: batch and heads swapped); the heads are symbolic (v).

// CHECK-LABEL: func.func @kept(
// CHECK: "relax.permute_dims"(%{{.*}}) {axes = array<i64: 0, 2, 1, 3>}
// CHECK: "relax.permute_dims"(%{{.*}}) {axes = array<i64: 1, 0, 2, 3>}
// CHECK: "relax.call_dps_library"(%{{.*}}, %{{.*}}) {callee = "relax_blas_matmul_tb_33_f32"
// CHECK: "relax.permute_dims"(%{{.*}}) {axes = array<i64: 0, 2, 1, 3>}
// CHECK: "relax.call_dps_library"(%{{.*}}, %{{.*}}) {callee = "relax_blas_matmul_33_f32"
!y = tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>
!y4 = tensor<?x?x4x8xf32, #relax.shape<["b", "s", 4, 8]>>
!g4 = tensor<?x4x?x8xf32, #relax.shape<["b", 4, "s", 8]>>
!g3 = tensor<?x?x8xf32, #relax.shape<["4*b", "s", 8]>>
!u3 = tensor<?x8x?xf32, #relax.shape<["4*b", 8, "s"]>>
!sd = tensor<?x?x?xf32, #relax.shape<["4*b", "s", "s"]>>
!yh = tensor<?x?x?x8xf32, #relax.shape<["b", "s", "h", 8]>>
!gh = tensor<?x?x?x8xf32, #relax.shape<["b", "h", "s", 8]>>
!zh = tensor<?x?x8xf32, #relax.shape<["b*h", "s", 8]>>
!sh = tensor<?x?x?xf32, #relax.shape<["b*h", "s", "s"]>>
func.func @kept(%q: !y, %k: tensor<4x?x?x8xf32, #relax.shape<[4, "b", "s", 8]>>, %v: tensor<?x?x?xf32, #relax.shape<["b", "s", "8*h"]>>, %p: !sh)
    -> (!sd, !g3, !zh) attributes {relax.function} {
  %q4 = "relax.reshape"(%q) {shape = #relax.shape<["b", "s", 4, 8]>} : (!y) -> !y4
  %qp = "relax.permute_dims"(%q4) {axes = array<i64: 0, 2, 1, 3>} : (!y4) -> !g4
  %q3 = "relax.reshape"(%qp) {shape = #relax.shape<["4*b", "s", 8]>} : (!g4) -> !g3
  %kp = "relax.permute_dims"(%k) {axes = array<i64: 1, 0, 2, 3>} : (tensor<4x?x?x8xf32, #relax.shape<[4, "b", "s", 8]>>) -> !g4
  %k3 = "relax.reshape"(%kp) {shape = #relax.shape<["4*b", "s", 8]>} : (!g4) -> !g3
  %kt = "relax.permute_dims"(%k3) {axes = array<i64: 0, 2, 1>} : (!g3) -> !u3
  %s = "relax.matmul"(%q3, %kt) : (!g3, !u3) -> !sd
  %v4 = "relax.reshape"(%v) {shape = #relax.shape<["b", "s", "h", 8]>} : (tensor<?x?x?xf32, #relax.shape<["b", "s", "8*h"]>>) -> !yh
  %vp = "relax.permute_dims"(%v4) {axes = array<i64: 0, 2, 1, 3>} : (!yh) -> !gh
  %v3 = "relax.reshape"(%vp) {shape = #relax.shape<["b*h", "s", 8]>} : (!gh) -> !zh
  %o = "relax.matmul"(%p, %v3) : (!sh, !zh) -> !zh
  return %s, %q3, %o : !sd, !g3, !zh
}
