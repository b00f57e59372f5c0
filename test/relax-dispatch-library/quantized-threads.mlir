// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library, relax-legalize, relax-lower-host)' | FileCheck %s

// The quantized matmul kernels take the module's thread count: relax-lower-host declares the
// module's cell @_mlir_relax_num_threads (what exe.num_threads sets) and passes it last, so
// they run on the executable's threads like its generated kernels. quantized_take does not.

// CHECK-DAG: memref.global "public" @_mlir_relax_num_threads : memref<i32> = dense<{{[0-9]+}}>
// CHECK-DAG: func.func private @relax_qmatmul_q4_0(memref<?x?xf32>, memref<?x?xi8>, memref<?x?xf32>, memref<i32>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @relax_qtake_q4_0(memref<?x?xi8>, memref<?xi64>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @main(
// CHECK: %[[CELL:.*]] = memref.get_global @_mlir_relax_num_threads : memref<i32>
// CHECK: call @relax_qmatmul_q4_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[CELL]])
// CHECK: call @relax_qtake_q4_0(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) :
func.func @main(%x: tensor<?x64xf32, #relax.shape<["m", 64]>>, %w: tensor<8x36xi8>, %ids: tensor<?xi64, #relax.shape<["s"]>>) -> (tensor<?x8xf32, #relax.shape<["m", 8]>>, tensor<?x64xf32, #relax.shape<["s", 64]>>) attributes {relax.function} {
  %y = "relax.quantized_matmul"(%x, %w) {format = "q4_0", activations = "f32"} : (tensor<?x64xf32, #relax.shape<["m", 64]>>, tensor<8x36xi8>) -> tensor<?x8xf32, #relax.shape<["m", 8]>>
  %e = "relax.quantized_take"(%w, %ids) {format = "q4_0"} : (tensor<8x36xi8>, tensor<?xi64, #relax.shape<["s"]>>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
  return %y, %e : tensor<?x8xf32, #relax.shape<["m", 8]>>, tensor<?x64xf32, #relax.shape<["s", 64]>>
}
