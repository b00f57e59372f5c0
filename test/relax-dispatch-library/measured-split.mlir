// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=measured table=%S/Inputs/calibration.json})' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=measured table=%S/Inputs/calibration.json}, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels)' | FileCheck %s --check-prefix=KERNEL
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=measured table=%S/Inputs/calibration-rvv.json})' | FileCheck %s --check-prefix=ISA

// policy=measured, run-time split: a symbolic M whose range meets both the table's
// generated-wins ranges and the M where BLAS wins stays a relax op, marked with the library
// symbols and the generated ranges (clipped to the bound); the module records relax_blas.
// The table (Inputs/calibration.json): (512, 2048) generated for M in [4, 64]; (2048, 512)
// in [2, 3] and [8, 32].

// CHECK: module attributes {relax.libraries = ["relax_blas"]}
// CHECK-LABEL: func.func @split(
// CHECK-NEXT: %0 = "relax.matmul"(%arg0, %arg2) {relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}4, 64]], library = "relax_blas"}}
// CHECK-NEXT: %1 = "relax.matmul"(%arg1, %arg2) {relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}4, 40]], library = "relax_blas"}}
// CHECK-NEXT: %2 = "relax.matmul"(%arg3, %arg4) {relax.dispatch_split = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}2, 3], [8, 32]], library = "relax_blas"}}
// CHECK-NEXT: %3 = "relax.add"(%2, %arg5)
// CHECK-NEXT: return %0, %1, %3

// The mark travels to the kernel (relax-legalize), then to the fused matmul + bias kernel
// (relax-fuse-kernels): relax-specialize-ranges splits that kernel by M.
// KERNEL-LABEL: func.func @split(
// KERNEL-NEXT: "relax.call_tir"(%arg0, %arg2) {callee = @relax_matmul_f32_Dx512_512x2048,
// KERNEL-NEXT: "relax.call_tir"(%arg1, %arg2) {callee = @relax_matmul_f32_Dx512_512x2048_1,
// KERNEL-NEXT: "relax.call_tir"(%arg3, %arg4, %arg5) {callee = @fused_matmul_add,
// KERNEL-DAG: func.func private @relax_matmul_f32_Dx512_512x2048({{.*}} attributes {{{.*}}relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}4, 64]], library = "relax_blas"}, relax.kernel,
// KERNEL-DAG: func.func private @relax_matmul_f32_Dx512_512x2048_1({{.*}} attributes {{{.*}}relax.dispatch_split = {callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}4, 40]], library = "relax_blas"}, relax.kernel,
// KERNEL-DAG: func.func private @fused_matmul_add({{.*}} attributes {{{.*}}relax.dispatch_split = {bias_callee = "relax_blas_matmul_bias_22_f32", callee = "relax_blas_matmul_22_f32", generated_m = {{\[\[}}2, 3], [8, 32]], library = "relax_blas"}, relax.kernel,

