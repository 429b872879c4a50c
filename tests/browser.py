"""The browser the tests drive: where Chromium is, and how it is started.

Shared by the site test and the library's drawing test. It imports only the standard library and
pytest, so the library's tests can use it in an environment with nothing of the book's toolchain
(``make test-torch`` installs the package, pytest and Playwright alone).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"

CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
# Flags that keep Chromium from reaching the network on its own (updates, sync, field trials).
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]


def find_chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_or_skip() -> str:
    """Chromium's path; without one the test is skipped, except in CI, where it fails."""
    executable = find_chromium()
    if executable is None:
        message = ("No Chromium found for the browser test. Install it (Debian/Ubuntu: "
                   "`sudo apt-get install chromium`; `make chromium` tries for you) or point "
                   "CHROMIUM=/path/to/chromium at one.")
        if IN_CI:
            pytest.fail(message + " In CI (CI=true) this test is never skipped.")
        pytest.skip(message)
    return executable
