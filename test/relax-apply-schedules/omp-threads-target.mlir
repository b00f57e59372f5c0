// RUN: relax-opt %s --pass-pipeline='builtin.module(scf-forall-to-parallel, convert-scf-to-openmp{num-threads=1}, relax-omp-threads)' | FileCheck %s

// The module's thread global starts at the target's thread count (relax.target, recorded by
// compile()), not at this process's RELAX_MLIR_NUM_THREADS (1 under lit).
// CHECK: memref.global "public" @_mlir_relax_num_threads : memref<i32> = dense<3> {alignment = 4 : i64}
module attributes {relax.target = {kind = "cpu", isa = "avx2", threads = 3 : i64}} {
func.func @copy(%a: memref<?x3xi64>, %b: memref<?x3xi64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x3xi64>
  scf.forall (%i) in (%n) {
    %v = memref.load %a[%i, %c0] : memref<?x3xi64>
    memref.store %v, %b[%i, %c0] : memref<?x3xi64>
  }
  return
}
}
