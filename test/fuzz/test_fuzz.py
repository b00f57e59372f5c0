"""The project's own fuzzers, each case in a worker subprocess (runner.py):

* programs: random relax programs (programs.py) compiled once and checked against
  numpy at several random sizes, 0 and 1 included;
* mutations: random byte/token/line mutations of the lit tests' inputs fed to
  relax-opt (mutate.py): never an escaping exception, internal error or signal;
* bad calls: wrong dtypes/ranks/shapes, non-arrays, odd layouts, huge sizes to
  compiled executables (badcalls.py): only TypeError/ShapeError/ValueError/MemoryError;
* importer: random torch.nn.Modules (importer_fuzz.py) exported with dynamic Dims, imported
  and compiled once, checked against eager PyTorch at several sizes; an unsupported op is a
  CompileError naming it;
* vision: random small CNNs (vision_fuzz.py: conv2d of every window kind, batch norm,
  activations, residual blocks, pooling, heads) exported with dynamic batch / H / W (derived
  dims too), compiled once, checked against eager PyTorch at the smallest, odd and bound sizes;
* llm-config: random Llama/Qwen2/Mistral configs (llm_fuzz.py) through CausalLM.from_hf vs
  transformers (logits, greedy tokens), compile time and memory linear in depth;
* vulkan-program: programs.py's programs on the vulkan target (skipped without a device);
* model-file: small GGUF files / safetensors directories, mutated, through the loaders
  (files_fuzz.py): a load or a clean error naming the path, nothing else.

Short mode (default, part of ``make test``): fixed seeds, a few seconds each. Long mode:
``make fuzz FUZZ_SECONDS=1800`` (or ``RELAX_FUZZ_SECONDS=1800 pytest test/fuzz``) splits
the time between the fuzzers (SHARE) and runs fresh seeds from ``RELAX_FUZZ_SEED`` (default 1);
each test prints its counts. Failures print the case (kind and seed) to reproduce with
``python test/fuzz/worker.py <<< '{"kind": "program", "seed": 17}'``.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Optional

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runner  # noqa: E402

SECONDS = float(os.environ.get("RELAX_FUZZ_SECONDS", "0") or 0)
SEED = int(os.environ.get("RELAX_FUZZ_SEED", "1"))
#: share of the long-mode time per fuzzer
SHARE = {"program": 0.22, "vision": 0.13, "shape-program": 0.12, "mutation": 0.14, "badcall": 0.08, "importer": 0.14,
         "llm-config": 0.14, "vulkan-program": 0.08, "model-file": 0.05}
#: short mode: (first seed, number of cases, case size), or ([seeds], 0, case size); importer seed 9 is an
#: unsupported-op case; vision seeds 1 (a derived 4*w, F.pad) and 3 (1x1 up to 256x160) are small nets
SHORT = {"program": (0, 8, 3), "shape-program": (0, 0, 3), "mutation": (0, 6, 20), "badcall": (0, 2, 150),
         "importer": (7, 3, 3), "vision": ([1, 3], 0, 4), "llm-config": (5, 1, 4), "vulkan-program": (2, 2, 3),
         "model-file": (0, 12, 1)}
SIZE_KEY = {"program": "sizes", "shape-program": "sizes", "mutation": "count", "badcall": "count",
            "importer": "sizes", "vision": "sizes", "llm-config": "steps", "vulkan-program": "sizes", "model-file": "size"}
COUNT_KEY = {"program": "calls", "shape-program": "calls", "mutation": "mutations", "badcall": "calls",
             "importer": "calls", "vision": "calls", "llm-config": "calls", "vulkan-program": "calls", "model-file": "calls"}
#: extra case fields in short mode (llm-config: at most 2 layers, a few seconds of compile)
SHORT_EXTRA = {"llm-config": {"max_layers": 2}}
#: per-case time limit (the worker is killed and the case reported as a hang past it)
TIMEOUT = {"llm-config": 300.0}


def _cases(kind: str):
    first, n, size = SHORT[kind]
    if not SECONDS:
        seeds = first if isinstance(first, list) else range(first, first + n)
        return [{"kind": kind, "seed": s, SIZE_KEY[kind]: size, **SHORT_EXTRA.get(kind, {})} for s in seeds]
    base = SEED * 1_000_000

    def gen():
        s = base
        while True:
            yield {"kind": kind, "seed": s, SIZE_KEY[kind]: size}
            s += 1
    return gen()


#: Failure classes tolerated by the fuzz runs until their fix lands, each pinned by a test
#: below: (kind, compiled pattern in the failure's description, class).
KNOWN: list = [
]


def _known(o: runner.Outcome) -> Optional[str]:
    d = o.describe()
    for kind, pat, cls in KNOWN:
        if o.case["kind"] == kind and pat.search(d):
            return cls
    return None


def _run(kind: str) -> None:
    deadline = time.monotonic() + SECONDS * SHARE[kind] if SECONDS else None
    t0 = time.monotonic()
    outs = runner.run_cases(_cases(kind), timeout=TIMEOUT.get(kind, 180.0), deadline=deadline)
    skips = {(o.result or {}).get("skip") for o in outs} - {None}
    if skips and all((o.result or {}).get("skip") for o in outs):
        pytest.skip(skips.pop())
    count = sum((o.result or {}).get(COUNT_KEY[kind], 0) for o in outs)
    known = [(o, _known(o)) for o in outs if o.failed and _known(o)]
    fails = [o for o in outs if o.failed and not _known(o)]
    for o, cls in known:
        print(f"\nknown failure class ({cls}): {o.describe()[:600]}")
    extra = ""
    if kind in ("program", "shape-program", "vulkan-program"):
        extra = f", skipped sizes {sum((o.result or {}).get('skipped', 0) for o in outs)}"
    if kind == "importer":
        res = [o.result or {} for o in outs]
        extra = (f", {sum(1 for r in res if r.get('refused'))} clean refusals of unsupported ops, "
                 f"{sum(r.get('export_skipped', 0) for r in res)} not exportable")
    if kind == "vision":
        res = [o.result or {} for o in outs]
        refusals = sorted({op for r in res for op in r.get("refused", [])})
        extra = (f", {sum(1 for r in res if r.get('refused'))} clean refusals {refusals}, "
                 f"{sum(r.get('export_skipped', 0) for r in res)} not exportable, "
                 f"{sum(r.get('guard_refused', 0) for r in res)} sizes outside torch's guards refused, "
                 f"{sum(r.get('bound_checked', 0) for r in res)} bounds checked")
    if kind == "model-file":
        res = [o.result or {} for o in outs]
        extra = (f" ({sum(1 for r in res if r.get('format') == 'gguf')} gguf), "
                 f"{sum(1 for r in res if r.get('refused'))} clean refusals, "
                 f"{sum(1 for r in res if r.get('loaded'))} loaded, {sum(1 for r in res if r.get('ran'))} ran")
    if kind == "llm-config":
        extra = _llm_summary([o.result or {} for o in outs])
    print(f"\nfuzz {kind}: {len(outs)} cases, {count} {COUNT_KEY[kind]}{extra}, {len(fails)} failed, "
          f"{time.monotonic() - t0:.0f} s")
    assert outs, "no case ran"
    assert not fails, "\n\n".join(o.describe()[:4000] for o in fails[:3])


def _llm_summary(res: list) -> str:
    """Refusals, and the compile cost per layer: the worst case and every deep case's ratio."""
    done = [r for r in res if "compile_s" in r]
    out = f", {sum(1 for r in res if r.get('refused'))} clean refusals"
    if done:
        worst = max(done, key=lambda r: r["compile_s_per_layer"])
        out += (f"; compile s/layer max {worst['compile_s_per_layer']} ({worst['layers']} layers), "
                f"heap MB/layer max {max(r['mem_mb_per_layer'] for r in done)}, "
                f"peak RSS {max(r['peak_rss_mb'] for r in done):.0f} MB")
    deep = [r for r in done if "compile_s_2" in r]
    if deep:
        out += "; deep: " + ", ".join(f"L{r['layers']} {r['compile_s']}s/{r['compile_s_2']}s {r['mem_mb']}MB/"
                                      f"{r['mem_mb_2']}MB" for r in deep)
    return out


