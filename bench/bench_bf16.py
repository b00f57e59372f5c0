"""bf16 against f32 on the cpu target: one executable holding both, timed interleaved.

A bf16 matmul is an f32 matmul between casts (relax-widen-bf16-matmul): library dispatch may
send it to BLAS; the generated kernel has the cast back to bf16 as its epilogue, which the
matmul schedule takes. Softmax in bf16 reads and writes half the bytes of f32, computing in
f32 (the rows schedule). PyTorch's bf16 eager ops run beside for reference. ``--ab``: a
second executable with the bf16 schedules off (``schedules.BF16_SCHEDULES``: plain loops)
beside, bf16 softmax and LayerNorm too. ``--qmm``: ``relax.quantized_matmul`` on Q8_0 rows
with an f32, f16 and bf16 x (the half ones behind relax-widen-bf16-matmul's casts), interleaved.
``--conv``: a ResNet-18 stage conv (3x3, 64 -> 64
channels, 56x56, bias + relu) and the stem's 3x3/2 max pool in f32 and bf16, with a third
executable where relax-widen-bf16-matmul leaves conv2d alone (the bf16 conv's plain loops).
``--target vulkan``: a matmul and an elementwise chain in f32, f16 and bf16 on the Vulkan device
(one executable, interleaved): bf16 is stored as 16 bits there and computed in f32, its matmul
the f32 rule's between casts (both operands cast per call, and the weight uploaded per call,
unless it is bound: the ``bound`` columns, where ``bind_params`` casts a bf16 weight once).
"""

from __future__ import annotations

import argparse
import os
import time

import ml_dtypes
import numpy as np
from mlir import ir

import relax_mlir
from relax_mlir.dialects import relax
from relax_mlir.frontend.builder import graph_function


def _module(k: int, n: int, cols: int):
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        for dt in ("f32", "bf16"):
            with graph_function(m, f"mm_{dt}", [("x", ["m", k], dt), ("w", [k, n], dt)]) as fn:
                fn.ret(relax.matmul(*fn.params))
            with graph_function(m, f"softmax_{dt}", [("x", ["m", cols], dt)]) as fn:
                fn.ret(relax.softmax(fn.params[0], axis=-1))
            with graph_function(m, f"layer_norm_{dt}", [("x", ["m", cols], dt), ("g", [cols], dt),
                                                        ("b", [cols], dt)]) as fn:
                fn.ret(relax.layer_norm(*fn.params, axes=[-1]))
    return m


def _ab(args, exe, rng) -> None:
    """The bf16 kernels with their schedules (``exe``) and as plain loops, interleaved."""
    from relax_mlir.backends.cpu import schedules
    schedules.BF16_SCHEDULES = False
    try:
        loops = relax_mlir.compile(_module(args.k, args.n, args.cols), options={"cache": False})
    finally:
        schedules.BF16_SCHEDULES = True
    print(f"\n--ab: bf16 scheduled vs plain loops (ms), load {os.getloadavg()[0]:.2f}")
    print(f"{'m':>6} {'mm':>8} {'mm loops':>9} | {'softmax':>8} {'loops':>8} | {'layernorm':>9} {'loops':>8}")
    for m in args.rows:
        x = rng.standard_normal((m, args.k)).astype(ml_dtypes.bfloat16)
        w = rng.standard_normal((args.k, args.n)).astype(ml_dtypes.bfloat16)
        s = rng.standard_normal((m, args.cols)).astype(ml_dtypes.bfloat16)
        g = rng.standard_normal(args.cols).astype(ml_dtypes.bfloat16)
        r = [_time(e["mm_bf16"], x, w, reps=args.reps) for e in (exe, loops)]
        r += [_time(e["softmax_bf16"], s, reps=args.reps) for e in (exe, loops)]
        r += [_time(e["layer_norm_bf16"], s, g, g, reps=args.reps) for e in (exe, loops)]
        print(f"{m:>6} {r[0]:8.3f} {r[1]:9.3f} | {r[2]:8.3f} {r[3]:8.3f} | {r[4]:9.3f} {r[5]:8.3f}")


