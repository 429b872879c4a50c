"""`python -m demo_pkg.train`: an RNN loop that forgets to detach its state."""
import sys

import torch

from demo_pkg import ARGV_AT_IMPORT

print("package saw:", ARGV_AT_IMPORT, "args:", sys.argv[1:], "name:", __name__)
torch.manual_seed(0)
cell = torch.nn.RNNCell(2, 4)
state = torch.zeros(1, 4)
for step in range(3):
    state = cell(torch.randn(1, 2), state)  # enters: state
    loss = state.pow(2).sum()
    loss.backward()
