// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-decode-attention{require-rule=false})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-decode-attention{require-rule=false prefill=false})' | FileCheck %s --check-prefix=OFF
// The prefill attention chain of relax_mlir/llm (LlamaModel._attend_blas: head splits of q
// (s, H, D), k and v (s, KV, D), the KV heads tiled G times, q.k^T + the causal (s, s) mask
// shared by every head, softmax, p.v, head merge to (s, H*D)) becomes one call_tir of the
// decode_attention kernel, its mask read per (query, key) (the "st" kernel: map (d0, d2)).
// A chain whose intermediate has another user keeps its ops; prefill=false leaves them all.

// CHECK: #[[MASK:map[0-9]+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2)>
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: relax.permute_dims
// CHECK-NOT: relax.softmax
// CHECK: %[[C:.*]] = "relax.state_read"() {end = 65536 : i64, state = "relax_gpu_attention_counters"}
// CHECK-NEXT: %[[O:.*]] = "relax.call_tir"(%arg0, %arg1, %arg3, %arg2, %[[C]]) {callee = @[[K:relax_gpu_decode_attention_f32_st_[A-Za-z0-9_]*]]
// CHECK-SAME: -> tensor<?x64xf32, #relax.shape<["s", 64]>>
// CHECK-NEXT: return %[[O]]
// CHECK-LABEL: func.func @scores_used_twice
// CHECK: relax.softmax
// CHECK-NOT: relax.call_tir
// CHECK: func.func private @[[K]](%{{.*}}: tensor<?x4x16xf32>, %{{.*}}: tensor<?x2x16xf32>, %{{.*}}: tensor<?x?xf32>, %{{.*}}: tensor<?x2x16xf32>, %{{.*}}: tensor<65536xi32>, %{{.*}}: tensor<?x64xf32>)
// CHECK-SAME: relax.kernel_op = "decode_attention"
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[MASK]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-COUNT-4: linalg.generic
// CHECK: return

// OFF-LABEL: func.func @prefill
// OFF: relax.softmax
// OFF-NOT: relax.call_tir

