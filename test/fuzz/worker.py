"""A fuzz worker: runs many cases in one process (compiling is the slow part, so one
process per case would waste most of the budget). It reads one JSON case per line on
stdin and writes one JSON result per line on stdout; the runner (runner.py) restarts
it when a case kills it by a signal and re-runs that case alone.

Case kinds: ``program`` (programs.run_program), ``mutation`` (mutate.run_mutation),
``badcall`` (badcalls.run_badcalls). A Python exception escaping a case is a bug of
the case's kind and is reported as its result, with the traceback.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def record(text: str) -> None:
    """Write the input about to run where the runner can read it if this process dies."""
    path = os.environ.get("RELAX_FUZZ_LAST")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def run_case(case: dict) -> dict:
    kind = case["kind"]
    if kind == "program":
        import programs
        return programs.run_program(case["seed"], case.get("sizes", 3))
    if kind == "mutation":
        import mutate
        return mutate.run_mutation(case["seed"], case.get("count", 20))
    if kind == "badcall":
        import badcalls
        return badcalls.run_badcalls(case["seed"], case.get("count", 30))
    if kind == "shape-program":         # test/test_random_programs.py's programs, values checked
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import test_random_programs
        return test_random_programs.run_values(case["seed"], case.get("sizes", 3))
    if kind == "importer":            # random torch modules through the PyTorch importer
        import importer_fuzz
        return importer_fuzz.run_importer(case["seed"], case.get("sizes", 3))
    if kind == "vision":              # random small CNNs through the PyTorch importer vs eager
        import vision_fuzz
        return vision_fuzz.run_vision(case["seed"], case.get("sizes", 4))
    if kind == "llm-config":          # random Llama/Qwen2/Mistral configs through CausalLM.from_hf
        import llm_fuzz
        return llm_fuzz.run_llm(case["seed"], case.get("steps", 4), case.get("max_layers", 64))
    if kind == "vulkan-program":      # programs.py's programs on the vulkan target vs the cpu's
        import programs
        return programs.run_program(case["seed"], case.get("sizes", 3), target="vulkan")
    if kind == "model-file":          # mutated GGUF / safetensors files through the loaders
        import files_fuzz
        return files_fuzz.run_file(case["seed"])
    if kind == "relax-opt":             # one given input (the known-class reproducers)
        import mutate
        record(case["text"])
        try:
            rc, err = mutate.run_one(case["text"], case["pipeline"], False)
        except Exception:
            return {"rc": None, "error": "relax-opt raised:\n" + traceback.format_exc()[-3000:]}
        bad = "internal error" in err or "Traceback" in err
        return {"rc": rc, "error": err[-3000:] if bad else None}
    if kind == "selftest-crash":        # the runner's own test: die by a signal
        import ctypes
        ctypes.string_at(0)
    raise ValueError(f"unknown case kind {kind}")


#: address-space cap per worker: a case that asks for a huge array must meet MemoryError
#: (or whatever the code under test does with a failed allocation), not the machine's OOM killer
MEMORY_LIMIT = int(os.environ.get("RELAX_FUZZ_MEMORY", str(6 << 30)))


def main() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    out = os.fdopen(os.dup(1), "w")
    # whatever a case prints (relax-opt's diagnostics, warnings) must not corrupt the protocol
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    for line in sys.stdin:
        case = json.loads(line)
        try:
            res = run_case(case)
        except Exception:
            res = {"error": "uncaught exception in the case:\n" + traceback.format_exc()}
        out.write(json.dumps(res) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
