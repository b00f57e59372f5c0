"""Passes of the GPU kernel pipeline (relax_mlir.pipelines.gpu), one per file.

Kernels (``relax.kernel`` funcs, after bufferization) become scf.parallel loops, then
``gpu.launch`` regions outlined into ``gpu.module``s; these passes fill the gaps between
the upstream passes on that route (see ../../pipelines/gpu.py for the order).
"""

from . import (accumulators, cuda_host, device_constants, entry_abi, flatten_launches, gemv, inner_loops,  # noqa: F401
               matmul_routes, nest_spirv, prepare_kernels, row_reductions, signless, spirv_vector_buffers,
               subgroup_size, tile_matmul, vector_elementwise, vulkan_host,
               workgroup_memory)  # (registration)
