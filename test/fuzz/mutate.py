"""Random byte and token mutations of valid relax-opt inputs (the lit tests' .mlir files
are the corpus), fed to relax-opt in-process: a diagnostic and exit status 1 are fine;
an escaping Python exception (relax-opt runs with RELAX_DEBUG=1 here, so it is not
turned into a one-line message), an "internal error in pass" diagnostic, or a signal
(the runner sees the worker die) is a bug."""

from __future__ import annotations

import contextlib
import glob
import io
import os
import random
import re
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

PIPELINES = [
    "builtin.module(relax-infer-shapes)",
    "builtin.module(relax-verify)",
    "builtin.module(relax-infer-shapes, relax-legalize)",
    "builtin.module(relax-infer-shapes, relax-legalize, relax-annotate-kernel-kinds, relax-fuse-ops, relax-fuse-kernels)",
    "builtin.module(relax-infer-shapes, relax-legalize, relax-plan-memory, relax-lower-host)",
    "builtin.module(cpu)",
]
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%@#^!]?[A-Za-z_][\w.$-]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S')
SWAPS = ["memref", "vector", "tensor", "0", "-1", "1", "2", "9223372036854775807", "-9223372036854775808", "99999999999999999999", "?",
         "f32", "f16", "i1", "i8", "ui8", "ui32", "i64", "index", "bf16", "f64", "none", '"n"', '"n - m"',
         '"n // m"', '"n % m"', '"2*n"', '"?"', "tensor<?xf32>", "memref<?xf32>", "<", ">", "[", "]", "{", "}",
         "(", ")", ",", ":", "=", "->", "%arg0", "%0", "@main", "relax.function", "relax.kernel",
         "#relax.shape<[\"n\"]>", "\"relax.add\"", "\"relax.take\"", "\"relax.call_tir\"", "axis = 5 : i64",
         "axes = array<i64: 0, 0>", "keepdims = true"]


def corpus() -> list[str]:
    files = sorted(glob.glob(os.path.join(REPO, "test", "**", "*.mlir"), recursive=True))
    out = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        out += [c for c in re.split(r"^// -----$", text, flags=re.M) if "func.func" in c]
    return out


_CORPUS: list[str] = []


def mutate(r: random.Random, text: str, tokens_pool: list[str]) -> str:
    for _ in range(r.choice([1, 1, 1, 2, 3, 4])):
        kind = r.random()
        if kind < 0.45:                         # token level
            toks = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
            if not toks:
                continue
            s, e = r.choice(toks)
            how = r.random()
            if how < 0.4:
                rep = r.choice(SWAPS if r.random() < 0.6 else tokens_pool)
            elif how < 0.6:
                rep = ""
            elif how < 0.8:
                rep = text[s:e] * 2 if r.random() < 0.5 else text[s:e] + " " + text[s:e]
            else:
                s2, e2 = r.choice(toks)
                rep = text[s2:e2]
            text = text[:s] + rep + text[e:]
        elif kind < 0.75:                       # character level (stays valid UTF-8)
            if not text:
                continue
            i = r.randrange(len(text))
            how = r.random()
            if how < 0.3:
                text = text[:i] + text[i + 1:]
            elif how < 0.6:
                text = text[:i] + r.choice('<>{}()[]"%:,=?x0123456789-#@^ \n') + text[i:]
            else:
                text = text[:i] + chr(r.randrange(32, 127)) + text[i + 1:]
        elif kind < 0.9:                        # line level: delete, duplicate or swap lines
            lines = text.split("\n")
            if len(lines) < 2:
                continue
            i, j = r.randrange(len(lines)), r.randrange(len(lines))
            how = r.random()
            if how < 0.4:
                del lines[i]
            elif how < 0.7:
                lines.insert(i, lines[j])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        else:                                   # splice two corpus inputs
            other = r.choice(_CORPUS)
            i, j = r.randrange(len(text) + 1), r.randrange(len(other) + 1)
            text = text[:i] + other[j:]
    return text


def run_one(text: str, pipeline: str, verify: bool) -> tuple[int, str]:
    """relax-opt on ``text`` in this process: (exit status, stderr text)."""
    from relax_mlir.tools import relax_opt
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    err = io.StringIO()
    try:
        argv = [path, "-o", os.devnull, f"--pass-pipeline={pipeline}"]
        if verify:
            argv.append("--verify-diagnostics")
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = relax_opt.main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
    finally:
        os.unlink(path)
    return rc, err.getvalue()


def mutants(seed: int, count: int = 20):
    """The ``count`` mutants of seed ``seed`` in order: ``(i, pipeline, verify, text)``
    (one random stream per seed, so mutant i is the same whatever ``count`` is)."""
    if not _CORPUS:
        _CORPUS.extend(corpus())
    r = random.Random(seed)
    pool = [m.group(0) for c in r.sample(_CORPUS, min(5, len(_CORPUS))) for m in TOKEN.finditer(c)]
    for i in range(count):
        src = r.choice(_CORPUS)
        text = mutate(r, src, pool)
        pipeline = r.choice(PIPELINES)
        verify = "expected-" in text and r.random() < 0.5
        yield i, pipeline, verify, text


def command(pipeline: str, verify: bool, path: str = "-") -> str:
    return f"relax-opt {path} --pass-pipeline='{pipeline}'{' --verify-diagnostics' if verify else ''}"


def run_mutation(seed: int, count: int = 20) -> dict:
    """``count`` mutants of seed ``seed``; the first bug found is the result's error."""
    done = 0
    for i, pipeline, verify, text in mutants(seed, count):
        from worker import record
        record(f"// {command(pipeline, verify)}\n{text}")
        try:
            rc, err = run_one(text, pipeline, verify)
        except Exception:
            return {"mutations": done, "error": f"relax-opt raised (mutant {i}, {pipeline}):\n"
                    f"{traceback.format_exc()[-3000:]}\n--- input ---\n{text}"}
        done += 1
        if "internal error" in err or "Traceback" in err:
            return {"mutations": done, "error": f"relax-opt internal error (mutant {i}, {pipeline}, rc {rc}):\n"
                    f"{err[-3000:]}\n--- input ---\n{text}"}
    return {"mutations": done, "error": None}


def main(argv=None) -> int:
    """``python test/fuzz/mutate.py SEED MUTANT [-o FILE]``: write mutant MUTANT of seed SEED
    (the numbers a failure prints) to FILE (default ``mutant-SEED-MUTANT.mlir``) and print
    the relax-opt command that runs it."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("seed", type=int)
    ap.add_argument("mutant", type=int)
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    *_, (i, pipeline, verify, text) = mutants(a.seed, a.mutant + 1)
    path = a.output or f"mutant-{a.seed}-{i}.mlir"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(command(pipeline, verify, path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
