"""Record a tuning config for one kernel of an .mlir file (lit tests of relax-apply-schedules{tuning-db}).

usage: record_tuning.py INPUT.mlir DB KERNEL TARGET KEY=VALUE...  (TARGET: a named schedule target)
"""

import sys

import relax_mlir
from mlir import ir
from relax_mlir.backends.cpu.schedules.target import target_named
from relax_mlir.backends.cpu.apply_schedules import num_threads
from relax_mlir.transforms.kernel_hash import structural_hash
from relax_mlir.tuning.database import Database, module_bucket, target_key

src, db, kernel, target = sys.argv[1:5]
config = {k: int(v) for k, v in (a.split("=") for a in sys.argv[5:])}
ctx = relax_mlir.make_context()
with ctx, ir.Location.unknown():
    m = relax_mlir.parse(open(src).read(), ctx)
    [fn] = [f.operation for f in m.body.operations
            if ir.StringAttr(f.operation.attributes["sym_name"]).value == kernel]
    with Database(db) as d:
        d.record(structural_hash(fn), target_key(target_named(target), num_threads(), host=target == "host"),
                 module_bucket(m.operation), "", config, 1.0, 1.0, [], 0)
