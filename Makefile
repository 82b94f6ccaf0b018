# Every target sets itself up: a .venv in the checkout, installed once and again when pyproject.toml changes.
# `make lab` installs only what the notebooks need (the [lab] extra); the test targets install [dev].
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
LAB_STAMP := $(VENV)/.installed-lab
PYTEST    := $(PY) -m pytest
DEPS      := pyproject.toml extensions/package.json extensions/package-lock.json
EXT_STAMP := $(VENV)/.built-extension
EXT_SRC   := $(wildcard extensions/src/* extensions/src/*/*) extensions/build.mjs

.PHONY: setup pyi lab test test-fast test-gpu bench bench-gpu gpu-check browser-deps clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# an install from a clone compiles the JupyterLab extension in extensions/ (the wheel carries it built)
NEED_NPM := command -v npm >/dev/null 2>&1 || { echo "make: installing from a clone builds the JupyterLab \
extension in extensions/ and needs Node 20 with npm on PATH; install Node, or pip install a wheel built with \
make wheel, which needs no Node" >&2; exit 1; }

$(LAB_STAMP): $(DEPS) | $(PY)
	@$(NEED_NPM)
	@echo "installing workbench[lab] into $(VENV) (the first time a few minutes: it builds the JupyterLab extension)"
	$(PY) -m pip install -q -e ".[lab]"
	touch $(LAB_STAMP) $(EXT_STAMP)

# [dev] holds [lab], so a test set-up also serves `make lab`
$(STAMP): $(DEPS) | $(PY)
	@$(NEED_NPM)
	@echo "installing workbench[dev] into $(VENV) (the first time several minutes: PyTorch, JupyterLab, the extension)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP) $(LAB_STAMP) $(EXT_STAMP)

# An editable install copies the built extension into the venv once; after a change under extensions/src
# the extension is rebuilt and that copy replaced, so `make lab` and the browser tests never run stale JS.
EXT_SHARE := $(VENV)/share/jupyter/labextensions/workbench
$(EXT_STAMP): $(EXT_SRC)
	@echo "extensions/ changed: rebuilding the JupyterLab extension"
	cd extensions && PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npm run build --silent
	rm -rf $(EXT_SHARE) && mkdir -p $(dir $(EXT_SHARE))
	cp -r workbench/labextension $(EXT_SHARE) && cp extensions/install.json $(EXT_SHARE)/
	touch $(EXT_STAMP)

# the compiled core (workbench/_accel.py): Cython builds of the recorder, the engine and the Tensor core into
# ~/.cache/workbench/accel, redone for each module whose source changed since (quick when nothing did);
# without a C compiler workbench runs as Python
ACCEL := $(PY) -m workbench._accel_build

setup: $(STAMP) $(EXT_STAMP)
	@$(ACCEL)

# workbench/tensor.pyi (Tensor's methods for editors and type checkers), regenerated from the registry
pyi: setup
	$(PY) -m workbench.testing.tensor_stub

# The main job: JupyterLab on the notebooks, opened on the tour (the printed URL is the tour's).
#   make lab PORT=8899   or   JUPYTER_PORT=8899 make lab     a port of your own (Jupyter reads JUPYTER_PORT)
#   make lab NO_BROWSER=1                                   print the URL, open no browser (BROWSER=... works too)
# As root (containers, cloud notebooks, CI images) Jupyter refuses to start without --allow-root; it is
# passed only then.
LAB_ARGS := --LabApp.default_url=/lab/tree/01_tour.ipynb \
	$(if $(PORT),--ServerApp.port=$(PORT)) $(if $(NO_BROWSER),--no-browser) \
	$(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(LAB_STAMP) $(EXT_STAMP)
	@$(ACCEL)
	cd notebooks && exec ../$(VENV)/bin/jupyter lab $(LAB_ARGS)

# Debian's chromium for the real-browser tests (never a downloaded browser); skipped when not root
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium missing: browser tests will be skipped"; }

# the whole suite: Python, JavaScript units, the real-browser tests and the notebooks
test: setup browser-deps
	cd extensions && npm test --silent
	$(PYTEST) -q -p no:cacheprovider
	@echo "the autograd core again as plain Python (WORKBENCH_ACCEL=0: what runs where nothing is compiled)"
	WORKBENCH_ACCEL=0 $(PYTEST) -q -p no:cacheprovider tests/autograd tests/test_tensor.py tests/test_accel.py

test-fast: setup
	$(PYTEST) -q -x -m "not browser and not slow"

# on a machine with an NVIDIA GPU and the [cuda] extra: the op suite on real CuPy, kernels, layers vs PyTorch CUDA
test-gpu: setup
	$(PY) -m pip install -q -e ".[cuda]" || true
	WORKBENCH_TEST_GPU=1 $(PYTEST) -q -m gpu

# make bench BENCH_ARGS=--smoke: every script once on tiny sizes (the README test runs it so)
bench: setup
	$(PY) benchmarks/run_all.py $(BENCH_ARGS)

bench-gpu: setup
	$(PY) benchmarks/run_all.py --gpu

# both GPU checks in one go on a GPU image without network (CuPy, CUDA PyTorch, pytest preinstalled)
gpu-check:
	bash .ci/gpu-check

# the documentation site into docs/_build/html, offline, warnings as errors (docs/building.md)
.PHONY: docs
docs: setup
	@echo "building docs/_build/html (the notebooks run unless make test stored their runs: a few minutes)"
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# a wheel (into dist/, or WHEEL_DIR) carrying the built JupyterLab extension and widget bundle: it installs
# with pip where there is no Node (tests/browser/test_wheel_install.py installs it into a fresh virtualenv)
WHEEL_DIR ?= dist
.PHONY: wheel
wheel: setup
	rm -f $(WHEEL_DIR)/workbench-*.whl
	$(PY) -m pip wheel --no-deps -q -w $(WHEEL_DIR) .
	@ls $(WHEEL_DIR)/workbench-*.whl

clean:
	rm -rf $(VENV) extensions/node_modules workbench/static workbench/labextension
