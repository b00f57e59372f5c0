// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-internalize-graph-functions)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-internalize-graph-functions)' | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// @f is reached only through @_mlir_ciface_f (the runtime's entry): its body moves into the
// interface, after the interface's loads; f's parameters become the loaded values, each
// return of f becomes the interface's epilogue (store the result, return). No call passes
// the expanded arguments any more, and @f is gone.

// CHECK-LABEL: llvm.func @k(
// CHECK-NOT:   llvm.func {{.*}}@f(
// CHECK:       llvm.func @_mlir_ciface_f(%[[RES:.*]]: !llvm.ptr, %[[D:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK-NEXT:    %[[DESC:.*]] = llvm.load %[[D]]
// CHECK-NEXT:    llvm.extractvalue %[[DESC]][0]
// CHECK-NEXT:    %[[P:.*]] = llvm.extractvalue %[[DESC]][1]
// CHECK-NEXT:    llvm.br ^[[BODY:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT:    %[[C:.*]] = llvm.icmp "eq" %[[N]], %[[Z]]
// CHECK-NEXT:    llvm.cond_br %[[C]], ^[[ZERO:.*]], ^[[CALL:.*]]
// CHECK-NEXT:  ^[[ZERO]]:
// CHECK-NEXT:    llvm.store %[[N]], %[[RES]] : i64, !llvm.ptr
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  ^[[CALL]]:
// CHECK-NEXT:    llvm.call @k(%[[P]])
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    llvm.store %[[ONE]], %[[RES]] : i64, !llvm.ptr
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
// LLVM: define void @k(
// LLVM-NOT: define {{.*}} @f(
// LLVM: define void @_mlir_ciface_f(

llvm.func @k(%p: !llvm.ptr) {
  llvm.return
}
llvm.func @f(%alloc: !llvm.ptr, %aligned: !llvm.ptr, %n: i64) -> i64 {
  %z = llvm.mlir.constant(0 : i64) : i64
  %c = llvm.icmp "eq" %n, %z : i64
  llvm.cond_br %c, ^zero, ^call
^zero:
  llvm.return %n : i64
^call:
  llvm.call @k(%aligned) : (!llvm.ptr) -> ()
  %one = llvm.mlir.constant(1 : i64) : i64
  llvm.return %one : i64
}
llvm.func @_mlir_ciface_f(%res: !llvm.ptr, %d: !llvm.ptr, %n: i64) {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr)>
  %a = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, ptr)>
  %p = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, ptr)>
  %r = llvm.call @f(%a, %p, %n) : (!llvm.ptr, !llvm.ptr, i64) -> i64
  llvm.store %r, %res : i64, !llvm.ptr
  llvm.return
}

// @g is also called by @h: it keeps its body, with internal linkage (no packed wrapper from
// the ExecutionEngine); @_mlir_ciface_g still calls it.
// CHECK-LABEL: llvm.func internal @g(
// CHECK-LABEL: llvm.func @_mlir_ciface_g(
// CHECK:         llvm.call @g(
// CHECK-LABEL: llvm.func @h(
// CHECK:         llvm.call @g(
llvm.func @g(%x: i64) -> i64 {
  llvm.return %x : i64
}
llvm.func @_mlir_ciface_g(%x: i64) -> i64 {
  %r = llvm.call @g(%x) : (i64) -> i64
  llvm.return %r : i64
}
llvm.func @h(%x: i64) -> i64 {
  %r = llvm.call @g(%x) : (i64) -> i64
  llvm.return %r : i64
}

// no C interface: unchanged
// CHECK-LABEL: llvm.func @u()
llvm.func @u() {
  llvm.return
}
// a C interface of a declaration: nothing to move
// CHECK-LABEL: llvm.func @d(!llvm.ptr) -> i32
// CHECK-LABEL: llvm.func @_mlir_ciface_d(
// CHECK:         llvm.call @d(
llvm.func @d(!llvm.ptr) -> i32
llvm.func @_mlir_ciface_d(%p: !llvm.ptr) -> i32 {
  %r = llvm.call @d(%p) : (!llvm.ptr) -> i32
  llvm.return %r : i32
}
