// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512 threads=true})' | FileCheck %s
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s --check-prefix=SERIAL
// RUN: relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512 threads=true}, one-shot-bufferize{bufferize-function-boundaries=true}, canonicalize, scf-forall-to-parallel, convert-scf-to-openmp{num-threads=1}, relax-omp-threads, canonicalize, cse)' | FileCheck %s --check-prefix=OMP

// Threaded GEMV (M = 1, B 4 MB): the columns are split in one chunk per thread, sized at
// RUN time from the module's thread count (the global @_mlir_relax_num_threads, which the
// executable sets; its initial value is the count at compile time: 1 under lit), a whole
// number of 32-column register tiles per chunk. The same code is right for any count.
// CHECK: memref.global "public" @_mlir_relax_num_threads : memref<i32> = dense<1> {alignment = 4 : i64}
// CHECK-LABEL: func.func private @gemv
// CHECK-SAME: relax.schedule = "gemv"
// CHECK: %[[G:.*]] = memref.get_global @_mlir_relax_num_threads : memref<i32>
// CHECK: %[[L:.*]] = memref.load %[[G]][] : memref<i32>
// CHECK: %[[T:.*]] = arith.maxsi %[[L]], %c1_i32 : i32
// CHECK: %[[TI:.*]] = arith.index_cast %[[T]] : i32 to index
// CHECK: %[[PER:.*]] = arith.ceildivui %c2048, %[[TI]] : index
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[PER]], %c32 : index
// CHECK: %[[CHUNK:.*]] = arith.muli %[[TILES]], %c32 {relax.thread_chunk} : index
// CHECK: %[[N:.*]] = affine.apply #{{.*}}()[%[[CHUNK]]]
// CHECK: scf.forall (%{{.*}}) in (%[[N]]) shared_outs
// CHECK: vector.fma {{.*}} : vector<32xf32>
// Without threads (no OpenMP runtime): one chunk, no global.
// SERIAL-NOT: memref.global
// SERIAL-LABEL: func.func private @gemv
// SERIAL-NOT: scf.forall
// SERIAL: vector.fma {{.*}} : vector<32xf32>
// After bufferization and the OpenMP conversion: the parallel region takes the run-time
// count when it moves at least 1 MiB (here 4 MiB + 10 KB: static, folded), else 1; the
// region and the split read the same count (one load after CSE), the chunks are the
// work-shared loop's iterations.
// OMP-LABEL: func.func private @gemv
// OMP: %[[G:.*]] = memref.get_global @_mlir_relax_num_threads : memref<i32>
// OMP: %[[L:.*]] = memref.load %[[G]][] : memref<i32>
// OMP: %[[T:.*]] = arith.maxsi %[[L]], %c1_i32 : i32
// OMP: %[[CHUNK:.*]] = arith.muli %{{.*}}, %c32 {relax.thread_chunk} : index
// OMP: %[[N:.*]] = affine.apply #{{.*}}()[%[[CHUNK]]]
// OMP-NEXT: %[[TR:.*]] = arith.maxsi %[[N]], %c1 : index
// OMP-NEXT: %[[TI:.*]] = arith.index_cast %[[TR]] : index to i32
// OMP-NEXT: %[[NT:.*]] = arith.minsi %[[T]], %[[TI]] : i32
// OMP-NEXT: omp.parallel num_threads(%[[NT]] : i32)
// OMP-NEXT: omp.wsloop
// OMP-NEXT: omp.loop_nest (%{{.*}}) : index = (%c0) to (%[[N]]) step (%c1)
func.func private @gemv(%a: tensor<1x512xf32>, %b: tensor<512x2048xf32>, %c: tensor<1x2048xf32>) -> tensor<1x2048xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<1x2048xf32>) -> tensor<1x2048xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<1x512xf32>, tensor<512x2048xf32>) outs(%0 : tensor<1x2048xf32>) -> tensor<1x2048xf32>
  return %1 : tensor<1x2048xf32>
}

// -----

// A decode GEMV of 128 KB (statically below the 1 MiB threshold): no split, no global.
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func private @small_gemv
// CHECK-NOT: scf.forall
// CHECK: vector.fma {{.*}} : vector<32xf32>
// OMP-NOT: omp.parallel
func.func private @small_gemv(%a: tensor<1x64xf32>, %b: tensor<64x512xf32>, %c: tensor<1x512xf32>) -> tensor<1x512xf32>
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%cst : f32) outs(%c : tensor<1x512xf32>) -> tensor<1x512xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<1x64xf32>, tensor<64x512xf32>) outs(%0 : tensor<1x512xf32>) -> tensor<1x512xf32>
  return %1 : tensor<1x512xf32>
}

// -----

// Rows of a symbolic add: the row loop is an scf.forall whatever the thread count
// (OpenMP's work-sharing splits its iterations at run time); the region's work is the
// bytes of the memrefs it uses, computed before it: 4096 per row of each of the three.
// CHECK-LABEL: func.func private @add
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// OMP: memref.global "public" @_mlir_relax_num_threads : memref<i32> = dense<1>
// OMP-LABEL: func.func private @add
// OMP: %[[D0:.*]] = memref.dim %arg0, %c0
// OMP: %[[B0:.*]] = arith.muli %[[D0]], %c4096 : index
// OMP: %[[D1:.*]] = memref.dim %arg1, %c0
// OMP: %[[B1:.*]] = arith.muli %[[D1]], %c4096 : index
// OMP: %[[S01:.*]] = arith.addi %[[B0]], %[[B1]] : index
// OMP: %[[D2:.*]] = memref.dim %arg2, %c0
// OMP: %[[B2:.*]] = arith.muli %[[D2]], %c4096 : index
// OMP: %[[W:.*]] = arith.addi %[[S01]], %[[B2]] : index
// OMP: %[[G:.*]] = memref.get_global @_mlir_relax_num_threads : memref<i32>
// OMP: %[[L:.*]] = memref.load %[[G]][] : memref<i32>
// OMP: %[[T:.*]] = arith.maxsi %[[L]], %c1_i32 : i32
// OMP: %[[BIG:.*]] = arith.cmpi uge, %[[W]], %c1048576 : index
// OMP: %[[N:.*]] = arith.select %[[BIG]], %[[T]], %c1_i32 : i32
// OMP: %[[TI:.*]] = arith.index_cast %{{.*}} : index to i32
// OMP: %[[NT:.*]] = arith.minsi %[[N]], %[[TI]] : i32
// OMP: omp.parallel num_threads(%[[NT]] : i32)
func.func private @add(%x: tensor<?x1024xf32>, %y: tensor<?x1024xf32>, %o: tensor<?x1024xf32>) -> tensor<?x1024xf32>
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x1024xf32>, tensor<?x1024xf32>) outs(%o : tensor<?x1024xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %1 = arith.addf %a, %b : f32
    linalg.yield %1 : f32
  } -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}
