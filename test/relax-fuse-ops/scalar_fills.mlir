// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-fuse-ops)' | FileCheck %s

// A scalar fill (a call_tir without operands making a 0-d tensor) shared by two layers'
// softmax prologues: the second prologue gets its own copy, so each layer's group takes a
// fill of its own instead of the first group keeping the shared one as an extra output (a
// multi-output kernel gets no row schedule). The elementwise user that feeds no reduction
// (@scale_out) keeps the original.

// CHECK-LABEL: func.func @layers(
// CHECK-NEXT: %[[F:.*]] = "relax.call_tir"() {callee = @fill,
// CHECK-NEXT: %[[G1:.*]] = "relax.call_tir"() {callee = @fill, {{.*}}relax.fusion_group = [[L1:[0-9]+]] : i64
// CHECK-NEXT: "relax.call_tir"(%arg0, %[[G1]]) {callee = @scale, {{.*}}relax.fusion_group = [[L1]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}) {callee = @softmax_rows, {{.*}}relax.fusion_group = [[L1]] : i64
// CHECK-NEXT: %[[G2:.*]] = "relax.call_tir"() {callee = @fill, {{.*}}relax.fusion_group = [[L2:[0-9]+]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}, %[[G2]]) {callee = @scale, {{.*}}relax.fusion_group = [[L2]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}) {callee = @softmax_rows, {{.*}}relax.fusion_group = [[L2]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}, %[[F]]) {callee = @scale_out
// CHECK-NOT: callee = @fill

func.func private @fill(%out: tensor<f32>) -> tensor<f32> attributes {relax.kernel, relax.kernel_kind = "elementwise"}
func.func private @scale(%x: tensor<?x8xf32>, %s: tensor<f32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel, relax.kernel_kind = "broadcast"}
func.func private @scale_out(%x: tensor<?x8xf32>, %s: tensor<f32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel, relax.kernel_kind = "broadcast"}
func.func private @softmax_rows(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel, relax.kernel_kind = "reduction"}

!t = tensor<?x8xf32, #relax.shape<["n", 8]>>
func.func @layers(%x: !t) -> !t attributes {relax.function} {
  %s = "relax.call_tir"() {callee = @fill, operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<f32>
  %0 = "relax.call_tir"(%x, %s) {callee = @scale, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t, tensor<f32>) -> !t
  %1 = "relax.call_tir"(%0) {callee = @softmax_rows, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t) -> !t
  %2 = "relax.call_tir"(%1, %s) {callee = @scale, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t, tensor<f32>) -> !t
  %3 = "relax.call_tir"(%2) {callee = @softmax_rows, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t) -> !t
  %4 = "relax.call_tir"(%3, %s) {callee = @scale_out, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t, tensor<f32>) -> !t
  return %4 : !t
}

// ReLU6's bounds after two convs (output-fusable anchors; MobileNetV2 after CSE): each
// epilogue gets its own copy of the shared fill, so each conv's group is single-output
// (the stem's kernel returned both bounds before and no schedule took it: plain loops).

// CHECK-LABEL: func.func @convs(
// CHECK-NEXT: %[[F:.*]] = "relax.call_tir"() {callee = @fill, {{.*}}relax.fusion_group = [[C2:[0-9]+]] : i64
// CHECK-NEXT: "relax.call_tir"(%arg0) {callee = @conv, {{.*}}relax.fusion_group = [[C1:[0-9]+]] : i64
// CHECK-NEXT: %[[F1:.*]] = "relax.call_tir"() {callee = @fill, {{.*}}relax.fusion_group = [[C1]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}, %[[F1]]) {callee = @scale, {{.*}}relax.fusion_group = [[C1]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}) {callee = @conv, {{.*}}relax.fusion_group = [[C2]] : i64
// CHECK-NEXT: "relax.call_tir"(%{{.*}}, %[[F]]) {callee = @scale, {{.*}}relax.fusion_group = [[C2]] : i64
// CHECK-NEXT: return

func.func private @conv(%x: tensor<?x8xf32>, %out: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable"}

func.func @convs(%x: !t) -> !t attributes {relax.function} {
  %s = "relax.call_tir"() {callee = @fill, operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<f32>
  %0 = "relax.call_tir"(%x) {callee = @conv, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t) -> !t
  %1 = "relax.call_tir"(%0, %s) {callee = @scale, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t, tensor<f32>) -> !t
  %2 = "relax.call_tir"(%1) {callee = @conv, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t) -> !t
  %3 = "relax.call_tir"(%2, %s) {callee = @scale, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (!t, tensor<f32>) -> !t
  return %3 : !t
}
