"""Executable-owned state (relax.state) and bind_params on the GPU targets.

* vulkan, on whatever Vulkan device the machine has (lavapipe in CI), and cuda on a real
  NVIDIA GPU (skipped without one): one executable per program, run at sizes 1, odd and
  larger; state across prefill / decode-like calls equal to the cpu target's, two sessions
  independent, ``reset_state``, rows beyond the capacity the cpu's ``ShapeError``;
  ``bind_params`` equal to unbound calls, the bound weights uploaded once (the runtime's
  ``uploads`` stats), its errors the cpu's; a tiny Llama through ``CausalLM(target=...)``
  equal to the cpu target's logits and greedy tokens;
* cuda without a GPU: the host path against the fake driver (``test/Inputs/fake_libcuda.c``)
  in a subprocess: state buffers in device memory, rows written by device copies (replayed
  from the call's graph) and read back (the fake runs no kernel, so only programs without
  kernels give numbers there), kernels launched with state pointers, capacity errors,
  bind_params uploading once; a tiny Llama's decode step: one graph launch, one sync, no
  allocation.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.runtime import cuda as curt  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402

import gpu_checks  # noqa: E402
from test_state import ALL, POS, X, data, pos  # noqa: E402
from test_state import SRC as STATE_SRC  # noqa: E402

VULKAN_OK, VULKAN_WHY = vkrt.available()
CUDA_OK, CUDA_WHY = curt.available()
TARGETS = [pytest.param("vulkan", marks=pytest.mark.skipif(not VULKAN_OK, reason=f"no Vulkan device: {VULKAN_WHY}")),
           pytest.param("cuda", marks=pytest.mark.skipif(not CUDA_OK, reason=f"no CUDA device: {CUDA_WHY}"))]

# test_state's program (@append: 2*x written at rows [p, p + s) of "h", a kernel's output, and
# rows [0, p + s) read back in place + 1; @history: rows [0, p) returned, the caller's copy;
# @nested: @append through relax.call) and two more functions: @put: x itself written, rows
# [0, p + s) returned (no kernel: numbers even on the fake CUDA driver); @window: rows
# [p, p + s) read (a view starting at 12*p bytes, not a multiple of a Vulkan descriptor's
# offset alignment) and doubled.
SRC = STATE_SRC[:STATE_SRC.rindex("}")] + f"""  func.func @put(%x: {X}, %pos: {POS}) -> {ALL} attributes {{relax.function}} {{
    "relax.state_write"(%x) {{state = "h", offset = "p"}} : ({X}) -> ()
    %all = "relax.state_read"() {{state = "h", end = "p + s"}} : () -> {ALL}
    return %all : {ALL}
  }}
  func.func @window(%x: {X}, %pos: {POS}) -> {X} attributes {{relax.function}} {{
    %w = "relax.state_read"() {{state = "h", begin = "p", end = "p + s"}} : () -> {X}
    %r = "relax.add"(%w, %w) : ({X}, {X}) -> {X}
    return %r : {X}
  }}
}}
"""


def stats(exe) -> dict:
    return exe.vulkan_stats if hasattr(exe, "vulkan_stats") else exe.cuda_stats


def delta(exe, before: dict) -> dict:
    after = stats(exe)
    return {k: after[k] - before[k] for k in after}


@pytest.fixture(scope="module", params=TARGETS)
def state_exe(request):
    """(the GPU executable, the cpu one) of SRC: each compiled once for the whole module."""
    return relax_mlir.compile(SRC, target=request.param), relax_mlir.compile(SRC)


def test_state_across_calls_two_sessions_reset(state_exe):
    exe, cpu = state_exe
    assert exe.states == ["h", "z"] and exe.metadata["states"] == cpu.metadata["states"]
    a, b, ref = exe.session(), exe.session(), cpu.session()
    assert a.state_shapes == ref.state_shapes == {"h": (64, 3), "z": (4,)}
    assert a.state_bytes == ref.state_bytes == 64 * 12 + 16
    assert sorted(a.state) == ["h", "z"] and a.state["z"].dtype == np.int32
    np.testing.assert_array_equal(a.state["h"], np.zeros((64, 3), np.float32))
    p = 0
    for step, s in enumerate((1, 5, 40)):           # prefill, then longer appends: one executable
        x = data(s, step)
        out = a["append"](x, pos(p))
        np.testing.assert_array_equal(out, ref["append"](x, pos(p)))
        p += s
        np.testing.assert_array_equal(a.state["h"], ref.state["h"])
    assert not b.state["h"].any()                    # the other session saw nothing
    # decode-like steps (one row each): only that row of the state changes
    for k in range(3):
        before = a.state["h"]
        x = data(1, 50 + k)
        np.testing.assert_array_equal(a["append"](x, pos(p)), ref["append"](x, pos(p)))
        changed = np.nonzero((a.state["h"] != before).any(axis=1))[0]
        assert changed.tolist() == [p]
        p += 1
    np.testing.assert_array_equal(a.state["h"], ref.state["h"])
    # the other session: its own history, through relax.call
    x = data(6, 7)
    np.testing.assert_array_equal(b["nested"](x, pos(0)), 2 * x + 1)
    np.testing.assert_array_equal(b.state["h"][:6], 2 * x)
    np.testing.assert_array_equal(a.state["h"], ref.state["h"])
    # a result is the caller's copy: a later write does not change it
    hist = a["history"](pos(p))
    np.testing.assert_array_equal(hist, ref.state["h"][:p])
    a["put"](np.zeros((3, 3), np.float32), pos(0))
    np.testing.assert_array_equal(hist, ref.state["h"][:p])
    # Python writes into the state are what the next call reads
    a.state["h"] = 7.0
    np.testing.assert_array_equal(a["history"](pos(2)), np.full((2, 3), 7.0, np.float32))
    a.reset_state()
    assert not a.state["h"].any() and b.state["h"][:6].any()
    np.testing.assert_array_equal(a["history"](pos(4)), np.zeros((4, 3), np.float32))


def test_state_default_session_per_thread(state_exe):
    exe, _ = state_exe
    out = exe["put"](np.ones((2, 3), np.float32), pos(0))
    np.testing.assert_array_equal(out, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(exe["history"](pos(2)), np.ones((2, 3), np.float32))


def test_state_read_at_any_row(state_exe):
    """Rows [p, p + s) at every p: 12*p bytes into the buffer, most not a multiple of a
    Vulkan descriptor's offset alignment."""
    exe, cpu = state_exe
    a, ref = exe.session(rows=16), cpu.session(rows=16)
    h = np.arange(48, dtype=np.float32).reshape(16, 3)
    a.state["h"] = h
    ref.state["h"][...] = h
    for p, s in ((0, 1), (1, 1), (1, 5), (2, 7), (3, 13), (4, 4), (15, 1)):
        x = np.empty((s, 3), np.float32)
        np.testing.assert_array_equal(a["window"](x, pos(p)), ref["window"](x, pos(p)))
        np.testing.assert_array_equal(a["window"](x, pos(p)), 2 * h[p:p + s])


