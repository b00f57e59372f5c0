// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-cuda-dispatch-library)' | FileCheck %s
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-cuda-dispatch-library{policy=on})' | FileCheck %s --check-prefix=ON
// RUN: %relax-opt %s --split-input-file --pass-pipeline='builtin.module(relax-infer-shapes, relax-cuda-dispatch-library{policy=off})' | FileCheck %s --check-prefix=OFF

// A static M above the GEMV's 4 rows and 64*256*128 >= 2^21 multiply-adds: cuBLAS.
// CHECK-LABEL: func.func @big
// CHECK: "relax.call_dps_library"(%arg0, %arg1) {callee = "relax_cublas_matmul_22_f32"
// CHECK-NOT: relax.matmul
// OFF-LABEL: func.func @big
// OFF: "relax.matmul"
func.func @big(%x: tensor<64x256xf32>, %w: tensor<256x128xf32>) -> tensor<64x128xf32> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<64x256xf32>, tensor<256x128xf32>) -> tensor<64x128xf32>
  return %y : tensor<64x128xf32>
}

// -----

// M = 4: the generated GEMV, whatever the size (policy on: cuBLAS all the same).
// CHECK-LABEL: func.func @gemv
// CHECK: "relax.matmul"
// ON-LABEL: func.func @gemv
// ON: callee = "relax_cublas_matmul_22_f32"
func.func @gemv(%x: tensor<4x4096xf32>, %w: tensor<4096x4096xf32>) -> tensor<4x4096xf32> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<4x4096xf32>, tensor<4096x4096xf32>) -> tensor<4x4096xf32>
  return %y : tensor<4x4096xf32>
}

// -----

