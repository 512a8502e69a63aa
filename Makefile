# pilothouse: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install browser wabt run demo check test lint warm unit protos bench fuzz clean \
	docs docs-serve docs-screenshots

$(STAMP): pyproject.toml
	@echo "install: creating $(VENV) (once)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "install: pilothouse and its test dependencies (Envoy, etcd, grpcio...) into $(VENV),"
	@echo "install: with uv (about 10 s the first time; pip, about a minute, where uv cannot)"
	$(BIN)/python -m pip install -q uv && \
		$(BIN)/uv pip install -q --python $(BIN)/python -e '.[test]' || \
		$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)
	@echo "install: done"

install: $(STAMP)

## browser: Debian's chromium for the real-browser tests (Playwright drives /usr/bin/chromium;
## `playwright install` is never run). Needs root or sudo on a machine without it.
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)
browser:
	@test -x /usr/bin/chromium || { $(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			-o DPkg::Lock::Timeout=600 chromium; }

## wabt: Debian's WebAssembly binary toolkit, whose wat2wasm assembles the WasmPlugin e2e
## module from its WAT. Not fatal when apt cannot install it: the test then uses the
## checked-in bytes (tests/e2e/wasm/add_header.wasm, sha256 checked).
wabt:
	@command -v wat2wasm >/dev/null || { $(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			-o DPkg::Lock::Timeout=600 wabt; } || echo "wabt not installed: using the checked-in module"

## run: install, validate and serve the example mesh
NODE := sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local
LABELS := --label app=productpage --label version=v1
run: install
	$(BIN)/pilothouse validate examples/
	$(BIN)/pilothouse analyze examples/
	@echo
	@echo "pilothouse serves xDS on 127.0.0.1:15010, and TLS xDS with the certificate service on"
	@echo "127.0.0.1:15012 (its CA in .pilothouse/ca). A first sidecar (README, Quick start),"
	@echo "one command per shell:"
	@echo "  $(BIN)/python -m http.server 19081 --bind 127.0.0.1"
	@echo "  $(BIN)/pilothouse bootstrap --node '$(NODE)' $(LABELS) > /tmp/envoy.yaml"
	@echo "  $(BIN)/envoy -c /tmp/envoy.yaml --disable-hot-restart --drain-strategy immediate"
	@echo "  curl -s -H 'Host: details' 127.0.0.1:9080/"
	@echo
	$(BIN)/pilothouse serve --config examples/

## demo: the example mesh carrying real HTTP through a real Envoy gateway
demo: install
	@echo "demo: starting the upstreams, pilothouse and the gateway's node agent with its Envoy (a few seconds)"
	$(BIN)/python demo/bookinfo.py

## lint: ruff and mypy --strict
lint: install
	$(BIN)/ruff check src tests bench proto demo docsite
	$(BIN)/mypy --strict src
	$(BIN)/mypy --strict docsite

## check: the unit tier and the golden files (no process started), the inner loop
## test: install; lint, the docs and warm side by side (two at a time; --output-sync keeps each one's
## output in one piece, and either failing stops make), then the whole test suite, in
## parallel: each worker takes whole files (--dist loadfile), so a module's Envoy or etcd
## fixture is started once
## warm: one collection of the whole suite, which compiles pilothouse and every test module
## (asserts rewritten) into __pycache__ once; without it, on a fresh clone, each worker
## compiles all of them at the same moment (about 12 s of CPU each). Skipped where the
## suite was collected before (its e2e conftest compiled): the workers then only compile
## what changed, and a collection (about 6 s of CPU) would gain nothing
## check, warm and test keep compiled modules in __pycache__ (git-ignored) even where the
## environment says PYTHONDONTWRITEBYTECODE: without them every worker rewrites the asserts
## of every test module again (about 6 s each) and every process a test starts compiles
## pilothouse.
## The unit tier keeps the cores busy: one worker per core. The whole suite spends much of
## its time waiting on real time (processes starting, Envoy converging, timeouts): one
## worker more than cores (2 cores, 2026-11-28, shared: 364 s with 2 workers, 287 s with 3).
## --durations: each run names its slowest tests, so the 5-minute budget can be watched.
WORKERS      ?= auto
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST       := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q
check: install
	$(PYTEST) -n $(WORKERS) tests/unit tests/golden

test: install browser wabt
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint docs warm
	$(PYTEST) -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

warm: install
	@if ls tests/e2e/__pycache__/conftest.*-pytest-*.pyc >/dev/null 2>&1; then \
		echo "warm: the suite was collected before (compiled modules in __pycache__)"; \
	else \
		echo "warm: collecting the suite once (compiles pilothouse and the tests)"; \
		$(PYTEST) -p no:cacheprovider --collect-only -qq > $(VENV)/warm.log 2>&1 || \
			{ cat $(VENV)/warm.log; exit 1; }; \
	fi

## docs: the documentation site (docs/, mkdocs.yml), built strictly into site/ (git-ignored):
## a broken link, a missing page or a bad anchor fails it. The reference pages are filled
## from the code while building (docsite/); nothing is fetched from the network.
## docs-serve: the same, served on 127.0.0.1 and rebuilt on change.
## docs-screenshots: docs/img/controlz.png, taken by the browser test's own code.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs
DOCS_ADDRESS ?= 127.0.0.1:8000
docs: install
	$(MKDOCS) build --strict

docs-serve: install
	$(MKDOCS) serve --strict --dev-addr $(DOCS_ADDRESS)

docs-screenshots: install browser
	$(BIN)/python -m tests.e2e.controlz_screenshot docs/img/controlz.png

## fuzz: the fuzz suite with thousands of cases per test (before a release)
FUZZ_EXAMPLES ?= 3000
fuzz: install
	PILOTHOUSE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q tests/fuzz \
		--hypothesis-show-statistics --timeout=3600

## protos: regenerate src/pilothouse/api from proto/
protos: install
	$(BIN)/python proto/generate.py src/pilothouse/api

## bench: run the benchmarks and rewrite BENCHMARKS.md and its plots
bench: install
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache site
