"""A healthy script that takes arguments, reads a file next to itself and imports a sibling."""
import argparse
import os
import sys

import torch
from sibling_helpers import scale

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2)
parser.add_argument("word")
options = parser.parse_args()
with open(os.path.join(os.path.dirname(__file__), "ok_numbers.txt")) as handle:
    numbers = [float(line) for line in handle]
print("argv:", sys.argv[1:], "name:", __name__, "path0 ends:", os.path.basename(sys.path[0]))
w = torch.tensor(scale(numbers, 2.0), requires_grad=True)
for step in range(options.steps):
    loss = (w * w).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
print(options.word, [round(v, 6) for v in w.tolist()])
print("to stderr", file=sys.stderr)
