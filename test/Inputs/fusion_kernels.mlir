// Hand-written loop-level kernels (linalg on tensors, destination-passing style) shared
// by the relax-fuse-ops / relax-fuse-kernels tests; each test appends a graph function.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>

// x @ w: output-fusable.
func.func private @mm(%a: tensor<?x64xf32>, %w: tensor<64x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%out : tensor<?x64xf32>) -> tensor<?x64xf32>
  %r = linalg.matmul ins(%a, %w : tensor<?x64xf32>, tensor<64x64xf32>) outs(%init : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// x + b (b broadcast over rows): broadcast.
func.func private @bias_add(%x: tensor<?x64xf32>, %b: tensor<64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x64xf32>, tensor<64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// x * w (w broadcast over rows): broadcast.
func.func private @mul_col(%x: tensor<?x64xf32>, %b: tensor<64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x64xf32>, tensor<64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// max(x, 0): elementwise.
func.func private @relu(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// 1 / (1 + exp(-x)): elementwise.
func.func private @sigmoid(%x: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %one = arith.constant 1.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %s = arith.divf %one, %d : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// x * y: elementwise.
func.func private @mul(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x64xf32>, tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// x + y: elementwise.
func.func private @add(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x64xf32>, tensor<?x64xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// sum over rows: reduction.
func.func private @sum_rows(%x: tensor<?x64xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%out : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// max over rows: reduction.
func.func private @max_rows(%x: tensor<?x64xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %init = linalg.fill ins(%ninf : f32) outs(%out : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// rsqrt(s / 64 + 1e-5) on a vector: elementwise.
func.func private @rsqrt_mean(%s: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> attributes {relax.kernel} {
  %inv = arith.constant 0.015625 : f32
  %eps = arith.constant 1.0e-05 : f32
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%s : tensor<?xf32>) outs(%out : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %inv : f32
    %e = arith.addf %m, %eps : f32
    %q = math.rsqrt %e : f32
    linalg.yield %q : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// x * r (r broadcast over columns): broadcast.
func.func private @mul_row(%x: tensor<?x64xf32>, %v: tensor<?xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %v : tensor<?x64xf32>, tensor<?xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// exp(x - m) (m broadcast over columns): broadcast.
func.func private @sub_exp_row(%x: tensor<?x64xf32>, %v: tensor<?xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %v : tensor<?x64xf32>, tensor<?xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// x / s (s broadcast over columns): broadcast.
func.func private @div_row(%x: tensor<?x64xf32>, %v: tensor<?xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %v : tensor<?x64xf32>, tensor<?xf32>) outs(%out : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.divf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// x[:, 0:32] and x[:, 32:64]: injective (slices).
func.func private @slice_lo(%x: tensor<?x64xf32>, %out: tensor<?x32xf32>) -> tensor<?x32xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %s = tensor.extract_slice %x[0, 0] [%n, 32] [1, 1] : tensor<?x64xf32> to tensor<?x32xf32>
  %r = linalg.copy ins(%s : tensor<?x32xf32>) outs(%out : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}
func.func private @slice_hi(%x: tensor<?x64xf32>, %out: tensor<?x32xf32>) -> tensor<?x32xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %s = tensor.extract_slice %x[0, 32] [%n, 32] [1, 1] : tensor<?x64xf32> to tensor<?x32xf32>
  %r = linalg.copy ins(%s : tensor<?x32xf32>) outs(%out : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -x: elementwise.
func.func private @neg(%x: tensor<?x32xf32>, %out: tensor<?x32xf32>) -> tensor<?x32xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x32xf32>) outs(%out : tensor<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// concat([a, b], axis=1): injective.
func.func private @concat(%a: tensor<?x32xf32>, %b: tensor<?x32xf32>, %out: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x32xf32>
  %0 = tensor.insert_slice %a into %out[0, 0] [%n, 32] [1, 1] : tensor<?x32xf32> into tensor<?x64xf32>
  %1 = tensor.insert_slice %b into %0[0, 32] [%n, 32] [1, 1] : tensor<?x32xf32> into tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// k^T: injective.
func.func private @transpose(%k: tensor<?x64xf32>, %out: tensor<64x?xf32>) -> tensor<64x?xf32> attributes {relax.kernel} {
  %r = linalg.transpose ins(%k : tensor<?x64xf32>) outs(%out : tensor<64x?xf32>) permutation = [1, 0]
  return %r : tensor<64x?xf32>
}

// q @ k^T: output-fusable.
func.func private @mm_qk(%q: tensor<?x64xf32>, %kt: tensor<64x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.kernel} {
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%out : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%q, %kt : tensor<?x64xf32>, tensor<64x?xf32>) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// x * 0.125: elementwise.
func.func private @scale(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.kernel} {
  %c = arith.constant 0.125 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x?xf32>) outs(%out : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// x + mask: elementwise.
func.func private @add_mask(%x: tensor<?x?xf32>, %m: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.kernel} {
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<?x?xf32>, tensor<?x?xf32>) outs(%out : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// softmax over rows, one kernel (max, sum of exp, divide): reduction.
func.func private @softmax(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {relax.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty(%n) : tensor<?xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<?xf32>) -> tensor<?xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%m0 : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<?x?xf32>, tensor<?xf32>) outs(%s0 : tensor<?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %t = arith.addf %e, %o : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %s : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%out : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %c : f32
    linalg.yield %q : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
