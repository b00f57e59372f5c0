// RUN: rm -f %t.db
// RUN: %python %S/../Inputs/record_tuning.py %s %t.db add_relu avx512 width=128
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512 tuning-db=%t.db})' | FileCheck %s
// A database that does not exist: the defaults.
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512 tuning-db=%t.none.db})' | FileCheck %s --check-prefix=NODB
// RUN: not relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512 tuning-db=%s})' 2>&1 | FileCheck %s --check-prefix=BAD

// The recorded kernel gets width 128 (and says so); its twin (another name, the same
// structure: the same record) too; the other kernel keeps the default 64.
// CHECK-LABEL: func.func private @add_relu
// CHECK-SAME: relax.schedule = "elementwise", relax.schedule_config = {width = 128 : i64}
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c128
// CHECK: arith.maximumf {{.*}} : vector<1x128xf32>
// CHECK-LABEL: func.func private @add_relu_twin
// CHECK-SAME: relax.schedule = "elementwise", relax.schedule_config = {width = 128 : i64}
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c128
// CHECK-LABEL: func.func private @add
// CHECK-NOT: relax.schedule_config
// CHECK-SAME: relax.schedule = "elementwise"
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c64

// NODB-LABEL: func.func private @add_relu
// NODB-NOT: relax.schedule_config
// NODB: scf.for %{{.*}} = %c0 to %c1024 step %c64

// BAD: error: tuning database '{{.*}}tuning-db.mlir': file is not a database

func.func private @add_relu(%a: tensor<?x1024xf32>, %b: tensor<?x1024xf32>, %o: tensor<?x1024xf32>) -> tensor<?x1024xf32>
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<?x1024xf32>, tensor<?x1024xf32>) outs(%o : tensor<?x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  } -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}

func.func private @add_relu_twin(%a: tensor<?x1024xf32>, %b: tensor<?x1024xf32>, %o: tensor<?x1024xf32>) -> tensor<?x1024xf32>
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<?x1024xf32>, tensor<?x1024xf32>) outs(%o : tensor<?x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  } -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}

func.func private @add(%a: tensor<?x1024xf32>, %b: tensor<?x1024xf32>, %o: tensor<?x1024xf32>) -> tensor<?x1024xf32>
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<?x1024xf32>, tensor<?x1024xf32>) outs(%o : tensor<?x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}
