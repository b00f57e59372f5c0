// relax-legalize on quantized_matmul with an f16 (or bf16) x: the result in x's dtype; the
// generic kernel widens x in its body, sums into an f32 buffer (f32 accumulation) and rounds
// it to x's dtype in a second, elementwise generic (the GPU rules take it as the epilogue).
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl > /dev/null

// CHECK-LABEL: func.func @main
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_quantized_matmul_formatq8_0_f16_Dx64_8x68
// CHECK-SAME: -> tensor<?x8xf16, #relax.shape<["m", 8]>>
// CHECK: "relax.call_tir"(%arg2, %arg1) {callee = @relax_quantized_matmul_formatq8_0_bf16_3x64_8x68
// CHECK-SAME: -> tensor<3x8xbf16>
// CHECK-LABEL: func.func private @relax_quantized_matmul_formatq8_0_f16_Dx64_8x68(
// CHECK-SAME: %[[X:.+]]: tensor<?x64xf16>, %[[W:.+]]: tensor<8x68xi8>, %[[O:.+]]: tensor<?x8xf16>)
// CHECK: %[[E:.+]] = tensor.empty(%{{.+}}) : tensor<?x8xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<?x8xf32>)
// CHECK: %[[S:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<?x64xf16>) outs(%[[Z]] : tensor<?x8xf32>)
// CHECK: ^bb0(%[[XV:.+]]: f16, %[[ACC:.+]]: f32):
// CHECK: %[[XW:.+]] = arith.extf %[[XV]] : f16 to f32
// CHECK: arith.mulf %[[XW]], %{{.+}} : f32
// CHECK: %[[R:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[S]] : tensor<?x8xf32>) outs(%[[O]] : tensor<?x8xf16>)
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: return %[[R]]
// CHECK-LABEL: func.func private @relax_quantized_matmul_formatq8_0_bf16_3x64_8x68(
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
func.func @main(%x: tensor<?x64xf16, #relax.shape<["m", 64]>>, %w: tensor<8x68xi8>, %y: tensor<3x64xbf16>) -> (tensor<?x8xf16, #relax.shape<["m", 8]>>, tensor<3x8xbf16>) attributes {relax.function} {
  %a = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x64xf16, #relax.shape<["m", 64]>>, tensor<8x68xi8>) -> tensor<?x8xf16, #relax.shape<["m", 8]>>
  %b = "relax.quantized_matmul"(%y, %w) {format = "q8_0"} : (tensor<3x64xbf16>, tensor<8x68xi8>) -> tensor<3x8xbf16>
  return %a, %b : tensor<?x8xf16, #relax.shape<["m", 8]>>, tensor<3x8xbf16>
}
