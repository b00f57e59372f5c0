// MLIR 22's parsers of linalg.transpose and linalg.broadcast assert (abort the process,
// mlir-opt's too) on a malformed `permutation = [...]` / `dimensions = [...]` list (long fuzz
// mutation seed 43000221: `[, 0]`). relax-opt refuses such a list before MLIR parses the text.
// RUN: not relax-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK-NOT: Assertion
// CHECK: linalg-list.mlir:[[@LINE+3]]:{{[0-9]+}}: error: expected a list of integers after 'permutation =' (such as [1, 0])
// CHECK-NOT: Traceback
func.func @t(%k: tensor<?x64xf32>, %out: tensor<64x?xf32>) -> tensor<64x?xf32> {
  %r = linalg.transpose ins(%k : tensor<?x64xf32>) outs(%out : tensor<64x?xf32>) permutation = [, 0]
  return %r : tensor<64x?xf32>
}

// -----

// CHECK: linalg-list.mlir:[[@LINE+2]]:{{[0-9]+}}: error: expected a list of integers after 'dimensions =' (such as [1, 0])
func.func @b(%k: tensor<64xf32>, %out: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %r = linalg.broadcast ins(%k : tensor<64xf32>) outs(%out : tensor<64x8xf32>) dimensions = [1 0]
  return %r : tensor<64x8xf32>
}

// -----

// Well-formed lists (and `dimensions` in a comment like this one: dimensions = [, ]) parse.
// CHECK: func.func @ok
// CHECK: permutation = [1, 0]
// CHECK: dimensions = [1]
func.func @ok(%k: tensor<?x64xf32>, %out: tensor<64x?xf32>, %v: tensor<64xf32>, %o: tensor<64x8xf32>) -> (tensor<64x?xf32>, tensor<64x8xf32>) {
  %r = linalg.transpose ins(%k : tensor<?x64xf32>) outs(%out : tensor<64x?xf32>) permutation = [1, 0]
  %b = linalg.broadcast ins(%v : tensor<64xf32>) outs(%o : tensor<64x8xf32>) dimensions = [1]
  return %r, %b : tensor<64x?xf32>, tensor<64x8xf32>
}
