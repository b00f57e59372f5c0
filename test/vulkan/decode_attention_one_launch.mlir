// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda}, canonicalize, cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-schedule{kind=cuda overrides=attention_launches=2}, canonicalize, cse)' | FileCheck %s --check-prefix=TWO
// The DecodeAttention rule on a decode_attention kernel that reads the arrival counters
// (%arg4, the session state relax_gpu_attention_counters; G = 1, 2 KV heads, D = 32; cuda's
// defaults: warps of 32, 4 per workgroup). Above one chunk of 256 keys and with at most
// 65536 counters needed (rows x 32 live lanes = s x 64, decided at run time): ONE launch of a
// workgroup per (row, chunk). Each lane of the first warp stores its elements of the partial
// result and its copy of (max, sum), fences them (llvm.fence syncscope("device") acq_rel),
// adds 1 to its counter (row * 32 + lane); the lane that saw parts - 1 fences again,
// combines its elements over the row's chunks, writes them and zeroes its counter. No
// barrier or broadcast beyond the two-launch partial kernel's. More counters needed: the
// two-launch split (attention_launches=2: always).

// CHECK-LABEL: func.func @relax_gpu_decode_attention
// CHECK: %[[PARTS:.*]] = arith.divui %{{.*}}, %c256 : index
// CHECK: %[[SHORT:.*]] = arith.cmpi ule, %[[PARTS]], %c1 : index
// CHECK: scf.if %[[SHORT]] {
// CHECK: } else {
// CHECK: %[[NEED:.*]] = arith.muli %{{.*}}, %c64 : index
// CHECK-NEXT: %[[FITS:.*]] = arith.cmpi ule, %[[NEED]], %c65536 : index
// CHECK: scf.if %[[FITS]] {
// CHECK: %[[WS:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: gpu.launch
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[WS]][%{{.*}}] : memref<?xf32>
// CHECK: llvm.fence syncscope("device") acq_rel
// CHECK-NEXT: %[[R32:.*]] = arith.muli %{{.*}}, %c32 : index
// CHECK-NEXT: %[[AT:.*]] = arith.addi %[[R32]], %{{.*}} : index
// CHECK-NEXT: %[[OLD:.*]] = memref.atomic_rmw addi %c1_i32, %arg4[%[[AT]]] : (i32, memref<65536xi32>) -> i32
// CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[OLD]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK: scf.for
// CHECK: memref.load %[[WS]][%{{.*}}] : memref<?xf32>
// CHECK: memref.store %{{.*}}, %arg5[%{{.*}}, %{{.*}}] : memref<?x64xf32>
// CHECK: memref.store %c0_i32, %arg4[%[[AT]]] : memref<65536xi32>
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK: memref.dealloc %[[WS]] : memref<?xf32>
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c1) {
// CHECK-NOT: memref.atomic_rmw
// CHECK: memref.dealloc
// CHECK: return

// TWO-LABEL: func.func @relax_gpu_decode_attention
// TWO-NOT: memref.atomic_rmw
// TWO-NOT: llvm.fence
// TWO: memref.dealloc
// TWO: return

func.func @relax_gpu_decode_attention_f32_Dx2x32_Dx2x32_Dx1xDx1_Dx2x32_65536_Dx64(%arg0: memref<?x2x32xf32>, %arg1: memref<?x2x32xf32>, %arg2: memref<?x1x?x1xf32>, %arg3: memref<?x2x32xf32>, %arg4: memref<65536xi32>, %arg5: memref<?x64xf32>) attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "decode_attention"} {
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x2x32xf32>
  %dim_1 = memref.dim %arg1, %c0 : memref<?x2x32xf32>
  %alloc = memref.alloc(%dim, %dim_1) {alignment = 64 : i64} : memref<?x1x?x2xf32>
  linalg.fill ins(%cst_0 : f32) outs(%alloc : memref<?x1x?x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 2 + d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : memref<?x2x32xf32>, memref<?x2x32xf32>) outs(%alloc : memref<?x1x?x2xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %0 = arith.mulf %in, %in_6 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_2 = memref.alloc(%dim, %dim_1) {alignment = 64 : i64} : memref<?x1x?x2xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc, %arg2 : memref<?x1x?x2xf32>, memref<?x1x?x1xf32>) outs(%alloc_2 : memref<?x1x?x2xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %0 = arith.addf %in, %in_6 : f32
    linalg.yield %0 : f32
  }
  %alloc_3 = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x1x2xf32>
  linalg.fill ins(%cst : f32) outs(%alloc_3 : memref<?x1x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%alloc_2 : memref<?x1x?x2xf32>) outs(%alloc_3 : memref<?x1x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  %alloc_4 = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x1x2xf32>
  linalg.fill ins(%cst_0 : f32) outs(%alloc_4 : memref<?x1x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%alloc_2, %alloc_3 : memref<?x1x?x2xf32>, memref<?x1x2xf32>) outs(%alloc_4 : memref<?x1x2xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %0 = arith.subf %in, %in_6 : f32
    %cst_7 = arith.constant -8.650000e+01 : f32
    %1 = arith.maxnumf %0, %cst_7 : f32
    %cst_8 = arith.constant 88.7228317 : f32
    %2 = arith.minnumf %1, %cst_8 : f32
    %cst_9 = arith.constant 1.44269502 : f32
    %3 = arith.mulf %2, %cst_9 : f32
    %cst_10 = arith.constant 5.000000e-01 : f32
    %4 = arith.addf %3, %cst_10 : f32
    %5 = math.floor %4 : f32
    %cst_11 = arith.constant 0.693359375 : f32
    %6 = arith.mulf %5, %cst_11 : f32
    %7 = arith.subf %2, %6 : f32
    %cst_12 = arith.constant -2.12194442E-4 : f32
    %8 = arith.mulf %5, %cst_12 : f32
    %9 = arith.subf %7, %8 : f32
    %cst_13 = arith.constant 1.98756912E-4 : f32
    %10 = arith.mulf %cst_13, %9 : f32
    %cst_14 = arith.constant 0.00139819994 : f32
    %11 = arith.addf %10, %cst_14 : f32
    %12 = arith.mulf %11, %9 : f32
    %cst_15 = arith.constant 0.00833345205 : f32
    %13 = arith.addf %12, %cst_15 : f32
    %14 = arith.mulf %13, %9 : f32
    %cst_16 = arith.constant 0.0416657962 : f32
    %15 = arith.addf %14, %cst_16 : f32
    %16 = arith.mulf %15, %9 : f32
    %cst_17 = arith.constant 0.166666657 : f32
    %17 = arith.addf %16, %cst_17 : f32
    %18 = arith.mulf %17, %9 : f32
    %cst_18 = arith.constant 5.000000e-01 : f32
    %19 = arith.addf %18, %cst_18 : f32
    %20 = arith.mulf %19, %9 : f32
    %21 = arith.mulf %20, %9 : f32
    %22 = arith.addf %21, %9 : f32
    %cst_19 = arith.constant 1.000000e+00 : f32
    %23 = arith.addf %22, %cst_19 : f32
    %24 = arith.fptosi %5 : f32 to i32
    %c126_i32 = arith.constant 126 : i32
    %25 = arith.addi %24, %c126_i32 : i32
    %c23_i32 = arith.constant 23 : i32
    %26 = arith.shli %25, %c23_i32 : i32
    %27 = arith.bitcast %26 : i32 to f32
    %cst_20 = arith.constant 2.000000e+00 : f32
    %28 = arith.mulf %23, %cst_20 : f32
    %29 = arith.mulf %28, %27 : f32
    %cst_21 = arith.constant -8.650000e+01 : f32
    %30 = arith.cmpf olt, %0, %cst_21 : f32
    %cst_22 = arith.constant 0.000000e+00 : f32
    %31 = arith.select %30, %cst_22, %29 : f32
    %cst_23 = arith.constant 88.7228317 : f32
    %32 = arith.cmpf ogt, %0, %cst_23 : f32
    %cst_24 = arith.constant 0x7F800000 : f32
    %33 = arith.select %32, %cst_24, %31 : f32
    %34 = arith.cmpf uno, %0, %0 : f32
    %35 = arith.select %34, %0, %33 : f32
    %36 = arith.addf %out, %35 : f32
    linalg.yield %36 : f32
  }
  %alloc_5 = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x1x2x32xf32>
  linalg.fill ins(%cst_0 : f32) outs(%alloc_5 : memref<?x1x2x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3, d4) -> (d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc_2, %alloc_3, %arg3 : memref<?x1x?x2xf32>, memref<?x1x2xf32>, memref<?x2x32xf32>) outs(%alloc_5 : memref<?x1x2x32xf32>) {
  ^bb0(%in: f32, %in_6: f32, %in_7: f32, %out: f32):
    %0 = arith.subf %in, %in_6 : f32
    %cst_8 = arith.constant -8.650000e+01 : f32
    %1 = arith.maxnumf %0, %cst_8 : f32
    %cst_9 = arith.constant 88.7228317 : f32
    %2 = arith.minnumf %1, %cst_9 : f32
    %cst_10 = arith.constant 1.44269502 : f32
    %3 = arith.mulf %2, %cst_10 : f32
    %cst_11 = arith.constant 5.000000e-01 : f32
    %4 = arith.addf %3, %cst_11 : f32
    %5 = math.floor %4 : f32
    %cst_12 = arith.constant 0.693359375 : f32
    %6 = arith.mulf %5, %cst_12 : f32
    %7 = arith.subf %2, %6 : f32
    %cst_13 = arith.constant -2.12194442E-4 : f32
    %8 = arith.mulf %5, %cst_13 : f32
    %9 = arith.subf %7, %8 : f32
    %cst_14 = arith.constant 1.98756912E-4 : f32
    %10 = arith.mulf %cst_14, %9 : f32
    %cst_15 = arith.constant 0.00139819994 : f32
    %11 = arith.addf %10, %cst_15 : f32
    %12 = arith.mulf %11, %9 : f32
    %cst_16 = arith.constant 0.00833345205 : f32
    %13 = arith.addf %12, %cst_16 : f32
    %14 = arith.mulf %13, %9 : f32
    %cst_17 = arith.constant 0.0416657962 : f32
    %15 = arith.addf %14, %cst_17 : f32
    %16 = arith.mulf %15, %9 : f32
    %cst_18 = arith.constant 0.166666657 : f32
    %17 = arith.addf %16, %cst_18 : f32
    %18 = arith.mulf %17, %9 : f32
    %cst_19 = arith.constant 5.000000e-01 : f32
    %19 = arith.addf %18, %cst_19 : f32
    %20 = arith.mulf %19, %9 : f32
    %21 = arith.mulf %20, %9 : f32
    %22 = arith.addf %21, %9 : f32
    %cst_20 = arith.constant 1.000000e+00 : f32
    %23 = arith.addf %22, %cst_20 : f32
    %24 = arith.fptosi %5 : f32 to i32
    %c126_i32 = arith.constant 126 : i32
    %25 = arith.addi %24, %c126_i32 : i32
    %c23_i32 = arith.constant 23 : i32
    %26 = arith.shli %25, %c23_i32 : i32
    %27 = arith.bitcast %26 : i32 to f32
    %cst_21 = arith.constant 2.000000e+00 : f32
    %28 = arith.mulf %23, %cst_21 : f32
    %29 = arith.mulf %28, %27 : f32
    %cst_22 = arith.constant -8.650000e+01 : f32
    %30 = arith.cmpf olt, %0, %cst_22 : f32
    %cst_23 = arith.constant 0.000000e+00 : f32
    %31 = arith.select %30, %cst_23, %29 : f32
    %cst_24 = arith.constant 88.7228317 : f32
    %32 = arith.cmpf ogt, %0, %cst_24 : f32
    %cst_25 = arith.constant 0x7F800000 : f32
    %33 = arith.select %32, %cst_25, %31 : f32
    %34 = arith.cmpf uno, %0, %0 : f32
    %35 = arith.select %34, %0, %33 : f32
    %36 = arith.mulf %35, %in_7 : f32
    %37 = arith.addf %out, %36 : f32
    linalg.yield %37 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1 * 64 + d2 * 32 + d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_5, %alloc_4 : memref<?x1x2x32xf32>, memref<?x1x2xf32>) outs(%arg5 : memref<?x64xf32>) {
  ^bb0(%in: f32, %in_6: f32, %out: f32):
    %0 = arith.divf %in, %in_6 : f32
    linalg.yield %0 : f32
  }
  memref.dealloc %alloc : memref<?x1x?x2xf32>
  memref.dealloc %alloc_2 : memref<?x1x?x2xf32>
  memref.dealloc %alloc_3 : memref<?x1x2xf32>
  memref.dealloc %alloc_4 : memref<?x1x2xf32>
  memref.dealloc %alloc_5 : memref<?x1x2x32xf32>
  return
}