def test_fuzz_programs_match_numpy():
    _run("program")


@pytest.mark.skipif(not SECONDS, reason="long mode only: test/test_random_programs.py runs these programs' "
                                         "short mode (test_random_programs_values_match_numpy)")
def test_fuzz_shape_programs_values():
    """test/test_random_programs.py's generator (symbolic shape ops) with values checked."""
    _run("shape-program")


def test_fuzz_relax_opt_mutations():
    _run("mutation")


def test_fuzz_bad_call_arguments():
    _run("badcall")


def test_fuzz_importer_matches_eager_torch():
    pytest.importorskip("torch")
    _run("importer")


def test_fuzz_vision_cnns_match_eager_torch():
    pytest.importorskip("torch")
    _run("vision")


def test_fuzz_llm_configs_match_transformers():
    pytest.importorskip("transformers")
    _run("llm-config")


def test_fuzz_vulkan_programs_match_numpy():
    from relax_mlir.runtime import vulkan as vkrt
    ok, device = vkrt.available()
    if not ok:
        pytest.skip(f"no Vulkan device: {device}")
    _run("vulkan-program")


def test_fuzz_model_files_load_or_refuse_cleanly():
    pytest.importorskip("gguf")
    _run("model-file")


def test_runner_reports_a_signal_as_a_failure():
    """The harness itself: a case that kills its worker is a failure with the signal's
    name, confirmed by a re-run alone, and the next case still runs."""
    outs = runner.run_cases([{"kind": "selftest-crash", "seed": 0}, {"kind": "badcall", "seed": 0, "count": 1}])
    assert [o.death for o in outs] == ["signal SIGSEGV (reproduced alone)", None]
    assert outs[1].result == {"calls": 1, "error": None}


