"""What the MLIR Python bindings import for the ``relax`` namespace: nothing to define.

Wrapping an op of dialect ``d`` in a Python object, the bindings import ``<prefix>.d`` for
each dialect search prefix (``mlir.dialects`` first) to find its op classes, and remember
only a success: with no module for ``relax``, every relax op wrapped (tens of thousands per
compile) made a failed import, a search of ``sys.path`` (0.15 s of a transformer block's
compile, 1,492 failed imports). This module, found through the prefix
``relax_mlir.dialects._python`` (:mod:`relax_mlir.dialects._core`), ends that after the
first. It registers no op class: relax ops stay generic ``OpView`` objects, as before.
"""
