#!/usr/bin/env bash
# Create .venv (when missing or broken) and install the pinned toolchain and the library into it.
# Called by make when requirements.txt or pyproject.toml is newer than the last install.
set -euo pipefail
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "ERROR: '$PYTHON' not found. Install Python 3.11 (3.12 and 3.13 work too), or run: make PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "ERROR: $("$PYTHON" --version 2>&1) is too old; the book needs Python 3.11 or newer. Run: make PYTHON=python3.11" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
  echo "Creating $VENV with $("$PYTHON" --version 2>&1)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -r requirements.txt
"$VENV/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (autograd book)" >/dev/null
echo "Environment ready: $VENV ($("$VENV/bin/python" --version 2>&1), torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)'))"
