// relax-packed-entries: a C-interface entry wider than min-args (default: ctypes' limit of
// 1024 arguments) gets _mlir_relax_packed_<f>(argv), which loads the pointers of argv and
// calls it; narrower entries, declarations and non-entries are left alone.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-packed-entries{min-args=2})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-packed-entries)' | FileCheck %s --check-prefix=DEFAULT

// CHECK-LABEL: llvm.func @_mlir_ciface_wide(
// CHECK-LABEL: llvm.func @_mlir_ciface_void3(
// CHECK-LABEL: llvm.func @_mlir_ciface_narrow(
// CHECK-NOT: _mlir_relax_packed_narrow
// CHECK-NOT: _mlir_relax_packed_lib
// CHECK-LABEL: llvm.func @_mlir_relax_packed_wide(%arg0: !llvm.ptr) -> i32 {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr %arg0[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr %arg0[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr %arg0[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A2:.*]] = llvm.load %[[P2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[R:.*]] = llvm.call @_mlir_ciface_wide(%[[A0]], %[[A1]], %[[A2]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:    llvm.return %[[R]] : i32
// CHECK-LABEL: llvm.func @_mlir_relax_packed_void3(%arg0: !llvm.ptr) {
// CHECK:         llvm.call @_mlir_ciface_void3({{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-NOT: _mlir_relax_packed_

// DEFAULT-NOT: _mlir_relax_packed_

module {
  llvm.func @_mlir_ciface_wide(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) -> i32 {
    %0 = llvm.mlir.constant(0 : i32) : i32
    llvm.return %0 : i32
  }
  llvm.func @_mlir_ciface_void3(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) {
    llvm.return
  }
  llvm.func @_mlir_ciface_narrow(%a: !llvm.ptr, %b: !llvm.ptr) {
    llvm.return
  }
  llvm.func @_mlir_ciface_lib(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  llvm.func @wide_kernel(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) {
    llvm.return
  }
}