// A table measured on another ISA does not apply: the min-flops rule decides (every match
// here is dispatched) and the module says why.
// ISA: module attributes {relax.dispatch_note = "calibration-rvv.json: calibration measured on rvv (lit test table measured on another ISA (not a measurement)), this host is {{.*}}: min-flops rule", relax.libraries = ["relax_blas"]}
// ISA-LABEL: func.func @split(
// ISA-NEXT: "relax.call_dps_library"(%arg0, %arg2) {callee = "relax_blas_matmul_22_f32"
// ISA-NEXT: "relax.call_dps_library"(%arg1, %arg2) {callee = "relax_blas_matmul_22_f32"
// ISA-NEXT: "relax.call_dps_library"(%arg3, %arg4, %arg5) {callee = "relax_blas_matmul_bias_22_f32"
func.func @split(%u: tensor<?x512xf32, #relax.shape<["u", 512]>>, %b: tensor<?x512xf32, #relax.shape<["b", 512]>>,
                 %w: tensor<512x2048xf32>, %s: tensor<?x2048xf32, #relax.shape<["s", 2048]>>, %w2: tensor<2048x512xf32>,
                 %bias: tensor<512xf32>)
    -> (tensor<?x2048xf32, #relax.shape<["u", 2048]>>, tensor<?x2048xf32, #relax.shape<["b", 2048]>>, tensor<?x512xf32, #relax.shape<["s", 512]>>)
    attributes {relax.function, relax.upper_bounds = {b = 40 : i64}} {
  %0 = "relax.matmul"(%u, %w) : (tensor<?x512xf32, #relax.shape<["u", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["u", 2048]>>
  %1 = "relax.matmul"(%b, %w) : (tensor<?x512xf32, #relax.shape<["b", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["b", 2048]>>
  %2 = "relax.matmul"(%s, %w2) : (tensor<?x2048xf32, #relax.shape<["s", 2048]>>, tensor<2048x512xf32>) -> tensor<?x512xf32, #relax.shape<["s", 512]>>
  %3 = "relax.add"(%2, %bias) : (tensor<?x512xf32, #relax.shape<["s", 512]>>, tensor<512xf32>) -> tensor<?x512xf32, #relax.shape<["s", 512]>>
  return %0, %1, %3 : tensor<?x2048xf32, #relax.shape<["u", 2048]>>, tensor<?x2048xf32, #relax.shape<["b", 2048]>>, tensor<?x512xf32, #relax.shape<["s", 512]>>
}

// -----

// Not split: M static (decided at compile time), M bounded inside one generated range
// (g <= 100 at (128, 128), whose class has [1, 256]), M bounded where BLAS wins for every M it
// can have (t <= 3 at (512, 2048)), f64 (the table's classes are f32: min-flops).
// CHECK-LABEL: func.func @not_split(
// CHECK-NEXT: %0 = "relax.matmul"(%arg0, %arg1) : (tensor<16x512xf32>
// CHECK-NEXT: %1 = "relax.matmul"(%arg2, %arg6) : (tensor<?x128xf32, #relax.shape<["g", 128]>>
// CHECK-NEXT: %2 = "relax.call_dps_library"(%arg3, %arg1) {callee = "relax_blas_matmul_22_f32"
// CHECK-NEXT: %3 = "relax.call_dps_library"(%arg4, %arg5) {callee = "relax_blas_matmul_22_f64"
// CHECK-NEXT: return
func.func @not_split(%a16: tensor<16x512xf32>, %w: tensor<512x2048xf32>, %g: tensor<?x128xf32, #relax.shape<["g", 128]>>,
                     %t: tensor<?x512xf32, #relax.shape<["t", 512]>>, %d: tensor<?x512xf64, #relax.shape<["d", 512]>>,
                     %wd: tensor<512x2048xf64>, %sq: tensor<128x128xf32>)
    -> (tensor<16x2048xf32>, tensor<?x128xf32, #relax.shape<["g", 128]>>, tensor<?x2048xf32, #relax.shape<["t", 2048]>>,
        tensor<?x2048xf64, #relax.shape<["d", 2048]>>)
    attributes {relax.function, relax.upper_bounds = {g = 100 : i64, t = 3 : i64}} {
  %0 = "relax.matmul"(%a16, %w) : (tensor<16x512xf32>, tensor<512x2048xf32>) -> tensor<16x2048xf32>
  %1 = "relax.matmul"(%g, %sq) : (tensor<?x128xf32, #relax.shape<["g", 128]>>, tensor<128x128xf32>) -> tensor<?x128xf32, #relax.shape<["g", 128]>>
  %2 = "relax.matmul"(%t, %w) : (tensor<?x512xf32, #relax.shape<["t", 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #relax.shape<["t", 2048]>>
  %3 = "relax.matmul"(%d, %wd) : (tensor<?x512xf64, #relax.shape<["d", 512]>>, tensor<512x2048xf64>) -> tensor<?x2048xf64, #relax.shape<["d", 2048]>>
  return %0, %1, %2, %3 : tensor<16x2048xf32>, tensor<?x128xf32, #relax.shape<["g", 128]>>, tensor<?x2048xf32, #relax.shape<["t", 2048]>>, tensor<?x2048xf64, #relax.shape<["d", 2048]>>
}
