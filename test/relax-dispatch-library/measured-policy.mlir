// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=measured split=false table=%S/Inputs/calibration.json})' | FileCheck %s
// RUN: not %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=bogus})' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=measured table=%S/Inputs/missing.json})' 2>&1 | FileCheck %s --check-prefix=MISSING

// policy=measured: the table says generated code beats BLAS for M in [4, 64] at (K, N) =
// (512, 2048) (and in [2, 3] or [8, 32] at (2048, 512)). M = 16 and M = 64 (static), and
// M bounded by 40, stay generated; M = 1, M = 65 and an unbounded M go to BLAS. (1024, 1024)
// is within a factor 2 of (512, 2048) in both K and N: that class decides M = 16 there.

// CHECK-LABEL: func.func @static_m(
// CHECK-NEXT: %0 = "relax.matmul"(%arg0, %arg3) : (tensor<16x512xf32>, tensor<512x2048xf32>) -> tensor<16x2048xf32>
// CHECK-NEXT: %1 = "relax.matmul"(%arg1, %arg3) : (tensor<64x512xf32>, tensor<512x2048xf32>) -> tensor<64x2048xf32>
// CHECK-NEXT: %2 = "relax.call_dps_library"(%arg2, %arg3) {callee = "relax_blas_matmul_22_f32", operandSegmentSizes = {{.*}}} : (tensor<1x512xf32>, tensor<512x2048xf32>) -> tensor<1x2048xf32>
// CHECK-NEXT: %3 = "relax.call_dps_library"(%arg4, %arg3) {callee = "relax_blas_matmul_22_f32", operandSegmentSizes = {{.*}}} : (tensor<65x512xf32>, tensor<512x2048xf32>) -> tensor<65x2048xf32>
// CHECK-NEXT: %4 = "relax.matmul"(%arg5, %arg6) : (tensor<16x1024xf32>, tensor<1024x1024xf32>) -> tensor<16x1024xf32>
// CHECK-NEXT: return
func.func @static_m(%a16: tensor<16x512xf32>, %a64: tensor<64x512xf32>, %a1: tensor<1x512xf32>, %w: tensor<512x2048xf32>,
                    %a65: tensor<65x512xf32>, %s16: tensor<16x1024xf32>, %sq: tensor<1024x1024xf32>)
    -> (tensor<16x2048xf32>, tensor<64x2048xf32>, tensor<1x2048xf32>, tensor<65x2048xf32>, tensor<16x1024xf32>) attributes {relax.function} {
  %0 = "relax.matmul"(%a16, %w) : (tensor<16x512xf32>, tensor<512x2048xf32>) -> tensor<16x2048xf32>
  %1 = "relax.matmul"(%a64, %w) : (tensor<64x512xf32>, tensor<512x2048xf32>) -> tensor<64x2048xf32>
  %2 = "relax.matmul"(%a1, %w) : (tensor<1x512xf32>, tensor<512x2048xf32>) -> tensor<1x2048xf32>
  %3 = "relax.matmul"(%a65, %w) : (tensor<65x512xf32>, tensor<512x2048xf32>) -> tensor<65x2048xf32>
  %4 = "relax.matmul"(%s16, %sq) : (tensor<16x1024xf32>, tensor<1024x1024xf32>) -> tensor<16x1024xf32>
  return %0, %1, %2, %3, %4 : tensor<16x2048xf32>, tensor<64x2048xf32>, tensor<1x2048xf32>, tensor<65x2048xf32>, tensor<16x1024xf32>
}

// -----

// Symbolic M covers [1, bound]: "b" <= 40 gives [1, 40], not inside [4, 64] (BLAS wins at
// M = 1): BLAS; an unbounded M: BLAS. At (2048, 512) a static M = 3 is inside [2, 3]:
// generated (the bias add stays a relax op); "s" <= 3 gives [1, 3]: BLAS, with its bias. At
// (128, 128) the table has [1, 256]: "t" <= 100 stays generated, the unbounded "u" goes to BLAS.

