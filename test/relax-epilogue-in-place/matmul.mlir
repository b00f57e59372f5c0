// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-epilogue-in-place)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-epilogue-in-place,one-shot-bufferize{bufferize-function-boundaries=true function-boundary-type-conversion=identity-layout-map})' | FileCheck %s --check-prefix=BUF
// RUN: relax-opt %s --pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=true function-boundary-type-conversion=identity-layout-map})' | FileCheck %s --check-prefix=BEFORE

// A fused matmul kernel computes its product into a tensor.empty that its epilogue reads:
// bufferized, an M x N memref.alloc per call (BEFORE). The pass zero-fills the epilogue's
// destination instead and runs the epilogue in place on the product (its init, read through
// the output block argument): bufferized, no allocation (BUF).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func private @mm_bias_relu(
// CHECK-SAME: %[[A:.*]]: tensor<?x576xf32>, %[[B:.*]]: tensor<576x576xf32>, %[[BIAS:.*]]: tensor<576xf32>, %[[OUT:.*]]: tensor<?x576xf32>)
// CHECK-NOT: tensor.empty
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[OUT]] : tensor<?x576xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[Z]] : tensor<?x576xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ROW:.*]], #[[ID:.*]]], iterator_types = ["parallel", "parallel"]} ins(%[[BIAS]] : tensor<576xf32>) outs(%[[P]] : tensor<?x576xf32>)
// CHECK-NEXT: ^bb0(%[[Y:.*]]: f32, %[[X:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[S]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[M]] : f32
// CHECK: return %[[R]]
// BUF-LABEL: func.func private @mm_bias_relu(
// BUF-NOT: memref.alloc
// BUF: linalg.fill ins(%{{.*}} : f32) outs(%arg3 : memref<?x576xf32>)
// BUF: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%arg3 : memref<?x576xf32>)
// BUF: linalg.generic {{.*}} ins(%arg2 : memref<576xf32>) outs(%arg3 : memref<?x576xf32>)
// BUF-NOT: memref.alloc
// BUF: return
// BEFORE-LABEL: func.func private @mm_bias_relu(
// BEFORE: %[[T:.*]] = memref.alloc(%{{.*}}) {{.*}} : memref<?x576xf32>
// BEFORE: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%[[T]] : memref<?x576xf32>)
// BEFORE: linalg.generic {{.*}} ins(%[[T]], %arg2 : memref<?x576xf32>, memref<576xf32>) outs(%arg3 : memref<?x576xf32>)
func.func private @mm_bias_relu(%arg0: tensor<?x576xf32>, %arg1: tensor<576x576xf32>, %arg2: tensor<576xf32>, %arg3: tensor<?x576xf32>) -> tensor<?x576xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "matmul_add_relu"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x576xf32>
  %0 = tensor.empty(%dim) : tensor<?x576xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x576xf32>) -> tensor<?x576xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x576xf32>, tensor<576x576xf32>) outs(%1 : tensor<?x576xf32>) -> tensor<?x576xf32>
  %3 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%2, %arg2 : tensor<?x576xf32>, tensor<576xf32>) outs(%arg3 : tensor<?x576xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %4 = arith.addf %in, %in_0 : f32
    %5 = arith.maximumf %4, %cst : f32
    linalg.yield %5 : f32
  } -> tensor<?x576xf32>
  return %3 : tensor<?x576xf32>
}

// The residual add, the product its SECOND input: the residual stays an input, the product
// becomes the init (read through the output block argument).
// CHECK-LABEL: func.func private @mm_res(
// CHECK-SAME: %[[A:.*]]: tensor<?x576xf32>, %[[B:.*]]: tensor<576x576xf32>, %[[RES:.*]]: tensor<?x576xf32>, %[[OUT:.*]]: tensor<?x576xf32>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[OUT]] : tensor<?x576xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[Z]] : tensor<?x576xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[RES]] : tensor<?x576xf32>) outs(%[[P]] : tensor<?x576xf32>)
// CHECK-NEXT: ^bb0(%[[R:.*]]: f32, %[[X:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.subf %[[R]], %[[X]] : f32
// BUF-LABEL: func.func private @mm_res(
// BUF-NOT: memref.alloc
// BUF: return
func.func private @mm_res(%arg0: tensor<?x576xf32>, %arg1: tensor<576x576xf32>, %arg2: tensor<?x576xf32>, %arg3: tensor<?x576xf32>) -> tensor<?x576xf32> attributes {relax.kernel, relax.kernel_kind = "output-fusable", relax.kernel_op = "matmul_subtract"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x576xf32>
  %0 = tensor.empty(%dim) : tensor<?x576xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x576xf32>) -> tensor<?x576xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x576xf32>, tensor<576x576xf32>) outs(%1 : tensor<?x576xf32>) -> tensor<?x576xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%arg2, %2 : tensor<?x576xf32>, tensor<?x576xf32>) outs(%arg3 : tensor<?x576xf32>) {
  ^bb0(%r: f32, %x: f32, %out: f32):
    %4 = arith.subf %r, %x : f32
    linalg.yield %4 : f32
  } -> tensor<?x576xf32>
  return %3 : tensor<?x576xf32>
}

// Left alone: the product read through a transposed map (not elementwise in place), and an
// epilogue that reads its destination (an accumulation into the output).
// CHECK-LABEL: func.func private @mm_transposed(
// CHECK: tensor.empty
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x64xf32>) outs(%arg2 : tensor<64x64xf32>)
func.func private @mm_transposed(%arg0: tensor<64x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {relax.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<64x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<64x64xf32>) outs(%arg2 : tensor<64x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    linalg.yield %x : f32
  } -> tensor<64x64xf32>
  return %3 : tensor<64x64xf32>
}

// CHECK-LABEL: func.func private @mm_accumulate(
// CHECK: tensor.empty
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x64xf32>) outs(%arg2 : tensor<64x64xf32>)
func.func private @mm_accumulate(%arg0: tensor<64x64xf32>, %arg1: tensor<64x64xf32>, %arg2: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {relax.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<64x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<64x64xf32>) outs(%arg2 : tensor<64x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %s = arith.addf %x, %out : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  return %3 : tensor<64x64xf32>
}

// The epilogue's destination an empty tensor of its own (made before the fill): the fill
// takes it, the product's empty goes.
// CHECK-LABEL: func.func private @mm_empty_dest(
// CHECK: %[[D:.*]] = tensor.empty() : tensor<64x64xf32>
// CHECK-NOT: tensor.empty
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[D]] : tensor<64x64xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%[[Z]] : tensor<64x64xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[P]] : tensor<64x64xf32>)
// CHECK: math.tanh
func.func private @mm_empty_dest(%arg0: tensor<64x64xf32>, %arg1: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {relax.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %d = tensor.empty() : tensor<64x64xf32>
  %0 = tensor.empty() : tensor<64x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<64x64xf32>, tensor<64x64xf32>) outs(%1 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<64x64xf32>) outs(%d : tensor<64x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  } -> tensor<64x64xf32>
  return %3 : tensor<64x64xf32>
}
