// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library, relax-legalize, relax-lower-host)' | FileCheck %s

// After host lowering: one declaration per library symbol with every dim dynamic (the C
// descriptor ABI ignores static dims), so two layers of different static widths share it;
// call sites cast their buffers; relu stays a generated kernel.

// CHECK: module attributes {{.*}}relax.libraries = ["relax_blas"]
// CHECK: func.func private @relax_blas_matmul_bias_22_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>, memref<?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private @relax_blas
// CHECK-LABEL: func.func @mlp(
// CHECK: memref.cast %{{.*}} : memref<128x256xf32> to memref<?x?xf32>
// CHECK: call @relax_blas_matmul_bias_22_f32(
// CHECK: call @relax_relu_f32
// CHECK: memref.cast %{{.*}} : memref<256x64xf32> to memref<?x?xf32>
// CHECK: call @relax_blas_matmul_bias_22_f32(
func.func @mlp(%x: tensor<?x128xf32, #relax.shape<["n", 128]>>, %w1: tensor<128x256xf32>, %b1: tensor<256xf32>, %w2: tensor<256x64xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w1) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128x256xf32>) -> tensor<?x256xf32, #relax.shape<["n", 256]>>
  %1 = "relax.add"(%0, %b1) : (tensor<?x256xf32, #relax.shape<["n", 256]>>, tensor<256xf32>) -> tensor<?x256xf32, #relax.shape<["n", 256]>>
  %2 = "relax.relu"(%1) : (tensor<?x256xf32, #relax.shape<["n", 256]>>) -> tensor<?x256xf32, #relax.shape<["n", 256]>>
  %3 = "relax.matmul"(%2, %w2) : (tensor<?x256xf32, #relax.shape<["n", 256]>>, tensor<256x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.add"(%3, %b2) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  return %4 : tensor<?x64xf32, #relax.shape<["n", 64]>>
}
