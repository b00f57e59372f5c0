// relax-strip-attributes drops every relax.* attribute; after the whole cpu pipeline plain
// upstream mlir-translate takes the module.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-strip-attributes)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(cpu)' | FileCheck %s --check-prefix=CPU
// RUN: relax-opt %s --pass-pipeline='builtin.module(cpu)' | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @k
// CHECK-SAME: attributes {keep = 1 : i64}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {relax.kernel, relax.kernel_op = "exp", keep = 1 : i64} {
  return %x : tensor<4xf32>
}

// CPU-NOT: relax.
// LLVM: define {{.*}} @_mlir_ciface_main(
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.exp"(%x) : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
