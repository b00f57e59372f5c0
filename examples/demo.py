"""`make demo`: build relax programs with symbolic shapes in Python, deduce and check
their shapes, show the IRDL round trip through upstream mlir-opt, then compile once
and run at several sizes against numpy."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend import models
from relax_mlir.frontend.builder import graph_function


def warm_ms(fn, reps: int = 5) -> float:
    """Median time of ``reps`` calls after the first (which warms caches and BLAS threads)."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2] * 1e3


def banner(text: str) -> None:
    print("\n" + "=" * 78 + f"\n{text}\n" + "=" * 78)


def build_mlp(ctx: ir.Context) -> ir.Module:
    """relu(x @ W1 + b1) @ W2 + b2 with a symbolic batch n."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        params = [("x", ["n", 64], "f32"), ("w1", [64, 128], "f32"), ("b1", [128], "f32"),
                  ("w2", [128, 16], "f32"), ("b2", [16], "f32")]
        with graph_function(m, "main", params, upper_bounds={"n": 4096}) as fn:
            x, w1, b1, w2, b2 = fn.params
            h = relax.relu(relax.add(relax.matmul(x, w1), b1))
            fn.ret(relax.add(relax.matmul(h, w2), b2))
    return m


def build_shapes_tour(ctx: ir.Context) -> ir.Module:
    """Symbolic shapes flowing through concat, reshape, matmul, a cross-function call."""
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with graph_function(m, "halves", [("v", ["2*k", 8], "f32")]) as fn:
            (v,) = fn.params
            a, b = relax.split(v, sections=2, axis=0)
            fn.ret(relax.add(a, b))
        with graph_function(m, "main", [("x", ["n", 8], "f32"), ("y", ["m", 8], "f32"),
                                        ("w", [8, "h"], "f32")]) as fn:
            x, y, w = fn.params
            xy = relax.concat([x, y], axis=0)                        # (m + n, 8)
            flat = relax.reshape(xy, shape=["2*m + 2*n", 4])          # (2*m + 2*n, 4)
            proj = relax.matmul(xy, w)                                # (m + n, h)
            half = relax.call([xy], callee="halves")                 # ((m + n) // 2, 8)
            fn.ret(flat, proj, half)
    return m


def main() -> int:
    ctx = relax_mlir.make_context()

    banner("1. A relax program built with the Python builders (shapes deduced op by op)")
    tour = build_shapes_tour(ctx)
    relax_mlir.run_pipeline(tour, "builtin.module(relax-verify, relax-infer-shapes)")
    print(tour)
    print("Note the relax.assert: calling @halves with m + n rows needs m + n to be even,")
    print("which no compiler can prove, so it becomes a run-time check.")

    banner("2. The IRDL round trip: upstream mlir-opt reads the same program")
    irdl = os.path.join(os.path.dirname(relax_mlir.__file__), "dialects", "relax.irdl.mlir")
    mlir_opt = os.path.join(sysconfig.get_paths()["purelib"], "mlir", "bin", "mlir-opt")
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(str(tour))
    up = subprocess.run([mlir_opt, f"--irdl-file={irdl}", f.name], capture_output=True, text=True)
    ours = subprocess.run([sys.executable, "-m", "relax_mlir.tools.relax_opt", f.name],
                          capture_output=True, text=True)
    os.unlink(f.name)
    same = up.returncode == 0 and up.stdout == ours.stdout
    print(f"mlir-opt --irdl-file=relax.irdl.mlir: exit {up.returncode}; "
          f"output identical to relax-opt: {same}")
    if not same:
        print(up.stderr)
        return 1

    banner("3. The MLP, relu(x @ W1 + b1) @ W2 + b2, with a symbolic batch n")
    mlp = build_mlp(ctx)
    relax_mlir.run_pipeline(mlp, "builtin.module(relax-verify, relax-infer-shapes)")
    print(mlp)

    if not hasattr(relax_mlir, "compile"):
        print("(compilation to CPU is not available in this build)")
        return 0
    banner("4. Compile once, run at any batch size")
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((64, 128), dtype=np.float32) * 0.1
    b1 = rng.standard_normal(128, dtype=np.float32)
    w2 = rng.standard_normal((128, 16), dtype=np.float32) * 0.1
    b2 = rng.standard_normal(16, dtype=np.float32)
    t0 = time.perf_counter()
    exe = relax_mlir.compile(str(build_mlp(ctx)), target="cpu")
    print(f"compiled in {time.perf_counter() - t0:.2f} s")
    for n in (1, 7, 64, 333):
        x = rng.standard_normal((n, 64), dtype=np.float32)
        got = exe(x, w1, b1, w2, b2)
        dt = warm_ms(lambda: exe(x, w1, b1, w2, b2))
        ref = np.maximum(x @ w1 + b1, 0) @ w2 + b2
        err = float(np.max(np.abs(got - ref)))
        print(f"n={n:4d}  out {got.shape}  max |err| vs numpy {err:.2e}  {dt:7.3f} ms")
        if err > 1e-3:
            return 1
    try:
        exe(rng.standard_normal((3, 65), dtype=np.float32), w1, b1, w2, b2)
    except relax_mlir.ShapeError as e:
        print(f"wrong input shape -> ShapeError: {e}")

    banner("5. A transformer block (RMSNorm, causal attention, SiLU-gated MLP), symbolic sequence s")
    cfg = models.BlockConfig(d_model=128, heads=4, d_ffn=256)
    params = models.block_params(cfg, rng)
    t0 = time.perf_counter()
    blk = relax_mlir.compile(models.block_module(ctx, cfg), target="cpu")
    print(f"compiled once in {time.perf_counter() - t0:.2f} s")
    for s in (1, 7, 64, 200):
        x = rng.standard_normal((s, cfg.d_model), dtype=np.float32)
        got = blk(x, *params)
        dt = warm_ms(lambda: blk(x, *params))
        ref = models.block_reference(x, *params, cfg=cfg)
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        print(f"s={s:4d}  out {got.shape}  max rel err vs numpy {err:.2e}  {dt:8.3f} ms")
        if err > 1e-3:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