def test_known_relax_shape_on_memref_is_a_diagnostic():
    text = 'func.func @f(%x: memref<?xf32, #relax.shape<["n"]>>) attributes {relax.function} { return }'
    (o,) = runner.run_cases([{"kind": "relax-opt", "text": text, "pipeline": "builtin.module(cpu)"}])
    assert not o.failed, o.describe()
    assert o.result["rc"] == 1


#: Inputs the long fuzz runs found, replayed exactly: the mutation stream of a seed depends on the
#: corpus (every test/**/*.mlir), so a seed replays its mutant only at the commit it was found at;
#: ``python test/fuzz/mutate.py SEED MUTANT`` there extracts the input (docs/fuzzing.md).
REGRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions.json")


def _regressions(*names: str) -> list[dict]:
    """The inputs of ``regressions.json`` found as ``names`` (its ``found`` up to the " (")."""
    import json
    with open(REGRESSIONS, encoding="utf-8") as f:
        by_name = {c["found"].split(" (")[0]: c for c in json.load(f)}
    return [by_name[n] for n in names]


def test_known_memref_kernels_are_skipped_not_raised():
    """Long mutation fuzz (``make fuzz FUZZ_SECONDS=600``, seed 1, at adf81f5): mutant 2 of
    seeds 1000211 and 1000222 (lit inputs whose kernels are on memrefs, through
    ``builtin.module(cpu)``) raised "Cannot cast type to RankedTensorType" in
    relax-specialize-ranges; kernels on memrefs now pass it (and relax-apply-schedules)
    unchanged: the first then meets upstream deallocation's diagnostic on its memref.dealloc
    (exit status 1), the second compiles (0); replayed through the fuzz worker."""
    import json
    found = _regressions("mutation seed 1000211, mutant 2", "mutation seed 1000222, mutant 2")
    outs = runner.run_cases([{"kind": "relax-opt", "text": c["text"], "pipeline": c["pipeline"]} for c in found])
    assert [(o.death, o.result) for o in outs] == [(None, {"rc": 1, "error": None}), (None, {"rc": 0, "error": None})]


def test_known_generic_iterator_types_not_strings_is_a_diagnostic():
    """Long mutation fuzz (``make fuzz FUZZ_SECONDS=1800``, seed 1): mutant 17 of seed 1000047
    wrote ``iterator_types = [-9223372036854775808, "parallel"]`` in a linalg.generic, and
    MLIR 22's parser aborted the process on it (a cast to StringAttr, SIGABRT). relax-opt
    now refuses the list before parsing: a located error, exit status 1
    (test/relax-opt/linalg-iterators.mlir); replayed through the fuzz worker."""
    (c,) = _regressions("mutation seed 1000047, mutant 17")
    (o,) = runner.run_cases([{"kind": "relax-opt", "text": c["text"], "pipeline": c["pipeline"]}])
    assert (o.death, o.result) == (None, {"rc": 1, "error": None})
    from mutate import run_one
    rc, err = run_one(c["text"], c["pipeline"], False)
    assert rc == 1 and ":121:75: error: expected 'iterator_types' of linalg.generic to be a list of strings" in err


def test_verifier_errors_on_worker_threads_are_diagnostics():
    """Long mutation fuzz (``make fuzz FUZZ_SECONDS=1800``, seed 1, at 2c04ccd): mutants of
    test/vulkan/spirv_f64_math.mlir (seeds 1000306, 1000362, 1000383) aborted the worker. A
    multithreaded MLIRContext verifies isolated ops (gpu.func) on worker threads and the Python
    bindings' error capture touched Python objects there without the GIL (nanobind's "GIL was
    not held" abort, llvm/llvm-project#215781). Contexts are single-threaded where relax parses
    or runs passes: each input is a located error, exit status 1. The race hit about half the
    runs of one input, so each runs 4 times (test/relax-opt/verify-threads.mlir makes it
    near-certain with many functions)."""
    cases = _regressions("mutation seed 1000306, mutant 7", "mutation seed 1000362, mutant 19",
                         "mutation seed 1000383, mutant 19")
    outs = runner.run_cases([{"kind": "relax-opt", "text": c["text"], "pipeline": c["pipeline"]}
                             for c in cases for _ in range(4)])
    assert [(o.death, o.result) for o in outs] == [(None, {"rc": 1, "error": None})] * 12
    from mutate import run_one
    want = [":59:5: error: 'gpu.return' op using value defined outside the region",
            ":90:10: error: operand #0 does not dominate this use",
            ":55:10: error: block with no terminator"]
    for c, w in zip(cases, want):
        rc, err = run_one(c["text"], c["pipeline"], False)
        assert rc == 1 and w in err, err


