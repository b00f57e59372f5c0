// RUN: not relax-opt %s --pass-pipeline='builtin.module(cuda{chip=sm_bogus})' 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not relax-opt %s --pass-pipeline='builtin.module(cuda{workgroup-size=2048})' 2>&1 | FileCheck %s --check-prefix=WG
// RUN: relax-opt %s --pass-pipeline='builtin.module(cuda{chip=sm_90a workgroup-size=256})' | FileCheck %s --check-prefix=OK
// The cuda pipeline's options are checked when the pipeline is built: LLVM would accept an
// unknown chip with a warning (and the driver reject the PTX later); a CUDA block has at
// most 1024 threads.

// CHIP: relax-opt: error: option 'chip' of pass 'cuda': expected an NVIDIA architecture like sm_80 or sm_90a, got 'sm_bogus'
// WG: relax-opt: error: option 'workgroup-size' of pass 'cuda': 1 to 1024 threads per block, got 2048
// OK: gpu.binary @relax_relu_f32_r2_kernel  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a">
// OK-SAME: .target sm_90a
// OK-SAME: .maxntid 256, 1, 1
func.func @main(%x: tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
    attributes {relax.function} {
  %y = "relax.relu"(%x) : (tensor<?x?xf32, #relax.shape<["n", "m"]>>) -> tensor<?x?xf32, #relax.shape<["n", "m"]>>
  return %y : tensor<?x?xf32, #relax.shape<["n", "m"]>>
}
