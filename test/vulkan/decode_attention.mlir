// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-decode-attention{require-rule=false})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-decode-attention{kind=cuda})' | FileCheck %s --check-prefix=CUDA
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-decode-attention)' | FileCheck %s --check-prefix=NOSG
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-decode-attention{require-rule=false counters=false})' | FileCheck %s --check-prefix=NOCNT
// The cached attention chain of relax_mlir/llm (q.k sum, + mask, softmax over the KV length,
// p.v sum) becomes one call_tir of a decode_attention kernel; q's head split and the head
// merge's reshapes are absorbed (the kernel reads q (s, G*KV, D), writes (s, G*KV*D)).
// A head dim that is not static keeps the chain. Without require-rule=false the pass fuses
// only where the GPU rule will take the kernel: cuda's default warp of 32 (D = 64), and not
// with vulkan's documented defaults (no known subgroup size). The kernel also reads every row
// of the session state relax_gpu_attention_counters (declared on the module; the split's
// per-row arrival counters, used only by the GPU rule's launch); counters=false leaves it out.

// CHECK: module attributes {relax.state = {relax_gpu_attention_counters = tensor<65536xi32>}}
// CHECK-LABEL: func.func @attend
// CHECK-NOT: relax.softmax
// CHECK: %[[C:.*]] = "relax.state_read"() {end = 65536 : i64, state = "relax_gpu_attention_counters"} : () -> tensor<65536xi32>
// CHECK-NEXT: %[[O:.*]] = "relax.call_tir"(%arg0, %arg1, %arg3, %arg2, %[[C]]) {callee = @[[K:relax_gpu_decode_attention[A-Za-z0-9_]*]]
// CHECK-SAME: -> tensor<?x512xf32, #relax.shape<["s", 512]>>
// CHECK-NEXT: return %[[O]]
// CHECK-LABEL: func.func @dynamic_head_dim
// CHECK: relax.softmax
// CHECK: func.func private @[[K]](%{{.*}}: tensor<?x8x64xf32>, %{{.*}}: tensor<?x4x64xf32>, %{{.*}}: tensor<?x1x?x1xf32>, %{{.*}}: tensor<?x4x64xf32>, %{{.*}}: tensor<65536xi32>, %{{.*}}: tensor<?x512xf32>)
// CHECK-SAME: relax.kernel_op = "decode_attention"
// CHECK-COUNT-6: linalg.generic
// CHECK: return

// CUDA-LABEL: func.func @attend
// CUDA: relax.call_tir
// CUDA-LABEL: func.func @dynamic_head_dim
// CUDA: relax.softmax

// NOCNT-NOT: relax.state
// NOCNT-LABEL: func.func @attend
// NOCNT: %[[O:.*]] = "relax.call_tir"(%arg0, %arg1, %arg3, %arg2) {callee = @[[K:relax_gpu_decode_attention[A-Za-z0-9_]*]]
// NOCNT: func.func private @[[K]](%{{.*}}: tensor<?x8x64xf32>, %{{.*}}: tensor<?x4x64xf32>, %{{.*}}: tensor<?x1x?x1xf32>, %{{.*}}: tensor<?x4x64xf32>, %{{.*}}: tensor<?x512xf32>)

// NOSG-NOT: relax.state
// NOSG-LABEL: func.func @attend
// NOSG: relax.softmax
// NOSG-NOT: relax.call_tir

