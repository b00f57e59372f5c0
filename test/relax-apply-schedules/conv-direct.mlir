// relax-conv-gemm's direct kernel through fusion and the schedules: a 3x3 conv + bias +
// residual add + relu is ONE kernel (the padding, the conv's generic, its copy to NCHW, the
// epilogue), scheduled `conv_direct`: the padded input plane by plane on the threads, then
// tasks of (channel block, image, 8 output rows) on an scf.forall,
// the conv fused into them with a task-sized (1, 1, rows, W, 32) accumulator; per row, tiles
// of 7 output columns x 32 channels (AVX-512: two zmm per pixel, 14 accumulators) carried in
// registers across the input channels, each channel's nine taps a 7-wide input read (its
// values broadcast) times a 32-wide weight read; the last < 7 columns peeled off and masked.
// The weight packing (`conv_pack`) transposes 16x16 tiles in registers (shuffles).
// AVX2 (the module's relax.target rewritten): 16-channel blocks (two ymm) and 6-column
// tiles; 8x8 transposes (in the packing and in the copy to NCHW).
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{direct=all}, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels, relax-apply-schedules{target=avx512})' | FileCheck %s
// RUN: sed 's/isa = "avx512"/isa = "avx2"/' %s | relax-opt - --pass-pipeline='builtin.module(relax-infer-shapes, relax-conv-gemm{direct=all}, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels, relax-apply-schedules)' | FileCheck %s --check-prefix=AVX2

// CHECK-LABEL: func.func private @relax_conv_pack_b32_f32_32x16x3x3(
// CHECK-SAME: relax.schedule = "conv_pack"
// CHECK: scf.for %{{.+}} = %c0 to %c144 step %c16
// CHECK: vector.transfer_read %{{.+}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK-LABEL: func.func private @fused_conv_direct_add_add_relu(
// CHECK-SAME: relax.schedule = "conv_direct"
// The padded input first: one (image, channel) plane per forall iteration, the plane filled
// and its interior copied in place (no empty-slice guard, no copy back):
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (%{{.+}}, 16) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<?x16x?x?xf32>)
// CHECK-NOT: scf.if
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x1x?x?xf32>)
// CHECK: linalg.copy ins(%{{.+}} : tensor<1x1x?x?xf32>)
// CHECK: tensor.parallel_insert_slice
// Then the tasks:
// CHECK: %[[OUT5:.+]] = tensor.expand_shape %arg4 {{\[}}[0], [1, 2], [3], [4]] {{.+}} into tensor<?x1x32x?x?xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (%{{.+}}, %{{.+}}) shared_outs(%{{.+}} = %[[OUT5]]) -> (tensor<?x1x32x?x?xf32>)
// CHECK: tensor.empty(%{{.+}}, %{{.+}}) : tensor<1x1x?x?x32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %{{.+}} step %c1
// CHECK: scf.for %{{.+}} = %c0 to %{{.+}} step %c7
// CHECK: %[[ACC:.+]] = vector.transfer_read %{{.+}} : tensor<7x32xf32>, vector<7x32xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c1 iter_args(%{{.+}} = %[[ACC]]) -> (vector<7x32xf32>)
// CHECK-COUNT-9: vector.transfer_read %{{.+}} : tensor<32xf32>, vector<32xf32>
// CHECK-COUNT-9: arith.mulf %{{.+}}, %{{.+}} : vector<7x32xf32>
// CHECK: scf.yield %{{.+}} : vector<7x32xf32>
// CHECK: vector.transfer_write %{{.+}} : vector<7x32xf32>, tensor<7x32xf32>
// the column remainder:
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c7
// CHECK: vector.create_mask %{{.+}} : vector<7xi1>
// then the copy to NCHW merged with the epilogue, on the output viewed (N, O/B, B, OH, OW):
// per row, 16x16 (channels x columns) tiles of the accumulator transposed in registers
// (shuffles, no gather), the bias, residual add and relu on the vectors, one store; the
// last < 16 columns masked:
// CHECK-NOT: linalg.generic
// CHECK-NOT: vector.gather
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c16
// CHECK: vector.shuffle
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write %{{.+}} {in_bounds = [true, true]} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write %{{.+}}, %{{.+}}, %{{.+}} {in_bounds = [true, true]} : vector<16x16xf32>, tensor<16x?xf32>
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x1x32x?x?xf32> into tensor<?x32x?x?xf32>
// AVX2-LABEL: func.func private @relax_conv_pack_b16_f32_32x16x3x3(
// AVX2: vector.transfer_read %{{.+}} : tensor<8x8xf32>, vector<8x8xf32>
// AVX2-LABEL: func.func private @fused_conv_direct_add_add_relu(
// AVX2-SAME: relax.schedule = "conv_direct"
// AVX2: scf.for %{{.+}} = %c0 to %{{.+}} step %c6
// AVX2: vector.transfer_read %{{.+}} : tensor<6x16xf32>, vector<6x16xf32>
// AVX2-NOT: vector.gather
// AVX2: vector.shuffle %{{.+}}, %{{.+}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
// AVX2: arith.maximumf %{{.+}}, %{{.+}} : vector<8x8xf32>
module attributes {relax.target = {kind = "cpu", isa = "avx512"}} {
func.func @block(%x: tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, %w: tensor<32x16x3x3xf32>, %b: tensor<32x1x1xf32>, %r: tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>> attributes {relax.function} {
  %0 = "relax.conv2d"(%x, %w) {padding = array<i64: 1, 1>} : (tensor<?x16x?x?xf32, #relax.shape<["n", 16, "h", "w"]>>, tensor<32x16x3x3xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %1 = "relax.add"(%0, %b) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<32x1x1xf32>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %2 = "relax.add"(%1, %r) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>, tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  %3 = "relax.relu"(%2) : (tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>) -> tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
  return %3 : tensor<?x32x?x?xf32, #relax.shape<["n", 32, "h", "w"]>>
}
}
