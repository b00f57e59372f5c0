// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-kernel-noalias)' | FileCheck %s
// Kernel buffers become llvm.noalias; non-kernel functions and non-memref args are untouched.

// CHECK-LABEL: func.func private @k(
// CHECK-SAME: %arg0: memref<?xf32> {llvm.noalias}, %arg1: memref<?xf32> {llvm.noalias}, %arg2: index)
func.func private @k(%a: memref<?xf32>, %b: memref<?xf32>, %n: index) attributes {relax.kernel} {
  return
}

// CHECK-LABEL: func.func @host(
// CHECK-NOT: llvm.noalias
func.func @host(%a: memref<?xf32>, %b: memref<?xf32>) {
  return
}
