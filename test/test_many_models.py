"""A long-lived process loads many compiled models (the llm-config fuzz worker, a server that
compiles model after model): every model's library must load, however many came before.

Every compiled model's library holds the relax_blas shim and the quantized-weight kernels
(quant_kernels.c). Their per-thread scratch was initial-exec TLS, which marks the library
STATIC_TLS: each dlopen of such a library takes part of glibc's small static TLS surplus,
and after ~100 models in the fuzz worker (~210 in a bare Python) dlopen failed with "cannot
allocate memory in static TLS block" (the worker aborted at llm-config seed 1000100 of the
long run). The scratch is a global slot now; these tests keep it that way.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

import relax_mlir
from relax_mlir.frontend.models import MLPConfig, mlp_module

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="glibc's dynamic loader")

MLP = MLPConfig(16, 32, 8)


@pytest.fixture(scope="module")
def mlp_so(tmp_path_factory):
    ctx = relax_mlir.make_context()
    exe = relax_mlir.compile(str(mlp_module(ctx, MLP)))
    return exe.export(str(tmp_path_factory.mktemp("many") / "mlp.so"))


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")
def test_a_model_library_uses_no_static_tls(mlp_so):
    """No TLS segment and no STATIC_TLS flag in an exported model (with the relax_blas shim and
    the quant kernels linked in): nothing of it is charged to the static TLS surplus."""
    dyn = subprocess.run(["readelf", "-dW", mlp_so], capture_output=True, text=True, check=True).stdout
    assert "relax_blas" not in dyn and "NEEDED" in dyn
    assert "STATIC_TLS" not in dyn
    segs = subprocess.run(["readelf", "-lW", mlp_so], capture_output=True, text=True, check=True).stdout
    assert not [ln for ln in segs.splitlines() if ln.split()[:1] == ["TLS"]]


LOAD_MANY = """
import ctypes, os, shutil, sys
import numpy as np
import relax_mlir
from relax_mlir.frontend.models import MLPConfig, mlp_params, mlp_reference
path, n = sys.argv[1], int(sys.argv[2])
exe = relax_mlir.load(path)             # its BLAS and OpenMP runtime, opened first
cfg = MLPConfig(16, 32, 8)
params = mlp_params(cfg, np.random.default_rng(1))
x = np.random.default_rng(0).standard_normal((3, cfg.d_in)).astype(np.float32)
assert np.allclose(exe["main"](x, *params), mlp_reference(x, *params), rtol=1e-4, atol=1e-4)
d = os.path.dirname(path)
for i in range(n):                      # n distinct files: the loader maps each one anew
    p = os.path.join(d, f"copy{i}.so")
    shutil.copyfile(path, p)
    ctypes.CDLL(p, mode=os.RTLD_LOCAL)
    os.unlink(p)
print("loaded", n)
"""


def test_hundreds_of_model_libraries_load_in_one_process(mlp_so):
    """One process opens 400 model libraries (distinct files, as 400 compiled models are):
    each loads (the old STATIC_TLS library failed after ~210 in a bare Python)."""
    r = subprocess.run([sys.executable, "-c", LOAD_MANY, mlp_so, "400"], capture_output=True, text=True,
                       timeout=600)
    assert (r.returncode, r.stdout.split()) == (0, ["loaded", "400"]), r.stderr[-2000:]
