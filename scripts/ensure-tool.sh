#!/usr/bin/env bash
# Make sure a system program the book needs is installed, or stop with a message that says how.
#   scripts/ensure-tool.sh COMMAND APT_PACKAGE BREW_PACKAGE CONDA_PACKAGE WHAT
# Tries, in order: apt-get as root, sudo apt-get (without a password prompt), brew.
set -euo pipefail
cmd=$1 apt_pkg=$2 brew_pkg=$3 conda_pkg=$4 what=$5

if command -v "$cmd" >/dev/null 2>&1; then
  exit 0
fi
echo "'$cmd' ($what) is missing; trying to install it." >&2
if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$apt_pkg"; } >&2 || true
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    { sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$apt_pkg"; } >&2 || true
  fi
elif command -v brew >/dev/null 2>&1 && [ "$brew_pkg" != "-" ]; then
  brew install "$brew_pkg" >&2 || true
fi
if command -v "$cmd" >/dev/null 2>&1; then
  echo "Installed '$cmd'." >&2
  exit 0
fi
cat >&2 <<MSG

ERROR: '$cmd' ($what) is not installed, and it could not be installed automatically
(that needs root, password-less sudo, or Homebrew). Install it, then run make again:

  Debian/Ubuntu:  sudo apt-get install $apt_pkg
MSG
[ "$brew_pkg" != "-" ] && echo "  macOS:          brew install $brew_pkg" >&2
[ "$conda_pkg" != "-" ] && echo "  conda:          conda install -c conda-forge $conda_pkg" >&2
echo >&2
exit 1