def test_state_beyond_capacity_is_the_cpus_error(state_exe):
    exe, cpu = state_exe
    msgs = []
    for e in (exe, cpu):
        sess = e.session(rows=8)
        sess["append"](data(6, 1), pos(0))
        before = sess.state["h"].copy()
        got = []
        for fn, args in (("append", (data(3, 2), pos(6))), ("history", (pos(9),)), ("window", (data(2, 3), pos(7)))):
            with pytest.raises(relax_mlir.ShapeError) as info:
                sess[fn](*args)
            got.append(str(info.value))
        np.testing.assert_array_equal(sess.state["h"], before)    # nothing was written
        np.testing.assert_array_equal(sess["history"](pos(6)), before[:6])   # and the session works on
        msgs.append(got)
    assert msgs[0] == msgs[1]
    assert msgs[0][0] == ("@append: relax.state_write at -:5:5: rows [p, p + s) = [6, 9) of state 'h' "
                          "exceed its capacity of 8 rows with s = 3, p = 6")
    with pytest.raises(ValueError, match=r"state 'h': 65 rows requested, its capacity is at most 64"):
        exe.session(rows=65)


def test_vulkan_state_read_is_a_view_and_write_moves_only_its_rows():
    """On the device: @append records its 2 kernels and ONE copy (the written rows, device to
    device); the read of the state feeds the kernel in place (no copy); only x and the
    zero-byte position array are uploaded."""
    if not VULKAN_OK:
        pytest.skip(f"no Vulkan device: {VULKAN_WHY}")
    exe = relax_mlir.compile(SRC, target="vulkan")
    sess = exe.session()
    p = 0
    for s in (1, 5, 40):
        before = stats(exe)
        sess["append"](data(s, s), pos(p))
        d = delta(exe, before)
        assert (d["calls"], d["submits"], d["dispatches"], d["copies"], d["uploads"], d["upload_bytes"]) == \
            (1, 1, 2, 1, 2, 12 * s)
        p += s


