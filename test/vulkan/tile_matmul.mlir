// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-tile-matmul{threads=8 per-thread=2 tile-k=8 min-size=1}, canonicalize, cse)' | FileCheck %s
// RUN: relax-opt %s --pass-pipeline='builtin.module(relax-gpu-tile-matmul, canonicalize, cse)' | FileCheck %s --check-prefix=GUARD
// A matmul kernel becomes one gpu.launch: a grid of ceil(N/16) x ceil(M/16) workgroups of
// 8 x 8 threads, blocks of A (16 x 8) and B (8 x 16) staged in workgroup memory between
// barriers, a 2 x 2 register block of C per thread; the zero fill and the bias + relu
// epilogue folded into the one store; the intermediate buffer erased.

// CHECK-LABEL: func.func private @mlp(
// CHECK-NOT: linalg.
// CHECK-NOT: memref.alloc
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0 : memref<?x?xf32>
// CHECK: %[[N:.*]] = memref.dim %arg1, %c1 : memref<?x?xf32>
// CHECK: %[[K:.*]] = memref.dim %arg0, %c1 : memref<?x?xf32>
// CHECK: %[[GX:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK: %[[GY:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %[[BY:.*]], %{{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %[[GY]], %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c8{{.*}}, %{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[SA:.*]] : memref<128xf32, #gpu.address_space<workgroup>>, %[[SB:.*]] : memref<128xf32, #gpu.address_space<workgroup>>) {
// CHECK: %{{.*}}:4 = scf.for %[[K0:.*]] = %c0{{.*}} to %[[K]] step %c8{{.*}} iter_args(
// CHECK: %[[A:.*]] = memref.load %arg0[%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK: %[[AZ:.*]] = arith.select %{{.*}}, %[[A]], %cst : f32
// CHECK: memref.store %[[AZ]], %[[SA]][%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK: %[[BZ:.*]] = arith.select %{{.*}}, %[[B]], %cst : f32
// CHECK: memref.store %[[BZ]], %[[SB]][%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} iter_args(
// CHECK-COUNT-2: memref.load %[[SA]]
// CHECK-COUNT-2: memref.load %[[SB]]
// CHECK-COUNT-4: arith.mulf
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK-COUNT-4: scf.if
// CHECK: %[[BIAS:.*]] = memref.load %arg2[%{{.*}}] : memref<?xf32>
// CHECK: %[[Y:.*]] = arith.addf %{{.*}}, %[[BIAS]] : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[Y]], %cst : f32
// CHECK: memref.store %[[R]], %arg3[%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK: gpu.terminator
// CHECK: return
// By default (min-size=32) the tiled launch runs when M >= 32 and N >= 32; else the small
// launch: one thread per element of C (grid M x ceil(N/64), 64 threads), a serial K loop,
// the bias + relu applied before its one store; no intermediate buffer on either route.
// GUARD-LABEL: func.func private @mlp(
// GUARD-NOT: memref.alloc
// GUARD: %[[M:.*]] = memref.dim %arg0, %c0 : memref<?x?xf32>
// GUARD: %[[N:.*]] = memref.dim %arg1, %c1 : memref<?x?xf32>
// GUARD: %[[BIGM:.*]] = arith.cmpi uge, %[[M]], %c32 : index
// GUARD: %[[BIGN:.*]] = arith.cmpi uge, %[[N]], %c32 : index
// GUARD: %[[BIG:.*]] = arith.andi %[[BIGM]], %[[BIGN]] : i1
// GUARD: scf.if %[[BIG]] {
// GUARD: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c8{{.*}}, %{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1024xf32, #gpu.address_space<workgroup>>)
// GUARD: } else {
// GUARD-NEXT: %[[K:.*]] = memref.dim %arg0, %c1 : memref<?x?xf32>
// GUARD: %[[GY:.*]] = arith.divui %{{.*}}, %c64 : index
// GUARD: gpu.launch blocks(%[[ROW:.*]], %[[BX:.*]], %{{.*}}) in (%{{.*}} = %[[M]], %{{.*}} = %[[GY]], %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) {
// GUARD: %[[COL:.*]] = arith.addi %{{.*}}, %[[TX]] : index
// GUARD: %[[IN:.*]] = arith.cmpi ult, %[[COL]], %[[N]] : index
// GUARD: scf.if %[[IN]] {
// GUARD: scf.for %[[KK:.*]] = %c0{{.*}} to %[[K]] step %c1{{.*}} iter_args(
// GUARD: memref.load %arg0[%[[ROW]], %[[KK]]] : memref<?x?xf32>
// GUARD: memref.load %arg1[%[[KK]], %[[COL]]] : memref<?x?xf32>
// GUARD: arith.mulf
// GUARD: arith.addf
// GUARD: %[[BIAS:.*]] = memref.load %arg2[%[[COL]]] : memref<?xf32>
// GUARD: arith.maximumf
// GUARD: memref.store %{{.*}}, %arg3[%[[ROW]], %[[COL]]] : memref<?x?xf32>
// GUARD: gpu.terminator
// GUARD-NOT: linalg.
// GUARD: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @mlp(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %bias: memref<?xf32>, %out: memref<?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c0 : memref<?x?xf32>
  %n = memref.dim %b, %c1 : memref<?x?xf32>
  %t = memref.alloc(%m, %n) : memref<?x?xf32>
  linalg.fill ins(%cst : f32) outs(%t : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%t : memref<?x?xf32>)
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t, %bias : memref<?x?xf32>, memref<?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  }
  memref.dealloc %t : memref<?x?xf32>
  return
}

// A batch matmul: one batch per z workgroup; with no fill before it, C's old value is
// loaded and added before the store.
// CHECK-LABEL: func.func private @bmm(
// CHECK: %[[NB:.*]] = memref.dim %arg0, %c0 : memref<?x?x?xf32>
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:.*]]) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[NB]])
// CHECK: memref.load %arg0[%[[BZ]], %{{.*}}, %{{.*}}] : memref<?x?x?xf32>
// CHECK: memref.load %arg1[%[[BZ]], %{{.*}}, %{{.*}}] : memref<?x?x?xf32>
// CHECK: %[[OLD:.*]] = memref.load %arg2[%[[BZ]], %{{.*}}, %{{.*}}] : memref<?x?x?xf32>
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[OLD]] : f32
// CHECK: memref.store %[[SUM]], %arg2[%[[BZ]], %{{.*}}, %{{.*}}] : memref<?x?x?xf32>
func.func private @bmm(%a: memref<?x?x?xf32>, %b: memref<?x?x?xf32>, %c: memref<?x?x?xf32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  linalg.batch_matmul ins(%a, %b : memref<?x?x?xf32>, memref<?x?x?xf32>) outs(%c : memref<?x?x?xf32>)
  return
}

// Not f32: the parallel-loop route keeps it.
// CHECK-LABEL: func.func private @imm(
// CHECK-NEXT: linalg.matmul
// CHECK-NOT: gpu.launch
func.func private @imm(%a: memref<?x?xi32>, %b: memref<?x?xi32>, %c: memref<?x?xi32>)
    attributes {relax.kernel, relax.kernel_kind = "output-fusable"} {
  linalg.matmul ins(%a, %b : memref<?x?xi32>, memref<?x?xi32>) outs(%c : memref<?x?xi32>)
  return
}
