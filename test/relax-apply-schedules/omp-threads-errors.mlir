// RUN: relax-opt %s --verify-diagnostics --pass-pipeline='builtin.module(scf-forall-to-parallel, convert-scf-to-openmp, relax-omp-threads)' -o /dev/null

// convert-scf-to-openmp without num-threads gives the region no num_threads operand to
// replace: relax-omp-threads reports it at the loop.
func.func @f(%a: memref<?xf32>) {
  %cst = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  // expected-error @+1 {{omp.parallel without num_threads: run convert-scf-to-openmp{num-threads=1} before relax-omp-threads}}
  scf.forall (%i) in (%n) {
    memref.store %cst, %a[%i] : memref<?xf32>
  }
  return
}