# -- bind_params -----------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=TARGETS)
def mlp(request):
    return gpu_checks.mlp(request.param, max_batch=512)


def test_bind_params_equal_to_unbound_calls_weights_uploaded_once(mlp):
    exe, cpu, params = mlp
    before = stats(exe)
    step = exe["main"].bind_params(*params)
    assert repr(step) == "<relax_mlir prepared call of @main: 1 argument(s), 4 bound>"
    d = delta(exe, before)
    assert (d["uploads"], d["upload_bytes"], d["calls"]) == (4, sum(p.nbytes for p in params), 0)
    for n in (1, 7, 130):
        x = np.random.default_rng(n).standard_normal((n, 512)).astype(np.float32)
        before = stats(exe)
        y = step(x)
        d = delta(exe, before)
        assert (d["calls"], d["uploads"], d["upload_bytes"]) == (1, 1, x.nbytes)   # x only, never the weights
        np.testing.assert_array_equal(y, exe(x, *params))
        np.testing.assert_allclose(y, cpu(x, *params), rtol=1e-4, atol=1e-4)
    x = np.ones((2, 512), np.float32)
    np.testing.assert_array_equal(exe.session()["main"].bind_params(*params)(x), exe(x, *params))
    # arrays uploaded already are bound as they are
    dev = [exe.upload(p) for p in params]
    before = stats(exe)
    np.testing.assert_array_equal(exe["main"].bind_params(*dev)(x), exe(x, *params))
    assert delta(exe, before)["uploads"] == 1 + 5     # x, then the unbound call's 5 arguments


def test_bind_params_weights_changed_uploads_again(mlp):
    exe, cpu, params = mlp
    mine = [p.copy() for p in params]
    step = exe["main"].bind_params(*mine)
    x = np.ones((3, 512), np.float32)
    mine[3][:] += 1.0
    step.weights_changed()
    np.testing.assert_allclose(step(x), cpu(x, *mine), rtol=1e-4, atol=1e-4)


def test_bind_params_errors_are_the_cpus(mlp):
    exe, cpu, params = mlp
    msgs = []
    for e in (exe, cpu):
        got = []
        step = e["main"].bind_params(*params)
        for call, args in ((step, (np.ones((3, 511), np.float32),)), (step, (params[0], params[0])),
                           (e["main"].bind_params, (params[0].astype(np.float64), *params[1:])),
                           (e["main"].bind_params, (params[0][:, :5], *params[1:]))):
            with pytest.raises((TypeError, relax_mlir.ShapeError)) as info:
                call(*args)
            got.append((type(info.value).__name__, str(info.value)))
        msgs.append(got)
    assert msgs[0] == msgs[1]
    assert msgs[0][0] == ("ShapeError", "@main: argument #0: expected shape (n, 512), got (3, 511)")


