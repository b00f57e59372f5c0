// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// add + relu over (m, 1024): rows in an scf.forall, 64 lanes per step, no remainder.
// CHECK-LABEL: func.func private @add_relu
// CHECK-SAME: relax.schedule = "elementwise"
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c64
// CHECK: vector.transfer_read {{.*}} : tensor<1x64xf32>, vector<1x64xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x64xf32>, vector<1x64xf32>
// CHECK: arith.addf {{.*}} : vector<1x64xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x64xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x64xf32>, tensor<1x64xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func private @add_relu(%a: tensor<?x1024xf32>, %b: tensor<?x1024xf32>, %o: tensor<?x1024xf32>) -> tensor<?x1024xf32>
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<?x1024xf32>, tensor<?x1024xf32>) outs(%o : tensor<?x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %1 = arith.addf %x, %y : f32
    %2 = arith.maximumf %1, %cst : f32
    linalg.yield %2 : f32
  } -> tensor<?x1024xf32>
  return %0 : tensor<?x1024xf32>
}

// A broadcast operand (a bias over the last dim) and a symbolic last dim: the 64-lane
// loop is peeled, its remainder (< 64 elements) stays a scalar linalg.generic.
// CHECK-LABEL: func.func private @bias_dyn
// CHECK-SAME: relax.schedule = "elementwise"
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c64
// CHECK: vector.transfer_read {{.*}} : tensor<64xf32>, vector<64xf32>
// CHECK: vector.broadcast {{.*}} : vector<64xf32> to vector<1x64xf32>
// CHECK: arith.addf {{.*}} : vector<1x64xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64
// CHECK: linalg.generic
func.func private @bias_dyn(%a: tensor<?x?xf32>, %b: tensor<?xf32>, %o: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<?x?xf32>, tensor<?xf32>) outs(%o : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %1 = arith.addf %x, %y : f32
    linalg.yield %1 : f32
  } -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// Too narrow a last dim (4): left to LLVM's loop vectorizer.
// CHECK-LABEL: func.func private @narrow
// CHECK-NOT: relax.schedule
// CHECK: linalg.generic
func.func private @narrow(%a: tensor<?x4xf32>, %o: tensor<?x4xf32>) -> tensor<?x4xf32>
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x4xf32>) outs(%o : tensor<?x4xf32>) {
  ^bb0(%x: f32, %out: f32):
    %1 = arith.negf %x : f32
    linalg.yield %1 : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