func.func @attend(%arg0: tensor<?x8x64xf32, #relax.shape<["s", 8, 64]>>, %arg1: tensor<?x4x64xf32, #relax.shape<["t", 4, 64]>>, %arg2: tensor<?x4x64xf32, #relax.shape<["t", 4, 64]>>, %arg3: tensor<?x1x?x1xf32, #relax.shape<["s", 1, "t", 1]>>) -> tensor<?x512xf32, #relax.shape<["s", 512]>> attributes {relax.function} {
  %0 = "relax.reshape"(%arg0) {shape = #relax.shape<["s", 2, 1, 4, 64]>} : (tensor<?x8x64xf32, #relax.shape<["s", 8, 64]>>) -> tensor<?x2x1x4x64xf32, #relax.shape<["s", 2, 1, 4, 64]>>
  %1 = "relax.multiply"(%0, %arg1) : (tensor<?x2x1x4x64xf32, #relax.shape<["s", 2, 1, 4, 64]>>, tensor<?x4x64xf32, #relax.shape<["t", 4, 64]>>) -> tensor<?x2x?x4x64xf32, #relax.shape<["s", 2, "t", 4, 64]>>
  %2 = "relax.sum"(%1) {axes = array<i64: -1>} : (tensor<?x2x?x4x64xf32, #relax.shape<["s", 2, "t", 4, 64]>>) -> tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>
  %3 = "relax.add"(%2, %arg3) : (tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>, tensor<?x1x?x1xf32, #relax.shape<["s", 1, "t", 1]>>) -> tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>
  %4 = "relax.softmax"(%3) {axis = 2 : i64} : (tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>) -> tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>
  %5 = "relax.expand_dims"(%4) {axis = array<i64: 4>} : (tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>) -> tensor<?x2x?x4x1xf32, #relax.shape<["s", 2, "t", 4, 1]>>
  %6 = "relax.multiply"(%5, %arg2) : (tensor<?x2x?x4x1xf32, #relax.shape<["s", 2, "t", 4, 1]>>, tensor<?x4x64xf32, #relax.shape<["t", 4, 64]>>) -> tensor<?x2x?x4x64xf32, #relax.shape<["s", 2, "t", 4, 64]>>
  %7 = "relax.sum"(%6) {axes = array<i64: 2>} : (tensor<?x2x?x4x64xf32, #relax.shape<["s", 2, "t", 4, 64]>>) -> tensor<?x2x4x64xf32, #relax.shape<["s", 2, 4, 64]>>
  %8 = "relax.reshape"(%7) {shape = #relax.shape<["s", 512]>} : (tensor<?x2x4x64xf32, #relax.shape<["s", 2, 4, 64]>>) -> tensor<?x512xf32, #relax.shape<["s", 512]>>
  return %8 : tensor<?x512xf32, #relax.shape<["s", 512]>>
}

func.func @dynamic_head_dim(%q: tensor<?x2x1x4x?xf32, #relax.shape<["s", 2, 1, 4, "d"]>>, %k: tensor<?x4x?xf32, #relax.shape<["t", 4, "d"]>>, %v: tensor<?x4x?xf32, #relax.shape<["t", 4, "d"]>>, %m: tensor<?x1x?x1xf32, #relax.shape<["s", 1, "t", 1]>>) -> tensor<?x2x4x?xf32, #relax.shape<["s", 2, 4, "d"]>> attributes {relax.function} {
  %1 = "relax.multiply"(%q, %k) : (tensor<?x2x1x4x?xf32, #relax.shape<["s", 2, 1, 4, "d"]>>, tensor<?x4x?xf32, #relax.shape<["t", 4, "d"]>>) -> tensor<?x2x?x4x?xf32, #relax.shape<["s", 2, "t", 4, "d"]>>
  %2 = "relax.sum"(%1) {axes = array<i64: -1>} : (tensor<?x2x?x4x?xf32, #relax.shape<["s", 2, "t", 4, "d"]>>) -> tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>
  %3 = "relax.add"(%2, %m) : (tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>, tensor<?x1x?x1xf32, #relax.shape<["s", 1, "t", 1]>>) -> tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>
  %4 = "relax.softmax"(%3) {axis = 2 : i64} : (tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>) -> tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>
  %5 = "relax.expand_dims"(%4) {axis = array<i64: 4>} : (tensor<?x2x?x4xf32, #relax.shape<["s", 2, "t", 4]>>) -> tensor<?x2x?x4x1xf32, #relax.shape<["s", 2, "t", 4, 1]>>
  %6 = "relax.multiply"(%5, %v) : (tensor<?x2x?x4x1xf32, #relax.shape<["s", 2, "t", 4, 1]>>, tensor<?x4x?xf32, #relax.shape<["t", 4, "d"]>>) -> tensor<?x2x?x4x?xf32, #relax.shape<["s", 2, "t", 4, "d"]>>
  %7 = "relax.sum"(%6) {axes = array<i64: 2>} : (tensor<?x2x?x4x?xf32, #relax.shape<["s", 2, "t", 4, "d"]>>) -> tensor<?x2x4x?xf32, #relax.shape<["s", 2, 4, "d"]>>
  return %7 : tensor<?x2x4x?xf32, #relax.shape<["s", 2, 4, "d"]>>
}
