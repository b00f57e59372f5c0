// #relax.shape on a memref used to abort the process inside convert-func-to-llvm (MLIR reads
// the attribute as the memref's memory space, which the LLVM type converter cannot lower,
// and the Python bindings' ErrorCapture asserted). It is refused before any pass runs, with
// or without the implicit relax-verify.
// RUN: not relax-opt %s --convert-func-to-llvm 2>&1 | FileCheck %s
// RUN: not relax-opt %s --no-implicit-verify -pass-pipeline='builtin.module(convert-func-to-llvm)' 2>&1 | FileCheck %s
// RUN: not relax-opt %s --no-implicit-verify --cpu 2>&1 | FileCheck %s
// CHECK: foreign-shape.mlir:[[@LINE+2]]:1: error: @f parameter #0: #relax.shape is the encoding of a ranked tensor type and cannot appear in memref<?xf32, #relax.shape<["n"]>>
// CHECK-NOT: Traceback
func.func @f(%x: memref<?xf32, #relax.shape<["n"]>>) {
  return
}
