"""Passes of the GPU kernel pipeline (relax_mlir.pipelines.gpu), one per file.

Kernels (``relax.kernel`` funcs, after bufferization) become scf.parallel loops, then
``gpu.launch`` regions outlined into ``gpu.module``s; these passes fill the gaps between
the upstream passes on that route (see ../../pipelines/gpu.py for the order).
"""

from . import (accumulators, cuda_host, device_constants, entry_abi, flatten_launches, inner_loops, nest_spirv, prepare_kernels,  # noqa: F401
               row_reductions, signless, spirv_vector_buffers, tile_matmul, vector_elementwise, vulkan_host,
               workgroup_memory)  # (registration)
