// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-gpu-schedule{kind=vulkan})' | FileCheck %s
// Without a recorded target a pass gets vulkan's guaranteed limits (128 invocations, no
// known subgroup size: a pass alone probes no device): the matmul rule has no GEMV route
// (gpu.shuffle needs the subgroup width) and no GEMV knobs, so a config naming one is an
// error that lists the knobs this target has. compile() records the device's target
// (lavapipe: subgroups of 8), where the GEMV runs (test_gpu_rules.py).

// CHECK-LABEL: func.func private @ok(
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c8{{.*}}, %{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK-NOT: gpu.shuffle
// CHECK: } else {
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK-NOT: gpu.shuffle
// CHECK: return
func.func private @ok(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %out: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.schedule_config = {per_thread = 4 : i64}} {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>)
  return
}

// -----

// expected-error @+1 {{gpu_matmul config needs exactly the knobs ['min_size', 'per_thread', 'threads', 'tile_k']}}
func.func private @gemv_knob(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %out: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.schedule_config = {gemv_lanes = 2 : i64}} {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>)
  return
}
