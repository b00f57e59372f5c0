// relax-legalize on elementwise and binary ops: one parallel linalg.generic per op,
// numpy broadcasting in the indexing maps, kernels shared between identical calls.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' | mlir-opt --irdl-file=%irdl --verify-each > /dev/null

// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @f
// CHECK: %[[A:.+]] = "relax.call_tir"(%arg0, %arg1) {callee = @relax_add_f32_Dx4_4
// CHECK: %[[B:.+]] = "relax.call_tir"(%[[A]], %arg1) {callee = @relax_add_f32_Dx4_4
// CHECK: "relax.call_tir"(%[[B]]) {callee = @relax_gelu_f32_Dx4
// CHECK-SAME: -> tensor<?x4xf32, #relax.shape<["n", 4]>>
// CHECK: "relax.call_tir"(%{{.+}}, %arg1) {callee = @relax_less_f32_Dx4_4
// CHECK: "relax.call_tir"(%{{.+}}) {callee = @relax_astype_to_f16_f32_Dx4
// CHECK-NOT: "relax.add"
// CHECK-LABEL: func.func private @relax_add_f32_Dx4_4(
// CHECK-SAME: %{{.+}}: tensor<?x4xf32>, %{{.+}}: tensor<4xf32>, %[[OUT:.+]]: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel, relax.kernel_op = "add"}
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: outs(%[[OUT]] : tensor<?x4xf32>)
// CHECK: arith.addf
// CHECK-NOT: func.func private @relax_add_f32_Dx4_4(
// CHECK-LABEL: func.func private @relax_gelu_f32_Dx4(
// CHECK: math.erf
// CHECK-LABEL: func.func private @relax_less_f32_Dx4_4(
// CHECK-SAME: -> tensor<?x4xi1>
// CHECK: arith.cmpf olt
// CHECK-LABEL: func.func private @relax_astype_to_f16_f32_Dx4(
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @f(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<4xf32>) -> tensor<?x4xf16, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.add"(%x, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.add"(%0, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %2 = "relax.gelu"(%1) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %3 = "relax.less"(%2, %b) : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x4xi1, #relax.shape<["n", 4]>>
  %4 = "relax.astype"(%2) {dtype = f16} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf16, #relax.shape<["n", 4]>>
  return %4 : tensor<?x4xf16, #relax.shape<["n", 4]>>
}
