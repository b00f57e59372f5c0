// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library)' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library)' | mlir-opt --split-input-file --irdl-file=%irdl --verify-each > /dev/null
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{attention=false})' | FileCheck %s --check-prefix=OFF

// Fused attention: the chain the torch importer writes for scaled_dot_product_attention
// becomes ONE relax_blas_attention call. Here q, k and v are head splits of (b, s, 32)
// projections and the output is merged back: all four are head views (`h1111`), so no
// copy kernel is left. The bias and the live-row mask are the importer's per-head
// broadcasts of per-sequence masks: the call reads their (b, s, s) / (b, s, 1) rows and
// the per-head chains (broadcast_to, reshape, expand_dims, max) are gone. The scale
// becomes a per-head vector (its length is H).

// CHECK-LABEL: func.func @bert(
// CHECK-NOT: relax.permute_dims
// CHECK-NOT: relax.broadcast_to
// CHECK: %[[W:.*]] = "relax.reshape"(%arg3) {shape = #relax.shape<["b", "s", "s"]>}
// CHECK: %[[L:.*]] = "relax.reshape"(%arg4) {shape = #relax.shape<["b", "s", 1]>}
// CHECK: %[[SC:.*]] = "relax.full"() {dtype = f32, shape = #relax.shape<[4]>, value = 0.35355339059327379 : f64}
// CHECK: %[[O:.*]] = "relax.call_dps_library"(%arg0, %arg1, %arg2, %[[SC]], %[[W]], %{{.*}}, %[[L]]) {callee = "relax_blas_attention_h1111_f32"
// CHECK-SAME: -> tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>
// CHECK-NOT: relax.softmax
// CHECK-NOT: relax.matmul
// CHECK: return %[[O]]
// OFF-LABEL: func.func @bert(
// OFF: callee = "relax_blas_matmul_tb_33_h11_f32"
// OFF: "relax.softmax"
!x = tensor<?x?x32xf32, #relax.shape<["b", "s", 32]>>
!x4 = tensor<?x?x4x8xf32, #relax.shape<["b", "s", 4, 8]>>
!h4 = tensor<?x4x?x8xf32, #relax.shape<["b", 4, "s", 8]>>
!h3 = tensor<?x?x8xf32, #relax.shape<["4*b", "s", 8]>>
!t3 = tensor<?x8x?xf32, #relax.shape<["4*b", 8, "s"]>>
!sc = tensor<?x?x?xf32, #relax.shape<["4*b", "s", "s"]>>
!sc4 = tensor<?x?x?x1xf32, #relax.shape<["4*b", "s", "s", 1]>>
!w = tensor<?x1x?x?xf32, #relax.shape<["b", 1, "s", "s"]>>
!wb = tensor<?x4x?x?xf32, #relax.shape<["b", 4, "s", "s"]>>
!lv = tensor<?x1x?x1xf32, #relax.shape<["b", 1, "s", 1]>>
!lvb = tensor<?x4x?x1xf32, #relax.shape<["b", 4, "s", 1]>>
!lv3 = tensor<?x?x1xf32, #relax.shape<["4*b", "s", 1]>>
func.func @bert(%q: !x, %k: !x, %v: !x, %w: !w, %live: !lv) -> !x attributes {relax.function} {
  %q4 = "relax.reshape"(%q) {shape = #relax.shape<["b", "s", 4, 8]>} : (!x) -> !x4
  %qp = "relax.permute_dims"(%q4) {axes = array<i64: 0, 2, 1, 3>} : (!x4) -> !h4
  %q3 = "relax.reshape"(%qp) {shape = #relax.shape<["4*b", "s", 8]>} : (!h4) -> !h3
  %k4 = "relax.reshape"(%k) {shape = #relax.shape<["b", "s", 4, 8]>} : (!x) -> !x4
  %kp = "relax.permute_dims"(%k4) {axes = array<i64: 0, 2, 1, 3>} : (!x4) -> !h4
  %k3 = "relax.reshape"(%kp) {shape = #relax.shape<["4*b", "s", 8]>} : (!h4) -> !h3
  %v4 = "relax.reshape"(%v) {shape = #relax.shape<["b", "s", 4, 8]>} : (!x) -> !x4
  %vp = "relax.permute_dims"(%v4) {axes = array<i64: 0, 2, 1, 3>} : (!x4) -> !h4
  %v3 = "relax.reshape"(%vp) {shape = #relax.shape<["4*b", "s", 8]>} : (!h4) -> !h3
  %kt = "relax.permute_dims"(%k3) {axes = array<i64: 0, 2, 1>} : (!h3) -> !t3
  %s = "relax.matmul"(%q3, %kt) : (!h3, !t3) -> !sc
  %c = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 0.35355339059327379 : f64} : () -> tensor<f32>
  %s1 = "relax.multiply"(%s, %c) : (!sc, tensor<f32>) -> !sc
  %wb = "relax.broadcast_to"(%w) {shape = #relax.shape<["b", 4, "s", "s"]>} : (!w) -> !wb
  %w3 = "relax.reshape"(%wb) {shape = #relax.shape<["4*b", "s", "s"]>} : (!wb) -> !sc
  %we = "relax.expand_dims"(%w3) {axis = array<i64: 3>} : (!sc) -> !sc4
  %bias = "relax.max"(%we) {axes = array<i64: -1>} : (!sc4) -> !sc
  %s2 = "relax.add"(%s1, %bias) : (!sc, !sc) -> !sc
  %lo = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = -3.4028234663852886E+38 : f64} : () -> tensor<f32>
  %s3 = "relax.maximum"(%s2, %lo) : (!sc, tensor<f32>) -> !sc
  %p = "relax.softmax"(%s3) {axis = -1 : i64} : (!sc) -> !sc
  %o = "relax.matmul"(%p, %v3) : (!sc, !h3) -> !h3
  %lb = "relax.broadcast_to"(%live) {shape = #relax.shape<["b", 4, "s", 1]>} : (!lv) -> !lvb
  %l3 = "relax.reshape"(%lb) {shape = #relax.shape<["4*b", "s", 1]>} : (!lvb) -> !lv3
  %o2 = "relax.multiply"(%o, %l3) : (!h3, !lv3) -> !h3
  %o4 = "relax.reshape"(%o2) {shape = #relax.shape<["b", 4, "s", 8]>} : (!h3) -> !h4
  %op = "relax.permute_dims"(%o4) {axes = array<i64: 0, 2, 1, 3>} : (!h4) -> !x4
  %out = "relax.reshape"(%op) {shape = #relax.shape<["b", "s", 32]>} : (!x4) -> !x
  return %out : !x
}

// -----

// Plain (batch, L, E) operands with no scale and no mask: `h0000`, with neutral operands
// (scale 1 for H = 1, bias 0, clamp -inf, live 1).

// CHECK-LABEL: func.func @plain(
// CHECK-DAG: %[[Z:.*]] = "relax.full"() {dtype = f64, shape = #relax.shape<[1, 1, 1]>, value = 0.000000e+00 : f64}
// CHECK-DAG: %[[ONE:.*]] = "relax.full"() {dtype = f64, shape = #relax.shape<[1, 1, 1]>, value = 1.000000e+00 : f64}
// CHECK-DAG: %[[NI:.*]] = "relax.full"() {dtype = f64, shape = #relax.shape<[]>, value = 0xFFF0000000000000 : f64}
// CHECK-DAG: %[[SC:.*]] = "relax.full"() {dtype = f64, shape = #relax.shape<[1]>, value = 1.000000e+00 : f64}
// CHECK: "relax.call_dps_library"(%arg0, %arg1, %arg2, %[[SC]], %[[Z]], %[[NI]], %[[ONE]]) {callee = "relax_blas_attention_h0000_f64"
// CHECK-SAME: -> tensor<?x?x5xf64, #relax.shape<["n", "l", 5]>>
// OFF-LABEL: func.func @plain(
// OFF: callee = "relax_blas_matmul_tb_33_f64"
!q = tensor<?x?x3xf64, #relax.shape<["n", "l", 3]>>
!k = tensor<?x?x3xf64, #relax.shape<["n", "m", 3]>>
!kt = tensor<?x3x?xf64, #relax.shape<["n", 3, "m"]>>
!v = tensor<?x?x5xf64, #relax.shape<["n", "m", 5]>>
!s = tensor<?x?x?xf64, #relax.shape<["n", "l", "m"]>>
!o = tensor<?x?x5xf64, #relax.shape<["n", "l", 5]>>
func.func @plain(%q: !q, %k: !k, %v: !v) -> !o attributes {relax.function} {
  %kt = "relax.permute_dims"(%k) {axes = array<i64: 0, 2, 1>} : (!k) -> !kt
  %s = "relax.matmul"(%q, %kt) : (!q, !kt) -> !s
  %p = "relax.softmax"(%s) {axis = -1 : i64} : (!s) -> !s
  %o = "relax.matmul"(%p, %v) : (!s, !v) -> !o
  return %o : !o
}

// -----

// Not attention: the probabilities have a second user (returned), so the scores must be
// materialized; the products stay ordinary BLAS calls.

// CHECK-LABEL: func.func @probs_returned(
// CHECK-NOT: relax_blas_attention
// CHECK: "relax.softmax"
// CHECK: callee = "relax_blas_matmul_33_f32"
!q = tensor<?x?x3xf32, #relax.shape<["n", "l", 3]>>
!k = tensor<?x?x3xf32, #relax.shape<["n", "m", 3]>>
!kt = tensor<?x3x?xf32, #relax.shape<["n", 3, "m"]>>
!v = tensor<?x?x5xf32, #relax.shape<["n", "m", 5]>>
!s = tensor<?x?x?xf32, #relax.shape<["n", "l", "m"]>>
!o = tensor<?x?x5xf32, #relax.shape<["n", "l", 5]>>
func.func @probs_returned(%q: !q, %k: !k, %v: !v) -> (!o, !s) attributes {relax.function} {
  %kt = "relax.permute_dims"(%k) {axes = array<i64: 0, 2, 1>} : (!k) -> !kt
  %s = "relax.matmul"(%q, %kt) : (!q, !kt) -> !s
  %p = "relax.softmax"(%s) {axis = -1 : i64} : (!s) -> !s
  %o = "relax.matmul"(%p, %v) : (!s, !v) -> !o
  return %o, %p : !o, !s
}

// -----

// A float mask: the importer zeroes rows whose every score is -inf after the softmax (torch's
// safe softmax) -- where(equal(max(s), -inf), 0, softmax(s)) -- so the scores have two users.
// The whole of it is the `_safe` entry (its -inf and 0 fills are erased: the -inf left is the
// neutral clamp).

// CHECK-LABEL: func.func @float_mask(
// CHECK-NOT: relax.softmax
// CHECK-NOT: "relax.where"
// CHECK: "relax.call_dps_library"(%arg0, %arg1, %arg2, %{{.*}}, %arg3, %{{.*}}, %{{.*}}) {callee = "relax_blas_attention_h0000_safe_f32"
// CHECK: return
!q = tensor<?x?x3xf32, #relax.shape<["n", "l", 3]>>
!k = tensor<?x?x3xf32, #relax.shape<["n", "m", 3]>>
!kt = tensor<?x3x?xf32, #relax.shape<["n", 3, "m"]>>
!v = tensor<?x?x5xf32, #relax.shape<["n", "m", 5]>>
!s = tensor<?x?x?xf32, #relax.shape<["n", "l", "m"]>>
!r = tensor<?x?x1xf32, #relax.shape<["n", "l", 1]>>
!rb = tensor<?x?x1xi1, #relax.shape<["n", "l", 1]>>
!o = tensor<?x?x5xf32, #relax.shape<["n", "l", 5]>>
func.func @float_mask(%q: !q, %k: !k, %v: !v, %bias: !s) -> !o attributes {relax.function} {
  %kt = "relax.permute_dims"(%k) {axes = array<i64: 0, 2, 1>} : (!k) -> !kt
  %s = "relax.matmul"(%q, %kt) : (!q, !kt) -> !s
  %s1 = "relax.add"(%s, %bias) : (!s, !s) -> !s
  %p = "relax.softmax"(%s1) {axis = -1 : i64} : (!s) -> !s
  %mx = "relax.max"(%s1) {axes = array<i64: -1>, keepdims = true} : (!s) -> !r
  %ninf = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 0xFFF0000000000000 : f64} : () -> tensor<f32>
  %dead = "relax.equal"(%mx, %ninf) : (!r, tensor<f32>) -> !rb
  %zero = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 0.000000e+00 : f64} : () -> tensor<f32>
  %p2 = "relax.where"(%dead, %zero, %p) : (!rb, tensor<f32>, !s) -> !s
  %o = "relax.matmul"(%p2, %v) : (!s, !v) -> !o
  return %o : !o
}

// -----

// Grouped-query attention: k and v (b, 2, s, 8) repeated for 6 query heads (expand_dims,
// broadcast_to, reshape, as transformers' repeat_kv or sdpa's enable_gqa export it). The call
// reads their 2 heads per batch row -- (2*b, s, 8), query head h using k / v head h / 3 -- and
// the repeats are gone; the per-head scale has H = 6 entries.

// CHECK-LABEL: func.func @gqa(
// CHECK-NOT: relax.broadcast_to
// CHECK-DAG: %[[K:.*]] = "relax.reshape"(%arg1) {shape = #relax.shape<["2*b", "s", 8]>}
// CHECK-DAG: %[[V:.*]] = "relax.reshape"(%arg2) {shape = #relax.shape<["2*b", "s", 8]>}
// CHECK-DAG: %[[SC:.*]] = "relax.full"() {dtype = f32, shape = #relax.shape<[6]>
// CHECK: "relax.call_dps_library"(%arg0, %[[K]], %[[V]], %[[SC]], {{.*}} {callee = "relax_blas_attention_h0000_f32"
// CHECK-NOT: relax.broadcast_to
!q3 = tensor<?x?x8xf32, #relax.shape<["6*b", "s", 8]>>
!k4 = tensor<?x2x?x8xf32, #relax.shape<["b", 2, "s", 8]>>
!k5 = tensor<?x2x1x?x8xf32, #relax.shape<["b", 2, 1, "s", 8]>>
!kb = tensor<?x2x3x?x8xf32, #relax.shape<["b", 2, 3, "s", 8]>>
!kr = tensor<?x6x?x8xf32, #relax.shape<["b", 6, "s", 8]>>
!kt = tensor<?x8x?xf32, #relax.shape<["6*b", 8, "s"]>>
!s = tensor<?x?x?xf32, #relax.shape<["6*b", "s", "s"]>>
func.func @gqa(%q: !q3, %k: !k4, %v: !k4) -> !q3 attributes {relax.function} {
  %ke = "relax.expand_dims"(%k) {axis = array<i64: 2>} : (!k4) -> !k5
  %kb = "relax.broadcast_to"(%ke) {shape = #relax.shape<["b", 2, 3, "s", 8]>} : (!k5) -> !kb
  %kr = "relax.reshape"(%kb) {shape = #relax.shape<["b", 6, "s", 8]>} : (!kb) -> !kr
  %k3 = "relax.reshape"(%kr) {shape = #relax.shape<["6*b", "s", 8]>} : (!kr) -> !q3
  %ve = "relax.expand_dims"(%v) {axis = array<i64: 2>} : (!k4) -> !k5
  %vb = "relax.broadcast_to"(%ve) {shape = #relax.shape<["b", 2, 3, "s", 8]>} : (!k5) -> !kb
  %vr = "relax.reshape"(%vb) {shape = #relax.shape<["b", 6, "s", 8]>} : (!kb) -> !kr
  %v3 = "relax.reshape"(%vr) {shape = #relax.shape<["6*b", "s", 8]>} : (!kr) -> !q3
  %kt = "relax.permute_dims"(%k3) {axes = array<i64: 0, 2, 1>} : (!q3) -> !kt
  %s = "relax.matmul"(%q, %kt) : (!q3, !kt) -> !s
  %c = "relax.full"() {dtype = f32, shape = #relax.shape<[]>, value = 0.35355339059327379 : f64} : () -> tensor<f32>
  %s1 = "relax.multiply"(%s, %c) : (!s, tensor<f32>) -> !s
  %p = "relax.softmax"(%s1) {axis = -1 : i64} : (!s) -> !s
  %o = "relax.matmul"(%p, %v3) : (!s, !q3) -> !q3
  return %o : !q3
}

// -----

// CausalLM's prefill attention (relax_mlir/llm/model.py, _attend_blas): 4 query heads in
// group-major order (head g*2 + kv) over 2 k / v heads, each (s, heads, 8) reshaped to its
// (1, s, heads*8) projection and split; k and v TILED to the 4 query heads (expand_dims at
// axis 1: query head h reads k / v head h % 2); the causal mask is ONE (s, s) bias for every
// head; q arrives scaled (no multiply). All four operands are head views (`h1111`), k and v
// read as their 2 heads in place (`_tiled`), and the kept k / v (the layer returns them for
// the KV cache) are untouched: no repeat, no (4, s, s) scores, no softmax or matmul left.

// CHECK-LABEL: func.func @causal_lm_prefill(
// CHECK-NOT: relax.broadcast_to
// CHECK-DAG: %[[Q:.*]] = "relax.reshape"(%arg0) {shape = #relax.shape<[1, "s", 32]>}
// CHECK-DAG: %[[K:.*]] = "relax.reshape"(%arg1) {shape = #relax.shape<[1, "s", 16]>}
// CHECK-DAG: %[[V:.*]] = "relax.reshape"(%arg2) {shape = #relax.shape<[1, "s", 16]>}
// CHECK-DAG: %[[M:.*]] = "relax.reshape"(%arg3) {shape = #relax.shape<[1, "s", "s"]>}
// CHECK-DAG: %[[SC:.*]] = "relax.full"() {dtype = f32, shape = #relax.shape<[4]>, value = 1.000000e+00 : f64}
// CHECK: %[[O:.*]] = "relax.call_dps_library"(%[[Q]], %[[K]], %[[V]], %[[SC]], %[[M]], %{{.*}}, %{{.*}}) {callee = "relax_blas_attention_h1111_tiled_f32"
// CHECK-SAME: -> tensor<1x?x32xf32, #relax.shape<[1, "s", 32]>>
// CHECK-NOT: #relax.shape<[4, "s", "s"]>
// CHECK-NOT: relax.softmax
// CHECK-NOT: relax.matmul
// CHECK-NOT: relax.permute_dims
// CHECK: %[[R:.*]] = "relax.reshape"(%[[O]]) {shape = #relax.shape<["s", 32]>}
// CHECK: return %[[R]], %arg1, %arg2
// OFF-LABEL: func.func @causal_lm_prefill(
// OFF: "relax.broadcast_to"
// OFF: "relax.softmax"
!cq = tensor<?x4x8xf32, #relax.shape<["s", 4, 8]>>
!ckv = tensor<?x2x8xf32, #relax.shape<["s", 2, 8]>>
!cm = tensor<?x?xf32, #relax.shape<["s", "s"]>>
!cx = tensor<1x?x32xf32, #relax.shape<[1, "s", 32]>>
!cx4 = tensor<1x?x4x8xf32, #relax.shape<[1, "s", 4, 8]>>
!ch4 = tensor<1x4x?x8xf32, #relax.shape<[1, 4, "s", 8]>>
!ch3 = tensor<4x?x8xf32, #relax.shape<[4, "s", 8]>>
!ckx = tensor<1x?x16xf32, #relax.shape<[1, "s", 16]>>
!ckx4 = tensor<1x?x2x8xf32, #relax.shape<[1, "s", 2, 8]>>
!ckh4 = tensor<1x2x?x8xf32, #relax.shape<[1, 2, "s", 8]>>
!ck5 = tensor<1x1x2x?x8xf32, #relax.shape<[1, 1, 2, "s", 8]>>
!ckb = tensor<1x2x2x?x8xf32, #relax.shape<[1, 2, 2, "s", 8]>>
!ckt = tensor<4x8x?xf32, #relax.shape<[4, 8, "s"]>>
!cs = tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
!co = tensor<?x32xf32, #relax.shape<["s", 32]>>
func.func @causal_lm_prefill(%q: !cq, %k: !ckv, %v: !ckv, %mask: !cm) -> (!co, !ckv, !ckv) attributes {relax.function} {
  %qx = "relax.reshape"(%q) {shape = #relax.shape<[1, "s", 32]>} : (!cq) -> !cx
  %q4 = "relax.reshape"(%qx) {shape = #relax.shape<[1, "s", 4, 8]>} : (!cx) -> !cx4
  %qp = "relax.permute_dims"(%q4) {axes = array<i64: 0, 2, 1, 3>} : (!cx4) -> !ch4
  %q3 = "relax.reshape"(%qp) {shape = #relax.shape<[4, "s", 8]>} : (!ch4) -> !ch3
  %kx = "relax.reshape"(%k) {shape = #relax.shape<[1, "s", 16]>} : (!ckv) -> !ckx
  %k4 = "relax.reshape"(%kx) {shape = #relax.shape<[1, "s", 2, 8]>} : (!ckx) -> !ckx4
  %kp = "relax.permute_dims"(%k4) {axes = array<i64: 0, 2, 1, 3>} : (!ckx4) -> !ckh4
  %ke = "relax.expand_dims"(%kp) {axis = array<i64: 1>} : (!ckh4) -> !ck5
  %kb = "relax.broadcast_to"(%ke) {shape = #relax.shape<[1, 2, 2, "s", 8]>} : (!ck5) -> !ckb
  %k3 = "relax.reshape"(%kb) {shape = #relax.shape<[4, "s", 8]>} : (!ckb) -> !ch3
  %vx = "relax.reshape"(%v) {shape = #relax.shape<[1, "s", 16]>} : (!ckv) -> !ckx
  %v4 = "relax.reshape"(%vx) {shape = #relax.shape<[1, "s", 2, 8]>} : (!ckx) -> !ckx4
  %vp = "relax.permute_dims"(%v4) {axes = array<i64: 0, 2, 1, 3>} : (!ckx4) -> !ckh4
  %ve = "relax.expand_dims"(%vp) {axis = array<i64: 1>} : (!ckh4) -> !ck5
  %vb = "relax.broadcast_to"(%ve) {shape = #relax.shape<[1, 2, 2, "s", 8]>} : (!ck5) -> !ckb
  %v3 = "relax.reshape"(%vb) {shape = #relax.shape<[4, "s", 8]>} : (!ckb) -> !ch3
  %kt = "relax.permute_dims"(%k3) {axes = array<i64: 0, 2, 1>} : (!ch3) -> !ckt
  %s = "relax.matmul"(%q3, %kt) : (!ch3, !ckt) -> !cs
  %s1 = "relax.add"(%s, %mask) : (!cs, !cm) -> !cs
  %p = "relax.softmax"(%s1) {axis = -1 : i64} : (!cs) -> !cs
  %o = "relax.matmul"(%p, %v3) : (!cs, !ch3) -> !ch3
  %o4 = "relax.reshape"(%o) {shape = #relax.shape<[1, 4, "s", 8]>} : (!ch3) -> !ch4
  %op = "relax.permute_dims"(%o4) {axes = array<i64: 0, 2, 1, 3>} : (!ch4) -> !cx4
  %ox = "relax.reshape"(%op) {shape = #relax.shape<[1, "s", 32]>} : (!cx4) -> !cx
  %out = "relax.reshape"(%ox) {shape = #relax.shape<["s", 32]>} : (!cx) -> !co
  return %out, %k, %v : !co, !ckv, !ckv
}

// -----

// k tiled (expand_dims axis 1) but v repeated in place (axis 2): no single head mapping,
// so the chain stays as it is.

// CHECK-LABEL: func.func @mixed_repeat(
// CHECK-NOT: relax_blas_attention
// CHECK: "relax.softmax"
!mq = tensor<4x?x8xf32, #relax.shape<[4, "s", 8]>>
!mk = tensor<1x2x?x8xf32, #relax.shape<[1, 2, "s", 8]>>
!mk5t = tensor<1x1x2x?x8xf32, #relax.shape<[1, 1, 2, "s", 8]>>
!mk5r = tensor<1x2x1x?x8xf32, #relax.shape<[1, 2, 1, "s", 8]>>
!mkb = tensor<1x2x2x?x8xf32, #relax.shape<[1, 2, 2, "s", 8]>>
!mkt = tensor<4x8x?xf32, #relax.shape<[4, 8, "s"]>>
!ms = tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
func.func @mixed_repeat(%q: !mq, %k: !mk, %v: !mk) -> !mq attributes {relax.function} {
  %ke = "relax.expand_dims"(%k) {axis = array<i64: 1>} : (!mk) -> !mk5t
  %kb = "relax.broadcast_to"(%ke) {shape = #relax.shape<[1, 2, 2, "s", 8]>} : (!mk5t) -> !mkb
  %k3 = "relax.reshape"(%kb) {shape = #relax.shape<[4, "s", 8]>} : (!mkb) -> !mq
  %ve = "relax.expand_dims"(%v) {axis = array<i64: 2>} : (!mk) -> !mk5r
  %vb = "relax.broadcast_to"(%ve) {shape = #relax.shape<[1, 2, 2, "s", 8]>} : (!mk5r) -> !mkb
  %v3 = "relax.reshape"(%vb) {shape = #relax.shape<[4, "s", 8]>} : (!mkb) -> !mq
  %kt = "relax.permute_dims"(%k3) {axes = array<i64: 0, 2, 1>} : (!mq) -> !mkt
  %s = "relax.matmul"(%q, %kt) : (!mq, !mkt) -> !ms
  %p = "relax.softmax"(%s) {axis = -1 : i64} : (!ms) -> !ms
  %o = "relax.matmul"(%p, %v3) : (!ms, !mq) -> !mq
  return %o : !mq
}
