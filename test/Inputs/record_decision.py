"""Record dispatch decisions for the matches of an .mlir file (lit tests of
relax-dispatch-library{tuning-db}), as `relax-mlir tune` would on this host.

usage: record_decision.py INPUT.mlir DB WINNERS...

One WINNERS argument per match relax-dispatch-library finds, in program order: ``-`` (no
record) or a comma-separated list of ``l`` (library) / ``g`` (generated), one per
representative size of the module's bucket. Times: 1 ms for the winner, 2 ms for the loser.
"""

import sys

import relax_mlir
from mlir import ir
from relax_mlir.shapes import Dim, read_tensor_type
from relax_mlir.backends.cpu.schedules.target import host_target
from relax_mlir.backends.cpu.apply_schedules import num_threads
from relax_mlir.transforms.dispatch_split import CANDIDATE_ATTR
from relax_mlir.transforms.pipeline import run_pipeline
from relax_mlir.tuning.database import Database, module_bound, representative_sizes, size_bucket, target_key

src, db, *winners = sys.argv[1:]
ctx = relax_mlir.make_context()
with ctx, ir.Location.unknown():
    m = relax_mlir.parse(open(src).read(), ctx)
    bound, symbolic = module_bound(m.operation)
    sizes = representative_sizes(bound) if symbolic else [0]
    run_pipeline(m, "builtin.module(relax-infer-shapes, relax-dispatch-library{mark-candidates=true})")
    marks = []

    def visit(op):
        if CANDIDATE_ATTR in op.operation.attributes:
            marks.append(ir.DictAttr(op.operation.attributes[CANDIDATE_ATTR]))
        return ir.WalkResult.ADVANCE

    m.operation.walk(visit)
    assert len(marks) == len(winners), f"{len(marks)} matches, {len(winners)} WINNERS arguments"
    with Database(db) as d:
        for mk, w in zip(marks, winners):
            if w == "-":
                continue
            ws = w.split(",")
            assert len(ws) == len(sizes), f"{len(sizes)} sizes {sizes}, got '{w}'"
            out = read_tensor_type(ir.TypeAttr(list(ir.ArrayAttr(mk["types"]))[-1]).value)
            mdim = Dim.of(out.shape[-2])
            ms = [mdim.evaluate({s: n for s in mdim.symbols}) for n in sizes]
            d.record_decision(ir.StringAttr(mk["key"]).value, target_key(host_target(), num_threads()),
                              size_bucket(bound, symbolic), ir.StringAttr(mk["callee"]).value, sizes, ms,
                              [1e-3 if x == "l" else 2e-3 for x in ws], [1e-3 if x == "g" else 2e-3 for x in ws], "")
