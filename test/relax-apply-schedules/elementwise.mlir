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

// A BatchNorm scale folded into a 3x3 conv weight, (O, C, 3, 3) times a per-O scale
// read at (d0, 0, 0, 0): the inner 3 is too narrow to vectorize along, so the loops the
// operands read alike (C, KH, KW) are merged first: (32, 144), the scale viewed as (32),
// each row of 144 in 16-lane vectors, the scale a broadcast; the result viewed back.
// CHECK-LABEL: func.func private @bn_scale
// CHECK-SAME: relax.schedule = "elementwise"
// CHECK-DAG: tensor.collapse_shape %arg0 {{\[\[}}0], [1, 2, 3]] : tensor<32x16x3x3xf32> into tensor<32x144xf32>
// CHECK-DAG: tensor.collapse_shape %arg1 {{\[\[}}0, 1, 2, 3]] : tensor<32x1x1x1xf32> into tensor<32xf32>
// CHECK: scf.forall (%{{.*}}) in (32)
// CHECK: scf.for %{{.*}} = %c0 to %c144 step %c16
// CHECK: vector.transfer_read {{.*}} : tensor<1x16xf32>, vector<1x16xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1xf32>, vector<1xf32>
// CHECK: arith.mulf {{.*}} : vector<1x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<1x16xf32>, tensor<1x16xf32>
// CHECK-NOT: linalg.generic
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] output_shape [32, 16, 3, 3] : tensor<32x144xf32> into tensor<32x16x3x3xf32>
// CHECK: return
func.func private @bn_scale(%w: tensor<32x16x3x3xf32>, %s: tensor<32x1x1x1xf32>, %o: tensor<32x16x3x3xf32>) -> tensor<32x16x3x3xf32>
    attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %s : tensor<32x16x3x3xf32>, tensor<32x1x1x1xf32>) outs(%o : tensor<32x16x3x3xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %1 = arith.mulf %x, %y : f32
    linalg.yield %1 : f32
  } -> tensor<32x16x3x3xf32>
  return %0 : tensor<32x16x3x3xf32>
}

// A chain over (n, 8, 7, 7) with a per-channel bias (d1): the 7x7 pixels merge (49), the
// channel does not (the bias reads it alone); the chain's second generic reads the first's
// merged result directly (one fused loop nest), 3 vectors of 16 and a scalar remainder
// (one element: its loop folded away).
// CHECK-LABEL: func.func private @bias_relu_7x7
// CHECK-SAME: relax.schedule = "elementwise"
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : tensor<?x8x7x7xf32> into tensor<?x8x49xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 8)
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16
// CHECK: arith.addf {{.*}} : vector<1x1x16xf32>
// CHECK: arith.maximumf {{.*}} : vector<1x1x16xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 48] [1, 1, 1] [1, 1, 1] : tensor<1x1x49xf32> to tensor<1x1x1xf32>
// CHECK: linalg.generic
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [%{{.*}}, 8, 7, 7]
// CHECK: return
func.func private @bias_relu_7x7(%a: tensor<?x8x7x7xf32>, %b: tensor<8xf32>, %o: tensor<?x8x7x7xf32>) -> tensor<?x8x7x7xf32>
    attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  %cst = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : tensor<?x8x7x7xf32>, tensor<8xf32>) outs(%o : tensor<?x8x7x7xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %1 = arith.addf %x, %y : f32
    linalg.yield %1 : f32
  } -> tensor<?x8x7x7xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<?x8x7x7xf32>) outs(%o : tensor<?x8x7x7xf32>) {
  ^bb0(%x: f32, %out: f32):
    %3 = arith.maximumf %x, %cst : f32
    linalg.yield %3 : f32
  } -> tensor<?x8x7x7xf32>
  return %2 : tensor<?x8x7x7xf32>
}

// A 1x1 conv weight (O, C, 1, 1) times its scale read at (d0, 0, d2, d3) (the unit loops
// read as dims): a unit loop merges with anything, so (C, 1, 1) is one loop of 48 and
// every operand's unit dims fold away.
// CHECK-LABEL: func.func private @bn_scale_1x1
// CHECK-SAME: relax.schedule = "elementwise"
// CHECK-DAG: tensor.collapse_shape %arg0 {{\[\[}}0], [1, 2, 3]] : tensor<32x48x1x1xf32> into tensor<32x48xf32>
// CHECK-DAG: tensor.collapse_shape %arg1 {{\[\[}}0, 1, 2, 3]] : tensor<32x1x1x1xf32> into tensor<32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16
// CHECK: arith.mulf {{.*}} : vector<1x16xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func private @bn_scale_1x1(%w: tensor<32x48x1x1xf32>, %s: tensor<32x1x1x1xf32>, %o: tensor<32x48x1x1xf32>) -> tensor<32x48x1x1xf32>
    attributes {relax.kernel, relax.kernel_kind = "broadcast"} {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%w, %s : tensor<32x48x1x1xf32>, tensor<32x1x1x1xf32>) outs(%o : tensor<32x48x1x1xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %1 = arith.mulf %x, %y : f32
    linalg.yield %1 : f32
  } -> tensor<32x48x1x1xf32>
  return %0 : tensor<32x48x1x1xf32>
}