// CHECK-LABEL: func.func @symbolic_m(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg2) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: %1 = "relax.call_dps_library"(%arg1, %arg2) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: %2 = "relax.matmul"(%arg3, %arg4) : (tensor<3x2048xf32>, tensor<2048x512xf32>) -> tensor<3x512xf32>
// CHECK-NEXT: %3 = "relax.add"(%2, %arg5)
// CHECK-NEXT: %4 = "relax.call_dps_library"(%arg6, %arg4, %arg5) {callee = "relax_blas_matmul_bias_22_f32"
// CHECK-NEXT: %5 = "relax.matmul"(%arg7, %arg8) : (tensor<?x128xf32, #relax.shape<["t", 128]>>, tensor<128x128xf32>) -> tensor<?x128xf32, #relax.shape<["t", 128]>>
// CHECK-NEXT: %6 = "relax.call_dps_library"(%arg9, %arg8) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: return
func.func @symbolic_m(%b: tensor<?x512xf32, #relax.shape<["b", 512]>>, %u: tensor<?x512xf32, #relax.shape<["u", 512]>>,
                      %w: tensor<512x2048xf32>, %a3: tensor<3x2048xf32>, %w2: tensor<2048x512xf32>, %bias: tensor<512xf32>,
                      %s: tensor<?x2048xf32, #relax.shape<["s", 2048]>>, %t: tensor<?x128xf32, #relax.shape<["t", 128]>>,
                      %sq: tensor<128x128xf32>, %v: tensor<?x128xf32, #relax.shape<["u", 128]>>)
    -> (tensor<?x2048xf32, #relax.shape<["b", 2048]>>, tensor<?x2048xf32, #relax.shape<["u", 2048]>>, tensor<3x512xf32>, tensor<?x512xf32, #relax.shape<["s", 512]>>,
        tensor<?x128xf32, #relax.shape<["t", 128]>>, tensor<?x128xf32, #relax.shape<["u", 128]>>)
    attributes {relax.function, relax.upper_bounds = {b = 40 : i64, s = 3 : i64, t = 100 : i64}} {
  %0 = "relax.matmul"(%b, %w) : (tensor<?x512xf32, #relax.shape<["b", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["b", 2048]>>
  %1 = "relax.matmul"(%u, %w) : (tensor<?x512xf32, #relax.shape<["u", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["u", 2048]>>
  %2 = "relax.matmul"(%a3, %w2) : (tensor<3x2048xf32>, tensor<2048x512xf32>) -> tensor<3x512xf32>
  %3 = "relax.add"(%2, %bias) : (tensor<3x512xf32>, tensor<512xf32>) -> tensor<3x512xf32>
  %4 = "relax.matmul"(%s, %w2) : (tensor<?x2048xf32, #relax.shape<["s", 2048]>>, tensor<2048x512xf32>) -> tensor<?x512xf32, #relax.shape<["s", 512]>>
  %5 = "relax.add"(%4, %bias) : (tensor<?x512xf32, #relax.shape<["s", 512]>>, tensor<512xf32>) -> tensor<?x512xf32, #relax.shape<["s", 512]>>
  %6 = "relax.matmul"(%t, %sq) : (tensor<?x128xf32, #relax.shape<["t", 128]>>, tensor<128x128xf32>) -> tensor<?x128xf32, #relax.shape<["t", 128]>>
  %7 = "relax.matmul"(%v, %sq) : (tensor<?x128xf32, #relax.shape<["u", 128]>>, tensor<128x128xf32>) -> tensor<?x128xf32, #relax.shape<["u", 128]>>
  return %0, %1, %3, %5, %6, %7 : tensor<?x2048xf32, #relax.shape<["b", 2048]>>, tensor<?x2048xf32, #relax.shape<["u", 2048]>>, tensor<3x512xf32>, tensor<?x512xf32, #relax.shape<["s", 512]>>, tensor<?x128xf32, #relax.shape<["t", 128]>>, tensor<?x128xf32, #relax.shape<["u", 128]>>
}

// BAD: policy must be 'flops' or 'measured', got 'bogus'
// MISSING: dispatch calibration table {{.*}}Inputs/missing.json: [Errno 2] No such file or directory