def _qmm(args, rng) -> None:
    """Q8_0 rows (N, K) times an f32 / f16 / bf16 x through the library kernel, interleaved."""
    from relax_mlir.ops.quant import row_bytes
    k, n, rb = args.k, args.n, row_bytes("q8_0", args.k)
    src = "\n".join(f'''
func.func @q_{dt}(%x: tensor<?x{k}x{dt}, #relax.shape<["m", {k}]>>, %w: tensor<{n}x{rb}xi8>) -> tensor<?x{n}x{dt}, #relax.shape<["m", {n}]>> attributes {{relax.function}} {{
  %y = "relax.quantized_matmul"(%x, %w) {{format = "q8_0"}} : (tensor<?x{k}x{dt}, #relax.shape<["m", {k}]>>, tensor<{n}x{rb}xi8>) -> tensor<?x{n}x{dt}, #relax.shape<["m", {n}]>>
  return %y : tensor<?x{n}x{dt}, #relax.shape<["m", {n}]>>
}}''' for dt in ("f32", "f16", "bf16"))
    exe = relax_mlir.compile(src, options={"cache": False})
    w = rng.integers(-128, 128, (n, rb), dtype=np.int8)
    w.view(np.uint8).reshape(n, -1, 34)[..., :2] = np.array([1e-2], np.float16).view(np.uint8)   # sane scales
    print(f"\n--qmm: Q8_0 ({n}, {k}) rows, x f32 / f16 / bf16 (ms), load {os.getloadavg()[0]:.2f}")
    print(f"{'m':>6} {'f32 x':>9} {'f16 x':>9} {'bf16 x':>9}")
    for m in args.rows:
        x = rng.standard_normal((m, k)).astype(np.float32)
        xs = {"f32": x, "f16": x.astype(np.float16), "bf16": x.astype(ml_dtypes.bfloat16)}
        best = {dt: float("inf") for dt in xs}
        for _ in range(args.reps):       # interleaved: one call of each per round
            for dt, xv in xs.items():
                best[dt] = min(best[dt], _time(exe[f"q_{dt}"], xv, w, reps=1))
        print(f"{m:>6} {best['f32']:9.3f} {best['f16']:9.3f} {best['bf16']:9.3f}")


def _conv_module(c: int, hw: int):
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        for dt in ("f32", "bf16"):
            with graph_function(m, f"conv_{dt}", [("x", ["b", c, hw, hw], dt), ("w", [c, c, 3, 3], dt),
                                                  ("bias", [c], dt)]) as fn:
                x, w, b = fn.params
                fn.ret(relax.relu(relax.conv2d(x, w, padding=[1, 1, 1, 1]) + relax.reshape(b, shape=[1, c, 1, 1])))
            with graph_function(m, f"pool_{dt}", [("x", ["b", c, hw * 2, hw * 2], dt)]) as fn:
                fn.ret(relax.max_pool2d(fn.params[0], pool_size=[3, 3], strides=[2, 2], padding=[1, 1]))
    return m


