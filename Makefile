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

.PHONY: help setup dot chromium book test test-unit test-notebooks test-site test-torch lab lab-solutions refresh student bench clean \
	test-lane-code test-lane-site test-kernels test-lab

help: ## List the targets
	@echo "Through the Graph a Second Time: make TARGET"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  %-15s %s\n", $$1, $$2}'

$(STAMP): requirements.txt pyproject.toml scripts/setup-venv.sh
	@PYTHON="$(PYTHON)" VENV="$(VENV)" scripts/setup-venv.sh
	@touch $@

setup: dot $(STAMP) ## Create .venv and install everything (done by book and test too)

dot: ## Make sure Graphviz's `dot` is installed
	@scripts/ensure-tool.sh dot graphviz graphviz graphviz "Graphviz, which draws the graphs"

# Everything the site is built from. The build runs only when one of them is newer than the
# last successful build (Sphinx's own no-change check alone takes about ten seconds).
BOOK_SOURCES := $(shell find intro.md _config.yml _toc.yml chapters notebooks autograd_lens _static _templates _ext scripts/student.py pyproject.toml \
	-type f -not -path '*/.ipynb_checkpoints/*' -not -name '*.pyc' 2>/dev/null)
BOOK_STAMP := _build/.book-built

$(BOOK_STAMP): $(BOOK_SOURCES) $(STAMP)
	@$(BIN)/python scripts/nbtools.py --check
	@# Every page is written again (--all): sphinx-sitemap lists only the pages a build writes
	@# (its open issue 13), so an incremental build would publish a sitemap of the changed pages,
	@# and a build after a failed one would not repeat the warnings of unchanged pages.
	@$(BIN)/jupyter-book build . --all -W -n --keep-going --quiet
	@# The student copies and their archive, served by the site (never written into the repository).
	@$(BIN)/python scripts/student.py --out _build/html/student --zip _build/html/student/student-notebooks.zip >/dev/null
	@if [ -d _build/html/reports ]; then echo "ERROR: the build wrote execution reports into _build/html/reports" >&2; exit 1; fi
	@touch $@

book: setup $(BOOK_STAMP) ## Build the site into _build/html (warnings are errors)
	@echo "The site is in _build/html. Open _build/html/index.html in a browser, or serve it:"
	@echo "  $(BIN)/python -m http.server -d _build/html 8000   # then visit http://127.0.0.1:8000"

# The test stages run one process per core (xdist -n $(JOBS)) and torch in each would start a
# thread per core too: one thread each, so the cores are not oversubscribed (torch's threads wait
# actively for each other, and on busy cores a 0.1 s training run took 20 s).
test-unit test-notebooks: export OMP_NUM_THREADS := 1

# --dist loadscope: each test module on one worker, so a module-scoped fixture (the command's
# processes, the wheel build) is computed once, not on each worker that gets one of its tests.
test-unit: setup ## Unit tests and doctests of autograd_lens and of the book's tooling, offline
	scripts/offline.sh $(PYTEST) -q -n $(JOBS) --dist loadscope --doctest-modules --ignore=tests/book/test_site.py --ignore=tests/book/test_site_screens.py \
		--ignore=tests/book/test_site_quiz_keys.py --ignore=tests/book/test_lab.py tests autograd_lens

# The notebooks in reverse table-of-contents order (read from _toc.yml by scripts/nbtools.py).
test-notebooks: setup ## Strict nbval on every stored notebook, offline
	scripts/offline.sh $(PYTEST) -q -n $(JOBS) --dist loadscope $(NBVAL) \
		$(shell $(BIN)/python scripts/nbtools.py --reverse)

# The stored outputs must not depend on the processor: strict nbval again as on other x86-64
# processors (test-notebooks ran this machine's kernels, AVX-512 where it has them). Round-off
# depends on both torch's own vectorised kernels (ATEN_CPU_CAPABILITY) and those MKL and oneDNN
# pick for matrix products (MKL_ENABLE_INSTRUCTIONS, ONEDNN_MAX_CPU_ISA); the kernels nbval
# starts inherit them. avx2: a machine without AVX-512; sse: an old one, scalar ATen kernels;
# default: ATen's scalar kernels with this machine's MKL.
KERNELS ?= avx2 sse default
KERNEL_ENV_avx2    := ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
KERNEL_ENV_sse     := ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41
KERNEL_ENV_default := ATEN_CPU_CAPABILITY=default

test-kernels: setup ## Strict nbval as on processors without AVX-512 (AVX2, SSE, scalar): stored outputs must not depend on the processor
	@$(foreach k,$(KERNELS),echo "kernels $(k): $(KERNEL_ENV_$(k))" \
		&& env $(KERNEL_ENV_$(k)) $(MAKE) --no-print-directory test-notebooks &&) true

