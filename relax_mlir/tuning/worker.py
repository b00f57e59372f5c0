"""Measure one kernel under one schedule config, in a process of its own.

MLIR 22 aborts on some transform combinations (assertions, see ../shared/mlir-notes.md)
and hangs on others; the tuner must survive both. :class:`Worker` runs this module as a
subprocess that takes JSON requests on stdin, one per line, and answers each on stdout
(a line starting with :data:`MARK`). The parent restarts it when it dies or overruns
its time, and records that candidate as failed.

A request names a kernel (a module holding only the kernel ``func.func``, as
relax-apply-schedules sees it), its arguments (symbolic shapes and dtypes, or index
scalars), the symbol bindings to measure at, and the config (None: the default
schedule; ``"loops"``: no schedule). The kernel is lowered alone with the cpu
pipeline's codegen stage and JIT-compiled; for each binding it runs on seeded random
inputs, its outputs are compared with the unscheduled kernel's (computed once per
kernel and binding, cached), then timed (best of several calls).

A request ``{"op": "library", ...}`` times a library call instead: the runtime library's
``_mlir_ciface_<callee>`` (the entry relax-dispatch-library's ``relax.call_dps_library``
reaches) on the call's arguments, the output last, at the same bindings and on the same
seeded inputs, timed the same way (no check: the library is the reference of its own).
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import subprocess
import sys
import time
from typing import Optional

import ml_dtypes
import numpy as np
from .. import config as relax_config

MARK = "@@relax-tune "

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i64": np.int64,
          "i32": np.int32, "i8": np.int8, "i1": np.bool_, "index": np.int64}


# -- the measuring side (in the subprocess) ----------------------------------------------

def _shape(dims: list, binding: dict) -> tuple[int, ...]:
    from ..shapes import parse_dim
    return tuple(int(d) if isinstance(d, int) else parse_dim(d).evaluate(binding) for d in dims)


def _inputs(args: list, binding: dict, seed: int) -> list:
    """Seeded random arrays (and index scalars) for one binding: the same for every config."""
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if a["kind"] == "index":
            out.append(_shape([a["expr"]], binding)[0])
            continue
        shape, dt = _shape(a["shape"], binding), DTYPES[a["dtype"]]
        if np.issubdtype(dt, np.floating) or dt is ml_dtypes.bfloat16:
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            out.append(rng.integers(1, 8, shape).astype(dt))
    return out


class _Compiled:
    """A kernel lowered alone and JIT-compiled; called through its C interface."""

    def __init__(self, text: str, name: str, config, n_args: int):
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        import relax_mlir
        from ..pipelines.cpu import _llvm_stage
        from ..runtime.executable import runtime_libraries
        from ..target import host_simd
        from ..backends.cpu.apply_schedules import num_threads, openmp_libraries, schedule_kernel, scheduled_stage
        from ..transforms.pipeline import run_pipeline

        self.ctx = relax_mlir.make_context()
        with self.ctx, ir.Location.unknown():
            m = ir.Module.parse(text)
            fn = _find(m, name)
            if config == "loops":
                stage = _llvm_stage()
            else:
                applied = schedule_kernel(fn, host_simd(), None if config is None else dict(config))
                if applied is None:
                    raise RuntimeError("the schedule did not apply")
                stage = scheduled_stage(_llvm_stage(), num_threads())[1:]
            # Bufferized as a private function (its results equal to output arguments are
            # dropped), then made public with a C interface to be called from here.
            i = stage.index("drop-equivalent-buffer-results") + 1
            run_pipeline(m, "builtin.module(" + ", ".join(stage[:i]) + ")")
            fn = _find(m, name)
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            if len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results):
                raise RuntimeError("a kernel result is not one of its output arguments")
            run_pipeline(m, "builtin.module(" + ", ".join(stage[i:]) + ")")
            self.module = m
            self.engine = ExecutionEngine(m, opt_level=3, shared_libs=runtime_libraries()
                                          + openmp_libraries({"schedules": config != "loops"}))
            self.engine.initialize()
        addr = self.engine.raw_lookup("ciface_" + name)
        if not addr:
            raise RuntimeError(f"no _mlir_ciface_{name}")
        self.fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n_args)(addr)

    def bind(self, arrays: list):
        """A zero-argument callable running the kernel on ``arrays`` (kept alive by it)."""
        from mlir.runtime import get_ranked_memref_descriptor

        keep, ptrs = [], []
        for a in arrays:
            if isinstance(a, np.ndarray):
                d = get_ranked_memref_descriptor(a)
                keep.append((a, d))
                ptrs.append(ctypes.c_void_p(ctypes.addressof(d)))
            else:
                ptrs.append(ctypes.c_void_p(int(a)))
        fn = self.fn

        def call():
            fn(*ptrs)

        call.keep = keep
        return call


def _find(m, name: str):
    from mlir import ir
    for op in m.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise RuntimeError(f"no function @{name}")


def _outputs(req: dict, arrays: list) -> list:
    n_out = req["n_outputs"]
    return [a for a in arrays[len(arrays) - n_out - req.get("n_index", 0):len(arrays) - req.get("n_index", 0)]]


def _close(out: np.ndarray, ref: np.ndarray) -> bool:
    if out.shape != ref.shape:
        return False
    if np.issubdtype(ref.dtype, np.floating):
        scale = max(1.0, float(np.nanmax(np.abs(ref))) if ref.size else 1.0)
        return bool(np.allclose(out, ref, rtol=1e-3, atol=1e-4 * scale, equal_nan=True))
    return bool(np.array_equal(out, ref))


_REFERENCES: dict = {}


def measure(req: dict) -> dict:
    """Compile the kernel with ``req['config']``, check it against the unscheduled kernel
    at every binding, time it; ``{"ok": True, "times": [...], "compile_s": t}`` or
    ``{"ok": False, "error": ...}``."""
    t0 = time.perf_counter()
    n_args = len(req["args"])
    try:
        k = _Compiled(req["kernel"], req["name"], req["config"], n_args)
    except Exception as e:  # noqa: BLE001 - a candidate that does not compile is a failed trial
        return {"ok": False, "error": f"compile: {type(e).__name__}: {str(e)[:500]}"}
    compile_s = time.perf_counter() - t0
    times = []
    for bi, binding in enumerate(req["bindings"]):
        key = (req["key"], bi)
        seed = 1234 + bi
        if key not in _REFERENCES and req["config"] != "loops":
            ref = _Compiled(req["kernel"], req["name"], "loops", n_args)
            arrays = _inputs(req["args"], binding, seed)
            ref.bind(arrays)()
            _REFERENCES[key] = [o.copy() for o in _outputs(req, arrays)]
        arrays = _inputs(req["args"], binding, seed)
        call = k.bind(arrays)
        call()
        if req["config"] != "loops":
            for o, r in zip(_outputs(req, arrays), _REFERENCES[key]):
                if not _close(o, r):
                    err = (f"max abs error {float(np.nanmax(np.abs(o.astype(np.float64) - r))):.3g}"
                           if o.shape == r.shape else f"shape {o.shape}, expected {r.shape}")
                    return {"ok": False, "error": f"wrong result at {binding} ({err})"}
        times.append(_time(call, req.get("min_time", 0.05), req["cutoff"][bi] if req.get("cutoff") else None))
    return {"ok": True, "times": times, "compile_s": compile_s}


def _time(call, min_time: float, cutoff: Optional[float] = None) -> float:
    """Best time of ``call()`` over at least 3 calls and ``min_time`` seconds (200 calls at
    most); one call when it is beyond ``cutoff``."""
    best, spent, n = float("inf"), 0.0, 0
    cutoff = float("inf") if cutoff is None else cutoff
    while n < 3 or (spent < min_time and n < 200):
        t = time.perf_counter()
        call()
        dt = time.perf_counter() - t
        best, spent, n = min(best, dt), spent + dt, n + 1
        if best > cutoff:
            break  # far slower than the default: one call tells enough
    return best


_LIBRARIES: dict = {}


def measure_library(req: dict) -> dict:
    """Time the library entry ``_mlir_ciface_<callee>`` (see the module docstring):
    ``{"ok": True, "times": [...]}`` or ``{"ok": False, "error": ...}``."""
    from mlir.runtime import get_ranked_memref_descriptor

    from ..runtime.libraries import library_paths

    try:
        if req["library"] not in _LIBRARIES:
            _LIBRARIES[req["library"]] = [ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
                                          for p in library_paths([req["library"]])]
        libs = _LIBRARIES[req["library"]]
        sym = "_mlir_ciface_" + req["callee"]
        fn = next((getattr(lib, sym) for lib in libs if hasattr(lib, sym)), None)
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": f"library: {type(e).__name__}: {str(e)[:500]}"}
    if fn is None:
        return {"ok": False, "error": f"no {sym} in runtime library '{req['library']}'"}
    fn.restype = None
    times = []
    for bi, binding in enumerate(req["bindings"]):
        arrays = _inputs(req["args"], binding, 1234 + bi)
        descs = [get_ranked_memref_descriptor(a) for a in arrays]
        ptrs = [ctypes.c_void_p(ctypes.addressof(d)) for d in descs]

        def call():
            fn(*ptrs)

        times.append(_time(call, req.get("min_time", 0.05)))
    return {"ok": True, "times": times}


def main() -> int:
    # Answers go to a private copy of stdout; whatever else prints goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "crash":  # for tests: a candidate that aborts the process
            os.abort()
        try:
            res = measure_library(req) if req.get("op") == "library" else measure(req)
        except Exception as e:  # noqa: BLE001
            res = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:500]}"}
        out.write(MARK + json.dumps(res) + "\n")
        out.flush()
    return 0


# -- the parent side ------------------------------------------------------------------------

class Worker:
    """A measuring subprocess, restarted after a crash or a timeout. ``blas_threads``: the
    ``RELAX_BLAS_NUM_THREADS`` of its library calls, unless the environment sets one (the
    tuner passes its thread count: BLAS and generated code compared on as many threads)."""

    def __init__(self, timeout_s: float = 120.0, blas_threads: Optional[int] = None):
        self.timeout_s = timeout_s
        self.blas_threads = blas_threads
        self.proc: Optional[subprocess.Popen] = None
        self.restarts = 0

    def _start(self) -> None:
        extra = {} if self.blas_threads is None else {"RELAX_BLAS_NUM_THREADS": str(self.blas_threads)}
        env = relax_config.subprocess_environment(**extra)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "relax_mlir.tuning.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                     bufsize=1)

    def request(self, req: dict, timeout_s: Optional[float] = None) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._lost("the measuring process died")
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        fd = self.proc.stdout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self._lost(f"timed out after {timeout_s or self.timeout_s:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            line = fd.readline()
            if not line:
                code = self.proc.wait()
                return self._lost(f"the measuring process died (exit status {code})")
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])

    def _lost(self, why: str) -> dict:
        self.close()
        self.restarts += 1
        return {"ok": False, "error": why, "crashed": True}

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                if f:
                    f.close()
            self.proc = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    sys.exit(main())