// Too little work (16*32*32): generated.
// CHECK-LABEL: func.func @small
// CHECK: "relax.matmul"
func.func @small(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// -----

// A symbolic M: split per call by M (the GEMV up to 4 rows, cuBLAS above).
// CHECK-LABEL: func.func @rows
// CHECK: "relax.matmul"(%arg0, %arg1) {relax.dispatch_split = {callee = "relax_cublas_matmul_22_f32", generated_m = {{\[\[}}1, 4]], library = "relax_cublas"}}
// ON-LABEL: func.func @rows
// ON: callee = "relax_cublas_matmul_22_f32"
func.func @rows(%x: tensor<?x768xf32, #relax.shape<["s", 768]>>, %w: tensor<768x768xf32>) -> tensor<?x768xf32, #relax.shape<["s", 768]>> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x768xf32, #relax.shape<["s", 768]>>, tensor<768x768xf32>) -> tensor<?x768xf32, #relax.shape<["s", 768]>>
  return %y : tensor<?x768xf32, #relax.shape<["s", 768]>>
}

// -----

// A symbolic M bounded by 4: the GEMV; a symbolic M with too little work (N*K*5 < 2^21): generated.
// CHECK-LABEL: func.func @bounded
// CHECK: "relax.matmul"(%arg0, %arg1) :
// CHECK-LABEL: func.func @narrow
// CHECK: "relax.matmul"(%arg0, %arg1) :
func.func @bounded(%x: tensor<?x768xf32, #relax.shape<["s", 768]>>, %w: tensor<768x768xf32>) -> tensor<?x768xf32, #relax.shape<["s", 768]>> attributes {relax.function, relax.upper_bounds = {s = 4 : i64}} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x768xf32, #relax.shape<["s", 768]>>, tensor<768x768xf32>) -> tensor<?x768xf32, #relax.shape<["s", 768]>>
  return %y : tensor<?x768xf32, #relax.shape<["s", 768]>>
}
func.func @narrow(%x: tensor<?x64xf32, #relax.shape<["s", 64]>>, %w: tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["s", 64]>> attributes {relax.function} {
  %y = "relax.matmul"(%x, %w) : (tensor<?x64xf32, #relax.shape<["s", 64]>>, tensor<64x64xf32>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
  return %y : tensor<?x64xf32, #relax.shape<["s", 64]>>
}

// -----

// Batched (the same batch), 3-D x 2-D, f16 (f16 or f32 out); a broadcast batch and i32 stay.
// CHECK-LABEL: func.func @kinds
// CHECK: callee = "relax_cublas_matmul_33_f32"
// CHECK: callee = "relax_cublas_matmul_32_f32"
// CHECK: callee = "relax_cublas_matmul_22_f16"
// CHECK: callee = "relax_cublas_matmul_22_f16_f32"
// CHECK: "relax.matmul"{{.*}}tensor<1x256x128xf32>
// CHECK: "relax.matmul"{{.*}}xi32>
func.func @kinds(%a: tensor<4x64x256xf32>, %b: tensor<4x256x128xf32>, %w: tensor<256x128xf32>,
                 %h: tensor<64x256xf16>, %hw: tensor<256x128xf16>, %b1: tensor<1x256x128xf32>,
                 %i: tensor<64x256xi32>, %iw: tensor<256x128xi32>)
    -> (tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<64x128xf16>, tensor<64x128xf32>, tensor<4x64x128xf32>, tensor<64x128xi32>)
    attributes {relax.function} {
  %0 = "relax.matmul"(%a, %b) : (tensor<4x64x256xf32>, tensor<4x256x128xf32>) -> tensor<4x64x128xf32>
  %1 = "relax.matmul"(%a, %w) : (tensor<4x64x256xf32>, tensor<256x128xf32>) -> tensor<4x64x128xf32>
  %2 = "relax.matmul"(%h, %hw) : (tensor<64x256xf16>, tensor<256x128xf16>) -> tensor<64x128xf16>
  %3 = "relax.matmul"(%h, %hw) {out_dtype = f32} : (tensor<64x256xf16>, tensor<256x128xf16>) -> tensor<64x128xf32>
  %4 = "relax.matmul"(%a, %b1) : (tensor<4x64x256xf32>, tensor<1x256x128xf32>) -> tensor<4x64x128xf32>
  %5 = "relax.matmul"(%i, %iw) : (tensor<64x256xi32>, tensor<256x128xi32>) -> tensor<64x128xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x64x128xf32>, tensor<4x64x128xf32>, tensor<64x128xf16>, tensor<64x128xf32>, tensor<4x64x128xf32>, tensor<64x128xi32>
}

// -----

// bf16 (bf16 or f32 out; f32 compute): cuBLAS's CUDA_R_16BF.
// CHECK-LABEL: func.func @bf16
// CHECK: callee = "relax_cublas_matmul_22_bf16"
// CHECK: callee = "relax_cublas_matmul_22_bf16_f32"
// CHECK: callee = "relax_cublas_matmul_33_bf16"
func.func @bf16(%h: tensor<64x256xbf16>, %hw: tensor<256x128xbf16>, %a: tensor<4x64x256xbf16>, %b: tensor<4x256x128xbf16>)
    -> (tensor<64x128xbf16>, tensor<64x128xf32>, tensor<4x64x128xbf16>) attributes {relax.function} {
  %0 = "relax.matmul"(%h, %hw) : (tensor<64x256xbf16>, tensor<256x128xbf16>) -> tensor<64x128xbf16>
  %1 = "relax.matmul"(%h, %hw) {out_dtype = f32} : (tensor<64x256xbf16>, tensor<256x128xbf16>) -> tensor<64x128xf32>
  %2 = "relax.matmul"(%a, %b) : (tensor<4x64x256xbf16>, tensor<4x256x128xbf16>) -> tensor<4x64x128xbf16>
  return %0, %1, %2 : tensor<64x128xbf16>, tensor<64x128xf32>, tensor<4x64x128xbf16>
}

// -----

// A symbolic M of f16 and bf16 matmuls: split per call like f32, batched ones too.
// CHECK-LABEL: func.func @rows_half
// CHECK: "relax.matmul"(%arg0, %arg1) {relax.dispatch_split = {callee = "relax_cublas_matmul_22_f16", generated_m = {{\[\[}}1, 4]], library = "relax_cublas"}}
// CHECK: "relax.matmul"(%arg2, %arg3) {out_dtype = f32, relax.dispatch_split = {callee = "relax_cublas_matmul_22_bf16_f32"
// CHECK: "relax.matmul"(%arg4, %arg5) {relax.dispatch_split = {callee = "relax_cublas_matmul_33_f16"
func.func @rows_half(%x: tensor<?x768xf16, #relax.shape<["s", 768]>>, %w: tensor<768x768xf16>,
                     %bx: tensor<?x768xbf16, #relax.shape<["s", 768]>>, %bw: tensor<768x768xbf16>,
                     %a: tensor<2x?x768xf16, #relax.shape<[2, "s", 768]>>, %b: tensor<2x768x768xf16>)
    -> (tensor<?x768xf16, #relax.shape<["s", 768]>>, tensor<?x768xf32, #relax.shape<["s", 768]>>, tensor<2x?x768xf16, #relax.shape<[2, "s", 768]>>)
    attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x768xf16, #relax.shape<["s", 768]>>, tensor<768x768xf16>) -> tensor<?x768xf16, #relax.shape<["s", 768]>>
  %1 = "relax.matmul"(%bx, %bw) {out_dtype = f32} : (tensor<?x768xbf16, #relax.shape<["s", 768]>>, tensor<768x768xbf16>) -> tensor<?x768xf32, #relax.shape<["s", 768]>>
  %2 = "relax.matmul"(%a, %b) : (tensor<2x?x768xf16, #relax.shape<[2, "s", 768]>>, tensor<2x768x768xf16>) -> tensor<2x?x768xf16, #relax.shape<[2, "s", 768]>>
  return %0, %1, %2 : tensor<?x768xf16, #relax.shape<["s", 768]>>, tensor<?x768xf32, #relax.shape<["s", 768]>>, tensor<2x?x768xf16, #relax.shape<[2, "s", 768]>>
}

// -----

// relax.quantized_matmul: M beyond quant-rows (64) splits per call (the weight decoded, or read as
// stored when it is in x's type: 22w; K-quants decoded like the 32-element blocks); bounded by 64
// or q8 activations: generated.
// CHECK-LABEL: func.func @quant
// CHECK: "relax.quantized_matmul"(%arg0, %arg1) {format = "q8_0", relax.dispatch_split = {callee = "relax_cublas_matmul_22t_f32", generated_m = {{\[\[}}1, 64]], library = "relax_cublas"}}
// CHECK: "relax.quantized_matmul"(%arg2, %arg3) {format = "f16", relax.dispatch_split = {callee = "relax_cublas_matmul_22w_f16", generated_m = {{\[\[}}1, 64]]
// CHECK: "relax.quantized_matmul"(%arg4, %arg1) {format = "q8_0"} :
// CHECK: "relax.quantized_matmul"(%arg0, %arg5) {format = "q4_k", relax.dispatch_split = {callee = "relax_cublas_matmul_22t_f32", generated_m = {{\[\[}}1, 64]]
// CHECK: "relax.quantized_matmul"(%arg0, %arg1) {activations = "q8", format = "q8_0"} :
// ON-LABEL: func.func @quant
// ON: "relax.quantized_matmul"(%arg0, %arg1) {format = "q8_0", relax.dispatch_split = {callee = "relax_cublas_matmul_22t_f32", generated_m = {{\[\[}}1, 0]]
// ON: "relax.quantized_matmul"(%arg2, %arg3) {format = "f16", relax.dispatch_split = {callee = "relax_cublas_matmul_22w_f16", generated_m = {{\[\[}}1, 0]]
// ON: "relax.quantized_matmul"(%arg4, %arg1) {format = "q8_0", relax.dispatch_split = {callee = "relax_cublas_matmul_22t_f32", generated_m = {{\[\[}}1, 0]]
// OFF-LABEL: func.func @quant
// OFF-NOT: relax.dispatch_split
func.func @quant(%x: tensor<?x256xf32, #relax.shape<["s", 256]>>, %w: tensor<64x272xi8>,
                 %h: tensor<?x256xf16, #relax.shape<["s", 256]>>, %hw: tensor<64x512xi8>,
                 %x4: tensor<64x256xf32>, %kw: tensor<64x144xi8>)
    -> (tensor<?x64xf32, #relax.shape<["s", 64]>>, tensor<?x64xf16, #relax.shape<["s", 64]>>, tensor<64x64xf32>,
        tensor<?x64xf32, #relax.shape<["s", 64]>>, tensor<?x64xf32, #relax.shape<["s", 64]>>) attributes {relax.function} {
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x256xf32, #relax.shape<["s", 256]>>, tensor<64x272xi8>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
  %1 = "relax.quantized_matmul"(%h, %hw) {format = "f16"} : (tensor<?x256xf16, #relax.shape<["s", 256]>>, tensor<64x512xi8>) -> tensor<?x64xf16, #relax.shape<["s", 64]>>
  %2 = "relax.quantized_matmul"(%x4, %w) {format = "q8_0"} : (tensor<64x256xf32>, tensor<64x272xi8>) -> tensor<64x64xf32>
  %3 = "relax.quantized_matmul"(%x, %kw) {format = "q4_k"} : (tensor<?x256xf32, #relax.shape<["s", 256]>>, tensor<64x144xi8>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
  %4 = "relax.quantized_matmul"(%x, %w) {format = "q8_0", activations = "q8"} : (tensor<?x256xf32, #relax.shape<["s", 256]>>, tensor<64x272xi8>) -> tensor<?x64xf32, #relax.shape<["s", 64]>>
  return %0, %1, %2, %3, %4 : tensor<?x64xf32, #relax.shape<["s", 64]>>, tensor<?x64xf16, #relax.shape<["s", 64]>>, tensor<64x64xf32>, tensor<?x64xf32, #relax.shape<["s", 64]>>, tensor<?x64xf32, #relax.shape<["s", 64]>>
}
