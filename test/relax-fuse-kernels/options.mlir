// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/rmsnorm.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops{enable=false}, relax-fuse-kernels)' | FileCheck %s --check-prefix=OFF
// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/rmsnorm.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels{fuse-linalg=false})' | FileCheck %s --check-prefix=PLAIN
// RUN: cat %S/../Inputs/fusion_kernels.mlir %S/../relax-fuse-ops/rmsnorm.mlir | relax-opt - --pass-pipeline='builtin.module(relax-fuse-ops, relax-fuse-kernels{enable=false})' | FileCheck %s --check-prefix=MARKED

// The switches: relax-fuse-ops{enable=false} leaves every call alone; fuse-linalg=false
// merges each group into one kernel but keeps one linalg op per member (no upstream
// elementwise fusion); relax-fuse-kernels{enable=false} leaves the groups marked.

// OFF-LABEL: func.func @rms_norm(
// OFF-NOT: fusion_group
// OFF-NOT: @fused_
// OFF: return

// PLAIN-LABEL: func.func @rms_norm(
// PLAIN-NEXT: "relax.call_tir"(%arg0) {callee = @fused_mul_sum_rows,
// PLAIN-NEXT: "relax.call_tir"(%0, %arg0, %arg1) {callee = @fused_rsqrt_mean_mul_row_mul_col,
// PLAIN-LABEL: func.func private @fused_mul_sum_rows(
// PLAIN: linalg.generic
// PLAIN-SAME: ["parallel", "parallel"]
// PLAIN: linalg.generic
// PLAIN-SAME: ["parallel", "reduction"]
// PLAIN-LABEL: func.func private @fused_rsqrt_mean_mul_row_mul_col(
// PLAIN-SAME: %arg0: tensor<?xf32>, %arg1: tensor<?x64xf32>, %arg2: tensor<64xf32>, %arg3: tensor<?x64xf32>
// PLAIN-COUNT-3: linalg.generic
// PLAIN: return

// MARKED-LABEL: func.func @rms_norm(
// MARKED: callee = @mul, {{.*}}relax.fusion_group = 0
// MARKED-NOT: @fused_
