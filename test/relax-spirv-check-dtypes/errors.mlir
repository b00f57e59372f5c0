// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-spirv-check-dtypes)'
// RUN: not relax-opt %s --split-input-file --pass-pipeline='builtin.module(vulkan)' 2>&1 | FileCheck %s --check-prefix=VULKAN

// The vulkan pipeline runs the check first: the program never reaches the SPIR-V conversion,
// which would read the bf16 buffers as garbage.
// VULKAN: errors.mlir:[[@LINE+4]]:19: error: @params parameter #0: bf16 tensors are not supported on the vulkan target
// VULKAN: errors.mlir:[[@LINE+5]]:19: error: @params parameter #1: bf16 tensors are not supported on the vulkan target
// bf16 parameters: each reported at its own location; the ops on them are not.
// expected-error@+1 {{@params parameter #0: bf16 tensors are not supported on the vulkan target (the pinned SPIR-V target has no bfloat16 type): compute in f32 or f16 (relax.astype), or compile for cpu or cuda}}
func.func @params(%x: tensor<?x8xbf16, #relax.shape<["n", 8]>>,
                  // expected-error@+1 {{@params parameter #1: bf16 tensors}}
                  %w: tensor<8x4xbf16>,
                  %s: tensor<4xf32>) -> tensor<?x4xbf16, #relax.shape<["n", 4]>> attributes {relax.function} {
  %0 = "relax.matmul"(%x, %w) : (tensor<?x8xbf16, #relax.shape<["n", 8]>>, tensor<8x4xbf16>) -> tensor<?x4xbf16, #relax.shape<["n", 4]>>
  return %0 : tensor<?x4xbf16, #relax.shape<["n", 4]>>
}

// -----

// bf16 made inside the program: the astype that makes it, not its users.
// VULKAN: errors.mlir:[[@LINE+4]]:8: error: 'relax.astype' result: bf16 tensors
// VULKAN-NOT: relax.exp
func.func @astype(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  // expected-error@+1 {{'relax.astype' result: bf16 tensors are not supported on the vulkan target}}
  %0 = "relax.astype"(%x) {dtype = bf16} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xbf16, #relax.shape<["n"]>>
  %1 = "relax.exp"(%0) : (tensor<?xbf16, #relax.shape<["n"]>>) -> tensor<?xbf16, #relax.shape<["n"]>>
  %2 = "relax.astype"(%1) {dtype = f32} : (tensor<?xbf16, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %2 : tensor<?xf32, #relax.shape<["n"]>>
}

// -----

// A bf16 constant.
func.func @const(%x: tensor<2xf32>) -> tensor<2xf32> attributes {relax.function} {
  // expected-error@+1 {{'arith.constant' result: bf16 tensors are not supported}}
  %c = arith.constant dense<[1.5, 2.0]> : tensor<2xbf16>
  %0 = "relax.astype"(%c) {dtype = f32} : (tensor<2xbf16>) -> tensor<2xf32>
  %1 = "relax.add"(%x, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}

// -----

// f32 and f16 pass.
func.func @ok(%x: tensor<?xf16, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>> attributes {relax.function} {
  %0 = "relax.astype"(%x) {dtype = f32} : (tensor<?xf16, #relax.shape<["n"]>>) -> tensor<?xf32, #relax.shape<["n"]>>
  return %0 : tensor<?xf32, #relax.shape<["n"]>>
}
