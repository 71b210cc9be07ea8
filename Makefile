# Two entry points, each sets itself up on first use: `make grade` and `make test`.
# For course authors: `make check-lab` and `make mutants` (docs/authoring.md). LAB: a name or a folder.
PYTHON ?= python3
LAB    ?= lab2
# what `make grade` grades: the lab's reference solutions (read once the venv is there)
REF     = $(shell $(BIN)/python -c "import sys; from grader.readers.manifest import find_lab; print(find_lab(sys.argv[1]).reference)" $(LAB))
# e.g. PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu" for torch's CPU build
PIP_ARGS ?=
VENV   := .venv
BIN    := $(VENV)/bin
READY  := $(VENV)/.installed

.PHONY: grade test test-slow test-cluster bench check-lab mutants

$(READY): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q $(PIP_ARGS) -e '.[dev,plots,notebook]'
	touch $@

# The grader's compiled modules, as pip keeps them for installed packages: an editable install
# compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (many Docker images) Python would
# compile every grader module again on each grading. Up to date, this only looks.
COMPILE = $(BIN)/python -m compileall -q grader

grade: $(READY)
	$(COMPILE)
	$(BIN)/python grade.py $(LAB) --submission $(REF)

check-lab: $(READY)
	$(BIN)/python grade.py check-lab $(LAB)

mutants: $(READY)
	$(BIN)/python grade.py mutants $(LAB)

test: $(READY)                  # the suite but its slow tier, on every core (pytest-xdist), slowest 15 listed
	$(BIN)/ruff check .
	$(BIN)/python -m mypy grader
	$(BIN)/python -m pytest -q -m "not slow" -n auto --durations=15

test-slow: $(READY)             # the slow tier: end-to-end gradings, busy machines, subprocess runs
	$(BIN)/python -m pytest -q -m slow -n auto --durations=15

test-cluster: $(READY)          # the optional Ray extra (~40 s, 250 MB), then its tests on a local instance
	$(BIN)/pip install -q $(PIP_ARGS) -e '.[cluster]'
	$(BIN)/python -m pytest -q tests/instructor/test_cluster.py

bench: $(READY)                 # each script rewrites its own section of docs/figures.md
	$(COMPILE)
	$(BIN)/python benchmarks/bench.py --runs 5
	$(BIN)/python benchmarks/first_line.py
	$(BIN)/python benchmarks/watch_bench.py
	$(BIN)/python benchmarks/watch_round.py
	$(BIN)/python benchmarks/wire_bench.py
	$(BIN)/python benchmarks/batch_bench.py --twelve
	$(BIN)/python benchmarks/warm_scores.py
	$(BIN)/python benchmarks/notebook_bench.py
	$(BIN)/python benchmarks/page_bench.py
	$(BIN)/python benchmarks/quiz_start.py
	$(BIN)/python benchmarks/experiments_bench.py
	$(BIN)/python benchmarks/fork_bench.py
	$(BIN)/python benchmarks/busy_bench.py
	$(BIN)/python benchmarks/mutants_figures.py
