// RUN: %relax-opt %s --pass-pipeline='builtin.module(cpu)' | FileCheck %s

// The whole cpu pipeline ends in the LLVM dialect with a C interface per graph function,
// which holds the function's body (relax-internalize-graph-functions), compiled without
// LLVM's optimizer (relax-host-optnone): it stores the result struct through its first
// argument.
// CHECK-NOT: llvm.func {{.*}}@main(
// CHECK: llvm.func @_mlir_ciface_main(
// CHECK-SAME: no_inline, optimize_none
// The one buffer (the two kernels fused) is the result, returned whether the checks
// held or not (the caller frees a failed call's results): @main frees nothing.
// CHECK-NOT: llvm.call @free
// CHECK: llvm.store {{.*}} : !llvm.struct<(i32, i64, i64, i64, struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>)>, !llvm.ptr
// CHECK-NEXT: llvm.return
// CHECK-NOT: builtin.unrealized_conversion_cast

func.func @add_kernel(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>, %out: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {relax.kernel} {
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%out : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
func.func @main(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>, %y: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %y) {callee = @add_kernel, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  %1 = "relax.call_tir"(%0, %y) {callee = @add_kernel, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x4xf32, #relax.shape<["n", 4]>>
  return %1 : tensor<?x4xf32, #relax.shape<["n", 4]>>
}
