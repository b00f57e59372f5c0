"""The vulkan runtime's staged path (``RELAX_MLIR_VULKAN_STAGING=1``), forced on whatever
Vulkan device the machine has (lavapipe in CI, where ``auto`` keeps the direct path): device
buffers never mapped (the host code knows them by reserved address ranges with no Vulkan
memory behind them), arguments copied in from staging buffers and results out through
read-back buffers in the call's one command buffer, uploads / state writes / reads / resets
by device copies and fills. The same numerics, state, bound-weight and tiny-Llama checks as
the direct path, through one executable per program at several sizes, with the per-call
counts pinned (one copy in per argument, one out per result, no allocation once warm)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import relax_mlir  # noqa: E402
from relax_mlir.runtime import vulkan as vkrt  # noqa: E402

OK, DEVICE = vkrt.available()
pytestmark = pytest.mark.skipif(not OK, reason=f"no Vulkan device: {DEVICE}")

import gpu_checks  # noqa: E402
import test_gpu_state as gpu_state  # noqa: E402
import test_vulkan  # noqa: E402
import test_ops_numerics as numerics  # noqa: E402

ENV = "RELAX_MLIR_VULKAN_STAGING"


@pytest.fixture(autouse=True)
def staged_env(monkeypatch):
    """Every compile of this module gets the staged device."""
    monkeypatch.setenv(ENV, "1")


def staged_compile(src, **kw):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, "1")
        return relax_mlir.compile(src, target="vulkan", **kw)


def staged_device():
    dev = vkrt.device(staging="on")
    assert dev.staged
    return dev


def assert_never_mapped(dev) -> None:
    """No buffer of the device pool was mapped (vkMapMemory): every one's address is a
    reserved range."""
    assert dev.device_maps == 0
    assert all(b._map is None for b in dev._live.values())


def delta(exe, before: dict) -> dict:
    after = exe.vulkan_stats
    return {k: after[k] - before[k] for k in after}


# -- the choice --------------------------------------------------------------------------------

def test_auto_stages_only_with_device_only_memory(monkeypatch):
    monkeypatch.delenv(ENV)
    dev = vkrt.device()
    vk = dev.vk
    device_only = any(f & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT and not f & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                      for f in dev.memory_types)
    assert dev.staged == device_only
    if "llvmpipe" in dev.name:     # lavapipe: one host-visible type, so auto = direct
        assert not dev.staged and dev.staging is None and dev.device_maps == dev.created
    staged = staged_device()
    assert staged is not dev and staged.staging is not None and staged.readback is not None
    assert staged.memory_types[staged.memory_type] & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
    monkeypatch.setenv(ENV, "sometimes")
    with pytest.raises(ValueError, match="RELAX_MLIR_VULKAN_STAGING"):
        vkrt.device()


@pytest.mark.parametrize("chunk", [None, 256, 1000])
def test_device_buffers_are_not_host_memory(monkeypatch, chunk):
    """A device buffer's address is reserved address space, not its memory: uploads, reads
    and fills move its data by device copies (large ones in chunks)."""
    vkdev = sys.modules["relax_mlir.runtime.vulkan.device"]    # the package's `device` is the cache
    if chunk:
        monkeypatch.setattr(vkdev, "STAGING_CHUNK", chunk)
    dev = staged_device()
    buf = dev.alloc(1000)
    try:
        assert buf._map is None and dev.lookup(buf.address + 999) == (buf, 999)
        a = np.arange(250, dtype=np.float32)
        before = dict(dev.transfer_stats)
        dev.upload(buf, a.ctypes.data, a.nbytes)
        out = np.empty_like(a)
        dev.download(out.ctypes.data, buf, a.nbytes)
        np.testing.assert_array_equal(out, a)
        dev.zero(buf, a.nbytes)
        dev.download(out.ctypes.data, buf, a.nbytes)
        assert not out.any()
        assert {k: dev.transfer_stats[k] - before[k] for k in before} == {
            "uploads": 1, "upload_bytes": 1000, "fills": 1, "downloads": 2}
    finally:
        dev.release(buf)
    assert_never_mapped(dev)


# -- numerics: a sample of test_vulkan's cases ------------------------------------------------

SAMPLE = ["exp-f32", "add-f16-f16", "add-i64-i64", "where-i1-f32-f32", "matmul-f32-f32", "matmul-f16-f16",
          "sum-f32-axes=array<i64:0,2>,keepdims=true", "argmax-f32-axis=1:i64", "softmax-f32", "layer_norm-f32-f32-f32",
          "take-f32-i64-axis=1:i64", "concat-f32-f32-f32-axis=1:i64", "arange-f32-start=n-1,end=3*n,step=2,dtype=f32",
          "topk-f32-k=3:i64,largest=false", "quantized_matmul-f32-i8-format=q8_0"]


def _sample():
    cases = {}
    for c in numerics.CASES:
        cases.setdefault(c.id, c)
    return [pytest.param(cases[i], id=i) for i in SAMPLE]


@pytest.mark.parametrize("case", _sample())
def test_staged_numerics(case):
    numerics.check_case(case, target="vulkan")
    assert_never_mapped(staged_device())


def test_staged_match_cast_failure_is_the_cpus():
    gpu_checks.check_match_cast_failure_is_the_cpus("vulkan")


def test_staged_constant_arrays_reach_the_kernels():
    gpu_checks.check_constant_arrays("vulkan")
    assert_never_mapped(staged_device())


@pytest.fixture(scope="module")
def take_exes():
    return staged_compile(test_vulkan._TAKE_SRC), relax_mlir.compile(test_vulkan._TAKE_SRC)


def test_staged_take_checks_are_the_cpus(take_exes):
    """take's deferred index checks read their snapshots through read-back copies: in-range
    calls, out-of-range errors identical to the cpu's, a failed check before a state write
    leaving the state as the cpu's."""
    test_vulkan.test_vulkan_take_in_range_through_one_executable(take_exes)
    for fn, ids in (("embed", [0, 5]), ("doubled", [-3, 0]), ("token", 7), ("unsigned", [2 ** 32 - 1])):
        test_vulkan.test_vulkan_take_out_of_range_is_the_cpus_error(take_exes, fn, ids)
    test_vulkan.test_vulkan_take_failure_leaves_the_state_as_the_cpu(take_exes)
    assert_never_mapped(take_exes[0]._runtime.dev)


