// RUN: cat %S/../Inputs/fusion_kernels.mlir %s | relax-opt - --pass-pipeline='builtin.module(relax-annotate-kernel-kinds)' | FileCheck %s

// Every kernel a call_tir calls gets relax.kernel_kind, read from its linalg IR (named
// ops through their generic form); the kernels are in ../Inputs/fusion_kernels.mlir and below.

// CHECK-DAG: func.func private @mm({{.*}}relax.kernel_kind = "output-fusable"
// CHECK-DAG: func.func private @bias_add({{.*}}relax.kernel_kind = "broadcast"
// CHECK-DAG: func.func private @relu({{.*}}relax.kernel_kind = "elementwise"
// CHECK-DAG: func.func private @sum_rows({{.*}}relax.kernel_kind = "reduction"
// CHECK-DAG: func.func private @mul_row({{.*}}relax.kernel_kind = "broadcast"
// CHECK-DAG: func.func private @slice_lo({{.*}}relax.kernel_kind = "injective"
// CHECK-DAG: func.func private @concat({{.*}}relax.kernel_kind = "injective"
// CHECK-DAG: func.func private @transpose({{.*}}relax.kernel_kind = "injective"
// CHECK-DAG: func.func private @softmax({{.*}}relax.kernel_kind = "reduction"
// CHECK-DAG: func.func private @gather({{.*}}relax.kernel_kind = "injective"
// CHECK-DAG: func.func private @pin_row({{.*}}relax.kernel_kind = "broadcast"
// CHECK-DAG: func.func private @shifted({{.*}}relax.kernel_kind = "injective"
// CHECK-DAG: func.func private @mm_generic({{.*}}relax.kernel_kind = "output-fusable"
// CHECK-DAG: func.func private @bmm({{.*}}relax.kernel_kind = "output-fusable"
// CHECK-DAG: func.func private @reduce_named({{.*}}relax.kernel_kind = "reduction"
// CHECK-DAG: func.func private @mm_then_sum({{.*}}relax.kernel_kind = "output-fusable"
// CHECK-DAG: func.func private @ew_then_transpose({{.*}}relax.kernel_kind = "injective"
// CHECK-DAG: func.func private @loop({{.*}}relax.kernel_kind = "opaque"
// CHECK-DAG: func.func private @calls({{.*}}relax.kernel_kind = "opaque"
// CHECK-DAG: func.func private @collapse({{.*}}relax.kernel_kind = "injective"
// Kernels no call_tir calls are left alone.
// CHECK-DAG: func.func private @add(%{{[^)]*}}) -> tensor<?x64xf32> attributes {relax.kernel} {


