#!/usr/bin/env bash
# `make test-torch TORCH=X.Y.Z`: the library's, diagnose's and the command's tests on another
# torch release, in a virtual environment of its own (never .venv, never inside the repository).
#
#   1. $TORCH_ENVS/torch-X.Y.Z is made once, with torch==X.Y.Z alone in it (from TORCH_INDEX_URL
#      when it is set, such as PyTorch's CPU index; otherwise from pip's usual index).
#   2. The project is installed into it with `pip install .` and pip's ordinary resolver, as a
#      user would, with the test tools at the versions requirements.txt pins (its other pins
#      left out: they are the book's, not the library's).
#   3. It fails when step 2 changed torch: a library that replaces its user's torch is not used.
#   4. The tests named by the Makefile's TORCH_TESTS and the library's doctests run there, offline
#      (scripts/offline.sh). numpy is installed too, as in .venv: without it every torch release
#      warns on import, and the command's tests compare its exact output.
#
# CI's torch matrix (.github/workflows/ci.yml) runs this same target, once per minor release.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
TORCH=${TORCH:-}
TORCH_ENVS=${TORCH_ENVS:?TORCH_ENVS is not set (the Makefile sets it)}
TORCH_TESTS=${TORCH_TESTS:?TORCH_TESTS is not set (the Makefile sets it)}
JOBS=${JOBS:-2}

if ! [[ "$TORCH" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "make test-torch: error: TORCH must be a torch release such as 2.6.0, got '${TORCH}'. Run: make test-torch TORCH=2.6.0" >&2
  exit 2
fi

ENV="$TORCH_ENVS/torch-$TORCH"
PY="$ENV/bin/python"
torch_version() { "$PY" -c 'import torch; print(torch.__version__)'; }

if [ ! -x "$PY" ] || ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "Creating $ENV with $("$PYTHON" --version 2>&1) and torch $TORCH (a download of up to a few GB)"
  rm -rf "$ENV"
  mkdir -p "$TORCH_ENVS"
  "$PYTHON" -m venv "$ENV"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==$TORCH"
fi
before=$(torch_version)
case "$before" in
  "$TORCH" | "$TORCH"+*) ;;
  *) echo "ERROR: $ENV holds torch $before, not $TORCH; remove that folder and run again." >&2; exit 1 ;;
esac

# The test tools at the versions the book pins, and nothing else pinned: other pins of
# requirements.txt may clash with what this torch requires (torch 2.12.1 requires
# setuptools<82, requirements.txt pins 84.2.1), and pip would then replace torch.
constraints="$ENV/constraints.txt"
grep -E '^(pytest|pytest-xdist|playwright)==' requirements.txt > "$constraints"
echo "Installing the project into $ENV with pip's ordinary resolver (torch $before is there)"
"$PY" -m pip install --quiet --constraint "$constraints" . pytest pytest-xdist playwright numpy

after=$(torch_version)
if [ "$after" != "$before" ]; then
  echo "ERROR: pip install . changed torch from $before to $after: pyproject.toml's torch requirement, or a pip constraint of this machine (pip config list), does not accept $before." >&2
  exit 1
fi
echo "torch $after unchanged by pip install ."

# The tests import the package from the repository (as in .venv): the same files pip just
# installed. (tests/package/test_package.py, in `make test`, checks an installed wheel on its own.)
# shellcheck disable=SC2086
scripts/offline.sh "$PY" -m pytest -q -n "$JOBS" --doctest-modules $TORCH_TESTS autograd_lens
