# Set-up on a fresh machine: each target builds/refreshes .venv itself, then runs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
IB := $(VENV)/bin/interbias
STAMP := $(VENV)/.installed
REQS := pyproject.toml requirements/base.txt requirements/dev.txt requirements/nodeps.txt requirements/install.py
export INTERBIAS_CACHE ?= $(CURDIR)/.cache/interbias
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv docs-venv docs test test-slow demo demo-figures bench gpu-check lint format clean

venv: $(STAMP)

$(STAMP): $(REQS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# uv when it can (system uv, else uv from PyPI), pip otherwise; the same pins and package
	# sources either way. torch: the 2.13.0+cpu wheel without an NVIDIA GPU, PyPI's CUDA build with
	# one (override: TORCH_BUILD=cpu|cuda, INSTALLER=uv|pip). See requirements/install.py.
	$(PY) requirements/install.py
	touch $@

DOCS_STAMP := $(VENV)/.docs-installed
export NO_MKDOCS_2_WARNING := 1

docs-venv: $(DOCS_STAMP)

$(DOCS_STAMP): $(STAMP) requirements/docs.txt
	# MkDocs + Material (requirements/docs.txt), with the same installer and package sources
	$(PY) requirements/install.py --extra requirements/docs.txt
	touch $@

test: venv
	# the real-audio tests' Debian packages (recorded prompts, classic synthesisers, ~1 min once):
	# installed only as root on Debian with apt-get, only those missing; elsewhere the tests skip
	bash requirements/debian-audio.sh
	# one worker process per core, at most 4; a test file stays on one worker (its fixtures once)
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile

test-slow: venv docs-venv
	# the report is also rendered in headless Chromium (Debian's package) and checked not blank
	command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	# the --latex tables are compiled with pdflatex (Debian's texlive packages)
	command -v pdflatex >/dev/null || (apt-get update -q && apt-get install -y -q --no-install-recommends texlive-latex-base texlive-latex-recommended)
	$(PY) -m pytest -q -m slow
	# the documentation site: a broken link or a page missing from the nav fails
	$(VENV)/bin/mkdocs build --strict --site-dir "$$(mktemp -d)"

docs: docs-venv
	# builds offline into site/ (open site/index.html)
	$(VENV)/bin/mkdocs build

demo: venv
	$(IB) run E16 --corpus synthetic --encoders CAM++,GE2E,mfcc-stats | tee .demo.log
	$(IB) analyze "$$(sed -n 's/^results: //p' .demo.log)"

# The demo figures README.md and docs/guide quote: make demo-figures RUN=results/<run_id>
demo-figures: venv
	$(PY) benchmarks/demo_figures.py $(RUN)

bench: venv
	$(PY) benchmarks/run_all.py --write benchmarks/figures.md $(BENCH_ARGS)

gpu-check: venv
	PYTHON=$(PY) benchmarks/gpu_check.sh

lint: venv
	$(VENV)/bin/ruff check interbias tests benchmarks
	$(VENV)/bin/ruff format --check interbias tests benchmarks

format: venv
	$(VENV)/bin/ruff format interbias tests benchmarks
	$(VENV)/bin/ruff check --fix interbias tests benchmarks

clean:
	rm -rf $(VENV) .cache .pytest_cache .demo.log site
