// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda})'
// A tuned config (relax.schedule_config) that the target cannot run is an error at the
// kernel, not a silent fallback: 64 x 64 GEMM threads exceed the 1024 a CUDA block may
// have; 64 GEMV lanes along N exceed a warp of 32.

// expected-error @+1 {{relax-gpu-schedule: invalid gpu_matmul config {'threads': 64, 'per_thread': 8, 'tile_k': 16, 'min_size': 32, 'f16_gemm': 1, 'f32_gemm': 1, 'gemv_rows': 4, 'gemv_lanes': 8, 'gemv_k_subgroups': 4}: 4096 threads per GEMM workgroup exceed the target's 1024}}
func.func private @too_many_threads(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %out: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.schedule_config = {threads = 64 : i64}} {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>)
  return
}

// -----

// expected-error @+1 {{gemv_lanes and gemv_k_subgroups must be powers of two, gemv_lanes at most the subgroup (32)}}
func.func private @too_many_lanes(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %out: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.schedule_config = {gemv_lanes = 64 : i64}} {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>)
  return
}
