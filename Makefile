# trainbook: every set-up step lives here. `make demo` and `make test` work on a fresh clone with only Python and pip.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# The dev env pins a tested torch (a local CPU build on these machines); setup.py keeps a range for users.
TORCH := torch==2.13.0
STAMP := $(VENV)/.installed
# scripts/install.py installs with uv (configured from pip's settings; pip when uv cannot): 65-80 s against pip's
# 150-230 s. It byte-compiles what it installs: where PYTHONDONTWRITEBYTECODE is set, as on these machines, every
# import would otherwise compile its module again (the notebooks ran 500 s instead of 285)

# pytest in two workers where there are two cores (tests/conftest.py says which tests share a worker, and why)
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(2 if len(os.sched_getaffinity(0)) > 1 else 0)")

.PHONY: install demo test lab docs bench clean

$(STAMP): setup.py settings.ini scripts/install.py
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing trainbook and its dev extra into $(VENV) ... [$$(date +%T)]"
	@$(PY) scripts/install.py $(TORCH) -e '.[dev]'
	@# jsonschema imports rfc3987-syntax when it is there (nbformat and jupyter-events ask for it), and its import
	@# builds ~35 Earley parsers: 2.4 s of CPU in every process that imports ray, nbformat or jupyter_server (a Ray
	@# launch starts eight: 44 s a launch on 2 cores, 17 s without). No schema of these tools uses its iri formats
	@$(PY) -m pip uninstall --yes --quiet rfc3987-syntax
	@touch $(STAMP)

install: $(STAMP)

## make demo: the main job end to end on scikit-learn's bundled data
demo: $(STAMP)
	$(PY) scripts/demo.py

## make test: every check — notebooks and library in sync, notebooks clean, every notebook runs, pytest
test:
	@$(PYTHON) scripts/ensure_browser.py --start  # chromium's download overlaps the set-up (stdlib only: no venv yet)
	@$(MAKE) --no-print-directory install
	@echo "== nbdev_export: are the notebooks and the library in sync? [$$(date +%T)]"
	@$(PY) scripts/check_sync.py export
	@echo "== nbdev_clean: are the notebooks free of noise? [$$(date +%T)]"
	@$(PY) scripts/check_sync.py clean
	@$(PY) scripts/readme.py --check
	@echo "== every notebook runs (once, a kernel each, cells nbdev_test skips left out: the docs are built from these runs) [$$(date +%T)]"
	@$(PY) scripts/build_docs.py --execute-only
	@echo "== pytest (browser tests included: chromium is installed from Debian when missing) [$$(date +%T)]"
	@$(PY) scripts/ensure_browser.py --wait
	@$(PY) -m pytest tests -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=15  # the slowest, for CI's log
	@echo "== done [$$(date +%T)]"

## make lab: JupyterLab on nbs/ with `%load_ext trainbook` done in every kernel
lab: $(STAMP)
	@mkdir -p $(VENV)/ipython/profile_default
	@echo 'c.InteractiveShellApp.extensions = ["trainbook"]' > $(VENV)/ipython/profile_default/ipython_kernel_config.py
	IPYTHONDIR=$(VENV)/ipython $(BIN)/jupyter lab --notebook-dir=nbs $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

## make docs: the docs site in _docs/ (quarto through nbdev_docs when installed, else Material for MkDocs, offline)
docs: $(STAMP)
	$(PY) scripts/build_docs.py

## make bench: the side-by-side speed measurements (results are recorded in bench/RESULTS.md)
bench: $(STAMP)
	$(PY) bench/import_time.py
	$(PY) bench/overhead.py 2>/dev/null
	$(PY) bench/xgboost_overhead.py

clean:
	rm -rf _docs _proc build/docs build/jax-cache demo_output test_artifacts .pytest_cache
