"""The cuda pipeline compiles the demo MLP's kernels to PTX (compile only: there is no
cuda runtime yet and no NVIDIA GPU on CI, so nothing runs)."""

from __future__ import annotations

import re

import relax_mlir
from relax_mlir.frontend import models
from mlir.dialects import gpu
from mlir import ir


def test_cuda_pipeline_gives_ptx_for_every_kernel():
    ctx = relax_mlir.make_context()
    m = models.mlp_module(ctx, models.MLPConfig(d_in=8, d_hidden=16, d_out=4))
    with ctx:
        relax_mlir.run_pipeline(m, "builtin.module(cuda)")
        ptx = {}
        for op in m.body.operations:
            op = op.operation
            if op.name == "gpu.binary":
                obj = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0])
                ptx[ir.StringAttr(op.attributes["sym_name"]).value] = obj.object.decode()
    text = str(m)
    launched = set(re.findall(r"gpu.launch_func  @(\w+)::", text))
    # two fused matmul kernels, each: zero-fill, matmul, bias (+ relu) epilogue
    assert len(ptx) == 6 and launched == set(ptx)
    for name, code in ptx.items():
        assert ".target sm_80" in code
        assert f".visible .entry {name.rsplit('_kernel', 1)[0]}_kernel(" in code
    assert sum("mul.rn.f32" in c for c in ptx.values()) == 2     # the two matmuls multiply
