// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s

// An all-parallel kernel whose payload reads its init (a sum over no axes: fill, then
// out + in) feeding a consumer that broadcasts its result. Upstream elementwise fusion
// would keep that init as a second output of the fused op, indexed through the
// broadcast map (d0) -> (), and re-read it on every d0 (x + 3*s instead of x + 2*s,
// long fuzz seed 13001370). relax-fuse-kernels first turns the init read into an input
// read, so the fused kernel is one generic with a single output and the fill folds
// into the payload as its constant. (Before: `%2:2 = linalg.generic ... outs(%1, %arg2 :
// tensor<f32>, tensor<?xf32>)` with the 0-d `%1` read back as `%out` in every d0.)

// CHECK-LABEL: func.func @scalar(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1) {callee = @fused_sum0_add0_bcast,
// CHECK-NEXT: return %0
// CHECK-LABEL: func.func @rows(
// CHECK-NEXT: %0 = "relax.call_tir"(%arg0, %arg1) {callee = @fused_sum1_bcast_rows,
// CHECK-NEXT: return %0

// CHECK-LABEL: func.func private @fused_sum0_add0_bcast(%arg0: tensor<f32>, %arg1: tensor<?xf32>, %arg2: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel, relax.kernel_kind = "broadcast", relax.kernel_op = "sum0_add0_bcast"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel"]} ins(%arg1, %arg0 : tensor<?xf32>, tensor<f32>) outs(%arg2 : tensor<?xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %1 = arith.addf %in_0, %cst : f32
// CHECK-NEXT: %2 = arith.addf %1, %1 : f32
// CHECK-NEXT: %3 = arith.addf %in, %2 : f32
// CHECK-NEXT: linalg.yield %3 : f32
// CHECK-NEXT: } -> tensor<?xf32>
// CHECK-NEXT: return %0 : tensor<?xf32>
// CHECK-NEXT: }

// CHECK-LABEL: func.func private @fused_sum1_bcast_rows(%arg0: tensor<?xf32>, %arg1: tensor<?x?xf32>, %arg2: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.kernel, relax.kernel_kind = "broadcast", relax.kernel_op = "sum1_bcast_rows"} {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg1, %arg0 : tensor<?x?xf32>, tensor<?xf32>) outs(%arg2 : tensor<?x?xf32>) {
// CHECK-NEXT: ^bb0(%in: f32, %in_0: f32, %out: f32):
// CHECK-NEXT: %1 = arith.addf %in_0, %cst : f32
// CHECK-NEXT: %2 = arith.addf %in, %1 : f32
// CHECK-NEXT: linalg.yield %2 : f32
// CHECK-NEXT: } -> tensor<?x?xf32>
// CHECK-NEXT: return %0 : tensor<?x?xf32>
// CHECK-NEXT: }
// CHECK-NOT: func.func

#s = affine_map<() -> ()>
#b = affine_map<(d0) -> ()>
#v = affine_map<(d0) -> (d0)>
#r = affine_map<(d0, d1) -> (d1)>
#m = affine_map<(d0, d1) -> (d0, d1)>

// sum of a 0-d tensor: all loops parallel (there are none), reads its init.
func.func private @sum0(%x: tensor<f32>, %out: tensor<f32>) -> tensor<f32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%out : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#s, #s], iterator_types = []} ins(%x : tensor<f32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

func.func private @add0(%x: tensor<f32>, %y: tensor<f32>, %out: tensor<f32>) -> tensor<f32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []} ins(%x, %y : tensor<f32>, tensor<f32>) outs(%out : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

func.func private @bcast(%x: tensor<?xf32>, %y: tensor<f32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#v, #b, #v], iterator_types = ["parallel"]} ins(%x, %y : tensor<?xf32>, tensor<f32>) outs(%out : tensor<?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// sum of a 1-d tensor over no axes: one parallel loop, reads its init.
func.func private @sum1(%x: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%out : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%acc : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

func.func private @bcast_rows(%x: tensor<?x?xf32>, %y: tensor<?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#m, #r, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x?xf32>, tensor<?xf32>) outs(%out : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// x + (s + s) with s = sum(d): the sum feeds the add twice, the add is broadcast.
func.func @scalar(%d: tensor<f32>, %x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%d) {callee = @sum0} : (tensor<f32>) -> tensor<f32>
  %1 = "relax.call_tir"(%0, %0) {callee = @add0} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %2 = "relax.call_tir"(%x, %1) {callee = @bcast} : (tensor<?xf32, #relax.shape<["n"]>>, tensor<f32>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %2 : tensor<?xf32, #relax.shape<["n"]>>
}

// y + sum(v) over no axes, broadcast along the rows of y.
func.func @rows(%v: tensor<?xf32, #relax.shape<["m"]>>, %y: tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>> attributes {relax.function} {
  %0 = "relax.call_tir"(%v) {callee = @sum1} : (tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?xf32, #relax.shape<["m"]>>
  %1 = "relax.call_tir"(%y, %0) {callee = @bcast_rows} : (tensor<?x?xf32, #relax.shape<["n", "m"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  return %1 : tensor<?x?xf32, #relax.shape<["n", "m"]>>
}
