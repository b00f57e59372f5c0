// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-host-optnone)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-host-optnone, relax-strip-attributes)' | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// Host code (relax.host_code, set by relax-lower-host) gets optimize_none + no_inline; a
// kernel and a declaration are left alone.

// CHECK-LABEL: llvm.func @kernel(
// CHECK-NOT:     optimize_none
// CHECK-LABEL: llvm.func @_mlir_ciface_main(
// CHECK-SAME:    no_inline
// CHECK-SAME:    optimize_none
// CHECK-LABEL: llvm.func @lib(
// CHECK-NOT:     optimize_none
// LLVM: define void @kernel(ptr %0) {
// LLVM: define void @_mlir_ciface_main(ptr %0) #[[A:[0-9]+]] {
// LLVM: attributes #[[A]] = { noinline optnone }
llvm.func @kernel(%p: !llvm.ptr) {
  llvm.return
}
llvm.func @_mlir_ciface_main(%p: !llvm.ptr) attributes {relax.host_code} {
  llvm.call @kernel(%p) : (!llvm.ptr) -> ()
  llvm.return
}
llvm.func @lib(!llvm.ptr) attributes {relax.host_code}
