// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-widen-bf16-matmul)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-widen-bf16-matmul{quantized=false})' | FileCheck %s --check-prefix=GPU

// A bf16 matmul becomes an f32 one between casts (symbolic shapes kept; the f32 schedules and
// BLAS dispatch take it).
// CHECK-LABEL: func.func @mm
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16, #relax.shape<["n", 64]>>, %[[W:.*]]: tensor<64x32xbf16>)
// CHECK: %[[A:.*]] = "relax.astype"(%[[X]]) {dtype = f32} : (tensor<?x64xbf16, #relax.shape<["n", 64]>>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
// CHECK: %[[B:.*]] = "relax.astype"(%[[W]]) {dtype = f32} : (tensor<64x32xbf16>) -> tensor<64x32xf32>
// CHECK: %[[P:.*]] = "relax.matmul"(%[[A]], %[[B]]) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
// CHECK: %[[R:.*]] = "relax.astype"(%[[P]]) {dtype = bf16} : (tensor<?x32xf32, #relax.shape<["n", 32]>>) -> tensor<?x32xbf16, #relax.shape<["n", 32]>>
// CHECK: %[[Y:.*]] = "relax.relu"(%[[R]])
// CHECK: return %[[Y]]
func.func @mm(%x: tensor<?x64xbf16, #relax.shape<["n", 64]>>, %w: tensor<64x32xbf16>) -> tensor<?x32xbf16, #relax.shape<["n", 32]>> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x64xbf16, #relax.shape<["n", 64]>>, tensor<64x32xbf16>) -> tensor<?x32xbf16, #relax.shape<["n", 32]>>
  %1 = "relax.relu"(%0) : (tensor<?x32xbf16, #relax.shape<["n", 32]>>) -> tensor<?x32xbf16, #relax.shape<["n", 32]>>
  return %1 : tensor<?x32xbf16, #relax.shape<["n", 32]>>
}

// -----

// Left alone: f32 and f16 matmuls, and a bf16 product asked for in f32 (out_dtype).
// CHECK-LABEL: func.func @others
// CHECK-NOT: relax.astype
// CHECK: "relax.matmul"(%{{.*}}) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
// CHECK: "relax.matmul"(%{{.*}}) : (tensor<4x8xf16>, tensor<8x2xf16>) -> tensor<4x2xf16>
// CHECK: "relax.matmul"(%{{.*}}) {out_dtype = f32} : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
func.func @others(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x8xf16>, %d: tensor<8x2xf16>,
                  %e: tensor<4x8xbf16>, %f: tensor<8x2xbf16>) -> (tensor<4x2xf32>, tensor<4x2xf16>, tensor<4x2xf32>) attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %1 = "relax.matmul"(%c, %d) : (tensor<4x8xf16>, tensor<8x2xf16>) -> tensor<4x2xf16>
  %2 = "relax.matmul"(%e, %f) {out_dtype = f32} : (tensor<4x8xbf16>, tensor<8x2xbf16>) -> tensor<4x2xf32>
  return %0, %1, %2 : tensor<4x2xf32>, tensor<4x2xf16>, tensor<4x2xf32>
}

// -----