# -- the MLP: per-call copies, weights bound -------------------------------------------------------

@pytest.fixture(scope="module")
def mlp():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, "1")
        return gpu_checks.mlp("vulkan", max_batch=512)


@pytest.mark.parametrize("n", [1, 7, 130])
def test_staged_mlp(mlp, n):
    gpu_checks.check_mlp(*mlp, n)


def test_staged_copies_per_call(mlp):
    """One staging copy in per argument (x and the 4 weights unbound; x alone with bound
    weights), one read-back copy out per result, one submission, no Vulkan allocation once a
    size has run (the staging, read-back and device pools reuse their buffers)."""
    exe, cpu, params = mlp
    assert exe._runtime.dev.staged
    step = exe["main"].bind_params(*params)
    for n in (3, 64, 3, 64):
        x = np.random.default_rng(n).standard_normal((n, 512)).astype(np.float32)
        before = exe.vulkan_stats
        y = exe(x, *params)
        d = delta(exe, before)
        assert (d["calls"], d["submits"], d["staged_in"], d["readbacks"]) == (1, 1, 5, 1)
        assert d["staged_bytes"] == x.nbytes + sum(p.nbytes for p in params)
        assert d["readback_bytes"] == y.nbytes
        before = exe.vulkan_stats
        yb = step(x)
        d = delta(exe, before)
        assert (d["calls"], d["submits"], d["staged_in"], d["staged_bytes"], d["readbacks"]) == (1, 1, 1, x.nbytes, 1)
        assert d["allocations"] == 0          # the unbound call at this size warmed every pool
        np.testing.assert_array_equal(yb, y)
        np.testing.assert_allclose(y, cpu(x, *params), rtol=1e-4, atol=1e-4)
    before = exe.vulkan_stats
    exe(np.ones((64, 512), np.float32), *params)
    assert delta(exe, before)["allocations"] == 0
    assert_never_mapped(exe._runtime.dev)


def test_staged_weights_stay_on_the_device(mlp):
    exe, _, params = mlp
    dev = exe._runtime.dev
    before = dict(dev.transfer_stats)
    gpu_checks.check_weights_stay_on_the_device(exe, params)
    assert dev.transfer_stats["uploads"] - before["uploads"] == 4      # exe.upload: through staging
    assert dev.transfer_stats["downloads"] - before["downloads"] == 1  # .numpy(): a copy back


def test_staged_bind_params(mlp):
    gpu_state.test_bind_params_equal_to_unbound_calls_weights_uploaded_once(mlp)
    gpu_state.test_bind_params_weights_changed_uploads_again(mlp)


def test_staged_threads_call_one_executable(mlp):
    gpu_checks.check_threads_call_one_executable(*mlp)


