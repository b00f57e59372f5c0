// relax-legalize on quantized_matmul / quantized_take: the generic kernel (every target;
// the cpu target dispatches to library kernels first) reads the weight's bytes where it
// uses an element: q4_1's f16 scale d and minimum m, the nibble of element j.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl > /dev/null

// CHECK-LABEL: func.func @main
// CHECK: "relax.call_tir"(%arg0, %arg1) {callee = @relax_quantized_matmul_formatq4_1_f32_Dx64_8x40
// CHECK: "relax.call_tir"(%arg1, %arg2) {callee = @relax_quantized_take_formatq4_1_i8_8x40_r1
// CHECK-LABEL: func.func private @relax_quantized_matmul_formatq4_1_f32_Dx64_8x40(
// CHECK-SAME: %[[X:.+]]: tensor<?x64xf32>, %[[W:.+]]: tensor<8x40xi8>, %[[O:.+]]: tensor<?x8xf32>)
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<?x64xf32>)
// CHECK: arith.divui %{{.*}}, %c{{[0-9]+}} : index
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: arith.shrui
// CHECK: arith.andi
// CHECK: arith.addf
// CHECK-LABEL: func.func private @relax_quantized_take_formatq4_1_i8_8x40_r1(
func.func @main(%x: tensor<?x64xf32, #relax.shape<["m", 64]>>, %w: tensor<8x40xi8>, %ids: tensor<?xi64, #relax.shape<["s"]>>) -> (tensor<?x8xf32, #relax.shape<["m", 8]>>, tensor<?x64xf32, #relax.shape<["s", 64]>>) attributes {relax.function} {
  %y = "relax.quantized_matmul"(%x, %w) {format = "q4_1"} : (tensor<?x64xf32, #relax.shape<["m", 64]>>, tensor<8x40xi8>) -> tensor<?x8xf32, #relax.shape<["m", 8]>>
  %e = "relax.quantized_take"(%w, %ids) {format = "q4_1"} : (tensor<8x40xi8>, tensor<?xi64, #relax.shape<["s"]>>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
  return %y, %e : tensor<?x8xf32, #relax.shape<["m", 8]>>, tensor<?x64xf32, #relax.shape<["s", 64]>>
}
