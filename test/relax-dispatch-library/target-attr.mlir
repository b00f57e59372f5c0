// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library)' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-dispatch-library{policy=flops})' | FileCheck %s --check-prefix=OPT

// The policy, the ISA and the CPU model come from the module's relax.target (compile()
// records it), not from this host or the environment: the measured policy on an SSE CPU
// finds no calibration table of its ISA (the checked-in ones are AVX-512), so the module
// says why and the min-flops rule dispatches the matmul.
// CHECK: module attributes {relax.dispatch_note = "dispatch_calibration.json: calibration measured on {{.*}}this host is sse (a test CPU): min-flops rule", relax.libraries = ["relax_blas"], relax.target =
// CHECK-LABEL: func.func @mm(
// CHECK-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32"
// OPT-LABEL: func.func @mm(
// OPT-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32"
module attributes {relax.target = {kind = "cpu", arch = "x86-64", chip = "a test CPU", vendor = "GenuineIntel",
                                   isa = "sse", threads = 1 : i64, blas = "openblas", dispatch_policy = "measured"}} {
func.func @mm(%a: tensor<?x512xf32, #relax.shape<["m", 512]>>, %b: tensor<512x256xf32>) -> tensor<?x256xf32, #relax.shape<["m", 256]>> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x512xf32, #relax.shape<["m", 512]>>, tensor<512x256xf32>) -> tensor<?x256xf32, #relax.shape<["m", 256]>>
  return %0 : tensor<?x256xf32, #relax.shape<["m", 256]>>
}
}

// -----

// A target without library dispatch (dispatch_policy = "off": a GPU target, or
// options={"dispatch": False}): the matmul stays; an explicit policy option still dispatches.
// CHECK-LABEL: func.func @off(
// CHECK-NEXT: %0 = "relax.matmul"(%arg0, %arg1)
// OPT-LABEL: func.func @off(
// OPT-NEXT: %0 = "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_blas_matmul_22_f32"
module attributes {relax.target = {kind = "cpu", isa = "avx2", threads = 1 : i64, dispatch_policy = "off"}} {
func.func @off(%a: tensor<?x512xf32, #relax.shape<["m", 512]>>, %b: tensor<512x256xf32>) -> tensor<?x256xf32, #relax.shape<["m", 256]>> attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<?x512xf32, #relax.shape<["m", 512]>>, tensor<512x256xf32>) -> tensor<?x256xf32, #relax.shape<["m", 256]>>
  return %0 : tensor<?x256xf32, #relax.shape<["m", 256]>>
}
}

