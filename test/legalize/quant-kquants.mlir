// relax-legalize on a K-quant quantized_matmul: the generic kernel decodes q4_k's 6-bit
// scale and min of the element's sub-block (select on j / 32 < 4) and computes d sc q - dmin m.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl > /dev/null

// CHECK-LABEL: func.func @kquant
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_quantized_matmul_formatq4_k_f32_Dx256_8x144
// CHECK-LABEL: func.func private @relax_quantized_matmul_formatq4_k_f32_Dx256_8x144(
// CHECK: linalg.generic
// CHECK: arith.cmpi ult
// CHECK: arith.select
// CHECK: arith.select
// CHECK: arith.subf
func.func @kquant(%x: tensor<?x256xf32, #relax.shape<["m", 256]>>, %w: tensor<8x144xi8>) -> tensor<?x8xf32, #relax.shape<["m", 8]>> attributes {relax.function} {
  %y = "relax.quantized_matmul"(%x, %w) {format = "q4_k"} : (tensor<?x256xf32, #relax.shape<["m", 256]>>, tensor<8x144xi8>) -> tensor<?x8xf32, #relax.shape<["m", 8]>>
  return %y : tensor<?x8xf32, #relax.shape<["m", 8]>>
}
