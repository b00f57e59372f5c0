// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=3})' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=3}, relax-apply-schedules{target=avx512})' | FileCheck %s --check-prefix=SCHED
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=0})' | FileCheck %s --check-prefix=OFF
// RUN: not relax-opt %s --pass-pipeline='builtin.module(relax-specialize-ranges{gemv-max=-2})' 2>&1 | FileCheck %s --check-prefix=BAD

// A matmul with symbolic M becomes variants, tagged with their range of M, and a
// dispatcher with the kernel's name and signature that reads M and calls one of them.
// The decode GEMV (M <= 1) gets a variant of its own within the few-rows range (its rows
// loop outside the column tiles), small M (4..16) one (4-row register tiles), and M >= 40
// one that packs B (N a multiple of the 64-column register tile).
// CHECK-LABEL: func.func private @mm__m0_1(%arg0: tensor<?x512xf32>, %arg1: tensor<512x2048xf32>, %arg2: tensor<?x2048xf32>) -> tensor<?x2048xf32>
// CHECK-SAME: relax.range = {m_max = 1 : i64, m_min = 0 : i64}
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @mm__m2_3(%arg0: tensor<?x512xf32>, %arg1: tensor<512x2048xf32>, %arg2: tensor<?x2048xf32>) -> tensor<?x2048xf32>
// CHECK-SAME: relax.range = {m_max = 3 : i64, m_min = 2 : i64}
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @mm__m4_16(
// CHECK-SAME: relax.range = {m_max = 16 : i64, m_min = 4 : i64}
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @mm__m17_39(
// CHECK-SAME: relax.range = {m_max = 39 : i64, m_min = 17 : i64}
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @mm__m40(
// CHECK-SAME: relax.range = {m_min = 40 : i64}
// CHECK: linalg.matmul
// CHECK-LABEL: func.func private @mm(%arg0: tensor<?x512xf32>, %arg1: tensor<512x2048xf32>, %arg2: tensor<?x2048xf32>) -> tensor<?x2048xf32>
// CHECK-SAME: relax.range_dispatch
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[M:.*]] = tensor.dim %arg0, %[[C0]] : tensor<?x512xf32>
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[ONE:.*]] = arith.cmpi ule, %[[M]], %[[C1]] : index
// CHECK-NEXT: %[[R:.*]] = scf.if %[[ONE]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: %[[V:.*]] = func.call @mm__m0_1(%arg0, %arg1, %arg2)
// CHECK-NEXT: scf.yield %[[V]] : tensor<?x2048xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[FEW:.*]] = arith.cmpi ule, %[[M]], %[[C3]] : index
// CHECK-NEXT: %[[R0:.*]] = scf.if %[[FEW]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: %[[G:.*]] = func.call @mm__m2_3(%arg0, %arg1, %arg2)
// CHECK-NEXT: scf.yield %[[G]] : tensor<?x2048xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[SMALL:.*]] = arith.cmpi ule, %[[M]], %[[C16]] : index
// CHECK-NEXT: %[[R1:.*]] = scf.if %[[SMALL]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: %[[S:.*]] = func.call @mm__m4_16(%arg0, %arg1, %arg2)
// CHECK-NEXT: scf.yield %[[S]] : tensor<?x2048xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[C39:.*]] = arith.constant 39 : index
// CHECK-NEXT: %[[MID:.*]] = arith.cmpi ule, %[[M]], %[[C39]] : index
// CHECK-NEXT: %[[R2:.*]] = scf.if %[[MID]] -> (tensor<?x2048xf32>) {
// CHECK-NEXT: %[[T:.*]] = func.call @mm__m17_39(%arg0, %arg1, %arg2)
// CHECK-NEXT: scf.yield %[[T]] : tensor<?x2048xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[P:.*]] = func.call @mm__m40(%arg0, %arg1, %arg2)
// CHECK-NEXT: scf.yield %[[P]] : tensor<?x2048xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[R2]] : tensor<?x2048xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[R1]] : tensor<?x2048xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[R0]] : tensor<?x2048xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]] : tensor<?x2048xf32>
// CHECK-NOT: linalg.matmul

// Each variant gets the schedule of its range: the few-rows ones stream 8 rows of B per
// step (8 chained FMAs onto 32 columns, no M blocking; M <= 1 reads A's 8 values once per
// k block, outside the column loop, M = 2-3 per column tile, inside it, so that each tile
// of B serves every row from L1), the small-M one 4-row register tiles (M = 16: four full
// tiles; 6-row ones left 4 rows to 1-row tiles), the middle one the 6-row register tiles,
// the large-M one the same tiles on a packed copy of B (64-column micro-panels of all 512
// rows); the dispatcher itself is not scheduled.
// SCHED-LABEL: func.func private @mm__m0_1
// SCHED-SAME: relax.schedule = "gemv"
// SCHED: scf.for %{{.*}} = %c0 to %c512 step %c8
// SCHED: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// SCHED: vector.transfer_read {{.*}} : tensor<1x8xf32>, vector<1x8xf32>
// SCHED-NEXT: scf.for %{{.*}} = %c0 to %c2048 step %c32
// SCHED: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// SCHED-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// SCHED-LABEL: func.func private @mm__m2_3
// SCHED-SAME: relax.schedule = "gemv"
// SCHED: scf.for %{{.*}} = %c0 to %c512 step %c8
// SCHED: scf.for %{{.*}} = %c0 to %c2048 step %c32
// SCHED: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// SCHED: vector.transfer_read {{.*}} : tensor<1x8xf32>, vector<1x8xf32>
// SCHED: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// SCHED-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// SCHED-LABEL: func.func private @mm__m4_16
// SCHED-SAME: relax.schedule = "matmul"
// SCHED-NOT: tensor<4x512x64xf32>
// SCHED: scf.for %{{.*}} = %c0 to %{{.*}} step %c4
// SCHED: iter_args({{.*}}) -> (vector<4x64xf32>)
// SCHED-COUNT-4: vector.fma {{.*}} : vector<64xf32>
// SCHED-NOT: vector<6x64xf32>
// SCHED: iter_args({{.*}}) -> (vector<1x256xf32>)
// SCHED-LABEL: func.func private @mm__m17_39
// SCHED-SAME: relax.schedule = "matmul"
// SCHED-NOT: tensor<4x512x64xf32>
// SCHED: iter_args({{.*}}) -> (vector<6x64xf32>)
// SCHED-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// SCHED-LABEL: func.func private @mm__m40
// SCHED-SAME: relax.schedule = "matmul"
// SCHED: tensor.empty() : tensor<4x512x64xf32>
// SCHED: iter_args({{.*}}) -> (vector<6x64xf32>)
// SCHED-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// SCHED-LABEL: func.func private @mm(
// SCHED-NOT: relax.schedule
// SCHED: scf.if
// SCHED-LABEL: func.func private @mm_static
// SCHED-SAME: relax.schedule = "gemv"

// OFF-NOT: relax.range
// OFF-NOT: __m
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}