// A quantized matmul of an f16 or bf16 x: x widened, the product in f32 (the library's
// quantized kernels read f32 x), rounded back to x's dtype; attributes kept. An f32 x is
// left alone.
// CHECK-LABEL: func.func @qmm
// CHECK-SAME: (%[[X:.*]]: tensor<?x32xf16, #relax.shape<["n", 32]>>, %[[Y:.*]]: tensor<3x32xbf16>, %[[Z:.*]]: tensor<3x32xf32>, %[[W:.*]]: tensor<8x34xi8>)
// CHECK: %[[A:.*]] = "relax.astype"(%[[X]]) {dtype = f32} : (tensor<?x32xf16, #relax.shape<["n", 32]>>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
// CHECK: %[[P:.*]] = "relax.quantized_matmul"(%[[A]], %[[W]]) {activations = "q8", format = "q8_0"} : (tensor<?x32xf32, #relax.shape<["n", 32]>>, tensor<8x34xi8>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
// CHECK: %[[R:.*]] = "relax.astype"(%[[P]]) {dtype = f16} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf16, #relax.shape<["n", 8]>>
// CHECK: %[[B:.*]] = "relax.astype"(%[[Y]]) {dtype = f32} : (tensor<3x32xbf16>) -> tensor<3x32xf32>
// CHECK: %[[Q:.*]] = "relax.quantized_matmul"(%[[B]], %[[W]]) {format = "q8_0"} : (tensor<3x32xf32>, tensor<8x34xi8>) -> tensor<3x8xf32>
// CHECK: %[[S:.*]] = "relax.astype"(%[[Q]]) {dtype = bf16} : (tensor<3x8xf32>) -> tensor<3x8xbf16>
// CHECK-NOT: relax.astype
// CHECK: %[[T:.*]] = "relax.quantized_matmul"(%[[Z]], %[[W]]) {format = "q8_0"} : (tensor<3x32xf32>, tensor<8x34xi8>) -> tensor<3x8xf32>
// CHECK: return %[[R]], %[[S]], %[[T]]
// quantized=false (the vulkan pipeline: its quantized kernels read a half x as stored): untouched.
// GPU-LABEL: func.func @qmm
// GPU-NOT: relax.astype
// GPU: "relax.quantized_matmul"(%{{.*}}, %{{.*}}) {activations = "q8", format = "q8_0"} : (tensor<?x32xf16, #relax.shape<["n", 32]>>, tensor<8x34xi8>) -> tensor<?x8xf16, #relax.shape<["n", 8]>>
// GPU: "relax.quantized_matmul"(%{{.*}}, %{{.*}}) {format = "q8_0"} : (tensor<3x32xbf16>, tensor<8x34xi8>) -> tensor<3x8xbf16>
// GPU-NOT: relax.astype
// GPU: return
func.func @qmm(%x: tensor<?x32xf16, #relax.shape<["n", 32]>>, %y: tensor<3x32xbf16>, %z: tensor<3x32xf32>, %w: tensor<8x34xi8>) -> (tensor<?x8xf16, #relax.shape<["n", 8]>>, tensor<3x8xbf16>, tensor<3x8xf32>) attributes {relax.function} {
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0", activations = "q8"} : (tensor<?x32xf16, #relax.shape<["n", 32]>>, tensor<8x34xi8>) -> tensor<?x8xf16, #relax.shape<["n", 8]>>
  %1 = "relax.quantized_matmul"(%y, %w) {format = "q8_0"} : (tensor<3x32xbf16>, tensor<8x34xi8>) -> tensor<3x8xbf16>
  %2 = "relax.quantized_matmul"(%z, %w) {format = "q8_0"} : (tensor<3x32xf32>, tensor<8x34xi8>) -> tensor<3x8xf32>
  return %0, %1, %2 : tensor<?x8xf16, #relax.shape<["n", 8]>>, tensor<3x8xbf16>, tensor<3x8xf32>
}

// -----

// A bf16 conv2d likewise (its attributes kept), so relax-conv-gemm and the f32 conv schedules take it;
// a bf16 max pool is left alone (the pool schedule takes bf16).
// CHECK-LABEL: func.func @conv
// CHECK: %[[A:.*]] = "relax.astype"(%{{.*}}) {dtype = f32} : (tensor<?x3x9x9xbf16, #relax.shape<["b", 3, 9, 9]>>) -> tensor<?x3x9x9xf32, #relax.shape<["b", 3, 9, 9]>>
// CHECK: %[[B:.*]] = "relax.astype"(%{{.*}}) {dtype = f32} : (tensor<8x3x3x3xbf16>) -> tensor<8x3x3x3xf32>
// CHECK: %[[C:.*]] = "relax.conv2d"(%[[A]], %[[B]]) {padding = array<i64: 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x9x9xf32, #relax.shape<["b", 3, 9, 9]>>, tensor<8x3x3x3xf32>) -> tensor<?x8x5x5xf32, #relax.shape<["b", 8, 5, 5]>>
// CHECK: %[[R:.*]] = "relax.astype"(%[[C]]) {dtype = bf16} : (tensor<?x8x5x5xf32, #relax.shape<["b", 8, 5, 5]>>) -> tensor<?x8x5x5xbf16, #relax.shape<["b", 8, 5, 5]>>
// CHECK: "relax.max_pool2d"(%[[R]]) {pool_size = array<i64: 2, 2>} : (tensor<?x8x5x5xbf16, #relax.shape<["b", 8, 5, 5]>>)
func.func @conv(%x: tensor<?x3x9x9xbf16, #relax.shape<["b", 3, 9, 9]>>, %w: tensor<8x3x3x3xbf16>) -> tensor<?x8x4x4xbf16, #relax.shape<["b", 8, 4, 4]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x9x9xbf16, #relax.shape<["b", 3, 9, 9]>>, tensor<8x3x3x3xbf16>) -> tensor<?x8x5x5xbf16, #relax.shape<["b", 8, 5, 5]>>
  %1 = "relax.max_pool2d"(%0) {pool_size = array<i64: 2, 2>} : (tensor<?x8x5x5xbf16, #relax.shape<["b", 8, 5, 5]>>) -> tensor<?x8x4x4xbf16, #relax.shape<["b", 8, 4, 4]>>
  return %1 : tensor<?x8x4x4xbf16, #relax.shape<["b", 8, 4, 4]>>
}
