"""GPU kernel scheduling as rules (the cuda and vulkan targets share them).

:func:`~relax_mlir.backends.gpu.rules.select` is the one selection point: a kernel's
recorded kind and element type, and the module's :class:`~relax_mlir.target.Target`,
decide which :class:`~relax_mlir.backends.gpu.rules.ScheduleRule` runs and with which
knob values; ``relax-gpu-schedule`` (:mod:`.schedule`) applies the selection to every
kernel of a module.
"""

from . import (accumulators, align_workgroup_memory, cuda_host, cuda_library, cuda_library_split, decode_attention, device_constants, emulate_mma, entry_abi,
               flatten_launches,
               fold_tensor_copies, forward_copies, gemv,  # noqa: F401
               inner_loops, matmul_routes, quant_gemv, nest_spirv, prepare_kernels, row_reductions, signless,
               spirv_arith, spirv_bf16, spirv_f64_math, spirv_float_controls, spirv_vector_buffers,
               subgroup_size, tile_matmul, vector_elementwise, vulkan_host,
               workgroup_memory)  # (registration)
from .rules import RULES, ScheduleRule, Selection, select  # noqa: F401
from . import schedule  # noqa: F401,E402  (registers relax-gpu-schedule)
from . import spirv_coherent  # noqa: F401,E402  (registers relax-spirv-coherent-buffers)

__all__ = ["RULES", "ScheduleRule", "Selection", "select"]
