# Every target sets itself up: a .venv in the checkout, installed once and again when pyproject.toml changes.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST := $(PY) -m pytest

.PHONY: setup lab test test-fast test-gpu bench bench-gpu gpu-check browser-deps clean

$(STAMP): pyproject.toml extensions/package.json extensions/package-lock.json
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

# the main job: JupyterLab on the notebooks, opened on the tour
lab: setup
	cd notebooks && ../$(VENV)/bin/jupyter lab 01_tour.ipynb

# Debian's chromium for the real-browser tests (never a downloaded browser); skipped when not root
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium missing: browser tests will be skipped"; }

# the whole suite: Python, JavaScript units, the real-browser tests and the notebooks
test: setup browser-deps
	cd extensions && npm test --silent
	$(PYTEST) -q -p no:cacheprovider

test-fast: setup
	$(PYTEST) -q -x -m "not browser and not slow"

# on a machine with an NVIDIA GPU and the [cuda] extra: the op suite on real CuPy, kernels, layers vs PyTorch CUDA
test-gpu: setup
	$(PY) -m pip install -q -e ".[cuda]" || true
	WORKBENCH_TEST_GPU=1 $(PYTEST) -q -m gpu

bench: setup
	$(PY) benchmarks/run_all.py

bench-gpu: setup
	$(PY) benchmarks/run_all.py --gpu

# both GPU checks in one go on a GPU image without network (CuPy, CUDA PyTorch, pytest preinstalled)
gpu-check:
	bash .ci/gpu-check

clean:
	rm -rf $(VENV) extensions/node_modules workbench/static workbench/labextension
