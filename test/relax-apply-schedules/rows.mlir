// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-apply-schedules{target=avx512})' | FileCheck %s

// Softmax over rows of 1024: one scf.forall over rows (the max and sum reductions and
// their fills fused in, each once); inside a row, each op runs 64 lanes per step: the
// reductions accumulate into a 64-lane vector carried in registers, then one horizontal
// vector.reduction with fastmath<reassoc>; exp is expanded inline (no math.exp left).
// CHECK-LABEL: func.func private @softmax
// CHECK-SAME: relax.schedule = "rows"
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x64xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<1x64xf32>, vector<1x64xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x64xf32>
// CHECK: vector.reduction <maximumf>, {{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x64xf32>)
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c64 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1x1024xf32>)
// CHECK: arith.divf {{.*}} : vector<1x64xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x64xf32>, tensor<1x64xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NOT: math.exp
// CHECK-NOT: linalg.generic
// CHECK: return
func.func private @softmax(%arg0: tensor<?x1024xf32>, %arg1: tensor<?x1024xf32>) -> tensor<?x1024xf32>
    attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x1024xf32>
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty(%dim) : tensor<?xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x1024xf32>) outs(%1 : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %7 = arith.maximumf %in, %out : f32
    linalg.yield %7 : f32
  } -> tensor<?xf32>
  %3 = tensor.empty(%dim) : tensor<?xf32>
  %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<?xf32>) -> tensor<?xf32>
  %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0, %2 : tensor<?x1024xf32>, tensor<?xf32>) outs(%4 : tensor<?xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %7 = arith.subf %in, %in_1 : f32
    %8 = math.exp %7 : f32
    %9 = arith.addf %8, %out : f32
    linalg.yield %9 : f32
  } -> tensor<?xf32>
  %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2, %5 : tensor<?x1024xf32>, tensor<?xf32>, tensor<?xf32>) outs(%arg1 : tensor<?x1024xf32>) {
  ^bb0(%in: f32, %in_1: f32, %in_2: f32, %out: f32):
    %7 = arith.subf %in, %in_1 : f32
    %8 = math.exp %7 : f32
    %9 = arith.divf %8, %in_2 : f32
    linalg.yield %9 : f32
  } -> tensor<?x1024xf32>
  return %6 : tensor<?x1024xf32>
}

// A symbolic row length (attention scores): 64-lane chunks (the chunk loops peeled), the
// remainder of each row (< 64) a scalar linalg.generic.
// CHECK-LABEL: func.func private @rowsum_dyn
// CHECK-SAME: relax.schedule = "rows"
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %[[MAIN:.*]] step %c64 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x64xf32>)
// CHECK: scf.for %{{.*}} = %[[MAIN]] to %{{.*}} step %c64
// CHECK: linalg.generic
// CHECK: vector.reduction <add>, {{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK: arith.divf {{.*}} : vector<1x64xf32>
// CHECK: linalg.generic
func.func private @rowsum_dyn(%arg0: tensor<?x?xf32>, %arg1: tensor<?x?xf32>) -> tensor<?x?xf32>
    attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x?xf32>
  %cst_0 = arith.constant 0.000000e+00 : f32
  %3 = tensor.empty(%dim) : tensor<?xf32>
  %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<?xf32>) -> tensor<?xf32>
  %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x?xf32>) outs(%4 : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %9 = arith.addf %in, %out : f32
    linalg.yield %9 : f32
  } -> tensor<?xf32>
  %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %5 : tensor<?x?xf32>, tensor<?xf32>) outs(%arg1 : tensor<?x?xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %7 = arith.divf %in, %in_1 : f32
    linalg.yield %7 : f32
  } -> tensor<?x?xf32>
  return %6 : tensor<?x?xf32>
}