def test_parse_into_a_users_multithreaded_context_reports_errors():
    """relax_mlir.parse into a context the user made (MLIR's default: multithreaded) turns it
    single-threaded before parsing, so the verifier's errors in many isolated functions (a
    gpu.module's and the module's) come back as a CompileError naming each, not a process
    abort (llvm/llvm-project#215781; the race aborted 3 of 5 such parses). In a subprocess: the
    abort would take pytest with it."""
    import subprocess
    code = """if True:
        from mlir import ir
        import relax_mlir
        bad = "(%x: f32) -> f32 {\\n  %0 = arith.addf %x, %x : f32\\n}"
        text = ("gpu.module @k {\\n" + "\\n".join(f"gpu.func @g{i}" + bad for i in range(16)) + "\\n}\\n"
                + "\\n".join(f"func.func @f{i}" + bad for i in range(16)))
        for _ in range(8):
            try:
                relax_mlir.parse(text, context=ir.Context(), source_name="many.mlir")
            except relax_mlir.CompileError as e:
                print(len([w for w, m in e.diagnostics if "block with no terminator" in m]))
    """
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=runner.REPO)
    assert (r.returncode, r.stdout.split()) == (0, ["32"] * 8), r.stderr[-2000:]


def test_importer_converts_python_pow_on_sizes():
    """Long importer fuzz seed 1000118 (``make fuzz FUZZ_SECONDS=1800``, seed 1): a view by
    ``f.shape[0]`` of an input flattened from (s0, 2*s0) made torch.export emit Python's
    ``pow`` on SymInts (2*s0**2), which the importer had no conversion for (a
    TorchImportError "pow: unsupported ATen op" on a program of supported ops). Sizes now
    take ``**`` with a constant exponent (every aten.pow overload: test_torch_ops.py's
    test_pow_overloads); the seed compiles and matches eager torch at 3 sizes."""
    (o,) = runner.run_cases([{"kind": "importer", "seed": 1000118, "sizes": 3}])
    assert (o.death, o.result["error"], o.result["calls"]) == (None, None, 3)


def test_vision_fuzz_seeds_fixed_in_the_importer():
    """Vision fuzz (``-k vision_cnns``, seed 1, the first run): seed 1000000 was a refusal of
    adaptive max pooling of a symbolic size ("supported: output size 1, or static input
    sizes divisible by the output size"), seed 1000057 a ShapeError at every h but the
    example's (the importer's run_decompositions re-trace specialized a conv output of 1
    under backed_size_oblivious). Both compile and match eager torch (test_torch_vision_import.py
    has the minimal forms)."""
    outs = runner.run_cases([{"kind": "vision", "seed": s, "sizes": 2} for s in (1000000, 1000057)])
    assert [(o.death, o.result["error"], o.result.get("refused"), o.result["calls"]) for o in outs] == \
        [(None, None, None, 2)] * 2


def test_vision_fuzz_seeds_fixed_in_the_phase_split():
    """Vision fuzz seed 2 (2000000-2000215): seeds 2000083, 2000085, 2000143, 2000195 and
    2000196 aborted the worker (MLIR's memref.dim folder on the depthwise phase split's
    rank-reducing slices with a static batch of 1); two of them replayed here (all five
    pass; test_vision_fuzz_found.py has the minimal forms)."""
    outs = runner.run_cases([{"kind": "vision", "seed": s, "sizes": 2} for s in (2000143, 2000196)])
    assert [(o.death, o.result["error"], o.result.get("refused"), o.result["calls"]) for o in outs] == \
        [(None, None, None, 2)] * 2


def test_ill_conditioned_results_are_compared_within_their_sensitivity():
    """Long fuzz program seed 1001362 (``make fuzz FUZZ_SECONDS=1800``, seed 1): cos(prod(
    log_softmax(...))) at n = 7, m = 5 gave -0.0297 against numpy's 0.0367. Not a compiler
    bug: the product of the 105 log-softmax values is -31370.357 exactly, -31370.344 compiled
    (4e-7 off) and -31370.41 in the f32 reference (its inputs rounded to f32: 1.7e-6 off);
    the compiled cos is the cos of its input; cos has condition |x tan x| ~ 1e6 there. The
    oracle now re-checks a float mismatch against the result's sensitivity (programs.py,
    ``sensitivity``): 0.31 for that cos, ~1e-6 for the same program's cos at n = m = 1."""
    import programs
    import relax_mlir
    seed = 1001362
    (o,) = runner.run_cases([{"kind": "program", "seed": seed, "sizes": 3}])
    assert (o.death, o.result["error"], o.result["calls"]) == (None, None, 3)

    text, params, nodes, outs = programs.build(seed, n_ops=8 + seed % 13)
    exe = relax_mlir.compile(text)
    prod, cos = outs[0], outs[1]
    assert (prod.op, cos.op) == ("prod", "cos")
    for arrays in programs.inputs(seed, params, 2):
        want = programs.reference(nodes, arrays)
        got = [np.asarray(g) for g in exe(*arrays)]
        s_cos = programs.sensitivity(nodes, arrays, want, cos, seed)
        s_prod = programs.sensitivity(nodes, arrays, want, prod, seed)
        if programs.ENV["n"] == 1:        # well conditioned: the tolerance as before
            assert s_cos < 1e-5 and s_prod < 1e-5
            assert programs.compare(got[1], want[id(cos)], "f32", False, "f32") is None
            assert programs.compare(got[1] + 0.01, want[id(cos)], "f32", False, "f32", s_cos) is not None
        else:                             # n = 7: the 105-term product
            assert programs.ENV == {"n": 7, "m": 5, "k": 3}
            assert 0.1 < s_cos and s_prod < 3e-5 * abs(float(want[id(prod)]))
            assert programs.compare(got[1], want[id(cos)], "f32", False, "f32") is not None
            assert programs.compare(got[1], want[id(cos)], "f32", False, "f32", s_cos) is None
            # the product itself is well conditioned (relative): 1 % off still fails
            assert programs.compare(got[0] * 1.01, want[id(prod)], "f32", False, "f32", s_prod) is not None


