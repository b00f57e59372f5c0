// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(scf-forall-to-parallel, convert-scf-to-openmp{num-threads=1}, relax-omp-threads, canonicalize)' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(scf-forall-to-parallel, convert-scf-to-openmp{num-threads=1}, relax-omp-threads{min-bytes=0 min-flops=0}, canonicalize)' | FileCheck %s --check-prefix=ALL

// relax-omp-threads: each omp.parallel takes the module's run-time thread count (the
// global, declared once, initial value the count at compile time: 1 under lit) when the
// memrefs it uses (defined outside it, each once: %a read, %b written) hold at least
// min-bytes (default 1 MiB), else 1 thread; never more than its loop's iterations (%n).
// CHECK: memref.global "public" @_mlir_relax_num_threads : memref<i32> = dense<1> {alignment = 4 : i64}
// CHECK-LABEL: func.func @copy
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: %[[D0:.*]] = memref.dim %arg0, %c0
// CHECK: %[[B0:.*]] = arith.muli %[[D0]], %c24 : index
// CHECK: %[[D1:.*]] = memref.dim %arg1, %c0
// CHECK: %[[B1:.*]] = arith.muli %[[D1]], %c24 : index
// CHECK: %[[W:.*]] = arith.addi %[[B0]], %[[B1]] : index
// CHECK: %[[G:.*]] = memref.get_global @_mlir_relax_num_threads : memref<i32>
// CHECK: %[[L:.*]] = memref.load %[[G]][] : memref<i32>
// CHECK: %[[T:.*]] = arith.maxsi %[[L]], %c1_i32 : i32
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %[[W]], %c1048576 : index
// CHECK: %[[SEL:.*]] = arith.select %[[BIG]], %[[T]], %c1_i32 : i32
// CHECK: %[[TR:.*]] = arith.maxsi %[[N]], %c1 : index
// CHECK: %[[TI:.*]] = arith.index_cast %[[TR]] : index to i32
// CHECK: %[[NT:.*]] = arith.minsi %[[SEL]], %[[TI]] : i32
// CHECK: omp.parallel num_threads(%[[NT]] : i32)
// CHECK: omp.loop_nest (%{{.*}}) : index = (%c0) to (%[[N]]) step (%c1)
// ALL: %[[BIG:.*]] = arith.cmpi uge, %{{.*}}, %c0 : index
// ALL: arith.select %[[BIG]]
func.func @copy(%a: memref<?x3xi64>, %b: memref<?x3xi64>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x3xi64>
  scf.forall (%i) in (%n) {
    %v = memref.load %a[%i, %c0] : memref<?x3xi64>
    memref.store %v, %b[%i, %c0] : memref<?x3xi64>
  }
  return
}

// -----

// Statically small (16 x 64 f32, 4 KB): the count folds to 1, the region runs on the
// calling thread (no fork); with min-bytes=0 it takes the run-time count (at most its 16 iterations).
// CHECK-LABEL: func.func @small
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: omp.parallel num_threads(%[[ONE]] : i32)
// ALL-LABEL: func.func @small
// ALL: %[[L:.*]] = memref.load
// ALL: %[[T:.*]] = arith.maxsi %[[L]]
// ALL: %[[NT:.*]] = arith.minsi %[[T]], %c16_i32 : i32
// ALL: omp.parallel num_threads(%[[NT]] : i32)
func.func @small(%a: memref<16x64xf32>) {
  %cst = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (16) {
    memref.store %cst, %a[%i, %c0] : memref<16x64xf32>
  }
  return
}

// -----

// A kernel that records its work (relax.flops_per_output, set by the matmul-family
// schedules: 2*K per output element) also takes the run-time count when its FLOPs, that
// times the elements of its output (the last argument), reach min-flops (default 4e6):
// here 2*512 * n*64 = 65536*n FLOPs over 192 KB*n... bytes small, work large.
// CHECK-LABEL: func.func @work
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %{{.*}}, %c1048576 : index
// CHECK: %[[N:.*]] = memref.dim %arg1, %c0
// CHECK: %[[F:.*]] = arith.muli %[[N]], %c65536 : index
// CHECK: %[[HEAVY:.*]] = arith.cmpi uge, %[[F]], %c4000000 : index
// CHECK: %[[ANY:.*]] = arith.ori %[[BIG]], %[[HEAVY]] : i1
// CHECK: %[[SEL:.*]] = arith.select %[[ANY]], %{{.*}}, %c1_i32 : i32
// CHECK: %[[NT:.*]] = arith.minsi %[[SEL]], %{{.*}} : i32
// CHECK: omp.parallel num_threads(%[[NT]] : i32)
// ALL-LABEL: func.func @work
// ALL: arith.cmpi uge, %{{.*}}, %c0 : index
func.func @work(%a: memref<?x512xf32>, %c: memref<?x64xf32>) attributes {relax.flops_per_output = 1024 : i64} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %c, %c0 : memref<?x64xf32>
  scf.forall (%i) in (%n) {
    %v = memref.load %a[%i, %c0] : memref<?x512xf32>
    memref.store %v, %c[%i, %c0] : memref<?x64xf32>
  }
  return
}

// -----

// Statically small work (2*8 FLOPs per element of a 16 x 64 output: 16 KFLOP) and bytes: one thread.
// CHECK-LABEL: func.func @light
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: omp.parallel num_threads(%[[ONE]] : i32)
func.func @light(%a: memref<16x8xf32>, %c: memref<16x64xf32>) attributes {relax.flops_per_output = 16 : i64} {
  %c0 = arith.constant 0 : index
  scf.forall (%i) in (16) {
    %v = memref.load %a[%i, %c0] : memref<16x8xf32>
    memref.store %v, %c[%i, %c0] : memref<16x64xf32>
  }
  return
}