# -- state: appends, reads, writes, resets by device copies and fills ----------------------------

@pytest.fixture(scope="module")
def state_exe():
    return staged_compile(gpu_state.SRC), relax_mlir.compile(gpu_state.SRC)


def test_staged_state_across_calls_two_sessions_reset(state_exe):
    """test_gpu_state's KV-cache-like appends, reads back, Python writes and reset, staged:
    state zeroed by fills, written by staging copies, read by read-back copies."""
    dev = state_exe[0]._runtime.dev
    before = dict(dev.transfer_stats)
    gpu_state.test_state_across_calls_two_sessions_reset(state_exe)
    d = {k: dev.transfer_stats[k] - before[k] for k in before}
    assert d["fills"] == 2 * 2 + 2            # two sessions' two states, then one reset_state
    assert d["uploads"] == 1                  # a.state["h"] = 7.0
    assert d["downloads"] >= 10
    assert_never_mapped(dev)


def test_staged_state_read_at_any_row_and_capacity(state_exe):
    gpu_state.test_state_read_at_any_row(state_exe)
    gpu_state.test_state_beyond_capacity_is_the_cpus_error(state_exe)


def test_staged_state_calls_copy_only_their_arguments(state_exe):
    exe, cpu = state_exe
    sess, ref = exe.session(), cpu.session()
    p = 0
    for step, s in enumerate((1, 5, 1, 1, 5)):
        x = gpu_state.data(s, step)
        before = exe.vulkan_stats
        out = sess["append"](x, gpu_state.pos(p))
        d = delta(exe, before)
        np.testing.assert_array_equal(out, ref["append"](x, gpu_state.pos(p)))
        # x in (the position is a shape-only (p, 0) array: no bytes, no copy), the result out
        assert (d["submits"], d["staged_in"], d["staged_bytes"], d["readbacks"]) == (1, 1, x.nbytes, 1)
        if step >= 2:
            assert d["allocations"] == 0      # s = 1 and s = 5 ran before
        p += s
    np.testing.assert_array_equal(sess.state["h"], ref.state["h"])


# -- a tiny Llama: decode tokens equal to the direct path's -----------------------------------------

def test_staged_tiny_llama_tokens_equal_the_direct_path(monkeypatch):
    from gpu_checks import tiny_hf_llama
    from relax_mlir.llm import CausalLM, causal_lm

    hf = tiny_hf_llama()
    monkeypatch.setattr(causal_lm, "_EXECUTABLES", {})
    monkeypatch.setenv(ENV, "0")
    direct = CausalLM.from_hf(hf, max_seq_len=64, target="vulkan")
    monkeypatch.setattr(causal_lm, "_EXECUTABLES", {})
    monkeypatch.setenv(ENV, "1")
    staged = CausalLM.from_hf(hf, max_seq_len=64, target="vulkan")
    assert staged.exe is not direct.exe
    assert staged.exe._runtime.dev.staged and not direct.exe._runtime.dev.staged
    ids = np.random.default_rng(1).integers(0, 128, 19).astype(np.int64)
    np.testing.assert_allclose(staged.prefill(ids[:12]), direct.prefill(ids[:12]), atol=1e-5, rtol=0)
    for j in range(12, 19):
        before = staged.exe.vulkan_stats
        got = staged.decode(ids[j])
        d = delta(staged.exe, before)
        before = direct.exe.vulkan_stats
        want = direct.decode(ids[j])
        dd = delta(direct.exe, before)
        # the token in (the empty past has no bytes: no copy); out: the logits and the
        # embedding's index-check snapshot, read at the submission before the first KV write
        # (two submissions, as on the direct path: a failed check leaves the cache alone)
        assert (d["calls"], d["staged_in"], d["staged_bytes"], d["readbacks"]) == (1, 1, 8, 2)
        assert d["submits"] == dd["submits"] == 2 and d["dispatches"] == dd["dispatches"]
        assert (dd["staged_in"], dd["readbacks"]) == (0, 0)
        if j > 12:
            assert d["allocations"] == dd["allocations"] == 0
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    for a, b in zip(staged.cache.k + staged.cache.v, direct.cache.k + direct.cache.v):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)
    for seed, n in ((2, 5), (3, 11)):
        prompt = np.random.default_rng(seed).integers(0, 128, n).astype(np.int64)
        np.testing.assert_array_equal(staged.generate(prompt, max_new_tokens=12),
                                      direct.generate(prompt, max_new_tokens=12))
    assert_never_mapped(staged.exe._runtime.dev)
