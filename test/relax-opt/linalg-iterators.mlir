// MLIR 22's parser of linalg.generic asserts (aborts the process, mlir-opt's too) when an
// element of `iterator_types` is not a string (long fuzz mutation seed 1000047:
// `[-9223372036854775808, "parallel"]`). relax-opt refuses such a list, written out or
// through an attribute alias, before MLIR parses the text.
// RUN: not relax-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK-NOT: Assertion
// CHECK: linalg-iterators.mlir:[[@LINE+4]]:{{[0-9]+}}: error: expected 'iterator_types' of linalg.generic to be a list of strings (such as ["parallel", "reduction"])
// CHECK-NOT: Traceback
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @int(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = [-9223372036854775808, "parallel"]} ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// CHECK: linalg-iterators.mlir:[[@LINE+3]]:{{[0-9]+}}: error: expected 'iterator_types' of linalg.generic
#id1 = affine_map<(d0) -> (d0)>
func.func @enum(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = [#linalg.iterator_type<parallel>]} ins(%x : tensor<?xf32>) outs(%out : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// CHECK: linalg-iterators.mlir:[[@LINE+4]]:{{[0-9]+}}: error: expected 'iterator_types' of linalg.generic
#id1 = affine_map<(d0) -> (d0)>
#its = [unit]
func.func @alias(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = #its} ins(%x : tensor<?xf32>) outs(%out : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A list of strings (and one in a comment like this: iterator_types = [1]) parses.
// CHECK: func.func @ok
// CHECK: iterator_types = ["parallel"]
#id1 = affine_map<(d0) -> (d0)>
func.func @ok(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%out : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
