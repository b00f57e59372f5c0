// RUN: rm -f %t.db
// RUN: %python %S/../Inputs/record_decision.py %s %t.db l,l,l,l g,g,g,g g,g,l,l l,g,g,l g,l,g,l -
// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{tuning-db=%t.db})' | FileCheck %s
// A database that does not exist: the min-flops policy, no notes.
// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{tuning-db=%t.none.db})' | FileCheck %s --check-prefix=NODB --implicit-check-not=relax.dispatch_note
// RUN: not %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{tuning-db=%s})' 2>&1 | FileCheck %s --check-prefix=BAD
// The tuner's mode: nothing dispatched, every match marked with its key.
// RUN: %relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{mark-candidates=true})' | FileCheck %s --check-prefix=MARK

// Decisions recorded per match (n = 1, 16, 128, 512: the bucket le512), each followed:
// all library: dispatched; all generated: stays a relax op; generated at the small sizes,
// library at the large ones: split per call at the cut between 16 and 128 (isqrt(16 * 128)
// = 45); generated at n = 16 and 128 only, on M = 2*n (measured at M = 2, 32, 256, 1024):
// M in [9, 512] (cuts at isqrt(2 * 32), isqrt(32 * 256), isqrt(256 * 1024)); a static M (the alternating
// record says nothing about one M: the winner at the largest size, library); no record:
// the min-flops policy (dispatched), and the note says so. The key renames the symbols: a
// match of another symbol with the same operand types and chain shares the record.

// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1, %arg2) {callee = "relax_blas_matmul_bias_22_f32", {{.*}}relax.dispatch_note = "tuning db (le512): library at every measured size (n=1,16,128,512)"
// CHECK-NEXT: %1 = "relax.matmul"(%0, %arg3) {relax.dispatch_note = "tuning db (le512): generated at every measured size (n=1,16,128,512)"}
// CHECK-NEXT: %2 = "relax.add"(%1, %arg4)
// CHECK-NEXT: %3 = "relax.matmul"(%arg0, %arg5) {relax.dispatch_note = "tuning db (le512): library at n=128,512, generated at n=1,16: split per call, generated for M in [1, 45]", relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}1, 45]], library = "relax_blas"}}
// CHECK-NEXT: %4 = "relax.matmul"(%arg6, %arg5) {relax.dispatch_note = "tuning db (le512): library at n=1,512, generated at n=16,128: split per call, generated for M in [9, 512]", relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}9, 512]], library = "relax_blas"}}
// CHECK-NEXT: %5 = "relax.call_dps_library"(%arg7, %arg5) {callee = "relax_blas_matmul_22_f32", {{.*}}relax.dispatch_note = "tuning db (le512): library at n=16,512, generated at n=1,128: library, the winner at the largest size (n=512)"
// CHECK-NEXT: %6 = "relax.call_dps_library"(%arg8, %arg1) {callee = "relax_blas_matmul_22_f32", {{.*}}relax.dispatch_note = "tuning db (le512): no decision for this match: the min-flops policy"

// NODB-LABEL: func.func @main(
// NODB-NEXT: "relax.call_dps_library"(%arg0, %arg1, %arg2) {callee = "relax_blas_matmul_bias_22_f32",
// NODB-NEXT: "relax.call_dps_library"

// BAD: error: tuning database '{{.*}}tuning-db.mlir': file is not a database

// MARK-LABEL: func.func @main(
// MARK-NEXT: %0 = "relax.matmul"(%arg0, %arg1) {relax.dispatch_candidate = {callee = "relax_blas_matmul_bias_22_f32", key = "blas_matmul_bias(f32[s0,64], f32[64,128], f32[128]) -> f32[s0,128]", library = "relax_blas", types = [tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x128xf32>, tensor<128xf32>, tensor<?x128xf32, #relax.shape<["n", 128]>>]}}
// MARK-NEXT: %1 = "relax.add"(%0, %arg2)
// MARK-NEXT: %2 = "relax.matmul"(%1, %arg3) {relax.dispatch_candidate = {callee = "relax_blas_matmul_bias_22_f32", key = "blas_matmul_bias(f32[s0,128], f32[128,64], f32[64]) -> f32[s0,64]"
// MARK-NOT: relax.call_dps_library
// MARK: return
func.func @main(%x: tensor<?x64xf32, #relax.shape<["n", 64]>>, %w1: tensor<64x128xf32>, %b1: tensor<128xf32>,
                %w2: tensor<128x64xf32>, %b2: tensor<64xf32>, %w3: tensor<64x32xf32>, %y: tensor<?x64xf32, #relax.shape<["2*n", 64]>>,
                %z: tensor<8x64xf32>, %u: tensor<?x64xf32, #relax.shape<["m", 64]>>)
    -> (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x32xf32, #relax.shape<["n", 32]>>, tensor<?x32xf32, #relax.shape<["2*n", 32]>>,
        tensor<8x32xf32>, tensor<?x128xf32, #relax.shape<["m", 128]>>)
    attributes {relax.function, relax.upper_bounds = {n = 512 : i64, m = 100 : i64}} {
  %0 = "relax.matmul"(%x, %w1) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %1 = "relax.add"(%0, %b1) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128xf32>) -> tensor<?x128xf32, #relax.shape<["n", 128]>>
  %2 = "relax.matmul"(%1, %w2) : (tensor<?x128xf32, #relax.shape<["n", 128]>>, tensor<128x64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %3 = "relax.add"(%2, %b2) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #relax.shape<["n", 64]>>
  %4 = "relax.matmul"(%x, %w3) : (tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #relax.shape<["n", 32]>>
  %5 = "relax.matmul"(%y, %w3) : (tensor<?x64xf32, #relax.shape<["2*n", 64]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #relax.shape<["2*n", 32]>>
  %6 = "relax.matmul"(%z, %w3) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %7 = "relax.matmul"(%u, %w1) : (tensor<?x64xf32, #relax.shape<["m", 64]>>, tensor<64x128xf32>) -> tensor<?x128xf32, #relax.shape<["m", 128]>>
  return %3, %4, %5, %6, %7 : tensor<?x64xf32, #relax.shape<["n", 64]>>, tensor<?x32xf32, #relax.shape<["n", 32]>>, tensor<?x32xf32, #relax.shape<["2*n", 32]>>,
        tensor<8x32xf32>, tensor<?x128xf32, #relax.shape<["m", 128]>>
}
