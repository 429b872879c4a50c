# Through the Graph a Second Time: set-up, build, test.
# `make book` and `make test` do all the set-up themselves; `make help` lists every target.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 2
NB     ?=
PYTEST := $(BIN)/python -m pytest
SANITIZE := tests/nbval_sanitize.cfg
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with $(SANITIZE) --nbval-cell-timeout=60

export PYTHONDONTWRITEBYTECODE := 1
export MPLBACKEND := Agg

.PHONY: help setup dot book test test-unit test-notebooks test-site lab refresh student bench clean

help: ## List the targets
	@echo "Through the Graph a Second Time: make TARGET"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  %-15s %s\n", $$1, $$2}'

$(STAMP): requirements.txt pyproject.toml scripts/setup-venv.sh
	@PYTHON="$(PYTHON)" VENV="$(VENV)" scripts/setup-venv.sh
	@touch $@

setup: $(STAMP) dot ## Create .venv and install everything (done by book and test too)

dot: ## Make sure Graphviz's `dot` is installed
	@scripts/ensure-tool.sh dot graphviz graphviz python-graphviz "Graphviz, which draws the graphs"

book: setup ## Build the site into _build/html (warnings are errors)
	@$(BIN)/python scripts/check_stored.py
	@$(BIN)/jupyter-book build . -W -n --keep-going --quiet
	@rm -rf _build/html/reports
	@echo "The site is in _build/html. Open _build/html/index.html in a browser, or serve it:"
	@echo "  $(BIN)/python -m http.server -d _build/html 8000   # then visit http://127.0.0.1:8000"

test-unit: setup ## Unit tests of autograd_lens and of the book's tooling
	$(PYTEST) -q -n $(JOBS) tests autograd_lens --doctest-modules

test-notebooks: setup ## Strict nbval on every stored notebook
	$(PYTEST) -q -n $(JOBS) --dist loadscope $(NBVAL) notebooks

test: setup ## Everything CI checks: unit tests, strict nbval, the book build
	$(PYTEST) -q -n $(JOBS) --dist loadscope $(NBVAL) --doctest-modules tests autograd_lens notebooks
	@$(MAKE) --no-print-directory book

refresh: setup ## Re-execute notebooks and store their outputs (all, or NB=notebooks/x.ipynb)
	$(BIN)/python scripts/refresh.py $(NB)

lab: setup ## JupyterLab on the notebooks, with the project's environment
	$(BIN)/jupyter lab --notebook-dir=notebooks

clean: ## Remove the built site and caches (keeps .venv; `rm -rf .venv` for a fresh set-up)
	rm -rf _build .pytest_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
