#!/usr/bin/env bash
# Print the book's notebooks in table-of-contents order (--reverse: the other way round).
set -euo pipefail
cd "$(dirname "$0")/.."
order=$(sed -nE 's/^[[:space:]]*-?[[:space:]]*file:[[:space:]]*([^[:space:]#]+).*/\1/p' _toc.yml)
[ "${1:-}" = "--reverse" ] && order=$(printf '%s\n' "$order" | tac)
for doc in $order; do
  [ -f "$doc.ipynb" ] && echo "$doc.ipynb"
done
exit 0
