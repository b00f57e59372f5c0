// A dense array of 864-bit integers parses in MLIR, but the Python bindings cannot read it:
// a pass reading it raised a TypeError (an internal error), and NamedAttribute.attr aborted
// the process (long fuzz mutation seed 43000121). It is refused at its op after parsing,
// before any pass runs, with or without the implicit relax-verify.
// RUN: not relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-legalize)' 2>&1 | FileCheck %s
// RUN: not relax-opt %s --no-implicit-verify --pass-pipeline='builtin.module(relax-strip-attributes)' 2>&1 | FileCheck %s
// CHECK: unreadable-attribute.mlir:[[@LINE+3]]:8: error: 'relax.conv2d' has an attribute of a type this compiler cannot read (Can't cast unknown element type DenseArrayAttr (Attribute(array<i864: 2, 1>)))
// CHECK-NOT: Traceback
func.func @conv(%x: tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, %w: tensor<6x2x3x3xf32>) -> tensor<?x?x?x?xf32> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {strides = array<i64: 2, 1>, padding = array<i64: 2, 1, 2, 0>, dilation = array<i864: 2, 1>, groups = 2 : i64} : (tensor<?x4x?x?xf32, #relax.shape<["n", 4, "h", "w"]>>, tensor<6x2x3x3xf32>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<?x?x?x?xf32>
}
