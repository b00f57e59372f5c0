"""Contracts of the package's structure (docs/architecture.md):

* only :mod:`relax_mlir.config` reads or writes the environment;
* no import cycle between modules, function-local imports counted;
* the layers: a module imports only modules of its own layer or of the layers below it
  (:data:`LAYERS`: runtime -> target -> shapes -> ops -> dialects -> transforms ->
  backends -> driver -> frontend -> tools), function-local imports counted;
* the loader side (``relax_mlir.load`` and a loaded Executable) never imports the compiler.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "relax_mlir"


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


MODULES = _modules()
PACKAGES = {m for m, p in MODULES.items() if p.name == "__init__.py"}


def _imports(name: str, path: Path) -> set[str]:
    """Modules of the package that ``name`` imports anywhere (functions included)."""
    is_pkg = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)] + ([node.module] if node.module else [])
                base = ".".join(base)
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != name and t not in PACKAGES}
    return found


def _cycles() -> list[list[str]]:
    graph = {m: _imports(m, p) for m, p in MODULES.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in graph:
        if m not in index:
            visit(m)
    return out


#: The package's layers, lowest first (docs/architecture.md, "Layering"); a module belongs to
#: the layer of its longest matching prefix. ``tuning.database`` sits with the passes that
#: read it, ``tuning.space`` (the knobs of the backends' schedule rules) with the backends;
#: the tuner itself drives the compiler.
LAYERS = [
    ("errors", "config"),
    ("runtime",),
    ("target",),
    ("shapes",),
    ("ops",),
    ("dialects",),
    ("transforms", "tuning.database"),
    ("backends", "pipelines", "tuning.space"),
    ("compiler", "compile_cache", "tuning"),
    ("frontend",),
    ("llm", "tools", ""),
]


def _layer(module: str) -> int:
    rest = module[len("relax_mlir."):] if module.startswith("relax_mlir.") else ""
    best = None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (n == rest == "") or (n and (rest == n or rest.startswith(n + "."))):
                if best is None or len(n) > best[1]:
                    best = (i, len(n))
    assert best is not None, f"{module}: in no layer of LAYERS"
    return best[0]


def test_layers():
    upward = sorted((m, d) for m, p in MODULES.items() for d in _imports(m, p) if _layer(d) > _layer(m))
    assert upward == []


def test_layers_are_checked():
    """The check sees an upward import (a dialect module importing a pass)."""
    assert _layer("relax_mlir.transforms.pipeline") > _layer("relax_mlir.dialects.source")
    assert _layer("relax_mlir.backends.cpu.schedules.matmul") > _layer("relax_mlir.transforms.graph")
    assert _layer("relax_mlir") == len(LAYERS) - 1 and _layer("relax_mlir.runtime.aot") == 1


def test_only_config_touches_the_environment():
    offenders = defaultdict(list)
    for name, path in MODULES.items():
        if name == "relax_mlir.config":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                    and node.attr in ("environ", "getenv", "putenv", "unsetenv", "environb"):
                offenders[name].append(node.lineno)
    assert dict(offenders) == {}


def test_no_import_cycle():
    assert _cycles() == []


def test_loading_imports_no_compiler():
    """relax_mlir.load and calling a loaded library need neither the MLIR bindings nor passes."""
    code = ("import sys, relax_mlir, relax_mlir.runtime.aot; "
            "bad = sorted(m for m in sys.modules if m.startswith(('mlir', 'relax_mlir.transforms', "
            "'relax_mlir.compiler', 'relax_mlir.dialects'))); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
