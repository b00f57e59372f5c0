"""The cpu pipeline with fusion on, off, and off as before relax-annotate-kernel-kinds ran
without fusion (the pass taken out of the registry for that compile: every unfused kernel
plain loops): one process, interleaved, best of 5, ms.

    PYTHONPATH=. .venv/bin/python bench/bench_fusion_off.py
"""

from __future__ import annotations

import os
import time

import numpy as np

import relax_mlir
from relax_mlir.frontend import models
from relax_mlir.transforms.registry import PASSES

MATMUL = ('func.func @main(%x: tensor<?x512xf32, #relax.shape<["m", 512]>>, %w: tensor<512x512xf32>) '
          '-> tensor<?x512xf32, #relax.shape<["m", 512]>> attributes {relax.function} {\n'
          '  %0 = "relax.matmul"(%x, %w) : (tensor<?x512xf32, #relax.shape<["m", 512]>>, tensor<512x512xf32>) '
          '-> tensor<?x512xf32, #relax.shape<["m", 512]>>\n'
          '  return %0 : tensor<?x512xf32, #relax.shape<["m", 512]>>\n}\n')


def build(which: str):
    return MATMUL if which == "matmul" else models.mlp_module(relax_mlir.make_context(), models.MLPConfig())


def main() -> None:
    rng = np.random.default_rng(0)
    print("| case | n | fusion on | fusion off | fusion off, before | load |\n|---|---:|---:|---:|---:|---:|")
    for which in ("matmul", "mlp"):
        exes = {k: relax_mlir.compile(build(which), options={"fusion": k == "on", "cache": False}) for k in ("on", "off")}
        info = PASSES.pop("relax-annotate-kernel-kinds")
        try:
            exes["before"] = relax_mlir.compile(build(which), options={"fusion": False, "cache": False})
        finally:
            PASSES["relax-annotate-kernel-kinds"] = info
        for n in (1, 16, 128):
            x = rng.standard_normal((n, 512)).astype(np.float32)
            args = [x, rng.standard_normal((512, 512)).astype(np.float32)] if which == "matmul" \
                else [x] + models.mlp_params(models.MLPConfig(), rng)
            best = {k: float("inf") for k in exes}
            for _ in range(5):
                for k, e in exes.items():
                    e(*args)
                    reps = 3 if k == "before" else 20
                    t = time.perf_counter()
                    for _ in range(reps):
                        e(*args)
                    best[k] = min(best[k], (time.perf_counter() - t) / reps * 1e3)
            print(f"| {which} | {n} | " + " | ".join(f"{best[k]:.3f}" for k in ("on", "off", "before"))
                  + f" | {os.getloadavg()[0]:.2f} |")


if __name__ == "__main__":
    main()
