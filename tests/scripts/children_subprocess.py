"""Backward twice in a Python that the program starts with subprocess (not watched by the
command): the program raises the child's last line of error in a ChildProcessError."""
import subprocess
import sys

TWICE = """
import torch
w = torch.ones(3, requires_grad=True)
loss = (w * w).sum()
loss.backward()
loss.backward()
"""
done = subprocess.run([sys.executable, "-c", TWICE], capture_output=True, text=True)
print("child exit code", done.returncode, flush=True)
raise ChildProcessError("the worker failed: " + done.stderr.strip().splitlines()[-1])
