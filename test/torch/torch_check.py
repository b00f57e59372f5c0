"""Shared helper of the torch importer tests: compile once, compare with torch at several sizes."""

from __future__ import annotations

import numpy as np
import torch

from relax_mlir.frontend.torch import compile as torch_compile


def check(model: torch.nn.Module, make_inputs, sizes, dynamic_shapes, atol=1e-5, rtol=1e-5, **kw):
    """Compile ``model`` ONCE (exported at the first size) and compare every output with
    eager torch at every size; returns the compiled module."""
    model = model.eval()
    example = make_inputs(*sizes[0])
    fn = torch_compile(model, example, dynamic_shapes=dynamic_shapes, **kw)
    for size in sizes:
        args = make_inputs(*size)
        with torch.no_grad():
            ref = model(*args)
        got = fn(*args)
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        gots = got if isinstance(got, (tuple, list)) else (got,)
        assert len(gots) == len(refs)
        for i, (g, r) in enumerate(zip(gots, refs)):
            assert tuple(g.shape) == tuple(r.shape), (size, i)
            assert g.dtype == r.dtype, (size, i, g.dtype, r.dtype)
            if r.dtype == torch.bool or not r.dtype.is_floating_point:
                np.testing.assert_array_equal(g.numpy(), r.numpy(), err_msg=f"size {size} output #{i}")
            else:
                np.testing.assert_allclose(g.numpy(), r.numpy(), atol=atol, rtol=rtol,
                                           err_msg=f"size {size} output #{i}")
    return fn