def test_take_index_check_of_indices_with_a_static_zero_dim():
    """Program fuzz seeds 61000002, 61000039, 61000117 (h/fuzz, the take index check's first
    runs): the check collapsed indices of type 0 x ? to 1-D, canonicalization folded the
    result to a static 0 and the verifier refused it (an internal error in
    relax-library-variants); the check is a loop nest over the indices' own dims now."""
    outs = runner.run_cases([{"kind": "program", "seed": s, "sizes": 3} for s in (61000002, 61000039, 61000117)])
    assert [(o.death, o.result["error"]) for o in outs] == [(None, None)] * 3
    import relax_mlir
    ti, to = 'tensor<0x?xi32, #relax.shape<[0, "m"]>>', 'tensor<0x?xf32, #relax.shape<[0, "m"]>>'
    src = (f'func.func @main(%x: tensor<4xf32>, %i: {ti}) -> {to} attributes {{relax.function}} {{\n'
           f'  %0 = "relax.take"(%x, %i) {{axis = 0 : i64}} : (tensor<4xf32>, {ti}) -> {to}\n  return %0 : {to}\n}}')
    assert np.asarray(relax_mlir.compile(src)(np.ones(4, np.float32), np.zeros((0, 3), np.int32))).shape == (0, 3)


def test_known_reshape_hole_of_a_polynomial():
    """Found by the shape-program fuzz (seed 152)."""
    import relax_mlir
    t_in = 'tensor<2x?x?xf32, #relax.shape<[2, "k", "k + 4"]>>'
    t_out = 'tensor<1x2x?x?xf32, #relax.shape<[1, 2, "k", "k + 4"]>>'
    src = (f'func.func @f(%x: {t_in}) -> {t_out} attributes {{relax.function}} {{\n'
           f'  %0 = "relax.reshape"(%x) {{shape = #relax.shape<[1, 2, -1, "k + 4"]>}} : ({t_in}) -> {t_out}\n'
           f'  return %0 : {t_out}\n}}')
    exe = relax_mlir.compile(src)
    assert exe["f"](np.zeros((2, 3, 7), np.float32)).shape == (1, 2, 3, 7)


def test_known_escape_in_op_name_is_a_diagnostic():
    """Found by the mutation fuzz (seed 8000236): '"relax.match\\cast"' (\\ca is byte 0xCA)."""
    text = 'func.func @f(%x: tensor<?xf32>) {\n  %0 = "relax.match\\cast"(%x) : (tensor<?xf32>) -> tensor<?xf32>\n  return\n}\n'
    (o,) = runner.run_cases([{"kind": "relax-opt", "text": text, "pipeline": "builtin.module(relax-infer-shapes)"}])
    assert not o.failed, o.describe()
    assert o.result["rc"] == 1


def test_norms_take_only_bit_exact_operands():
    """Long fuzz program seed 33000057 (a false mismatch): rms_norm divides a row of ~0 by
    ~sqrt(eps), 316 times the rounding error of its operand (there gelu's f32 tail, 4 %
    off like PyTorch's). The generator feeds rms_norm/layer_norm only bit-exact values."""
    import programs
    norms = []
    for seed in range(33000040, 33000080):
        _, _, nodes, _ = programs.build(seed, n_ops=8 + seed % 13)
        norms += [n for n in nodes if n.op in ("rms_norm", "layer_norm")]
    assert len(norms) == 28
    assert [n.inputs[0].exact for n in norms] == [True] * 28