def _conv(args, rng, torch) -> None:
    """bf16 vs f32 convolution and pool, and the bf16 conv without widening, interleaved."""
    from relax_mlir.backends.cpu import widen_bf16_matmul as widen
    exe = relax_mlir.compile(_conv_module(args.channels, args.hw), options={"cache": False})
    saved, widen.WIDENED = widen.WIDENED, ("relax.matmul",)
    try:
        loops = relax_mlir.compile(_conv_module(args.channels, args.hw), options={"cache": False})
    finally:
        widen.WIDENED = saved
    c, hw = args.channels, args.hw
    print(f"\n--conv: load {os.getloadavg()[0]:.2f}; best of {args.reps}, ms; conv 3x3 {c}->{c} on {hw}x{hw} "
          f"+ bias + relu; max pool 3x3/2 on {2 * hw}x{2 * hw}")
    print(f"{'batch':>6} {'conv f32':>9} {'conv bf16':>9} {'not widened':>11} {'torch bf16':>10} | "
          f"{'pool f32':>8} {'pool bf16':>9} {'torch bf16':>10}")
    for b in args.batches:
        x = rng.standard_normal((b, c, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((c, c, 3, 3)) * 0.05).astype(np.float32)
        bias = rng.standard_normal(c).astype(np.float32)
        p = rng.standard_normal((b, c, 2 * hw, 2 * hw)).astype(np.float32)
        xb, wb, bb, pb = (a.astype(ml_dtypes.bfloat16) for a in (x, w, bias, p))
        row = [_time(exe["conv_f32"], x, w, bias, reps=args.reps), _time(exe["conv_bf16"], xb, wb, bb, reps=args.reps),
               _time(loops["conv_bf16"], xb, wb, bb, reps=1)]
        if torch:
            tx, tw, tb = (torch.from_numpy(a).bfloat16() for a in (x, w, bias))
            row.append(_time(lambda: torch.relu(torch.nn.functional.conv2d(tx, tw, tb, padding=1)), reps=args.reps))
        else:
            row.append(float("nan"))
        row += [_time(exe["pool_f32"], p, reps=args.reps), _time(exe["pool_bf16"], pb, reps=args.reps)]
        row.append(_time(lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1), torch.from_numpy(p).bfloat16(),
                         reps=args.reps) if torch else float("nan"))
        print(f"{b:>6} {row[0]:9.3f} {row[1]:9.3f} {row[2]:11.3f} {row[3]:10.3f} | "
              f"{row[4]:8.3f} {row[5]:9.3f} {row[6]:10.3f}")


def _vulkan_module(k: int, n: int, cols: int):
    ctx = relax_mlir.make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        for dt in ("f32", "f16", "bf16"):
            with graph_function(m, f"mm_{dt}", [("x", ["m", k], dt), ("w", [k, n], dt)]) as fn:
                fn.ret(relax.matmul(*fn.params))
            # w declared a weight (relax.num_input = 1): bind_params uploads it, and a bf16 one's
            # f32 cast (lifted into mm_bf16_w_transform_params) runs, once
            with graph_function(m, f"mm_{dt}_w", [("x", ["m", k], dt), ("w", [k, n], dt)]) as fn:
                fn.ret(relax.matmul(*fn.params))
            last = list(m.body.operations)[-1].operation
            last.attributes["relax.num_input"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)
            with graph_function(m, f"ew_{dt}", [("x", ["m", cols], dt), ("y", ["m", cols], dt)]) as fn:
                x, y = fn.params
                fn.ret(relax.sigmoid(x * y + x) * y)
    return m


def _vulkan(args, rng) -> None:
    """f32 / f16 / bf16 matmul and elementwise chain on the Vulkan device, interleaved."""
    from relax_mlir.runtime import vulkan
    ok, device = vulkan.available()
    if not ok:
        raise SystemExit(f"no Vulkan device: {device}")
    exe = relax_mlir.compile(_vulkan_module(args.k, args.n, args.cols), target="vulkan")
    dts = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
    print(f"vulkan on {device}; load {os.getloadavg()[0]:.2f}; best of {args.reps} interleaved, ms; "
          f"matmul (m, {args.k}) x ({args.k}, {args.n}); sigmoid(x * y + x) * y on (m, {args.cols})")
    print(f"{'m':>6} {'mm f32':>9} {'mm f16':>9} {'mm bf16':>9} | {'bound f32':>9} {'bound f16':>9} "
          f"{'bound bf16':>10} | {'ew f32':>8} {'ew f16':>8} {'ew bf16':>8}")
    for m in args.rows:
        x = rng.standard_normal((m, args.k)).astype(np.float32)
        w = (rng.standard_normal((args.k, args.n)) / 32).astype(np.float32)
        e = rng.standard_normal((2, m, args.cols)).astype(np.float32)
        calls = {}
        for dt, t in dts.items():
            calls[f"mm {dt}"] = (exe[f"mm_{dt}"], x.astype(t), w.astype(t))
            calls[f"bound {dt}"] = (exe[f"mm_{dt}_w"].bind_params(w.astype(t)), x.astype(t))
            calls[f"ew {dt}"] = (exe[f"ew_{dt}"], e[0].astype(t), e[1].astype(t))
        best = {name: _time(fn, *a, reps=1) for name, (fn, *a) in calls.items()}   # (warm-up inside)
        for _ in range(args.reps - 1):       # interleaved: one call of each per round
            for name, (fn, *a) in calls.items():
                best[name] = min(best[name], _time(fn, *a, reps=1))
        print(f"{m:>6} " + " ".join(f"{best['mm ' + d]:9.3f}" for d in dts) + " | "
              + " ".join(f"{best['bound ' + d]:9.3f}" for d in ("f32", "f16")) + f" {best['bound bf16']:10.3f} | "
              + " ".join(f"{best['ew ' + d]:8.3f}" for d in dts))


