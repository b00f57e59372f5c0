// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-internalize-graph-functions)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-internalize-graph-functions)' | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// @f is reached only through @_mlir_ciface_f (the runtime's entry): internal, so LLVM
// inlines it into its one caller and the ExecutionEngine adds no packed wrapper for it.
// The C interface, kernels (@k) and declarations keep their linkage.

// CHECK-LABEL: llvm.func @k(
// CHECK-LABEL: llvm.func internal @f(
// CHECK-LABEL: llvm.func @_mlir_ciface_f(
// CHECK-LABEL: llvm.func @g()
// CHECK-LABEL: llvm.func @_mlir_ciface_h(
// LLVM: define void @k(
// LLVM: define internal i32 @f(
// LLVM: define i32 @_mlir_ciface_f(
llvm.func @k(%p: !llvm.ptr) {
  llvm.return
}
llvm.func @f(%p: !llvm.ptr) -> i32 {
  llvm.call @k(%p) : (!llvm.ptr) -> ()
  %c = llvm.mlir.constant(0 : i32) : i32
  llvm.return %c : i32
}
llvm.func @_mlir_ciface_f(%p: !llvm.ptr) -> i32 {
  %r = llvm.call @f(%p) : (!llvm.ptr) -> i32
  llvm.return %r : i32
}
// no C interface: unchanged
llvm.func @g() {
  llvm.return
}
// a C interface of a declaration: nothing to internalize
llvm.func @h(!llvm.ptr) -> i32
llvm.func @_mlir_ciface_h(%p: !llvm.ptr) -> i32 {
  %r = llvm.call @h(%p) : (!llvm.ptr) -> i32
  llvm.return %r : i32
}
