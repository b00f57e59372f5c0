// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s --check-prefix=OPT

// The SIMD unit comes from the module's relax.target (compile() records it; here an AVX2
// CPU whatever this host is): 6 x 16 register tiles (16 ymm registers), 32-wide GEMV rows.
// An explicit target= option still wins.
// CHECK: module attributes {relax.target =
// CHECK-LABEL: func.func private @mm
// CHECK-SAME: relax.schedule = "matmul"
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<6x16xf32>)
// CHECK-COUNT-6: vector.fma {{.*}} : vector<16xf32>
// OPT-LABEL: func.func private @mm
// OPT: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<6x64xf32>)

module attributes {relax.target = {kind = "cpu", arch = "x86-64-v3", chip = "a test CPU", vendor = "GenuineIntel",
                                   isa = "avx2", vector_bits = 256 : i64, simd_registers = 16 : i64, fma = true,
                                   threads = 1 : i64, blas = "openblas", dispatch_policy = "flops"}} {
func.func private @mm(%a: tensor<?x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<?x2048xf32>) -> tensor<?x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<?x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<?x2048xf32>) -> tensor<?x2048xf32>
  return %1 : tensor<?x2048xf32>
}
}