# -- a tiny Llama, prefill / decode with its KV cache on the device ----------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_causal_lm_on_the_gpu_equals_the_cpu(target):
    from gpu_checks import tiny_hf_llama
    from relax_mlir.llm import CausalLM

    hf = tiny_hf_llama()
    import torch
    cpu = CausalLM.from_hf(hf, max_seq_len=64)
    gpu = CausalLM.from_hf(hf, max_seq_len=64, target=target)
    assert gpu.exe.metadata["target"] == target and gpu.cache.max_seq_len == 64
    ids = np.random.default_rng(1).integers(0, 128, 19).astype(np.int64)
    with torch.no_grad():
        ref = hf(torch.tensor(ids[None])).logits[0].numpy()
    np.testing.assert_allclose(gpu.extend(ids), cpu.extend(ids), atol=1e-3, rtol=0)
    for n in (1, 7, 12):           # prefill at 1, odd, longer (one executable)
        np.testing.assert_allclose(gpu.prefill(ids[:n]), cpu.prefill(ids[:n]), atol=1e-3, rtol=0)
    for j in range(12, 19):        # decode steps: the cache on the device, the weights not re-uploaded
        before = stats(gpu.exe)
        got = gpu.decode(ids[j])
        d = delta(gpu.exe, before)
        assert (d["calls"], d["uploads"], d["upload_bytes"]) == (1, 2, 8)   # the token and the empty past
        np.testing.assert_allclose(got, cpu.decode(ids[j]), atol=1e-3, rtol=0)
        np.testing.assert_allclose(got, ref[j], atol=1e-3, rtol=0)
    assert gpu.cache.length == cpu.cache.length == 19
    for a, b in zip(gpu.cache.k + gpu.cache.v, cpu.cache.k + cpu.cache.v):
        np.testing.assert_allclose(a[:19], b[:19], atol=1e-4, rtol=0)
        np.testing.assert_array_equal(a[19:], b[19:])
    assert gpu.cache.nbytes == cpu.cache.nbytes == 2 * 2 * 64 * 2 * 16 * 4
    # a second model of the config: the same executable, its own cache
    other = CausalLM.from_hf(hf, max_seq_len=32, target=target)
    assert other.exe is gpu.exe and other.session is not gpu.session
    other.prefill(ids[:3])
    np.testing.assert_allclose(gpu.extend(ids[:2]), cpu.extend(ids[:2]), atol=1e-3, rtol=0)
    for seed, n in ((2, 5), (3, 11)):   # greedy generation: the same tokens
        prompt = np.random.default_rng(seed).integers(0, 128, n).astype(np.int64)
        np.testing.assert_array_equal(gpu.generate(prompt, max_new_tokens=12),
                                      cpu.generate(prompt, max_new_tokens=12))


# -- cuda without a GPU: the host path against the fake driver ---------------------------------------

