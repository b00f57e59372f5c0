// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-lower-host)' | FileCheck %s
// RUN: %relax-opt %s --pass-pipeline='builtin.module(cpu)' | FileCheck %s --check-prefix=LLVM

// The result is computed into a buffer allocated before the checks of the kernel's call.
// The call runs under the checks' flag; when they fail it is skipped and that same buffer
// is the value (and the result, which the caller frees unread), not a fresh placeholder:
// the function returns one buffer either way and deallocation does not clone the result
// on every call (a 16 MB softmax output was copied per call).
// CHECK-LABEL: func.func @main(
// CHECK: %[[ALLOC:.*]] = memref.alloc(
// CHECK: %[[OUT:.*]] = bufferization.to_tensor %[[ALLOC]]
// CHECK: %[[RES:.*]] = scf.if
// CHECK: %[[R:.*]] = func.call @scale_kernel({{.*}}, %[[OUT]])
// CHECK: scf.yield %[[R]] :
// CHECK: } else {
// CHECK: scf.yield %[[OUT]] :
// CHECK: return {{.*}}, %[[RES]] :
// CHECK-NOT: tensor.empty

// LLVM-LABEL: llvm.func @_mlir_ciface_main(
// LLVM-NOT: llvm.intr.memcpy
// LLVM: llvm.return

func.func @scale_kernel(%a: tensor<?x16xf32>, %out: tensor<?x16xf32>) -> tensor<?x16xf32> attributes {relax.kernel} {
  %r = linalg.add ins(%a, %a : tensor<?x16xf32>, tensor<?x16xf32>) outs(%out : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
func.func @main(%x: tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%x) {callee = @scale_kernel, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x16xf32, #relax.shape<["n", 16]>>) -> tensor<?x16xf32, #relax.shape<["n", 16]>>
  return %0 : tensor<?x16xf32, #relax.shape<["n", 16]>>
}