# `make test` runs two lanes at once after the set-up: the unit tests then nbval (each spread over
# both cores by xdist), and the book build then the browser test (each mostly on one core), so no
# core waits while a one-core stage runs. Each lane's output is printed as a block when it ends
# (where make can: GNU make 4's --output-sync); make fails if either lane fails.
SYNC := $(if $(filter output-sync,$(.FEATURES)),--output-sync=recurse)

test: setup ## Everything CI checks: unit tests, strict nbval, student copies, the book build, the site and JupyterLab in a browser
	@echo "Two lanes at once: unit tests then nbval; the book build then the browser tests (site, JupyterLab)."
	@$(MAKE) --no-print-directory -j2 $(SYNC) test-lane-site test-lane-code

test-lane-code:
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-notebooks

test-lane-site:
	@$(MAKE) --no-print-directory test-site
	@$(MAKE) --no-print-directory test-lab

chromium: ## Install Chromium for the browser test of the site, where possible (else that test is skipped)
	@if [ -n "$$CHROMIUM" ] || command -v chromium-browser >/dev/null 2>&1 \
		|| command -v google-chrome >/dev/null 2>&1 || command -v google-chrome-stable >/dev/null 2>&1; then :; \
	else scripts/ensure-tool.sh chromium chromium - - "Chromium, for the browser test of the site" \
		|| echo "Without it the browser test is skipped (in CI, where CI=true, it fails instead)." >&2; fi

test-site: book chromium ## The built site in headless Chromium (every page, console, images, links; phone, weight, axe, search, quizzes by keyboard)
	$(PYTEST) -q tests/book/test_site.py tests/book/test_site_screens.py tests/book/test_site_quiz_keys.py

test-lab: setup chromium ## Every student and instructor copy in a real JupyterLab, in headless Chromium: no raw MyST, no quiz answer shown
	$(PYTEST) -q tests/book/test_lab.py

# The library's, diagnose's and the command's tests: what CI's torch matrix runs on every minor
# release that pyproject.toml accepts. Each release gets its own environment in TORCH_ENVS.
TORCH       ?=
TORCH_ENVS  ?= $(HOME)/.cache/through-the-graph/torch-envs
TORCH_TESTS := tests/lens/test_lens_graph.py tests/lens/test_lens_draw.py tests/lens/test_lens_memory_errors.py \
	tests/predict/test_diagnose.py tests/command/text/test_cli.py tests/command/text/test_cli_on_error.py tests/command/run/test_torchrun.py \
	tests/lens/test_compat.py

test-torch: ## The library's tests on another torch, in its own environment: make test-torch TORCH=2.6.0
	@PYTHON="$(PYTHON)" TORCH="$(TORCH)" TORCH_ENVS="$(TORCH_ENVS)" TORCH_TESTS="$(TORCH_TESTS)" \
		JOBS="$(JOBS)" scripts/test-torch.sh

student: setup ## Student copies of the notebooks (solutions and outputs removed) into student/
	$(BIN)/python scripts/student.py

refresh: setup ## Re-execute notebooks and store their outputs (all, or NB=notebooks/x.ipynb)
	$(BIN)/python scripts/nbtools.py --refresh $(NB)

bench: setup ## Measure build, test, notebook and library speed; writes bench/report.json and chapters/status.md
	$(BIN)/python scripts/bench.py

# `make lab` serves the student copies. A copy already in student/ is never overwritten (it holds the
# student's work); only the missing ones are written (`make student` writes them all again).
MISSING_COPIES = $(foreach n,$(wildcard notebooks/*.ipynb),$(if $(wildcard student/$(notdir $(n))),,$(n)))
LAB := $(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root)

lab: setup ## JupyterLab on the student copies in student/ (written if missing), as students work on them
	@$(if $(MISSING_COPIES),$(BIN)/python scripts/student.py $(MISSING_COPIES))
	@cp -R notebooks/quizzes student/  # the quizzes' questions: the book's latest, never a student's work
	$(LAB) --notebook-dir=student

# The instructor's copies (solutions and outputs, references as links) in solutions/, written if
# missing like the student copies: running them leaves the book's stored outputs in notebooks/ alone.
MISSING_SOLUTIONS = $(foreach n,$(wildcard notebooks/*.ipynb),$(if $(wildcard solutions/$(notdir $(n))),,$(n)))

lab-solutions: setup ## JupyterLab on the instructor's copies in solutions/ (solutions and outputs; written if missing)
	@$(if $(MISSING_SOLUTIONS),$(BIN)/python scripts/student.py --solutions $(MISSING_SOLUTIONS))
	@cp -R notebooks/quizzes solutions/
	$(LAB) --notebook-dir=solutions

clean: ## Remove the built site and caches (keeps .venv; `rm -rf .venv` for a fresh set-up)
	rm -rf _build .pytest_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +
