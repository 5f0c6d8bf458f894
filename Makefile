# Set-up and everyday commands. Each target creates .venv itself when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP_BASE := $(VENV)/.installed-base
STAMP_TEST := $(VENV)/.installed-test
STAMP_BENCH := $(VENV)/.installed-bench
STAMP_DOCS := $(VENV)/.installed-docs
export JAX_PLATFORMS ?= cpu
# Installing compiles the native kernel (setup.py), so a changed kernel reinstalls.
INSTALL_DEPS := pyproject.toml setup.py jaxboost/native/hist.cc jaxboost/native/_build.py

.PHONY: demo test test-full-opt test-pythons bench gpu lint typecheck docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Installs go through uv (installed into .venv from PyPI first): about 20 s for the test
# extras on a fresh clone, where pip takes about 40. Bytecode is compiled at install, as
# pip does (with PYTHONDONTWRITEBYTECODE set, every process would otherwise compile
# jax's sources on import). If uv cannot be installed or fails, pip installs instead.
comma := ,
define install
	@( $(PY) -m pip install -q "uv>=0.5,<1" 2>/dev/null \
	   && $(VENV)/bin/uv pip install -q --python $(PY) --compile-bytecode -e "$(1)" ) \
	|| { echo "uv unavailable or failed: installing with pip" >&2; \
	     $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -e "$(1)"; }
endef

# The demo's install carries what the README's sections use beyond the core: plots
# and the scikit-learn estimators (DataFrames need pandas or polars, named there).
$(STAMP_BASE): $(INSTALL_DEPS) | $(PY)
	$(call install,.[plot$(comma)sklearn])
	touch $@

$(STAMP_TEST): $(INSTALL_DEPS) | $(PY)
	$(call install,.[test$(comma)plot])
	touch $@

$(STAMP_BENCH): $(INSTALL_DEPS) | $(PY)
	$(call install,.[bench])
	touch $@

$(STAMP_DOCS): $(INSTALL_DEPS) | $(PY)
	$(call install,.[docs])
	touch $@

demo: $(STAMP_BASE)
	$(PY) examples/demo.py

# Test files run in parallel worker processes (one per core, at most 4): most of the
# suite's time is XLA compiling, which is single-threaded.
test: $(STAMP_TEST)
	$(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder

# The suite with XLA's default compile settings (make test compiles at level 0 and
# without the CPU fusion emitters, which is faster to compile and rounds a few exp/log
# evaluations differently; see tests/conftest.py).
test-full-opt: $(STAMP_TEST)
	JAXBOOST_TEST_FULL_OPT=1 $(PY) -m pytest -q -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder

# A smoke subset of the suite (import, train, predict, io, metrics, scikit-learn) on
# Python 3.12 and 3.13, each in its own .venv-3.12 / .venv-3.13; an interpreter that is
# not found is reported as MISSING and skipped (REQUIRE_PYTHONS=1 makes it an error).
# PYTHON_VERSIONS="3.12" or SMOKE_TESTS="tests/test_io.py" narrow it.
test-pythons:
	.ci/test-pythons

bench: $(STAMP_BENCH)
	$(PY) benchmarks/run.py

# The prepared GPU run (benchmarks/gpu.py): engine tests on the accelerator, then W1/W5
# against XGBoost, into the folder OUT. It runs this source tree with the machine's own
# python3 and jax (no .venv: a GPU machine has jax with CUDA and no network) on JAX's
# default backend. XGBoost comes from .whl/ when the wheel travels (benchmarks/README.md).
GPU_PYTHON ?= python3
OUT ?= gpu_output
gpu:
	env -u JAX_PLATFORMS PYTHONPATH=$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH} $(GPU_PYTHON) benchmarks/gpu.py $(OUT) $(GPU_ARGS)

# ruff, then the type check.
lint: $(STAMP_TEST)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# mypy over jaxboost/engine and jaxboost/training ([tool.mypy] in pyproject.toml).
typecheck: $(STAMP_TEST)
	$(VENV)/bin/mypy

# The documentation site: docs/ (nav in mkdocs.yml) and the API reference from the
# docstrings, built into site/ with every warning an error. The python blocks of docs/
# run in the test suite (tests/test_readme.py), not here.
docs: $(STAMP_DOCS)
	$(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .venv-3.* demo_output .pytest_cache .mypy_cache build site jaxboost/native/*.so