#S = #relax.shape<["s"]>
module {
  func.func @prefill(%q: tensor<?x4x16xf32, #relax.shape<["s", 4, 16]>>, %k: tensor<?x2x16xf32, #relax.shape<["s", 2, 16]>>,
                     %v: tensor<?x2x16xf32, #relax.shape<["s", 2, 16]>>, %mask: tensor<?x?xf32, #relax.shape<["s", "s"]>>)
      -> tensor<?x64xf32, #relax.shape<["s", 64]>> attributes {relax.function} {
    %0 = "relax.reshape"(%q) {shape = #relax.shape<[1, "s", 64]>} : (tensor<?x4x16xf32, #relax.shape<["s", 4, 16]>>) -> tensor<1x?x64xf32, #relax.shape<[1, "s", 64]>>
    %1 = "relax.reshape"(%0) {shape = #relax.shape<[1, "s", 4, 16]>} : (tensor<1x?x64xf32, #relax.shape<[1, "s", 64]>>) -> tensor<1x?x4x16xf32, #relax.shape<[1, "s", 4, 16]>>
    %2 = "relax.permute_dims"(%1) {axes = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x16xf32, #relax.shape<[1, "s", 4, 16]>>) -> tensor<1x4x?x16xf32, #relax.shape<[1, 4, "s", 16]>>
    %3 = "relax.reshape"(%2) {shape = #relax.shape<[4, "s", 16]>} : (tensor<1x4x?x16xf32, #relax.shape<[1, 4, "s", 16]>>) -> tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>
    %4 = "relax.reshape"(%k) {shape = #relax.shape<[1, "s", 32]>} : (tensor<?x2x16xf32, #relax.shape<["s", 2, 16]>>) -> tensor<1x?x32xf32, #relax.shape<[1, "s", 32]>>
    %5 = "relax.reshape"(%4) {shape = #relax.shape<[1, "s", 2, 16]>} : (tensor<1x?x32xf32, #relax.shape<[1, "s", 32]>>) -> tensor<1x?x2x16xf32, #relax.shape<[1, "s", 2, 16]>>
    %6 = "relax.permute_dims"(%5) {axes = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32, #relax.shape<[1, "s", 2, 16]>>) -> tensor<1x2x?x16xf32, #relax.shape<[1, 2, "s", 16]>>
    %7 = "relax.expand_dims"(%6) {axis = array<i64: 1>} : (tensor<1x2x?x16xf32, #relax.shape<[1, 2, "s", 16]>>) -> tensor<1x1x2x?x16xf32, #relax.shape<[1, 1, 2, "s", 16]>>
    %8 = "relax.broadcast_to"(%7) {shape = #relax.shape<[1, 2, 2, "s", 16]>} : (tensor<1x1x2x?x16xf32, #relax.shape<[1, 1, 2, "s", 16]>>) -> tensor<1x2x2x?x16xf32, #relax.shape<[1, 2, 2, "s", 16]>>
    %9 = "relax.reshape"(%8) {shape = #relax.shape<[4, "s", 16]>} : (tensor<1x2x2x?x16xf32, #relax.shape<[1, 2, 2, "s", 16]>>) -> tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>
    %10 = "relax.reshape"(%v) {shape = #relax.shape<[1, "s", 32]>} : (tensor<?x2x16xf32, #relax.shape<["s", 2, 16]>>) -> tensor<1x?x32xf32, #relax.shape<[1, "s", 32]>>
    %11 = "relax.reshape"(%10) {shape = #relax.shape<[1, "s", 2, 16]>} : (tensor<1x?x32xf32, #relax.shape<[1, "s", 32]>>) -> tensor<1x?x2x16xf32, #relax.shape<[1, "s", 2, 16]>>
    %12 = "relax.permute_dims"(%11) {axes = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x16xf32, #relax.shape<[1, "s", 2, 16]>>) -> tensor<1x2x?x16xf32, #relax.shape<[1, 2, "s", 16]>>
    %13 = "relax.expand_dims"(%12) {axis = array<i64: 1>} : (tensor<1x2x?x16xf32, #relax.shape<[1, 2, "s", 16]>>) -> tensor<1x1x2x?x16xf32, #relax.shape<[1, 1, 2, "s", 16]>>
    %14 = "relax.broadcast_to"(%13) {shape = #relax.shape<[1, 2, 2, "s", 16]>} : (tensor<1x1x2x?x16xf32, #relax.shape<[1, 1, 2, "s", 16]>>) -> tensor<1x2x2x?x16xf32, #relax.shape<[1, 2, 2, "s", 16]>>
    %15 = "relax.reshape"(%14) {shape = #relax.shape<[4, "s", 16]>} : (tensor<1x2x2x?x16xf32, #relax.shape<[1, 2, 2, "s", 16]>>) -> tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>
    %16 = "relax.permute_dims"(%9) {axes = array<i64: 0, 2, 1>} : (tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>) -> tensor<4x16x?xf32, #relax.shape<[4, 16, "s"]>>
    %17 = "relax.matmul"(%3, %16) : (tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>, tensor<4x16x?xf32, #relax.shape<[4, 16, "s"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
    %18 = "relax.add"(%17, %mask) : (tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>, tensor<?x?xf32, #relax.shape<["s", "s"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
    %19 = "relax.softmax"(%18) {axis = -1 : i64} : (tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
    %20 = "relax.matmul"(%19, %15) : (tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>, tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>) -> tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>
    %21 = "relax.reshape"(%20) {shape = #relax.shape<[1, 4, "s", 16]>} : (tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>) -> tensor<1x4x?x16xf32, #relax.shape<[1, 4, "s", 16]>>
    %22 = "relax.permute_dims"(%21) {axes = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x16xf32, #relax.shape<[1, 4, "s", 16]>>) -> tensor<1x?x4x16xf32, #relax.shape<[1, "s", 4, 16]>>
    %23 = "relax.reshape"(%22) {shape = #relax.shape<[1, "s", 64]>} : (tensor<1x?x4x16xf32, #relax.shape<[1, "s", 4, 16]>>) -> tensor<1x?x64xf32, #relax.shape<[1, "s", 64]>>
    %24 = "relax.reshape"(%23) {shape = #relax.shape<["s", 64]>} : (tensor<1x?x64xf32, #relax.shape<[1, "s", 64]>>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
    return %24 : tensor<?x64xf32, #relax.shape<["s", 64]>>
  }
  func.func @scores_used_twice(%q: tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>, %k: tensor<4x16x?xf32, #relax.shape<[4, 16, "s"]>>,
                               %v: tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>, %mask: tensor<?x?xf32, #relax.shape<["s", "s"]>>)
      -> (tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>, tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>) attributes {relax.function} {
    %0 = "relax.matmul"(%q, %k) : (tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>, tensor<4x16x?xf32, #relax.shape<[4, 16, "s"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
    %1 = "relax.add"(%0, %mask) : (tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>, tensor<?x?xf32, #relax.shape<["s", "s"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
    %2 = "relax.softmax"(%1) {axis = -1 : i64} : (tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>) -> tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
    %3 = "relax.matmul"(%2, %v) : (tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>, tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>) -> tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>
    return %3, %2 : tensor<4x?x16xf32, #relax.shape<[4, "s", 16]>>, tensor<4x?x?xf32, #relax.shape<[4, "s", "s"]>>
  }
}
