// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// relax.quantized_matmul / quantized_take: the weight is an i8 (N, row bytes) tensor of
// whole blocks of its format, its K equals x's last dim, the format is known.

func.func @k_mismatch(%x: tensor<?x64xf32, #relax.shape<["m", 64]>>, %w: tensor<8x34xi8>) -> tensor<?x8xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_matmul' x dim -1 vs the K of w (q8_0 rows): 64 != 32}}
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x64xf32, #relax.shape<["m", 64]>>, tensor<8x34xi8>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @partial_block(%x: tensor<?x32xf32, #relax.shape<["m", 32]>>, %w: tensor<8x35xi8>) -> tensor<?x8xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_matmul' w: 35 row bytes is not a whole number of q8_0 blocks (34 bytes)}}
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x32xf32, #relax.shape<["m", 32]>>, tensor<8x35xi8>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @unknown_format(%x: tensor<?x32xf32, #relax.shape<["m", 32]>>, %w: tensor<8x34xi8>) -> tensor<?x8xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_matmul' unknown format 'q3_x'}}
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q3_x"} : (tensor<?x32xf32, #relax.shape<["m", 32]>>, tensor<8x34xi8>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @f32_weight(%x: tensor<?x32xf32, #relax.shape<["m", 32]>>, %w: tensor<8x34xf32>) -> tensor<?x8xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_matmul' w must be a 2-D i8 tensor of q8_0 rows, got 2-D f32}}
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x32xf32, #relax.shape<["m", 32]>>, tensor<8x34xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @activations(%x: tensor<?x32xf32, #relax.shape<["m", 32]>>, %w: tensor<8x34xi8>) -> tensor<?x8xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_matmul' activations must be one of f32, q8, got 'i4'}}
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0", activations = "i4"} : (tensor<?x32xf32, #relax.shape<["m", 32]>>, tensor<8x34xi8>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @take_float_ids(%t: tensor<100x18xi8>, %i: tensor<?xf32, #relax.shape<["s"]>>) -> tensor<?x32xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_take' indices must be an integer tensor, got f32}}
  %0 = "relax.quantized_take"(%t, %i) {format = "q4_0"} : (tensor<100x18xi8>, tensor<?xf32, #relax.shape<["s"]>>) -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

func.func @integer_x(%x: tensor<?x32xi32, #relax.shape<["m", 32]>>, %w: tensor<8x34xi8>) -> tensor<?x8xi32> attributes {relax.function} {
  // expected-error@+1 {{'relax.quantized_matmul' x must be an f32, f16 or bf16 tensor of rank >= 1, got 2-D i32}}
  %0 = "relax.quantized_matmul"(%x, %w) {format = "q8_0"} : (tensor<?x32xi32, #relax.shape<["m", 32]>>, tensor<8x34xi8>) -> tensor<?x8xi32>
  return %0 : tensor<?x8xi32>
}
