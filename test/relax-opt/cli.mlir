// relax-opt command-line behaviour.
// The checked-in IRDL must equal what the op table generates (fails when stale: run `make irdl`).
// RUN: relax-opt --emit-irdl | diff - %irdl
// RUN: relax-opt --list-passes | FileCheck %s --check-prefix=LIST
// LIST: relax-infer-shapes
// LIST: relax-verify
// Relax and upstream passes mix in one pipeline string; IR printed after each pass.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, cse, func.func(canonicalize))' --mlir-print-ir-after-all 2>%t.after | FileCheck %s
// RUN: FileCheck %s --check-prefix=AFTER < %t.after
// AFTER: IR Dump After relax-infer-shapes
// AFTER: IR Dump After CSE
// AFTER: IR Dump After Canonicalizer
// From stdin, to a file.
// RUN: cat %s | relax-opt - -o %t.out && FileCheck %s --check-prefix=ROUND < %t.out
// ROUND: "relax.add"(%arg0, %arg0)
// Unknown pass names, options, and files: one-line errors, non-zero exit.
// RUN: not relax-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: relax-opt: error: invalid pass pipeline 'no-such-pass'
// RUN: not relax-opt %s --pass-pipeline='builtin.module(relax-verify{depth=3})' 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: relax-opt: error: pass 'relax-verify' has no option 'depth'
// RUN: not relax-opt %s --pass-pipeline='builtin.module(relax-verify' 2>&1 | FileCheck %s --check-prefix=UNBAL
// UNBAL: relax-opt: error: unbalanced brackets
// RUN: not relax-opt %t.does-not-exist 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: relax-opt: error: cannot read
// mlir-opt conventions: one dash or two, passes as flags in command-line order, --version,
// MLIR's whole message for an unknown pass (caret line included).
// RUN: relax-opt %s -relax-infer-shapes -cse --canonicalize | FileCheck %s
// RUN: relax-opt %s -pass-pipeline='builtin.module(relax-infer-shapes, cse, func.func(canonicalize))' | FileCheck %s
// RUN: relax-opt --version | FileCheck %s --check-prefix=VERSION
// VERSION: relax-opt (relax-mlir) 0.1.0
// RUN: not relax-opt %s --pass-pipeline='builtin.module(cse, bogus)' 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: relax-opt: error: invalid pass pipeline 'cse,bogus': MLIR Textual PassPipeline Parser:1:5: error: 'bogus' does not refer to a registered pass or pass pipeline
// FULL-NEXT: cse,bogus
// FULL-NEXT: {{^    \^$}}
// Bad UTF-8 and an unwritable output: one-line errors, no Python class names.
// RUN: printf 'func.func @f() {\n  return // \377\n}\n' | not relax-opt - 2>&1 | FileCheck %s --check-prefix=UTF8
// UTF8: <stdin>:2:13: error: the input is not valid UTF-8 (byte 0xff)
// UTF8-NOT: Error
// RUN: not relax-opt %s -o %t.no/such/file.mlir 2>&1 | FileCheck %s --check-prefix=UNWRITABLE
// UNWRITABLE: relax-opt: error: cannot write '{{.*}}such/file.mlir': No such file or directory
// UNWRITABLE-NOT: Error
// Malformed IR: a located diagnostic, non-zero exit, no traceback.
// RUN: echo 'func.func @f( {' | not relax-opt - 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: <stdin>:1:14: error: expected non-function type
// BAD-NOT: Traceback

// IRDL ops carry no side-effect traits, so upstream CSE keeps both adds; the
// upstream arith constants are CSE'd and folded in the same pipeline.
// CHECK-LABEL: func.func @twice
// CHECK-SAME: -> (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>)
// CHECK: %[[A:.*]] = "relax.add"(%arg0, %arg0)
// CHECK: %[[B:.*]] = "relax.add"(%arg0, %arg0)
// CHECK-NOT: arith.constant
// CHECK: return %[[A]], %[[B]]
func.func @twice(%x: tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>) attributes {relax.function} {
  %0 = "relax.add"(%x, %x) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  %1 = "relax.add"(%x, %x) : (tensor<?xf32, #relax.shape<["n"]>>, tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  %c1 = arith.constant 1 : index
  %c1b = arith.constant 1 : index
  %unused = arith.addi %c1, %c1b : index
  return %0, %1 : tensor<?xf32>, tensor<?xf32>
}
