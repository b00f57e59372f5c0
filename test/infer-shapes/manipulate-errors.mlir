// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-infer-shapes)'

// Error paths of the shape-manipulation rules.

func.func @reshape_n4_to_n5(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' element count: 4*n != 5*n (equal only for an empty tensor)}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["n", 5]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_static_count(%x: tensor<3x4xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' element count: 12 != 10}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[5, 2]>} : (tensor<3x4xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_count_off_by_one(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' element count: 4*n != 4*n + 1}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["4*n + 1"]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reshape_two_holes(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' target shape may contain at most one -1}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[-1, -1]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_hole_not_dividing(%x: tensor<6xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' element count 6 divisible by 4: 2 != 0}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[-1, 4]>} : (tensor<6xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_unknown_target(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' target shape may not contain '?' (use -1 for one inferred dim)}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["n", "?"]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_negative_dim(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' target dim -2 is negative}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[-2, "n"]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_unknown_input(%x: tensor<?x4xf32, #relax.shape<["?", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' input has an unknown dimension '?'; name it with relax.match_cast}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<[2, 2]>} : (tensor<?x4xf32, #relax.shape<["?", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_unbound_symbol(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.reshape' attribute 'shape' uses unbound symbol(s) m}}
  %0 = "relax.reshape"(%x) {shape = #relax.shape<["m", 4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @permute_not_permutation(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.permute_dims' axes [0, 0] are not a permutation of rank 2}}
  %0 = "relax.permute_dims"(%x) {axes = array<i64: 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @permute_axis_out_of_range(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.permute_dims' axis 2 is out of range for rank 2}}
  %0 = "relax.permute_dims"(%x) {axes = array<i64: 0, 2>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @expand_dims_repeat(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.expand_dims' axes [0, -3] repeat an axis}}
  %0 = "relax.expand_dims"(%x) {axis = array<i64: 0, -3>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @squeeze_non_unit(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.squeeze' squeezed dim 1: 4 != 1}}
  %0 = "relax.squeeze"(%x) {axis = array<i64: 1>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @squeeze_axis_out_of_range(%x: tensor<?x1xf32, #relax.shape<["n", 1]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.squeeze' axis 2 is out of range for rank 2}}
  %0 = "relax.squeeze"(%x) {axis = array<i64: 2>} : (tensor<?x1xf32, #relax.shape<["n", 1]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @flatten_unknown(%x: tensor<?x4xf32, #relax.shape<["?", 4]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.flatten' input has an unknown dimension '?'; name it with relax.match_cast}}
  %0 = "relax.flatten"(%x) : (tensor<?x4xf32, #relax.shape<["?", 4]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @broadcast_to_lower_rank(%x: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.broadcast_to' cannot broadcast rank 2 to rank 1}}
  %0 = "relax.broadcast_to"(%x) {shape = #relax.shape<[4]>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @broadcast_to_3_vs_4(%x: tensor<?x3xf32, #relax.shape<["n", 3]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.broadcast_to' broadcast dim 1: 3 != 4}}
  %0 = "relax.broadcast_to"(%x) {shape = #relax.shape<["n", 4]>} : (tensor<?x3xf32, #relax.shape<["n", 3]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_non_axis_mismatch(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x5xf32, #relax.shape<["m", 5]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.concat' non-concat dim 1: 4 != 5}}
  %0 = "relax.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x5xf32, #relax.shape<["m", 5]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_non_axis_symbolic(%a: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %b: tensor<?x?xf32, #relax.shape<["n", "k + 1"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.concat' non-concat dim 1: k != k + 1}}
  %0 = "relax.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?x?xf32, #relax.shape<["n", "k + 1"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_rank_mismatch(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<4xf32>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.concat' operands must have the same rank, got 2 and 1}}
  %0 = "relax.concat"(%a, %b) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<4xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_dtype_mismatch(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>, %b: tensor<?x4xf16, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.concat' operands must have the same element type, got f32, f16}}
  %0 = "relax.concat"(%a, %b) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf16, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.concat' axis 2 is out of range for rank 2}}
  %0 = "relax.concat"(%a, %a) {axis = 2 : i64, operandSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["n", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @concat_unknown_axis_dim(%a: tensor<?x4xf32, #relax.shape<["?", 4]>>, %b: tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.concat' concat axis has an unknown dimension '?'}}
  %0 = "relax.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?x4xf32, #relax.shape<["?", 4]>>, tensor<?x4xf32, #relax.shape<["n", 4]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @split_sections_not_dividing(%x: tensor<10x?xf32, #relax.shape<[10, "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' 3 sections dividing dim 10: 1 != 0}}
  %0:3 = "relax.split"(%x) {sections = 3 : i64, resultSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0>} : (tensor<10x?xf32, #relax.shape<[10, "k"]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>)
  return %0#0 : tensor<?x?xf32>
}

// -----

func.func @split_odd_dim(%x: tensor<?xf32, #relax.shape<["2*n + 1"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' 2 sections dividing dim 2*n + 1: 1 != 0}}
  %0:2 = "relax.split"(%x) {sections = 2 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["2*n + 1"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @split_sections_and_indices(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' needs exactly one of 'sections' and 'indices'}}
  %0:2 = "relax.split"(%x) {sections = 2 : i64, indices = array<i64: 1>, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @split_neither(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' needs exactly one of 'sections' and 'indices'}}
  %0:2 = "relax.split"(%x) {resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @split_zero_sections(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' sections must be positive, got 0}}
  %0:2 = "relax.split"(%x) {sections = 0 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @split_indices_descending(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' split indices ascending and within the dim: 7 > 2}}
  %0:3 = "relax.split"(%x) {indices = array<i64: 7, 2>, resultSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["n"]>>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @split_unknown_axis(%x: tensor<?xf32, #relax.shape<["?"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' split axis has an unknown dimension '?'}}
  %0:2 = "relax.split"(%x) {sections = 2 : i64, resultSegmentSizes = array<i32: 2, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["?"]>>) -> (tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @split_result_count(%x: tensor<?xf32, #relax.shape<["2*n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.split' has 3 result(s) but its shape rule gives 2}}
  %0:3 = "relax.split"(%x) {sections = 2 : i64, resultSegmentSizes = array<i32: 3, 0, 0, 0, 0, 0, 0, 0>} : (tensor<?xf32, #relax.shape<["2*n"]>>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<?xf32>
}

// -----

func.func @slice_begin_after_end_static(%x: tensor<10xf32>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' slice begin <= end of dim 0: 6 > 2}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[6]>, end = #relax.shape<[2]>} : (tensor<10xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_end_past_dim(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' slice end within dim 0: n + 1 > n}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<["n + 1"]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_zero_stride(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' stride 0 must be a positive integer}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<["n"]>, strides = #relax.shape<[0]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_symbolic_stride(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' stride k must be a positive integer}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<["n"]>, strides = #relax.shape<["k"]>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @slice_length_mismatch(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' axes, begin, end and strides must have the same length}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0, 1>, begin = #relax.shape<[0]>, end = #relax.shape<["n"]>} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @slice_unknown_dim(%x: tensor<?xf32, #relax.shape<["?"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' sliced dim 0 is unknown '?'; name it with relax.match_cast}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<[1]>} : (tensor<?xf32, #relax.shape<["?"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_bad_axis(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' axis 1 is out of range for rank 1}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 1>, begin = #relax.shape<[0]>, end = #relax.shape<[1]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_unbound_bound(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.strided_slice' attribute 'end' uses unbound symbol(s) m}}
  %0 = "relax.strided_slice"(%x) {axes = array<i64: 0>, begin = #relax.shape<[0]>, end = #relax.shape<["m"]>} : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @take_float_indices(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %i: tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.take' indices must be an integer tensor, got f32}}
  %0 = "relax.take"(%x, %i) : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?xf32, #relax.shape<["m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @take_axis_out_of_range(%x: tensor<?x?xf32, #relax.shape<["n", "k"]>>, %i: tensor<?xi64, #relax.shape<["m"]>>) -> tensor<?x?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.take' axis -3 is out of range for rank 2}}
  %0 = "relax.take"(%x, %i) {axis = -3 : i64} : (tensor<?x?xf32, #relax.shape<["n", "k"]>>, tensor<?xi64, #relax.shape<["m"]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @tril_rank1(%x: tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32> attributes {relax.function} {
  // expected-error@+1 {{'relax.tril' needs rank >= 2, got 1}}
  %0 = "relax.tril"(%x) : (tensor<?xf32, #relax.shape<["n"]>>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
