"""Says what it sees of its environment (before it imports torch) to the port given as its
argument: PYTHONPATH, sys.path, every environment variable, and what a python subprocess it
starts sees of them; then it trains with a state carried across steps, whose second backward
fails."""
import json
import os
import socket
import subprocess
import sys

ASK = "import json, os, sys; print(json.dumps([os.environ.get('PYTHONPATH'), sys.path]))"
sub = subprocess.run([sys.executable, "-c", ASK], capture_output=True, text=True, check=True)
seen = {"pythonpath": os.environ.get("PYTHONPATH"), "path": sys.path,
        "environ": dict(os.environ), "sub": json.loads(sub.stdout), "cwd": os.getcwd()}
with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as told:
    told.sendall(json.dumps(seen).encode())

import torch  # noqa: E402

w = torch.ones(3, requires_grad=True)
h = torch.zeros(3)
for step in range(3):
    h = torch.tanh(w * h + 1)  # enters: h
    h.sum().backward()