def _fake_state_run():
    from test_cuda import FAKE_PRELUDE
    return FAKE_PRELUDE + r'''
src = open(sys.argv[2]).read()
pos = lambda p: np.empty((p, 0), np.int8)
x = np.arange(6, dtype=np.float32).reshape(2, 3)
out = {}
exe = relax_mlir.compile(src, target="cuda")
a, b = exe.session(), exe.session(rows=8)
out["shapes"] = {k: list(v) for k, v in a.state_shapes.items()}
out["put"] = [a["put"](x, pos(0)).tolist(), a["put"](x + 10, pos(2)).tolist()]
out["state"] = a.state["h"][:5].tolist()
# the same shapes again, nothing updated the graph since: replayed (the host code does not run);
# the new rows reach the state through the replayed copy node
captured = ctypes.c_long.in_dll(fake, "fake_captured").value
out["replayed"] = [a["put"](x + 20, pos(2)).tolist(), exe.cuda_call_stats["replays"],
                   ctypes.c_long.in_dll(fake, "fake_captured").value - captured]
out["other_session"] = bool(b.state["h"].any())
before = launches()
out["append"] = err(lambda: a["append"](x, pos(4)))
out["append_launches"] = launches() - before
out["overflow"] = err(lambda: b["put"](np.ones((9, 3), np.float32), pos(0)))
a.reset_state()
out["reset"] = bool(a.state["h"].any())

cfg = models.MLPConfig(d_in=8, d_hidden=16, d_out=4, max_batch=512)
mlp = relax_mlir.compile(models.mlp_module(relax_mlir.make_context(), cfg), target="cuda")
params = models.mlp_params(cfg, np.random.default_rng(0))
s0 = mlp.cuda_stats
step = mlp["main"].bind_params(*params)
s1 = mlp.cuda_stats
for n in (1, 7, 130):
    step(np.ones((n, 8), np.float32))
s2 = mlp.cuda_stats
out["bind"] = [s1["uploads"] - s0["uploads"], s1["upload_bytes"] - s0["upload_bytes"],
               s2["uploads"] - s1["uploads"], s2["upload_bytes"] - s1["upload_bytes"], s2["launches"] - s1["launches"]]
print("FAKE-RUN " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def fake_state_run(tmp_path_factory):
    from test_cuda import run_fake
    tmp = tmp_path_factory.mktemp("fakecuda_state")
    src = tmp / "state.mlir"
    src.write_text(SRC)
    return run_fake(tmp, _fake_state_run(), str(src))


def test_fake_cuda_state_in_device_memory(fake_state_run):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = fake_state_run
    assert r["shapes"] == {"h": [64, 3], "z": [4]}
    assert r["put"] == [x.tolist(), np.concatenate([x, x + 10]).tolist()]
    assert r["state"] == np.concatenate([x, x + 10, np.zeros((1, 3), np.float32)]).tolist()
    assert r["replayed"] == [np.concatenate([x, x + 20]).tolist(), 1, 0]
    assert r["other_session"] is False and r["reset"] is False
    # kernels launched with views of the state (pointer-checked as the runtime's memory)
    assert r["append"] is None and r["append_launches"] == 2
    cpu = relax_mlir.compile(SRC).session(rows=8)
    with pytest.raises(relax_mlir.ShapeError) as info:
        cpu["put"](np.ones((9, 3), np.float32), pos(0))
    assert r["overflow"] == ["ShapeError", str(info.value)]


def test_fake_cuda_bind_params_uploads_the_weights_once(fake_state_run):
    # 4 weights (8x16, 16, 16x4, 4 f32) at bind time; then x only per call; 2 launches per call
    assert fake_state_run["bind"] == [4, 848, 3, (1 + 7 + 130) * 32, 6]


#: a tiny Llama (2 layers) through CausalLM on the fake driver: prefill, then decode steps
FAKE_DECODE = r"""
import torch, transformers
from relax_mlir.llm import CausalLM

counter = lambda name: ctypes.c_long.in_dll(fake, "fake_" + name).value
torch.manual_seed(0)
cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
lm = CausalLM.from_hf(transformers.LlamaForCausalLM(cfg).eval(), max_seq_len=64, target="cuda")
out = {"warmup": []}
for j in range(9):    # warm-up: a first generation (pool buffers and graphs for these lengths)
    lm.prefill(np.arange(1, 6, dtype=np.int64)) if j == 0 else lm.decode(j)
    out["warmup"].append(lm.exe.cuda_call_stats)
lm.reset()
lm.prefill(np.arange(1, 6, dtype=np.int64))
out["prefill"] = lm.exe.cuda_call_stats
out["steps"] = []
for j in range(8):
    before = {k: counter(k) for k in ("launches", "direct_launches", "graph_launches", "htod", "dtoh", "allocs",
                                      "get_functions")}
    lm.decode(j + 1)
    fake_delta = {k: counter(k) - v for k, v in before.items()}
    out["steps"].append([lm.exe.cuda_call_stats, fake_delta])
os.environ["RELAX_MLIR_CUDA_GRAPHS"] = "0"
before = (counter("direct_launches"), counter("graph_launches"))
lm.decode(9)
out["no_graphs"] = [lm.exe.cuda_call_stats, counter("direct_launches") - before[0], counter("graph_launches") - before[1]]
del os.environ["RELAX_MLIR_CUDA_GRAPHS"]
import contextlib, io
from relax_mlir.llm import cli
text = io.StringIO()
with contextlib.redirect_stdout(text):
    out["cli"] = cli.main(["--size", "tiny", "--target", "cuda", "-n", "6", "--stats"])
out["cli_text"] = text.getvalue().splitlines()[-2:]
print("FAKE-RUN " + json.dumps(out))
"""


def test_fake_cuda_decode_replays_a_graph(tmp_path):
    """A decode step is one CUDA graph launch: its kernels run as the graph's nodes (none launched
    directly), the token copied in, the logits out, one synchronization; after a first
    generation no new device memory and no new graph: the KV length changes every step, so the
    step's executable (one per topology: kernel variants chosen by the sizes) is updated in
    place (cuGraphExecUpdate)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_cuda import FAKE_PRELUDE, run_fake
    r = run_fake(tmp_path, FAKE_PRELUDE + FAKE_DECODE)
    warm = r["warmup"]
    assert all(st["syncs"] == 1 and st["graph_launches"] == 1 for st in warm)
    # call buffers come from the session's arena, grown to what a call needed: the prefill's
    # arena already holds a decode step's buffers
    assert warm[0]["allocations"] > 0 and sum(st["allocations"] + st["buffers"] for st in warm[1:]) == 0
    assert sum(st["graph_builds"] for st in warm[1:]) <= 3       # decode topologies
    assert (r["prefill"]["allocations"], r["prefill"]["graph_builds"], r["prefill"]["graph_updates"]) == (0, 0, 1)
    for k, (st, fake) in enumerate(r["steps"]):
        # 2 layers x (K, V) rows written into the state, device to device, and the rope table's
        # constant copied from its device copy: no host code touches device memory; the token's
        # index check (relax.take) snapshots the token with one more device copy, read back
        # after the synchronization (the second copy out)
        assert (st["syncs"], st["graph_launches"], st["copies_in"], st["copies_out"]) == (1, 1, 1, 2), st
        assert (st["allocations"], st["buffers"], st["graph_builds"], st["graph_updates"]) == (0, 0, 0, 1), (k, st)
        assert st["device_copies"] == 7 and st["launches"] == 25, st     # test_gpu_launches.py
        # (and no kernel handle looked up again: the compiled path caches them)
        assert fake == {"launches": st["launches"], "direct_launches": 0, "graph_launches": 1, "htod": 1, "dtoh": 2,
                        "allocs": 0, "get_functions": 0}, (k, st, fake)
    st, direct, graphs = r["no_graphs"]     # RELAX_MLIR_CUDA_GRAPHS=0: the same kernels, launched directly
    assert (direct, graphs, st["graph_launches"], st["syncs"]) == (st["launches"], 0, 0, 1)
    # the llm CLI's --stats view: the prefill and the last decode step
    assert r["cli"] == 0
    prefill, step = r["cli_text"]
    assert re.fullmatch(r"prefill: \d+ kernel launches \(1 graph launch\(es\), 0 built, 1 updated\), 1 copies in, "
                        r"2 out, 7 device copies, 1 sync\(s\), 0 allocation\(s\), \d+ pool buffers", prefill), prefill
    assert re.fullmatch(r"decode step \(the last\): \d+ kernel launches \(1 graph launch\(es\), 0 built, 1 updated\), "
                        r"1 copies in, 2 out, 7 device copies, 1 sync\(s\), 0 allocation\(s\), \d+ pool buffers",
                        step), step