def test_float_results_keep_the_precision_they_went_through():
    """Long fuzz program seed 41000812 (a false mismatch): layer_norm in f32, then astype
    f64, was compared with f64's tolerance (1e-6) although it carries f32's rounding."""
    import programs
    _, _, nodes, _ = programs.build(41000812, n_ops=8 + 41000812 % 13)
    cast = [n for n in nodes if n.op == "astype" and n.dtype == "f64"]
    assert [(n.inputs[0].op, n.precision) for n in cast] == [("layer_norm", "f32")]
    got, want = np.array([9.615010640118271e-05]), np.array([9.612922440283e-05])
    assert programs.compare(got, want, "f64", False) is not None          # f64's tolerance
    assert programs.compare(got, want, "f64", False, "f32") is None       # f32's
    assert programs.coarsest(["f64", "i32", "f16", "f32"]) == "f16" and programs.coarsest(["i8"]) is None


def test_fused_kernel_returning_its_input_writes_its_output():
    """Long fuzz program seed 42000493 (a silently wrong result): a sum/prod over no axes of
    a 0-d value folded to its operand inside a fused kernel, which then returned its input;
    the caller read the result from a workspace slot that a later kernel reused."""
    import programs
    res = programs.run_program(42000493, 3)
    assert (res["error"], res["calls"]) == (None, 3)


def _vulkan_or_skip():
    from relax_mlir.runtime import vulkan as vkrt
    ok, device = vkrt.available()
    if not ok:
        pytest.skip(f"no Vulkan device: {device}")


def test_vulkan_full_reduction_with_keepdims_runs_on_the_device():
    """vulkan-program fuzz seeds 5, 18, 53 (and 9 more of seeds 0-59): a full reduction with
    keepdims (``relax.min`` over every axis into a ``1x1`` result) returned the reduction's
    identity (inf, INT64_MAX, 0 for sum). Its linalg.generic has only reduction iterators but a
    rank-2 output, so relax-gpu-prepare-kernels (which looked at the outputs' rank only) left
    it at the top level of the kernel: its loops ran on the HOST, before the device's fill of
    the same buffer was submitted. Such an op now runs as a one-thread dispatch
    (test/vulkan/prepare_kernels.mlir, @keep)."""
    _vulkan_or_skip()
    import relax_mlir
    t_in = 'tensor<?x3xf32, #relax.shape<["n", 3]>>'
    got = {}
    for op in ("min", "max", "sum"):
        src = (f'func.func @main(%x: {t_in}) -> tensor<1x1xf32> attributes {{relax.function}} {{\n'
               f'  %0 = "relax.{op}"(%x) {{keepdims = true}} : ({t_in}) -> tensor<1x1xf32>\n'
               f'  return %0 : tensor<1x1xf32>\n}}')
        exe = relax_mlir.compile(src, target="vulkan")
        x = (np.arange(15).reshape(5, 3) % 7 + 2).astype(np.float32)
        got[op] = np.asarray(exe(x)).tolist()
    assert got == {"min": [[2.0]], "max": [[8.0]], "sum": [[72.0]]}
    outs = runner.run_cases([{"kind": "vulkan-program", "seed": s, "sizes": 3} for s in (5, 18, 53)])
    assert [(o.death, (o.result or {}).get("error")) for o in outs] == [(None, None)] * 3


def test_vulkan_f64_transcendental_math():
    """vulkan-program fuzz seed 11: log_softmax on f64 (also seeds 25, 48, 58; 1000166: erf on
    f64). GLSL.std.450 has Exp, Log, ... for 16/32-bit floats only: an f64 math.exp became an
    invalid spirv.GL.Exp (an internal error) and f64 erf had no lowering. relax-spirv-f64-math
    now expands them in f64 arithmetic (test/vulkan/spirv_f64_math.mlir; accuracy against
    numpy in test_vulkan.py)."""
    _vulkan_or_skip()
    outs = runner.run_cases([{"kind": "vulkan-program", "seed": s, "sizes": 3} for s in (11, 25, 48, 58, 1000166)])
    assert [(o.death, (o.result or {}).get("error")) for o in outs] == [(None, None)] * 5, \
        [o.describe()[:1000] for o in outs if o.failed]


