// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=vulkan}, canonicalize, cse)' | FileCheck %s --check-prefix=VK
// 16-bit kernels on the Rows and Elementwise rules. An f16 RMSNorm (as relax-legalize writes it:
// the sum of squares into an f32 row buffer, the f16 result rounded once by its body's truncf)
// becomes one launch pair under `scf.if rows < 1024`: a workgroup of 128 per row (f16 loads
// widened, the f32 partials tree-reduced in f32 workgroup memory) and a thread per row; the row
// buffer stays in a register and is never allocated. A bf16 elementwise op becomes, under the
// guard (element count a multiple of the width, each buffer aligned for its vector), a launch of
// vector<8xbf16> accesses (128 bits) on cuda and vector<4xbf16> (64 bits) on vulkan; the op stays
// in the else branch for the fallback. A mixed kernel (f32 in, bf16 out) is the same launch pair.

// CHECK-LABEL: func.func private @rms_norm_f16(
// CHECK-NOT: memref.alloc
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0 : memref<?x768xf16>
// CHECK: %[[FEW:.*]] = arith.cmpi ult, %[[ROWS]], %c1024 : index
// CHECK: scf.if %[[FEW]] {
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SH:.*]] : memref<128xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[X:.*]] = memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x768xf16>
// CHECK: arith.extf %[[X]] : f16 to f32
// CHECK: memref.store %{{.*}}, %[[SH]][%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: %[[Y:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK: memref.store %[[Y]], %arg2[%{{.*}}, %{{.*}}] : memref<?x768xf16>
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: linalg.
// CHECK: return
func.func private @rms_norm_f16(%arg0: memref<?x768xf16>, %arg1: memref<768xf16>, %arg2: memref<?x768xf16>)
    attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %cst = arith.constant 7.680000e+02 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 9.99999974E-6 : f32
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x768xf16>
  %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?xf32>
  linalg.fill ins(%cst_0 : f32) outs(%alloc : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<?x768xf16>) outs(%alloc : memref<?xf32>) {
  ^bb0(%in: f16, %out: f32):
    %0 = arith.extf %in : f16 to f32
    %1 = arith.mulf %0, %0 : f32
    %2 = arith.addf %1, %out : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc, %arg1 : memref<?x768xf16>, memref<?xf32>, memref<768xf16>) outs(%arg2 : memref<?x768xf16>) {
  ^bb0(%in: f16, %in_2: f32, %in_3: f16, %out: f16):
    %0 = arith.divf %in_2, %cst : f32
    %1 = arith.addf %0, %cst_1 : f32
    %2 = math.rsqrt %1 : f32
    %3 = arith.extf %in : f16 to f32
    %4 = arith.mulf %3, %2 : f32
    %5 = arith.extf %in_3 : f16 to f32
    %6 = arith.mulf %4, %5 : f32
    %7 = arith.truncf %6 : f32 to f16
    linalg.yield %7 : f16
  }
  memref.dealloc %alloc : memref<?xf32>
  return
}

// CHECK-LABEL: func.func private @add_bf16(
// CHECK: %[[N:.*]] = arith.muli
// CHECK: arith.remui %[[N]], %c8 : index
// CHECK: %[[P0:.*]] = memref.extract_aligned_pointer_as_index %arg0 : memref<?x?xbf16> -> index
// CHECK: arith.remui %[[P0]], %c16 : index
// CHECK: scf.if %{{.*}} {
// CHECK: %[[A:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<?x?xbf16> into memref<?xbf16>
// CHECK: gpu.launch
// CHECK: %[[VA:.*]] = vector.load %[[A]][%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: %[[S:.*]] = arith.addf %[[VA]], %{{.*}} : vector<8xbf16>
// CHECK: vector.store %[[S]], %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<?xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK-NEXT: linalg.generic
// VK-LABEL: func.func private @add_bf16(
// VK: arith.remui %{{.*}}, %c4 : index
// VK: arith.remui %{{.*}}, %c8 : index
// VK: vector.load %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// VK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 8 : i64} : memref<?xbf16>, vector<4xbf16>
// VK: } else {
// VK-NEXT: linalg.generic
func.func private @add_bf16(%arg0: memref<?x?xbf16>, %arg1: memref<?x?xbf16>, %arg2: memref<?x?xbf16>)
    attributes {relax.kernel, relax.kernel_kind = "elementwise"} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : memref<?x?xbf16>, memref<?x?xbf16>) outs(%arg2 : memref<?x?xbf16>) {
  ^bb0(%in: bf16, %in_0: bf16, %out: bf16):
    %0 = arith.addf %in, %in_0 : bf16
    linalg.yield %0 : bf16
  }
  return
}

// A mixed row kernel, f32 in and bf16 out (a softmax whose result is cast, fused): the f32
// reductions as for f32 data, one rounding where the bf16 result is stored.
// CHECK-LABEL: func.func private @softmax_f32_to_bf16(
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<128xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK: arith.maximumf
// CHECK: gpu.barrier
// CHECK: math.exp
// CHECK: gpu.barrier
// CHECK: %[[P:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %[[P]], %arg1[%{{.*}}, %{{.*}}] : memref<?x?xbf16>
// CHECK: } else {
// CHECK-NOT: linalg.
// CHECK: return
func.func private @softmax_f32_to_bf16(%arg0: memref<?x?xf32>, %arg1: memref<?x?xbf16>)
    attributes {relax.kernel, relax.kernel_kind = "reduction"} {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x?xf32>
  %max = memref.alloc(%dim) : memref<?xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<?x?xf32>) outs(%max : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %sum = memref.alloc(%dim) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0, %max : memref<?x?xf32>, memref<?xf32>) outs(%sum : memref<?xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %out : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %max, %sum : memref<?x?xf32>, memref<?xf32>, memref<?xf32>) outs(%arg1 : memref<?x?xbf16>) {
  ^bb0(%in: f32, %m: f32, %s: f32, %out: bf16):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.divf %1, %s : f32
    %3 = arith.truncf %2 : f32 to bf16
    linalg.yield %3 : bf16
  }
  memref.dealloc %max : memref<?xf32>
  memref.dealloc %sum : memref<?xf32>
  return
}
