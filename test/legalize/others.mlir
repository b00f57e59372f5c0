// relax-legalize on matmul, reductions, normalizations, shape manipulation and creation:
// the call_tir, the kernel's destination-passing signature and its key ops.
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --split-input-file > /dev/null

// CHECK-LABEL: func.func @mm
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_matmul_f32_Dx64_64xD
// CHECK: "relax.call_tir"(%arg2, %arg1) {callee = @relax_matmul_f32_DxDx64_64xD
// CHECK-LABEL: func.func private @relax_matmul_f32_Dx64_64xD(%{{.+}}: tensor<?x64xf32>, %{{.+}}: tensor<64x?xf32>, %{{.+}}: tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: linalg.fill
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @relax_matmul_f32_DxDx64_64xD(
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @mm(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w: tensor<64x?xf32, #relax.shape<[64, "m"]>>,
              %y: tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x?xf32, #relax.shape<[64, "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  %1 = "relax.matmul"(%y, %w) : (tensor<?x?x64xf32, #relax.shape<["b", "n", 64]>>, tensor<64x?xf32, #relax.shape<[64, "m"]>>) -> tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>>
  return %1 : tensor<?x?x?xf32, #relax.shape<["b", "n", "m"]>>
}

// -----

// CHECK-LABEL: func.func @red
// CHECK: "relax.call_tir"(%arg0) {callee = @relax_sum_axes1_keep0_f32_Dx8
// CHECK-SAME: -> tensor<?xf32, #relax.shape<["n"]>>
// CHECK: "relax.call_tir"(%arg0) {callee = @relax_softmax_axis1_f32_Dx8
// CHECK: "relax.call_tir"(%{{.+}}, %arg1) {callee = @relax_rms_norm_axes1_eps1em05_f32_Dx8_8
// CHECK-LABEL: func.func private @relax_sum_axes1_keep0_f32_Dx8(
// CHECK-SAME: %{{.+}}: tensor<?x8xf32>, %[[O:.+]]: tensor<?xf32>) -> tensor<?xf32>
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[O]] : tensor<?xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}}outs(%[[F]] : tensor<?xf32>)
// CHECK-LABEL: func.func private @relax_softmax_axis1_f32_Dx8(
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-LABEL: func.func private @relax_rms_norm_axes1_eps1em05_f32_Dx8_8(
// CHECK: math.rsqrt
func.func @red(%x: tensor<?x8xf32, #relax.shape<["n", 8]>>, %w: tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>> attributes {relax.function} {
  %0 = "relax.sum"(%x) {axes = array<i64: 1>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  %1 = "relax.softmax"(%x) : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  %2 = "relax.rms_norm"(%1, %w) : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #relax.shape<["n", 8]>>
  return %2 : tensor<?x8xf32, #relax.shape<["n", 8]>>
}

// -----

// CHECK-LABEL: func.func @manip
// CHECK: "relax.call_tir"(%arg0) {callee = @relax_reshape_to_Dx2x4_f32_Dx8
// CHECK: "relax.call_tir"(%arg0) {callee = @relax_permute_dims_axes1_0_f32_Dx8
// CHECK: "relax.call_tir"(%arg0, %arg0) {callee = @relax_concat_axis0_f32_Dx8_Dx8
// CHECK-SAME: -> tensor<?x8xf32, #relax.shape<["2*n", 8]>>
// CHECK: "relax.call_tir"(%arg0) {callee = @relax_strided_slice_axes0_bS_s1_f32_Dx8
// CHECK-SAME: tir_vars = #relax.shape<["n - 1"]>
// CHECK-LABEL: func.func private @relax_reshape_to_Dx2x4_f32_Dx8(
// CHECK: tensor.reshape
// CHECK: linalg.copy
// CHECK-LABEL: func.func private @relax_permute_dims_axes1_0_f32_Dx8(
// CHECK: linalg.transpose
// CHECK-LABEL: func.func private @relax_concat_axis0_f32_Dx8_Dx8(
// CHECK-COUNT-2: tensor.insert_slice
// CHECK-LABEL: func.func private @relax_strided_slice_axes0_bS_s1_f32_Dx8(
// CHECK-SAME: %{{.+}}: tensor<?x8xf32>, %{{.+}}: tensor<1x8xf32>, %[[B:.+]]: index)
// CHECK: tensor.extract_slice %{{.+}}[%[[B]], 0]
func.func @manip(%x: tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["2*n", 8]>> attributes {relax.function} {
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["n", 2, 4]>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x2x4xf32, #relax.shape<["n", 2, 4]>>
  %1 = "relax.permute_dims"(%x) : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<8x?xf32, #relax.shape<[8, "n"]>>
  %2 = "relax.concat"(%x, %x) {axis = 0 : i64, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>, tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<?x8xf32, #relax.shape<["2*n", 8]>>
  %3 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<["n - 1"]>, end = #relax.shape<["n"]>} : (tensor<?x8xf32, #relax.shape<["n", 8]>>) -> tensor<1x8xf32>
  return %2 : tensor<?x8xf32, #relax.shape<["2*n", 8]>>
}

// -----

// CHECK-LABEL: func.func @create
// CHECK: "relax.call_tir"() {callee = @relax_zeros_f32_Dx4
// CHECK: "relax.call_tir"() {callee = @relax_arange_startS_step2_i64_r1
// CHECK-SAME: tir_vars = #relax.shape<["n"]>
// CHECK-LABEL: func.func private @relax_zeros_f32_Dx4(
// CHECK-SAME: %[[O:.+]]: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[O]] : tensor<?x4xf32>)
// CHECK-LABEL: func.func private @relax_arange_startS_step2_i64_r1(%{{.+}}: tensor<?xi64>, %{{.+}}: index)
// CHECK: linalg.index 0
func.func @create(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.zeros"() {shape = #relax.shape<["n", 4]>} : () -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.arange"() {start = "n", end = "3*n", step = 2} : () -> tensor<?xi64, #relax.shape<["n"]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
