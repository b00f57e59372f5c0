"""relax-library-variants: the library variants of split kernels call the library.

relax-specialize-ranges gives a kernel marked ``relax.dispatch_split`` (relax-dispatch-library,
policy ``measured``) a variant ``<kernel>__lib`` for the M where BLAS beats generated code,
marked ``relax.library_variant``, still the kernel's own linalg. Run after one-shot
bufferization (the variant is then an ordinary kernel writing its output argument, so no
result copy is made anywhere), this pass replaces its ``linalg.matmul`` into a zero-filled
buffer by ``func.call`` of the library's matmul (``callee``), or, when the buffer's only other
user is a bias add into the output (or, after relax-epilogue-in-place, the buffer IS the output
and the bias is added in place), both by the bias entry point (``bias_callee``); any other
epilogue stays after the call (in place on the output, after relax-epilogue-in-place)::

    linalg.fill ins(%cst) outs(%arg2) ; linalg.matmul ins(%arg0, %arg1) outs(%arg2)
      ->  call @relax_blas_matmul_22_f32(%a, %b, %c)   (memref.cast to memref<?x?xf32>)

with the declaration relax-lower-host makes for ``relax.call_dps_library`` (private,
``llvm.emit_c_interface``, fully dynamic memrefs). A variant whose body does not have that
shape (checked on tensors already by relax-specialize-ranges) is left generated: correct
for every M. See :mod:`.dispatch_split`.
"""

from __future__ import annotations

from mlir import ir

from ...transforms.dispatch_split import LIBRARY_VARIANT_ATTR, library_variant, read_split
from ...transforms.graph import functions_with
from ...transforms.registry import emit_error, register_pass


@register_pass("relax-library-variants",
               "Rewrite the bufferized library variants of split kernels (relax.library_variant): "
               "their matmul (+ bias) becomes the library call.")
def relax_library_variants(module: ir.Operation, opts) -> None:
    for fn in functions_with(module, LIBRARY_VARIANT_ATTR):
        args = list(fn.regions[0].blocks[0].arguments)
        if any(isinstance(a.type, ir.RankedTensorType) for a in args):
            emit_error(fn, "relax-library-variants: run after bufferization (the variant takes tensors)")
            continue
        try:
            split = read_split(fn.attributes[LIBRARY_VARIANT_ATTR])
        except ValueError as e:
            emit_error(fn, f"{LIBRARY_VARIANT_ATTR}: {e}")
            continue
        library_variant(fn, split)
        del fn.attributes[LIBRARY_VARIANT_ATTR]
