#!/usr/bin/env bash
# Run a command with the network unreachable: in a new user and network namespace whose only
# interface is the loopback (kernels still talk to pytest over 127.0.0.1).
# Where namespaces are not allowed, run it with the network and say so; in CI that is an error.
# Why by hand: no standard tool cuts the network for child processes without root (pytest-socket
# blocks sockets in the pytest process only, not in the notebook kernels it starts).
set -euo pipefail
if unshare --user --map-root-user --net true 2>/dev/null; then
  exec unshare --user --map-root-user --net sh -c 'ip link set lo up 2>/dev/null || ifconfig lo up 2>/dev/null || true; exec "$@"' offline "$@"
fi
if [ "${CI:-}" = "true" ]; then
  echo "ERROR: cannot make the network unreachable here (unshare --net is not allowed); CI must run the notebooks offline." >&2
  exit 1
fi
echo "NOTE: network isolation unavailable (unshare --net not allowed); running with the network." >&2
exec "$@"
