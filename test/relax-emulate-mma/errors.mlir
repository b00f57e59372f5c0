// RUN: relax-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(relax-emulate-mma)'

// The emulation's barriers need every invocation of the workgroup: an mma.sync under a branch
// on the thread id is refused at the op.
gpu.module @m {
  gpu.func @branch(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %c32 = arith.constant 32 : index
    %lt = arith.cmpi ult, %tid, %c32 : index
    scf.if %lt {
      %z = arith.constant dense<0.0> : vector<2x2xf32>
      // expected-error@+1 {{relax-emulate-mma: 'nvgpu.mma.sync' under an 'scf.if' whose condition depends on the invocation: its emulation's barriers need every invocation of the workgroup}}
      %d = nvgpu.mma.sync (%fa, %fb, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
      memref.store %e, %out[%tid] : memref<?xf32>
    }
    gpu.return
  }
}

// -----

// A loop whose trip count depends on the lane (through arithmetic on the thread id).
gpu.module @m {
  gpu.func @loop(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.addi %tid, %c1 : index
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %z) -> (vector<2x2xf32>) {
      // expected-error@+1 {{'nvgpu.mma.sync' in an 'scf.for' whose bounds depend on the invocation}}
      %d = nvgpu.mma.sync (%fa, %fb, %acc) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      scf.yield %d : vector<2x2xf32>
    }
    %e = vector.extract %r[0, 0] : f32 from vector<2x2xf32>
    memref.store %e, %out[%c0] : memref<?xf32>
    gpu.return
  }
}

// -----

// A branch on a kernel argument (the same in every invocation) is fine; a block that is not a
// whole number of warps is not.
gpu.module @m {
  // expected-error@+1 {{relax-emulate-mma: the kernel's block size ([48, 1, 1]) must be static and a multiple of 32 (whole warps)}}
  gpu.func @partial_warp(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %ok: i1, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 48, 1, 1>} {
    scf.if %ok {
      %z = arith.constant dense<0.0> : vector<2x2xf32>
      %d = nvgpu.mma.sync (%fa, %fb, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
      %c0 = arith.constant 0 : index
      memref.store %e, %out[%c0] : memref<?xf32>
    }
    gpu.return
  }
}

// -----

// Without a known block size (no known_block_size, no spirv.entry_point_abi) the warps are unknown.
gpu.module @m {
  // expected-error@+1 {{the kernel's block size (unknown) must be static}}
  gpu.func @unknown(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %out: memref<?xf32>) kernel {
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync (%fa, %fb, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
    %c0 = arith.constant 0 : index
    memref.store %e, %out[%c0] : memref<?xf32>
    gpu.return
  }
}

// -----

// A fragment used by an op the scalarization does not know (here a 2-D transpose).
gpu.module @m {
  gpu.func @transpose(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %z = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync (%fa, %fb, %z) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    // expected-error@+1 {{relax-emulate-mma: 'vector.transpose' on an n-D fragment is not emulated}}
    %t = vector.transpose %d, [1, 0] : vector<2x2xf32> to vector<2x2xf32>
    %e = vector.extract %t[0, 1] : f32 from vector<2x2xf32>
    %c0 = arith.constant 0 : index
    memref.store %e, %out[%c0] : memref<?xf32>
    gpu.return
  }
}

// -----

// Integer mma.sync (i8 x i8 -> i32) is not emulated.
gpu.module @m {
  gpu.func @int8(%fa: vector<4x4xi8>, %fb: vector<2x4xi8>, %out: memref<?xi32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %z = arith.constant dense<0> : vector<2x2xi32>
    // expected-error@+1 {{relax-emulate-mma: mma.sync of i8 -> i32 is not emulated (f16 x f16 -> f16 / f32 and tf32 x tf32 -> f32 are)}}
    %d = nvgpu.mma.sync (%fa, %fb, %z) {mmaShape = [16, 8, 32]} : (vector<4x4xi8>, vector<2x4xi8>, vector<2x2xi32>) -> vector<2x2xi32>
    %e = vector.extract %d[0, 0] : i32 from vector<2x2xi32>
    %c0 = arith.constant 0 : index
    memref.store %e, %out[%c0] : memref<?xi32>
    gpu.return
  }
}

// -----

// tf32 conversions other than round-to-nearest-away are not emulated.
gpu.module @m {
  gpu.func @cvt_rn(%x: f32, %o: memref<?xi32>) kernel {
    // expected-error@+1 {{relax-emulate-mma: nvvm.convert.float.to.tf32 is emulated with rnd = rna only (no sat, relu)}}
    %r = nvvm.convert.float.to.tf32 %x {rnd = #nvvm.fp_rnd_mode<rn>}
    %c0 = arith.constant 0 : index
    memref.store %r, %o[%c0] : memref<?xi32>
    gpu.return
  }
}

// -----

// ldmatrix reads 16 contiguous bytes per row address: a strided last dimension is refused.
gpu.module @m {
  gpu.func @strided(%sm: memref<16x16xf16, strided<[32, 2]>, #gpu.address_space<workgroup>>, %i: index, %o: memref<?xf16>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    // expected-error@+1 {{relax-emulate-mma: ldmatrix from a memref whose last dimension is not contiguous is not emulated}}
    %a = nvgpu.ldmatrix %sm[%i, %i] {numTiles = 1 : i32, transpose = false} : memref<16x16xf16, strided<[32, 2]>, #gpu.address_space<workgroup>> -> vector<1x2xf16>
    %x = vector.extract %a[0, 0] : f16 from vector<1x2xf16>
    memref.store %x, %o[%i] : memref<?xf16>
    gpu.return
  }
}