// Gather: rows picked by an index tensor (tensor.extract in the body).
func.func private @gather(%x: tensor<?x64xf32>, %idx: tensor<?xindex>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%idx : tensor<?xindex>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%i: index, %o: f32):
    %j = linalg.index 1 : index
    %v = tensor.extract %x[%i, %j] : tensor<?x64xf32>
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// Reads row 0 of a 1xN tensor for every row: broadcast through a constant index.
func.func private @pin_row(%x: tensor<1x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// An affine offset in an input map: a slice-like access, injective.
func.func private @shifted(%x: tensor<?x65xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1 + 1)>, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x65xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// A matmul written by hand as a generic (with an f16 -> f32 extension): output-fusable.
func.func private @mm_generic(%a: tensor<?x64xf16>, %b: tensor<64x64xf16>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<?x64xf16>, tensor<64x64xf16>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%x: f16, %y: f16, %o: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

func.func private @bmm(%a: tensor<?x?x64xf32>, %b: tensor<?x64x?xf32>, %out: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %r = linalg.batch_matmul ins(%a, %b : tensor<?x?x64xf32>, tensor<?x64x?xf32>) outs(%out : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

func.func private @reduce_named(%x: tensor<?x64xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.reduce ins(%x : tensor<?x64xf32>) outs(%out : tensor<?xf32>) dimensions = [1]
    (%a: f32, %o: f32) {
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    }
  return %r : tensor<?xf32>
}

// Mixed kernels take the most restrictive kind of their ops.
func.func private @mm_then_sum(%a: tensor<?x64xf32>, %w: tensor<64x64xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %m = linalg.matmul ins(%a, %w : tensor<?x64xf32>, tensor<64x64xf32>) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %r = linalg.reduce ins(%m : tensor<?x64xf32>) outs(%out : tensor<?xf32>) dimensions = [1]
    (%x: f32, %o: f32) {
      %s = arith.addf %x, %o : f32
      linalg.yield %s : f32
    }
  return %r : tensor<?xf32>
}
func.func private @ew_then_transpose(%x: tensor<?x64xf32>, %out: tensor<64x?xf32>) -> tensor<64x?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %a = linalg.map { math.exp } ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>)
  %r = linalg.transpose ins(%a : tensor<?x64xf32>) outs(%out : tensor<64x?xf32>) permutation = [1, 0]
  return %r : tensor<64x?xf32>
}

// Loops and calls: opaque.
func.func private @loop(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %out) -> tensor<?x64xf32> {
    scf.yield %x : tensor<?x64xf32>
  }
  return %r : tensor<?x64xf32>
}
func.func private @calls(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = func.call @relu(%x, %out) : (tensor<?x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

func.func private @collapse(%x: tensor<?x2x32xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c = tensor.collapse_shape %x [[0], [1, 2]] : tensor<?x2x32xf32> into tensor<?x64xf32>
  %r = linalg.copy ins(%c : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

func.func @all(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %v: tensor<?xf32>, %h: tensor<?x32xf32>, %s: tensor<?x?xf32>, %idx: tensor<?xindex>, %p: tensor<1x64xf32>, %x65: tensor<?x65xf32>, %x16: tensor<?x64xf16>, %w16: tensor<64x64xf16>, %ba: tensor<?x?x64xf32>, %bb: tensor<?x64x?xf32>, %x3: tensor<?x2x32xf32>) attributes {relax.function} {
  %0 = "relax.call_tir"(%x, %w) {callee = @mm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %1 = "relax.call_tir"(%x, %b) {callee = @bias_add, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %2 = "relax.call_tir"(%x) {callee = @relu, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %3 = "relax.call_tir"(%x) {callee = @sum_rows, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<?xf32>
  %4 = "relax.call_tir"(%x, %v) {callee = @mul_row, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>, tensor<?xf32>) -> tensor<?x64xf32>
  %5 = "relax.call_tir"(%x) {callee = @slice_lo, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<?x32xf32>
  %6 = "relax.call_tir"(%h, %h) {callee = @concat, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  %7 = "relax.call_tir"(%x) {callee = @transpose, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<64x?xf32>
  %8 = "relax.call_tir"(%s) {callee = @softmax, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %9 = "relax.call_tir"(%x, %idx) {callee = @gather, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>, tensor<?xindex>) -> tensor<?x64xf32>
  %10 = "relax.call_tir"(%p) {callee = @pin_row, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x64xf32>) -> tensor<?x64xf32>
  %11 = "relax.call_tir"(%x65) {callee = @shifted, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x65xf32>) -> tensor<?x64xf32>
  %12 = "relax.call_tir"(%x16, %w16) {callee = @mm_generic, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf16>, tensor<64x64xf16>) -> tensor<?x64xf32>
  %13 = "relax.call_tir"(%ba, %bb) {callee = @bmm, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?x64xf32>, tensor<?x64x?xf32>) -> tensor<?x?x?xf32>
  %14 = "relax.call_tir"(%x) {callee = @reduce_named, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<?xf32>
  %15 = "relax.call_tir"(%x, %w) {callee = @mm_then_sum, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?xf32>
  %16 = "relax.call_tir"(%x) {callee = @ew_then_transpose, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<64x?xf32>
  %17 = "relax.call_tir"(%x) {callee = @loop, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %18 = "relax.call_tir"(%x) {callee = @calls, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %19 = "relax.call_tir"(%x3) {callee = @collapse, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x2x32xf32>) -> tensor<?x64xf32>
  return
}
