"""Host-side cost of a cuda call without a GPU: a tiny Llama's decode step against the fake
driver (test/Inputs/fake_libcuda.c built as libcuda.so.1; kernels are not executed, so this
is the host code, the runtime and the driver calls only).

    python bench/bench_cuda_host.py [steps]      # prints one JSON line: ms per decode step

Run it in two trees (PYTHONPATH) alternately to compare runtimes (bench/README.md).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
#: BENCH_FAKE_SRC: another tree's fake driver (an older runtime needs the fake it was written for)
FAKE = os.environ.get("BENCH_FAKE_SRC") or os.path.join(HERE, "..", "test", "Inputs", "fake_libcuda.c")


def main() -> int:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    if os.environ.get("BENCH_FAKE_LIB") is None:     # build the fake and rerun with it loaded first
        lib = os.path.join(tempfile.mkdtemp(), "libcuda.so.1")
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", lib, "-Wl,-soname,libcuda.so.1", FAKE], check=True)
        env = dict(os.environ, BENCH_FAKE_LIB=lib)
        return subprocess.run([sys.executable, __file__, str(steps)], env=env).returncode
    ctypes.CDLL(os.environ["BENCH_FAKE_LIB"], mode=ctypes.RTLD_GLOBAL)
    import numpy as np
    import torch
    import transformers
    from relax_mlir.llm import CausalLM

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    lm = CausalLM.from_hf(transformers.LlamaForCausalLM(cfg).eval(), max_seq_len=2 * steps + 16, target="cuda")
    lm.prefill(np.arange(1, 6, dtype=np.int64))
    for j in range(steps):               # warm-up: buffers, graphs, JIT
        lm.decode(j % 100)
    lm.reset()
    lm.prefill(np.arange(1, 6, dtype=np.int64))
    t0 = time.perf_counter()
    for j in range(steps):
        lm.decode(j % 100)
    dt = (time.perf_counter() - t0) / steps
    print(json.dumps({"ms_per_step": round(dt * 1e3, 3), "steps": steps, "load": os.getloadavg()[0],
                      "graphs": os.environ.get("RELAX_MLIR_CUDA_GRAPHS", "1")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