def _time(fn, *args, reps: int) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 16, 256, 1024])
    ap.add_argument("--k", type=int, default=512)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--ab", action="store_true", help="bf16 schedules against their plain loops")
    ap.add_argument("--qmm", action="store_true", help="only the Q8_0 quantized matmul with f32 / f16 / bf16 x")
    ap.add_argument("--conv", action="store_true", help="only a ResNet-ish conv and max pool, bf16 vs f32")
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--hw", type=int, default=56)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--target", choices=("cpu", "vulkan"), default="cpu",
                    help="vulkan: f32 / f16 / bf16 matmul and elementwise chain on the Vulkan device")
    args = ap.parse_args()
    if args.target == "vulkan":
        _vulkan(args, np.random.default_rng(0))
        print(f"load {os.getloadavg()[0]:.2f}")
        return
    if args.qmm:
        _qmm(args, np.random.default_rng(0))
        return
    try:
        import torch
    except ImportError:
        torch = None
    if args.conv:
        _conv(args, np.random.default_rng(0), torch)
        print(f"load {os.getloadavg()[0]:.2f}")
        return
    exe = relax_mlir.compile(_module(args.k, args.n, args.cols), options={"cache": False})
    rng = np.random.default_rng(0)
    print(f"load {os.getloadavg()[0]:.2f}; best of {args.reps}, ms; matmul (m, {args.k}) x ({args.k}, {args.n}), "
          f"softmax (m, {args.cols})")
    print(f"{'m':>6} {'mm f32':>9} {'mm bf16':>9} {'torch bf16':>10} | {'sm f32':>8} {'sm bf16':>8} {'torch bf16':>10}")
    for m in args.rows:
        x = rng.standard_normal((m, args.k)).astype(np.float32)
        w = rng.standard_normal((args.k, args.n)).astype(np.float32)
        s = rng.standard_normal((m, args.cols)).astype(np.float32)
        xb, wb, sb = (a.astype(ml_dtypes.bfloat16) for a in (x, w, s))
        row = [_time(exe["mm_f32"], x, w, reps=args.reps), _time(exe["mm_bf16"], xb, wb, reps=args.reps)]
        row.append(_time(torch.matmul, *(torch.from_numpy(a).bfloat16() for a in (x, w)), reps=args.reps)
                   if torch else float("nan"))
        row += [_time(exe["softmax_f32"], s, reps=args.reps), _time(exe["softmax_bf16"], sb, reps=args.reps)]
        row.append(_time(lambda a: torch.softmax(a, -1), torch.from_numpy(s).bfloat16(), reps=args.reps)
                   if torch else float("nan"))
        print(f"{m:>6} {row[0]:9.3f} {row[1]:9.3f} {row[2]:10.3f} | {row[3]:8.3f} {row[4]:8.3f} {row[5]:10.3f}")
    if args.ab:
        _ab(args, exe, rng)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