@pytest.mark.parametrize("seed", [0, 34, 1000153, 1000355])
def test_vulkan_nan_and_pow_edge_results(seed):
    """vulkan-program fuzz seeds 0 (power f32: got 0.0, want nan), 34 (prod f32: got 0.0, want
    nan), 1000153 and 1000355 (pow(0, 0): got 0, want 1). Two causes: GL.Pow is undefined for a
    negative base and for 0 ** y, y <= 0 (relax-spirv-arith now keeps numpy's semantics around
    it), and without the SignedZeroInfNanPreserve execution mode lavapipe assumes no Inf/NaN
    (inf - inf folded to 0; relax-spirv-float-controls declares it)."""
    _vulkan_or_skip()
    (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": seed, "sizes": 3}])
    assert (o.death, (o.result or {}).get("error")) == (None, None), o.describe()[:2000]


def test_vulkan_bool_max_min_reductions_compile():
    """vulkan-program fuzz seeds 1000112, 1000120 (and 9 more of 1000000-1000472): a max/min
    reduction of bools became ``spirv.GL.UMax`` on i1, which SPIR-V does not allow (an internal
    error in the codegen stage); relax-gpu-signless now makes it an or / and
    (test/vulkan/signless_bool_minmax.mlir)."""
    _vulkan_or_skip()
    import relax_mlir
    t_in = 'tensor<?x3xi1, #relax.shape<["n", 3]>>'
    got = []
    for op in ("min", "max"):
        src = (f'func.func @main(%x: {t_in}) -> tensor<1x1xi1> attributes {{relax.function}} {{\n'
               f'  %0 = "relax.{op}"(%x) {{keepdims = true}} : ({t_in}) -> tensor<1x1xi1>\n'
               f'  return %0 : tensor<1x1xi1>\n}}')
        exe = relax_mlir.compile(src, target="vulkan")
        for x in (np.array([[1, 1, 1]], bool), np.array([[1, 0, 1], [1, 1, 1]], bool), np.zeros((3, 3), bool)):
            got.append(bool(np.asarray(exe(x))[0, 0]))
    assert got == [True, False, False, True, True, False]
    outs = runner.run_cases([{"kind": "vulkan-program", "seed": s, "sizes": 3} for s in (1000112, 1000120)])
    assert [(o.death, (o.result or {}).get("error")) for o in outs] == [(None, None)] * 2


@pytest.mark.parametrize("target", ["cpu", "vulkan"])
def test_mean_over_a_static_empty_axis_is_nan(target):
    """vulkan-program fuzz seed 1000400 (mean f32 over (2, 0, m), axes 0 and 1: got 0.0 on
    vulkan, want nan). The sum's division by the constant count 0 was folded to 0 by
    lavapipe's compiler; a mean over a static 0 dim is now written as NaN (0 / 0) at
    legalization. A count that is 0 at run time (symbolic dims) divides on the device: NaN."""
    if target == "vulkan":
        _vulkan_or_skip()
    import relax_mlir
    for ty, sym in (("0x?xf32", '[0, "m"]'), ("?x?xf32", '["n", "m"]')):
        t = f'tensor<{ty}, #relax.shape<{sym}>>'
        src = (f'func.func @main(%x: {t}) -> tensor<?xf32, #relax.shape<["m"]>> attributes {{relax.function}} {{\n'
               f'  %0 = "relax.mean"(%x) {{axes = array<i64: 0>, keepdims = false}} : ({t}) -> tensor<?xf32, #relax.shape<["m"]>>\n'
               f'  return %0 : tensor<?xf32, #relax.shape<["m"]>>\n}}')
        exe = relax_mlir.compile(src, target=target)
        assert np.isnan(np.asarray(exe(np.zeros((0, 3), np.float32)))).all()
        if ty.startswith("?"):
            np.testing.assert_allclose(np.asarray(exe(np.arange(6, dtype=np.float32).reshape(2, 3))), [1.5, 2.5, 3.5])
    if target == "vulkan":
        (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": 1000400, "sizes": 3}])
        assert (o.death, o.result["error"]) == (None, None)


@pytest.mark.parametrize("seed", [1000110, 1000161])
def test_vulkan_integer_mod_of_int_min(seed):
    """vulkan-program fuzz seeds 1000110 (floor_mod i32: got -4, want -2) and 1000161 (mod i64:
    got 2, want -2): upstream's SPIR-V remsi took the sign from ``a == |a|``, true for INT_MIN;
    relax-spirv-arith tests ``a < 0`` (test/vulkan/spirv_arith.mlir, @rem; every INT_MIN case
    in test_vulkan.py)."""
    _vulkan_or_skip()
    (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": seed, "sizes": 3}])
    assert (o.death, (o.result or {}).get("error")) == (None, None), o.describe()[:2000]


def test_vulkan_accumulator_storing_back_its_load_compiles():
    """vulkan-program fuzz seed 3000075 (a SIGSEGV in the compile, reproduced alone): the
    product of ``relax.ones`` folds to a loop storing back what it loaded;
    relax-gpu-register-accumulators built its yield on the erased load
    (test/vulkan/accumulators.mlir, @store_back)."""
    _vulkan_or_skip()
    (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": 3000075, "sizes": 3}])
    assert (o.death, o.result["error"], o.result["calls"]) == (None, None, 3)


@pytest.mark.parametrize("target", ["cpu", "vulkan"])
def test_take_clamps_64_bit_indices_before_narrowing(target):
    """vulkan-program fuzz seed 4000151 (a wrong result): take with i64 indices beyond 32 bits
    (products of a matmul) cast them to ``index`` before clamping, and ``index`` is 32 bits
    on SPIR-V: 2**33 + 1 read row 1, not the last row. The take kernel now clamps in 64 bits
    first; the clamped result (mode "clip") is the same on every target."""
    if target == "vulkan":
        _vulkan_or_skip()
    import relax_mlir
    tx, ti = 'tensor<?x?xi64, #relax.shape<["a", "b"]>>', 'tensor<?x?xi64, #relax.shape<["c", "d"]>>'
    to = 'tensor<?x?x?xi64, #relax.shape<["c", "d", "b"]>>'
    src = (f'func.func @main(%x: {tx}, %i: {ti}) -> {to} attributes {{relax.function}} {{\n'
           f'  %0 = "relax.take"(%x, %i) {{axis = 0 : i64, mode = "clip"}} : ({tx}, {ti}) -> {to}\n'
           f'  return %0 : {to}\n}}')
    exe = relax_mlir.compile(src, target=target)
    x = np.arange(20, dtype=np.int64).reshape(4, 5) * 3
    idx = np.array([[2**33 + 1, -(2**33) + 2], [2**32, 2**31], [-1, 2]], np.int64)
    assert np.asarray(exe(x, idx))[:, :, 0].tolist() == [[45, 0], [45, 45], [45, 30]]
    if target == "vulkan":
        (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": 4000151, "sizes": 3}])
        assert (o.death, o.result["error"]) == (None, None)


def test_vulkan_arange_fused_with_exp():
    """vulkan-program fuzz seed 61000455 (exp <- arange at n = 1: got inf, want 1.0).
    Canonicalization turns exp's overflow test ``sitofp(index_cast i) > 88.72`` into
    ``cmpi sgt (index_cast i : index to i64), 88``; on SPIR-V that is an OpSConvert of the
    32-bit index and a 64-bit signed compare, which lavapipe (Mesa 22.3, LLVM 15) gets wrong
    for every i (valid SPIR-V per spirv-val); relax-spirv-arith compares in 32 bits."""
    _vulkan_or_skip()
    import relax_mlir
    t = 'tensor<?xf32, #relax.shape<["n"]>>'
    src = (f'func.func @main(%x: tensor<?xi8, #relax.shape<["n"]>>) -> {t} attributes {{relax.function}} {{\n'
           f'  %1 = "relax.arange"() {{dtype = f32, end = "n"}} : () -> {t}\n'
           f'  %2 = "relax.exp"(%1) : ({t}) -> {t}\n  return %2 : {t}\n}}')
    exe = relax_mlir.compile(src, target="vulkan")
    for n in (1, 3, 89):
        np.testing.assert_allclose(np.asarray(exe(np.zeros(n, np.int8))), np.exp(np.arange(n, dtype=np.float32)),
                                   rtol=1e-5)
    (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": 61000455, "sizes": 3}])
    assert (o.death, (o.result or {}).get("error")) == (None, None), o.describe()[:2000]


def test_vulkan_arange_to_narrow_int():
    """vulkan-program fuzz seed 5000256 (astype i8 <- arange: got 127, want 0): the saturating
    cast's ``x > 127.0`` became a 64-bit signed compare of the sign-extended index, the
    lavapipe miscompile of test_vulkan_arange_fused_with_exp."""
    _vulkan_or_skip()
    import relax_mlir
    t, to = 'tensor<?xf32, #relax.shape<["n"]>>', 'tensor<?xi8, #relax.shape<["n"]>>'
    src = (f'func.func @main(%x: {t}) -> {to} attributes {{relax.function}} {{\n'
           f'  %1 = "relax.arange"() {{dtype = f32, end = "n"}} : () -> {t}\n'
           f'  %2 = "relax.astype"(%1) {{dtype = i8}} : ({t}) -> {to}\n  return %2 : {to}\n}}')
    exe = relax_mlir.compile(src, target="vulkan")
    for n in (1, 5, 300):
        assert np.asarray(exe(np.zeros(n, np.float32))).tolist() == np.arange(n).clip(-128, 127).tolist()
    (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": 5000256, "sizes": 3}])
    assert (o.death, (o.result or {}).get("error")) == (None, None), o.describe()[:2000]


@pytest.mark.parametrize("seed", [97000180, 97000218])
def test_vulkan_sin_of_large_values_and_fmod_by_inf(seed):
    """vulkan-program fuzz seeds 97000180 (sin f32 of astype(INT64_MAX) = 2^63: got -1.0, want
    0.99993; Vulkan bounds GL.Sin's error only on [-pi, pi], relax-spirv-f64-math reduces larger
    values exactly) and 97000218 (mod f32, 1.0 rem -inf: got NaN, want 1.0; FRem is x - y
    trunc(x / y) on the device, relax-spirv-arith computes f32 fmod exactly)."""
    _vulkan_or_skip()
    (o,) = runner.run_cases([{"kind": "vulkan-program", "seed": seed, "sizes": 3}])
    assert (o.death, (o.result or {}).get("error")) == (None, None), o.describe()[:2000]