// Static M: nothing to dispatch on (M = 1 gets the few-rows schedule directly).
// CHECK-LABEL: func.func private @mm_static(
// CHECK-NOT: relax.range
// CHECK: linalg.matmul
func.func private @mm_static(%a: tensor<1x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<1x2048xf32>) -> tensor<1x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<1x2048xf32>) -> tensor<1x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<1x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<1x2048xf32>) -> tensor<1x2048xf32>
  return %1 : tensor<1x2048xf32>
}

// A batched product: M is the second dim of A (no small-M variant: unmeasured); with N
// symbolic, M >= 40 packs B per batch as the 2-D product does.
// CHECK-LABEL: func.func private @bmm__m0_1(
// CHECK-LABEL: func.func private @bmm__m2_3(
// CHECK-LABEL: func.func private @bmm__m4_39(
// CHECK-LABEL: func.func private @bmm__m40(
// CHECK-LABEL: func.func private @bmm(
// CHECK-SAME: relax.range_dispatch
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: tensor.dim %arg0, %[[C1]] : tensor<4x?x?xf32>
// SCHED-LABEL: func.func private @bmm__m0_1(
// SCHED-SAME: relax.schedule = "batch_gemv"
// SCHED-LABEL: func.func private @bmm__m2_3(
// SCHED-SAME: relax.schedule = "batch_gemv"
// SCHED-LABEL: func.func private @bmm__m4_39(
// SCHED-SAME: relax.schedule = "batch_matmul"
// SCHED-NOT: tensor.empty
// SCHED-LABEL: func.func private @bmm__m40(
// SCHED-SAME: relax.schedule = "batch_matmul"
// SCHED: tensor.empty() : tensor<4x1x512x64xf32>
// SCHED: iter_args({{.*}}) -> (vector<1x6x64xf32>)
func.func private @bmm(%a: tensor<4x?x?xf32>, %b: tensor<4x?x?xf32>, %c: tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
  %1 = linalg.batch_matmul ins(%a, %b : tensor<4x?x?xf32>, tensor<4x?x?xf32>) outs(%0 : tensor<4x?x?xf32>) -> tensor<4x?x?xf32>
  return %1 : tensor<4x?x?xf32>
}

// No matmul schedule (f64), or A computed inside the kernel: left as it was.
// CHECK-LABEL: func.func private @mm_f64(
// CHECK-NOT: relax.range
// CHECK: linalg.matmul
func.func private @mm_f64(%a: tensor<?x8xf64>, %b: tensor<8x8xf64>, %c: tensor<?x8xf64>) -> tensor<?x8xf64>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f64
  %0 = linalg.fill ins(%cst : f64) outs(%c : tensor<?x8xf64>) -> tensor<?x8xf64>
  %1 = linalg.matmul ins(%a, %b : tensor<?x8xf64>, tensor<8x8xf64>) outs(%0 : tensor<?x8xf64>) -> tensor<?x8xf64>
  return %1 : tensor<?x8xf64>
}
// BAD: gemv-max must be -1 or >= 0, got -2
