# The two commands: `make demo` (the main job) and `make test` (the whole suite).
# Each one builds the project-local virtual environment in .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
# constraints.txt for installs and for build environments (visdom's needs setuptools<81):
# pip up to 25 applies PIP_CONSTRAINT to both, pip 26 reads PIP_BUILD_CONSTRAINT for builds.
PIP_ENV := PIP_CONSTRAINT=$(CURDIR)/constraints.txt PIP_BUILD_CONSTRAINT=$(CURDIR)/constraints.txt

.PHONY: install demo test unit soak deep lint bench clean

# The suite on both cores (pytest-xdist; a test's module fixtures are shared by the tests
# that a group mark keeps on one worker). PYTEST_ARGS='-n 0' runs it in one process.
XDIST := -n 2 --dist loadgroup

install: $(STAMP)

# Two stamps: `make demo` needs only what it runs (CPU torch, visdom and its assets, the
# project), so its URL comes minutes after a fresh clone; the tests, lint and benchmarks
# add their frameworks (Lightning, Transformers, W&B, TensorBoard, ...) on top.
$(DEMO_STAMP): pyproject.toml constraints.txt scripts/provision_visdom_assets.py visualizer/server/assets.py
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU build from local disk, not a multi-GB CUDA download.
	$(PIP_ENV) $(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(PIP_ENV) $(BIN)/pip install -q --disable-pip-version-check -e '.[all]'
	$(BIN)/python scripts/provision_visdom_assets.py
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	$(PIP_ENV) $(BIN)/pip install -q --disable-pip-version-check -e '.[all,test,bench,lint]'
	touch $(STAMP)

demo: $(DEMO_STAMP)
	bash scripts/demo.sh

# REQUIRE_ALL_PARTS=1: a missing browser, SeaweedFS or visdom fails the run (elsewhere,
# e.g. `pytest tests/trainer` on a bare GPU box, the tests needing one are skipped).
test: $(STAMP)
	bash scripts/ensure_browsers.sh
	REQUIRE_ALL_PARTS=1 $(BIN)/python -m pytest $(XDIST) --durations=20 $(PYTEST_ARGS)

# The fast half of the suite: no server, browser, torchrun or worker process.
unit: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) -m "not integration" $(PYTEST_ARGS)

# Pages left open on a 30-minute run (make test runs the same test for under a minute).
soak: $(STAMP)
	bash scripts/ensure_browsers.sh
	SOAK_SECONDS=$${SOAK_SECONDS:-1800} REQUIRE_ALL_PARTS=1 $(BIN)/python -m pytest tests/e2e/test_soak.py $(PYTEST_ARGS)

# The long fuzz runs at full size (10,000 cases; make test runs a twentieth: tests/fixtures/fuzz.py).
deep: $(STAMP)
	DEEP_FUZZ=1 REQUIRE_ALL_PARTS=1 $(BIN)/python -m pytest $(XDIST) -m deep $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Prints the table and writes each suite's table into docs/benchmarks.md (bench/tools/doc_tables.py).
bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) checkpoints data datasets test-artifacts
